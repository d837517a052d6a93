//! Website sessions: an opaque random cookie (`capture_session`, HttpOnly, SameSite=Lax,
//! Secure on https) whose SHA-256 is the key of the stored session; a per-session CSRF
//! token that every form must echo.

use axum::http::{HeaderMap, header};
use capture_core::ids;
use capture_store::User;

use crate::crypto::{ct_eq, sha256_hex};
use crate::http::ApiError;
use crate::state::AppState;

/// The session cookie's name.
pub const COOKIE: &str = "capture_session";
/// How long a session lasts.
pub const LIFETIME_MS: i64 = 7 * 24 * 3600 * 1000;

/// A signed-in visitor.
#[derive(Debug, Clone)]
pub struct WebSession {
    pub user: User,
    /// The token forms must send back as `csrf`.
    pub csrf: String,
    pub id_hash: String,
}

impl WebSession {
    /// Does `token` match this session's CSRF token (constant time)?
    pub fn csrf_ok(&self, token: &str) -> bool {
        ct_eq(self.csrf.as_bytes(), token.as_bytes())
    }
}

/// The value of cookie `name` in the request, if any.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// The session of this request, if it carries a live one.
pub async fn current(state: &AppState, headers: &HeaderMap) -> Result<Option<WebSession>, ApiError> {
    let Some(raw) = cookie(headers, COOKIE).filter(|v| ids::is_token(v, 20, 128)) else { return Ok(None) };
    let id_hash = sha256_hex(raw.as_bytes());
    Ok(state.store.web_session(&id_hash, state.clock.now_ms()).await?.map(|r| WebSession {
        user: r.user,
        csrf: r.csrf_token,
        id_hash,
    }))
}

fn secure(state: &AppState) -> &'static str {
    if state.base_url.starts_with("https://") { "; Secure" } else { "" }
}

/// Start a session for `user_id`; returns the `Set-Cookie` value.
pub async fn start(state: &AppState, user_id: &str) -> Result<String, ApiError> {
    let raw = ids::random_string(43);
    let csrf = ids::random_string(32);
    let now = state.clock.now_ms();
    state.store.create_web_session(&sha256_hex(raw.as_bytes()), user_id, &csrf, now, now + LIFETIME_MS).await?;
    Ok(format!("{COOKIE}={raw}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{}", LIFETIME_MS / 1000, secure(state)))
}

/// End the request's session (if any); returns the `Set-Cookie` value that clears it.
pub async fn end(state: &AppState, headers: &HeaderMap) -> Result<String, ApiError> {
    if let Some(raw) = cookie(headers, COOKIE) {
        state.store.delete_web_session(&sha256_hex(raw.as_bytes())).await?;
    }
    Ok(format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{}", secure(state)))
}

/// Middleware of the routes "served by the web application" (`/api/pdf/download/{id}`):
/// a Bearer credential as for every API route, or else the website's session cookie, with
/// the same `X-RateLimit-*` headers. A GET there changes nothing, so the cookie
/// (`SameSite=Lax`) needs no CSRF token.
pub async fn require_api_key_or_session(
    axum::extract::State(state): axum::extract::State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;

    use crate::auth::Refused;
    use crate::http::authenticate::{refusal, require_api_key, run_as};
    if req.headers().contains_key(header::AUTHORIZATION) {
        return require_api_key(axum::extract::State(state), req, next).await;
    }
    let user = match current(&state, req.headers()).await {
        Ok(Some(s)) => s.user,
        Ok(None) => return refusal(Refused::ApiKey).into_response(),
        Err(e) => return e.into_response(),
    };
    match crate::auth::account_of_user(&state, &user).await {
        Ok(account) => run_as(&state, account, req, next).await,
        Err(e) => refusal(Refused::Store(e)).into_response(),
    }
}
