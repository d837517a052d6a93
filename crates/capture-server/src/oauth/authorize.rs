//! `/oauth/authorize`: check the request, send a visitor who is not signed in to the
//! website's sign-in page (coming back here afterwards), then ask for consent. "Allow" mints
//! a single-use code (60 s, stored hashed) bound to the client, the exact redirect URI, the
//! PKCE challenge and the audience; "Deny" answers `access_denied`.
//!
//! Until the client and redirect URI are known good, errors are shown as a page and never
//! redirected (RFC 6749 §4.1.2.1), so this endpoint cannot be used as an open redirector.

use std::collections::BTreeMap;

use askama::Template;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use capture_store::{OAuthClient, OAuthCode};

use super::clients::{self, ClientError, is_loopback_redirect};
use super::{CODE_PREFIX, CODE_TTL_MS, SCOPE, canonical_resource, hash_secret, mcp_resource, new_secret, parse_params};
use crate::state::AppState;
use crate::web::base::layout::{Chrome, Nav};
use crate::web::base::session::{self, WebSession};

/// The parameters a consent form carries back (everything but `csrf` and `decision`).
const FORWARDED: &[&str] = &[
    "response_type",
    "client_id",
    "redirect_uri",
    "code_challenge",
    "code_challenge_method",
    "state",
    "scope",
    "resource",
];

/// A checked authorization request.
struct Checked {
    client: OAuthClient,
    redirect_uri: String,
    state: Option<String>,
    code_challenge: String,
    resource: String,
}

/// Why a request cannot go on.
enum Refusal {
    /// Shown to the person: the client or redirect URI cannot be trusted with a redirect.
    Page(StatusCode, String),
    /// Sent back to the client's redirect URI as `error` (RFC 6749 §4.1.2.1).
    Redirect { to: String, state: Option<String>, error: &'static str, description: String },
    /// Unexpected failure (already logged).
    Internal,
}

async fn check(state: &AppState, p: &BTreeMap<String, String>) -> Result<Checked, Refusal> {
    let get = |k: &str| p.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let client_id = get("client_id").ok_or_else(|| {
        Refusal::Page(StatusCode::BAD_REQUEST, "The request names no application (client_id is missing).".into())
    })?;
    let client = match clients::resolve(state, client_id).await {
        Ok(c) => c,
        Err(ClientError::Internal(_)) => return Err(Refusal::Internal),
        Err(e) => {
            return Err(Refusal::Page(
                StatusCode::BAD_REQUEST,
                format!("This application cannot sign in: {}.", e.describe()),
            ));
        }
    };
    let requested = get("redirect_uri").ok_or_else(|| {
        Refusal::Page(StatusCode::BAD_REQUEST, "The request has no redirect_uri; the application must send one.".into())
    })?;
    let redirect_uri = clients::match_redirect(&client, requested).ok_or_else(|| {
        Refusal::Page(
            StatusCode::BAD_REQUEST,
            "The redirect_uri does not match any address the application registered, so Capture will not send you there."
                .into(),
        )
    })?;
    let st = get("state").map(str::to_string);
    let refuse = |error: &'static str, description: &str| Refusal::Redirect {
        to: redirect_uri.clone(),
        state: st.clone(),
        error,
        description: description.to_string(),
    };
    if get("response_type") != Some("code") {
        return Err(refuse("unsupported_response_type", "response_type must be 'code'"));
    }
    let challenge =
        get("code_challenge").ok_or_else(|| refuse("invalid_request", "code_challenge is required (PKCE)"))?;
    if get("code_challenge_method") != Some("S256") {
        return Err(refuse("invalid_request", "code_challenge_method must be 'S256'"));
    }
    let well_formed =
        challenge.len() == 43 && challenge.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !well_formed {
        return Err(refuse(
            "invalid_request",
            "code_challenge must be the base64url SHA-256 of the verifier (43 characters)",
        ));
    }
    let resource = match get("resource") {
        None => mcp_resource(state),
        Some(r) => canonical_resource(state, r).ok_or_else(|| {
            refuse("invalid_target", "resource must be this server's MCP address ({base_url}/mcp) or {base_url}")
        })?,
    };
    Ok(Checked { client, redirect_uri, state: st, code_challenge: challenge.to_string(), resource })
}

