//! Extractors of the website: the signed-in visitor ([`Signed`]), a POSTed form checked
//! against the session's CSRF token ([`SignedForm`]), and the sign-in/sign-up forms, which
//! have no session yet and are checked with a double-submit cookie ([`AnonForm`]).
//!
//! Double-submit: the sign-in and sign-up pages set a random token in a cookie
//! (`SameSite=Lax`, `HttpOnly`; named `__Host-capture_csrf` and `Secure` when the base URL is
//! https, so no sibling sub-domain can plant it) and put the same token in a hidden field. A
//! POST is accepted only when both are present and equal (constant-time). A cross-site page
//! can neither read the cookie nor make the browser send it with a cross-site POST.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, header};
use capture_core::ids::{self, TypedId};

use super::layout::WebError;
use super::session::{self, WebSession};
use crate::auth::{self, Account};
use crate::crypto::ct_eq;
use crate::http::json::read_body;
use crate::http::request::ClientAddr;
use crate::state::AppState;

/// Largest form body the website accepts.
const FORM_LIMIT: usize = 64 * 1024;

/// A parsed `application/x-www-form-urlencoded` body (repeated fields kept in order).
#[derive(Debug, Default, Clone)]
pub struct Form(pub Vec<(String, String)>);

impl Form {
    /// The first value of field `k`.
    pub fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }

    /// The first value of field `k`, trimmed, or "".
    pub fn text(&self, k: &str) -> &str {
        self.get(k).map(str::trim).unwrap_or("")
    }

    /// Every value of field `k`.
    pub fn all(&self, k: &str) -> Vec<&str> {
        self.0.iter().filter(|(n, _)| n == k).map(|(_, v)| v.as_str()).collect()
    }
}

async fn read_form(req: Request) -> Result<Form, WebError> {
    let ct = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !ct.to_ascii_lowercase().starts_with("application/x-www-form-urlencoded") {
        return Err(WebError::Page(
            axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Send this form from the website.".into(),
        ));
    }
    let bytes = read_body(req.into_body(), FORM_LIMIT).await?;
    Ok(Form(url::form_urlencoded::parse(&bytes).into_owned().collect()))
}

/// The signed-in visitor. Without a session, GET requests go to the sign-in page and come
/// back afterwards; other methods go to the sign-in page.
#[derive(Debug, Clone)]
pub struct Signed(pub WebSession);

impl FromRequestParts<AppState> for Signed {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, WebError> {
        match session::current(state, &parts.headers).await? {
            Some(s) => Ok(Signed(s)),
            None => {
                let next = (parts.method == Method::GET)
                    .then(|| parts.uri.path_and_query().map(|p| p.as_str().to_string()))
                    .flatten();
                Err(WebError::SignIn { next })
            }
        }
    }
}

/// A POSTed form of a signed-in visitor whose `csrf` field matched the session's token.
#[derive(Debug, Clone)]
pub struct SignedForm {
    pub session: WebSession,
    pub form: Form,
}

impl FromRequest<AppState> for SignedForm {
    type Rejection = WebError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, WebError> {
        let Some(session) = session::current(state, req.headers()).await? else {
            return Err(WebError::SignIn { next: None });
        };
        let form = read_form(req).await?;
        if !session.csrf_ok(form.get("csrf").unwrap_or("")) {
            return Err(WebError::Csrf);
        }
        Ok(SignedForm { session, form })
    }
}

/// A POSTed sign-in or sign-up form whose `csrf` field matched the double-submit cookie,
/// with the client's address (for throttling).
#[derive(Debug, Clone)]
pub struct AnonForm {
    pub form: Form,
    pub client: String,
}

impl FromRequest<AppState> for AnonForm {
    type Rejection = WebError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, WebError> {
        let cookie = session::cookie(req.headers(), csrf_cookie_name(state)).map(str::to_string);
        let client = client_address(&req);
        let form = read_form(req).await?;
        let sent = form.get("csrf").unwrap_or("");
        match cookie {
            Some(c) if ids::is_token(&c, 32, 64) && ct_eq(c.as_bytes(), sent.as_bytes()) => {
                Ok(AnonForm { form, client })
            }
            _ => Err(WebError::Csrf),
        }
    }
}

/// The client's address as the request-id layer found it (the peer, or the address a trusted
/// load balancer forwarded; "unknown" without connection info).
fn client_address(req: &Request) -> String {
    req.extensions().get::<ClientAddr>().map_or_else(|| "unknown".into(), ToString::to_string)
}

fn csrf_cookie_name(state: &AppState) -> &'static str {
    if state.base_url.starts_with("https://") { "__Host-capture_csrf" } else { "capture_csrf" }
}

/// The double-submit token for a sign-in/sign-up page: the visitor's cookie when it has a
/// valid one, else a new token and the `Set-Cookie` value that stores it.
pub fn anon_csrf(state: &AppState, headers: &HeaderMap) -> (String, Option<String>) {
    let name = csrf_cookie_name(state);
    if let Some(c) = session::cookie(headers, name).filter(|c| ids::is_token(c, 32, 64)) {
        return (c.to_string(), None);
    }
    let token = ids::random_string(43);
    let secure = if name.starts_with("__Host-") { "; Secure" } else { "" };
    let cookie = format!("{name}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=86400{secure}");
    (token, Some(cookie))
}

/// A typed id from a website path: anything else is the 404 page, as for another
/// account's id.
pub fn web_id<T: TypedId>(raw: &str) -> Result<T, WebError> {
    T::parse_id(raw).ok_or_else(WebError::not_found)
}

/// The signed-in account as the service functions want it: plan cap and this month's usage.
pub async fn account(state: &AppState, s: &WebSession) -> Result<Account, WebError> {
    Ok(auth::account_of_user(state, &s.user).await?)
}
