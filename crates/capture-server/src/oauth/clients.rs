//! OAuth clients: dynamic registration (RFC 7591) and client ID metadata documents (a
//! `client_id` that is an https URL naming a JSON document about the client). Every client
//! is public (`token_endpoint_auth_method: none`) and proves itself with PKCE.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use capture_core::ids;
use capture_store::OAuthClient;
use serde_json::{Map, Value, json};

use super::{OAuthError, cors};
use crate::state::AppState;

/// Most redirect URIs one client may register.
const MAX_REDIRECT_URIS: usize = 10;
/// Longest accepted redirect URI.
const MAX_URI_LEN: usize = 2000;
/// Largest registration request or metadata document.
const MAX_METADATA_BYTES: usize = 16 * 1024;
/// How long a fetched metadata document is trusted before it is fetched again.
const METADATA_TTL_MS: i64 = 3600 * 1000;

/// Why a redirect URI is refused, or `Ok` for one we accept: https; http only to a loopback
/// host (native apps, RFC 8252 §7.3); or a private-use scheme of a native app (RFC 8252
/// §7.1, e.g. `cursor://…`). Never a fragment, credentials, or a scheme a browser would run.
pub fn redirect_uri_allowed(raw: &str) -> Result<(), String> {
    if raw.len() > MAX_URI_LEN {
        return Err(format!("redirect URIs must be at most {MAX_URI_LEN} characters"));
    }
    let u = url::Url::parse(raw).map_err(|e| format!("'{raw}' is not an absolute URI ({e})"))?;
    if u.fragment().is_some() {
        return Err(format!("'{raw}' must not contain a fragment"));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(format!("'{raw}' must not contain credentials"));
    }
    match u.scheme() {
        "https" if u.host_str().is_some_and(|h| !h.is_empty()) => Ok(()),
        "https" => Err(format!("'{raw}' has no host")),
        "http" if is_loopback_redirect(&u) => Ok(()),
        "http" => Err(format!(
            "'{raw}' uses plain http: use https, or http://127.0.0.1, http://[::1] or http://localhost for a native app"
        )),
        "javascript" | "data" | "file" | "vbscript" | "about" | "blob" | "ws" | "wss" | "ftp" => {
            Err(format!("'{raw}' uses a scheme that cannot receive an authorization response"))
        }
        _ => Ok(()),
    }
}

/// An `http` URI to a loopback host (`127.0.0.1`, `[::1]`, `localhost`).
pub fn is_loopback_redirect(u: &url::Url) -> bool {
    u.scheme() == "http"
        && match u.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            None => false,
        }
}

/// Does the requested redirect URI match one the client registered? Exact string match,
/// except that a loopback redirect may use any port (RFC 8252 §7.3: native apps pick a free
/// port at run time). Returns the URI to send the response to.
pub fn match_redirect(client: &OAuthClient, requested: &str) -> Option<String> {
    if client.redirect_uris.iter().any(|r| r == requested) {
        return Some(requested.to_string());
    }
    let req = url::Url::parse(requested).ok().filter(is_loopback_redirect)?;
    client.redirect_uris.iter().find_map(|r| {
        let reg = url::Url::parse(r).ok().filter(is_loopback_redirect)?;
        (reg.host() == req.host() && reg.path() == req.path() && reg.query() == req.query())
            .then(|| requested.to_string())
    })
}

fn invalid_metadata(msg: impl Into<String>) -> OAuthError {
    OAuthError::bad("invalid_client_metadata", msg)
}

fn string_list(v: Option<&Value>, field: &str) -> Result<Option<Vec<String>>, OAuthError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_str().map(str::to_string).ok_or_else(|| invalid_metadata(format!("{field} must hold strings")))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(invalid_metadata(format!("{field} must be an array of strings"))),
    }
}

fn optional_string(m: &Map<String, Value>, field: &str, max: usize) -> Result<Option<String>, OAuthError> {
    match m.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.chars().count() <= max => Ok(Some(s.clone())),
        Some(Value::String(_)) => Err(invalid_metadata(format!("{field} must be at most {max} characters"))),
        Some(_) => Err(invalid_metadata(format!("{field} must be a string"))),
    }
}

