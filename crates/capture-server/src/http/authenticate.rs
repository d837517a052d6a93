//! Authentication of `/v1` and `/api` calls and the `X-RateLimit-*` headers on every
//! authenticated response, errors included.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use capture_core::ErrorCode;

use super::error::ApiError;
use crate::auth::{self, Account, Refused, UsageAfter};
use crate::state::AppState;

/// Authenticate every call of the router it wraps and add `X-RateLimit-*` headers to
/// every authenticated response, errors included. Accepts an API key, or an OAuth access
/// token issued for the REST API itself (audience `{base_url}`, what `capture login`
/// asks for); tokens minted for the MCP server (audience `{base_url}/mcp`) are refused.
pub async fn require_api_key(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let audiences = [auth::api_resource(&state)];
    match auth::from_request(&state, req.headers(), &audiences).await {
        Ok(account) => run_as(&state, account, req, next).await,
        Err(e) => refusal(e).into_response(),
    }
}

/// Like [`require_api_key`], but OAuth tokens of either audience (REST or MCP) pass: the
/// contract lets the balance accept the CLI's and the MCP clients' sessions.
pub async fn require_api_key_or_oauth(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let mcp = auth::mcp_resource(&state);
    let audiences = [auth::api_resource(&state), mcp.as_str()];
    match auth::from_request(&state, req.headers(), &audiences).await {
        Ok(account) => run_as(&state, account, req, next).await,
        Err(e) => refusal(e).into_response(),
    }
}

pub(crate) fn refusal(e: Refused) -> ApiError {
    match e {
        Refused::ApiKey => ApiError::new(ErrorCode::Unauthorized, "missing, unknown or revoked API key"),
        Refused::AccessToken => ApiError::new(
            ErrorCode::Unauthorized,
            "unknown, expired or revoked access token (or one issued for another resource)",
        ),
        Refused::Store(e) => e.into(),
    }
}

/// Run the handler as `account` and add the rate-limit headers to its response.
pub(crate) async fn run_as(state: &AppState, account: Account, mut req: Request, next: Next) -> Response {
    req.extensions_mut().insert(account.clone());
    let mut resp = next.run(req).await;
    let after = resp.extensions().get::<UsageAfter>().map(|u| u.0);
    if let Some(u) = after {
        state.hot.put_usage(&account.user.id, &account.window.label, u);
    }
    let used = after.unwrap_or(account.used);
    rate_limit_headers(resp.headers_mut(), &account, used);
    resp
}

/// Write the `X-RateLimit-*` headers (and `Retry-After` on 429).
pub fn rate_limit_headers(h: &mut HeaderMap, a: &Account, used: i64) {
    let remaining = (a.plan_limit - used).max(0);
    let put = |h: &mut HeaderMap, k: &'static str, v: String| {
        if let Ok(v) = HeaderValue::from_str(&v) {
            h.insert(k, v);
        }
    };
    put(h, "x-ratelimit-limit", a.plan_limit.to_string());
    put(h, "x-ratelimit-remaining", remaining.to_string());
    put(h, "x-ratelimit-reset", a.window.reset_secs().to_string());
    if a.is_admin {
        put(h, "x-ratelimit-policy", "admin-unlimited".into());
    } else if a.user.legacy_free {
        put(h, "x-ratelimit-policy", "legacy-free-grandfathered".into());
    }
}