/// `GET /oauth/authorize`
pub async fn show(State(state): State<AppState>, headers: HeaderMap, RawQuery(q): RawQuery) -> Response {
    let raw = q.unwrap_or_default();
    let params = match parse_params(&raw) {
        Ok(p) => p,
        Err(e) => return error_page(StatusCode::BAD_REQUEST, &format!("This sign-in request is malformed: {e}.")),
    };
    let checked = match check(&state, &params).await {
        Ok(c) => c,
        Err(r) => return refusal(&state, r),
    };
    let session = match session::current(&state, &headers).await {
        Ok(Some(s)) => s,
        Ok(None) => return to_sign_in(&format!("/oauth/authorize?{raw}")),
        Err(_) => return refusal(&state, Refusal::Internal),
    };
    consent_page(&state, &session, &checked, &params)
}

/// `POST /oauth/authorize` (the consent form): "Allow" or "Deny".
pub async fn decide(State(state): State<AppState>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let ct = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !ct.to_ascii_lowercase().starts_with("application/x-www-form-urlencoded") || body.len() > 64 * 1024 {
        return error_page(StatusCode::BAD_REQUEST, "Send this form from the consent page.");
    }
    let params = match parse_params(&String::from_utf8_lossy(&body)) {
        Ok(p) => p,
        Err(e) => return error_page(StatusCode::BAD_REQUEST, &format!("This form is malformed: {e}.")),
    };
    let checked = match check(&state, &params).await {
        Ok(c) => c,
        Err(r) => return refusal(&state, r),
    };
    let session = match session::current(&state, &headers).await {
        Ok(Some(s)) => s,
        Ok(None) => return to_sign_in(&authorize_url(&params)),
        Err(_) => return refusal(&state, Refusal::Internal),
    };
    if !params.get("csrf").is_some_and(|t| session.csrf_ok(t)) {
        return error_page(
            StatusCode::FORBIDDEN,
            "This form has expired or did not come from this site. Go back to the application and start again.",
        );
    }
    match params.get("decision").map(String::as_str) {
        Some("allow") => {}
        Some("deny") => {
            return respond(
                &state,
                &checked.redirect_uri,
                &[("error", "access_denied"), ("error_description", "the account owner denied access")],
                checked.state.as_deref(),
            );
        }
        _ => return error_page(StatusCode::BAD_REQUEST, "Choose Allow or Deny."),
    }
    let code = new_secret(CODE_PREFIX);
    let now = state.clock.now_ms();
    let row = OAuthCode {
        code_hash: hash_secret(&code),
        client_id: checked.client.client_id.clone(),
        user_id: session.user.id.clone(),
        redirect_uri: checked.redirect_uri.clone(),
        code_challenge: checked.code_challenge.clone(),
        scope: SCOPE.into(),
        resource: Some(checked.resource.clone()),
        expires_at: now + CODE_TTL_MS,
        created_at: now,
    };
    if let Err(e) = state.store.create_oauth_code(&row).await {
        tracing::error!(error = %e, "storing an authorization code failed");
        return refusal(&state, Refusal::Internal);
    }
    tracing::info!(client_id = %checked.client.client_id, user_id = %session.user.id, "OAuth access granted");
    respond(&state, &checked.redirect_uri, &[("code", &code)], checked.state.as_deref())
}

/// `/oauth/authorize?…` rebuilt from the forwarded parameters (after a session expired).
fn authorize_url(p: &BTreeMap<String, String>) -> String {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    for k in FORWARDED {
        if let Some(v) = p.get(*k) {
            q.append_pair(k, v);
        }
    }
    format!("/oauth/authorize?{}", q.finish())
}

fn to_sign_in(next: &str) -> Response {
    let to = format!("/login?next={}", url::form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>());
    no_store(Redirect::to(&to).into_response())
}

/// Redirect to the client with `pairs`, `state` and `iss` (RFC 9207) added to its query.
fn respond(state: &AppState, redirect_uri: &str, pairs: &[(&str, &str)], st: Option<&str>) -> Response {
    let Ok(mut u) = url::Url::parse(redirect_uri) else {
        return refusal(state, Refusal::Internal);
    };
    {
        let mut q = u.query_pairs_mut();
        for (k, v) in pairs {
            q.append_pair(k, v);
        }
        if let Some(s) = st {
            q.append_pair("state", s);
        }
        q.append_pair("iss", &state.base_url);
    }
    no_store(Redirect::to(u.as_str()).into_response())
}