/// Check the client metadata we act on (shared by registration and metadata documents).
/// Returns `(client_name, redirect_uris)`.
fn check_metadata(m: &Map<String, Value>) -> Result<(Option<String>, Vec<String>), OAuthError> {
    let uris = string_list(m.get("redirect_uris"), "redirect_uris")?
        .filter(|u| !u.is_empty())
        .ok_or_else(|| OAuthError::bad("invalid_redirect_uri", "redirect_uris must list at least one URI"))?;
    if uris.len() > MAX_REDIRECT_URIS {
        return Err(OAuthError::bad("invalid_redirect_uri", format!("at most {MAX_REDIRECT_URIS} redirect URIs")));
    }
    for u in &uris {
        redirect_uri_allowed(u).map_err(|e| OAuthError::bad("invalid_redirect_uri", e))?;
    }
    let grants = string_list(m.get("grant_types"), "grant_types")?.unwrap_or_default();
    if let Some(g) = grants.iter().find(|g| *g != "authorization_code" && *g != "refresh_token") {
        return Err(invalid_metadata(format!(
            "grant type '{g}' is not supported (authorization_code and refresh_token are)"
        )));
    }
    let types = string_list(m.get("response_types"), "response_types")?.unwrap_or_default();
    if types.iter().any(|t| t != "code") {
        return Err(invalid_metadata("only the 'code' response type is supported"));
    }
    match m.get("token_endpoint_auth_method") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == "none" => {}
        Some(_) => {
            return Err(invalid_metadata(
                "only public clients are supported: token_endpoint_auth_method must be 'none' (PKCE protects the code)",
            ));
        }
    }
    let name = optional_string(m, "client_name", 200)?;
    Ok((name, uris))
}

/// `POST /oauth/register` (RFC 7591): register a public client.
pub async fn register(State(state): State<AppState>, body: axum::body::Bytes) -> Response {
    match register_inner(&state, &body).await {
        Ok(v) => {
            cors((StatusCode::CREATED, [(axum::http::header::CACHE_CONTROL, "no-store")], Json(v)).into_response())
        }
        Err(e) => e.into_response(),
    }
}

async fn register_inner(state: &AppState, body: &[u8]) -> Result<Value, OAuthError> {
    if body.len() > MAX_METADATA_BYTES {
        return Err(invalid_metadata(format!("the registration request must be at most {MAX_METADATA_BYTES} bytes")));
    }
    let m: Map<String, Value> = serde_json::from_slice(body)
        .map_err(|e| invalid_metadata(format!("the body must be a JSON object of client metadata ({e})")))?;
    let (name, uris) = check_metadata(&m)?;
    let now = state.clock.now_ms();
    let client = OAuthClient {
        client_id: ids::new_id("oc"),
        client_name: name.clone(),
        redirect_uris: uris.clone(),
        token_endpoint_auth_method: "none".into(),
        metadata_url: None,
        metadata: Some(Value::Object(m.clone()).to_string()),
        created_at: now,
    };
    state.store.upsert_oauth_client(&client).await?;
    let mut out = m;
    out.insert("client_id".into(), json!(client.client_id));
    out.insert("client_id_issued_at".into(), json!(now / 1000));
    out.insert("redirect_uris".into(), json!(uris));
    out.insert("token_endpoint_auth_method".into(), json!("none"));
    out.insert("grant_types".into(), json!(["authorization_code", "refresh_token"]));
    out.insert("response_types".into(), json!(["code"]));
    out.insert("scope".into(), json!(super::SCOPE));
    out.remove("client_secret");
    out.remove("client_secret_expires_at");
    tracing::info!(client_id = %client.client_id, name = ?name, "OAuth client registered");
    Ok(Value::Object(out))
}

/// Whether `client_id` is a client ID metadata document URL.
fn is_metadata_url(client_id: &str) -> bool {
    client_id.starts_with("https://") || client_id.starts_with("http://")
}

/// Why resolving a client failed (shown on the authorization error page, or as
/// `invalid_client` at the token endpoint).
#[derive(Debug)]
pub enum ClientError {
    Unknown,
    Metadata(String),
    Internal(crate::http::ApiError),
}

impl From<capture_store::StoreError> for ClientError {
    fn from(e: capture_store::StoreError) -> Self {
        ClientError::Internal(e.into())
    }
}

impl ClientError {
    /// Text for people and `error_description`.
    pub fn describe(&self) -> String {
        match self {
            ClientError::Unknown => "unknown client_id: register the client first (POST /oauth/register)".into(),
            ClientError::Metadata(m) => format!("the client's metadata document was refused: {m}"),
            ClientError::Internal(_) => "internal error".into(),
        }
    }
}

/// The client named `client_id`: a registered one, or the document at a metadata URL
/// (fetched through the egress guard and cached for an hour).
pub async fn resolve(state: &AppState, client_id: &str) -> Result<OAuthClient, ClientError> {
    if client_id.is_empty() || client_id.len() > MAX_URI_LEN {
        return Err(ClientError::Unknown);
    }
    let stored = state.store.oauth_client(client_id).await?;
    if !is_metadata_url(client_id) {
        return stored.ok_or(ClientError::Unknown);
    }
    if let Some(c) = stored.filter(|c| state.clock.now_ms() - c.created_at < METADATA_TTL_MS) {
        return Ok(c);
    }
    let doc = fetch_metadata_document(state, client_id).await.map_err(ClientError::Metadata)?;
    let (name, uris) = check_metadata(&doc).map_err(|e| ClientError::Metadata(e.description))?;
    let client = OAuthClient {
        client_id: client_id.to_string(),
        client_name: name,
        redirect_uris: uris,
        token_endpoint_auth_method: "none".into(),
        metadata_url: Some(client_id.to_string()),
        metadata: Some(Value::Object(doc).to_string()),
        created_at: state.clock.now_ms(),
    };
    state.store.upsert_oauth_client(&client).await?;
    Ok(client)
}

/// Fetch and parse a client ID metadata document. The URL must be https with a path (http
/// to a loopback host is accepted only where private networks are allowed, for tests);
/// private addresses are refused unless the operator allows them; no redirects are
/// followed; the document's `client_id` must equal the URL.
async fn fetch_metadata_document(state: &AppState, url: &str) -> Result<Map<String, Value>, String> {
    let u = url::Url::parse(url).map_err(|e| format!("client_id is not a valid URL ({e})"))?;
    match u.scheme() {
        "https" => {}
        // Plain http only where the operator allowed the (loopback) address: local testing.
        "http" if is_loopback_redirect(&u) && crate::egress::check_url(&u, &state.egress).is_ok() => {}
        _ => return Err("a client_id URL must use https".into()),
    }
    if u.path() == "/"
        || u.path().is_empty()
        || u.fragment().is_some()
        || !u.username().is_empty()
        || u.password().is_some()
    {
        return Err("a client_id URL must have a path and no fragment or credentials".into());
    }
    if u.path().split('/').any(|seg| seg == "." || seg == "..") {
        return Err("a client_id URL must not contain dot segments".into());
    }
    if crate::egress::check_url(&u, &state.egress).is_err() {
        return Err("the client_id URL points at a private address".into());
    }
    let client = crate::egress::client(state.egress.clone(), Duration::from_secs(5));
    let resp = client
        .get(u.as_str())
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| format!("fetching it failed ({})", without_url(&e)))?;
    if !resp.status().is_success() {
        return Err(format!("fetching it answered HTTP {}", resp.status().as_u16()));
    }
    let mut body = Vec::new();
    let mut resp = resp;
    while let Some(chunk) = resp.chunk().await.map_err(|e| format!("reading it failed ({})", without_url(&e)))? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_METADATA_BYTES {
            return Err(format!("the document is larger than {MAX_METADATA_BYTES} bytes"));
        }
    }
    let doc: Map<String, Value> =
        serde_json::from_slice(&body).map_err(|e| format!("the document is not a JSON object ({e})"))?;
    if doc.get("client_id").and_then(Value::as_str) != Some(url) {
        return Err("its client_id does not equal the URL it was fetched from".into());
    }
    if doc.contains_key("client_secret") || doc.contains_key("client_secret_expires_at") {
        return Err("a metadata document must not carry a client secret".into());
    }
    Ok(doc)
}

fn without_url(e: &reqwest::Error) -> String {
    let s = e.to_string();
    match e.url() {
        Some(u) => s.replace(u.as_str(), "the URL"),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(uris: &[&str]) -> OAuthClient {
        OAuthClient {
            client_id: "oc_x".into(),
            client_name: None,
            redirect_uris: uris.iter().map(|s| s.to_string()).collect(),
            token_endpoint_auth_method: "none".into(),
            metadata_url: None,
            metadata: None,
            created_at: 0,
        }
    }

    #[test]
    fn redirect_uris_must_be_https_or_loopback() {
        assert!(redirect_uri_allowed("https://app.example.com/cb").is_ok());
        assert!(redirect_uri_allowed("http://127.0.0.1:5555/callback").is_ok());
        assert!(redirect_uri_allowed("http://[::1]/cb").is_ok());
        assert!(redirect_uri_allowed("http://localhost:8000/cb").is_ok());
        assert!(redirect_uri_allowed("cursor://anysphere.cursor-mcp/oauth/callback").is_ok());
        assert!(redirect_uri_allowed("http://example.com/cb").is_err());
        assert!(redirect_uri_allowed("https://app.example.com/cb#frag").is_err());
        assert!(redirect_uri_allowed("javascript:alert(1)").is_err());
        assert!(redirect_uri_allowed("relative/path").is_err());
    }

    #[test]
    fn loopback_redirects_match_on_any_port_and_others_exactly() {
        let c = client(&["http://127.0.0.1:3000/callback", "https://app.example.com/cb"]);
        assert!(match_redirect(&c, "http://127.0.0.1:49152/callback").is_some());
        assert!(match_redirect(&c, "http://127.0.0.1/callback").is_some());
        assert!(match_redirect(&c, "http://127.0.0.1:3000/other").is_none());
        assert!(match_redirect(&c, "http://localhost:3000/callback").is_none());
        assert!(match_redirect(&c, "https://app.example.com/cb").is_some());
        assert!(match_redirect(&c, "https://app.example.com/cb/").is_none());
        assert!(match_redirect(&c, "https://app.example.com:8443/cb").is_none());
    }
}