fn refusal(state: &AppState, r: Refusal) -> Response {
    match r {
        Refusal::Page(status, msg) => error_page(status, &msg),
        Refusal::Redirect { to, state: st, error, description } => {
            respond(state, &to, &[("error", error), ("error_description", &description)], st.as_deref())
        }
        Refusal::Internal => {
            error_page(StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong on our side. Try again in a moment.")
        }
    }
}

fn no_store(mut r: Response) -> Response {
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// An HTML page with the website's protections; `form_target` widens `form-action` to the
/// client's redirect URI, where the consent form's answer is redirected (browsers apply
/// `form-action` to that redirect too).
fn html(status: StatusCode, doc: String, form_target: Option<&str>) -> Response {
    let mut r = (status, doc).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    let target = form_target.map(|t| format!(" {t}")).unwrap_or_default();
    let csp = format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         form-action 'self'{target}; frame-ancestors 'none'; base-uri 'none'"
    );
    if let Ok(v) = HeaderValue::from_str(&csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    r
}

/// `templates/oauth/error.html`
#[derive(Template)]
#[template(path = "oauth/error.html")]
struct ErrorPage<'a> {
    chrome: Chrome<'a>,
    message: &'a str,
}

fn error_page(status: StatusCode, message: &str) -> Response {
    render(status, &ErrorPage { chrome: Chrome::public("Cannot continue"), message }, None)
}

/// `templates/oauth/consent.html`
#[derive(Template)]
#[template(path = "oauth/consent.html")]
struct ConsentPage<'a> {
    chrome: Chrome<'a>,
    /// The application's name as it gave it.
    name: &'a str,
    /// The client ID metadata document that identifies it, if any.
    metadata_url: Option<&'a str>,
    email: &'a str,
    /// Through which door the application acts.
    audience: &'a str,
    destination: String,
    /// The request's parameters, carried back by the form.
    forwarded: Vec<(&'a str, &'a str)>,
    csrf: &'a str,
}

/// A page with the protections of [`html`].
fn render(status: StatusCode, page: &impl Template, form_target: Option<&str>) -> Response {
    match page.render() {
        Ok(doc) => html(status, doc, form_target),
        Err(e) => {
            tracing::error!(error = %e, "rendering an authorization page failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response()
        }
    }
}

/// The CSP source matching a redirect URI: its origin, or its scheme for a native app's
/// private-use scheme.
fn csp_source(redirect_uri: &str) -> Option<String> {
    let u = url::Url::parse(redirect_uri).ok()?;
    match u.scheme() {
        "http" | "https" => Some(u.origin().ascii_serialization()).filter(|o| o != "null"),
        s if s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'.' || b == b'-') => {
            Some(format!("{s}:"))
        }
        _ => None,
    }
}

/// Where the browser goes after the choice, in words a person can judge.
fn destination(redirect_uri: &str) -> String {
    match url::Url::parse(redirect_uri) {
        Ok(u) if is_loopback_redirect(&u) => {
            format!("an application on this computer ({})", u.origin().ascii_serialization())
        }
        Ok(u) if u.scheme() == "https" => u.host_str().unwrap_or("").to_string(),
        Ok(u) => format!("the application that handles {}: links", u.scheme()),
        Err(_) => redirect_uri.to_string(),
    }
}

fn consent_page(state: &AppState, s: &WebSession, c: &Checked, p: &BTreeMap<String, String>) -> Response {
    let name = c.client.client_name.as_deref().filter(|n| !n.trim().is_empty()).unwrap_or("An application");
    let audience =
        if c.resource == mcp_resource(state) { "through the Capture MCP server" } else { "through the Capture API" };
    let consent = ConsentPage {
        chrome: Chrome::signed("Authorize an application", s, Nav::None),
        name,
        metadata_url: c.client.metadata_url.as_deref(),
        email: &s.user.email,
        audience,
        destination: destination(&c.redirect_uri),
        forwarded: FORWARDED.iter().filter_map(|k| p.get(*k).map(|v| (*k, v.as_str()))).collect(),
        csrf: &s.csrf,
    };
    render(StatusCode::OK, &consent, csp_source(&c.redirect_uri).as_deref())
}
