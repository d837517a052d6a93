//! The request pipeline of every call: request id → organisation id → authentication →
//! rate-limit headers → (handler) → error rendering, plus JSON body parsing.

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use capture_core::ErrorCode;
use capture_core::ids::is_token;
use capture_core::time::{MonthWindow, now_ms};
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ErrorInfo, error_body};
use crate::state::AppState;

/// The request id, in request extensions.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// Echo a valid inbound `X-Request-ID`, else mint `req_…`; render error bodies with it;
/// count the request for metrics.
pub async fn request_id(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| is_token(v, 8, 64))
        .map(str::to_string)
        .unwrap_or_else(|| format!("req_{}", capture_core::ids::random_string(20)));
    req.extensions_mut().insert(RequestId(id.clone()));
    let method = req.method().clone();
    let route = req.extensions().get::<axum::extract::MatchedPath>().map(|p| p.as_str().to_string());
    let path_for_metrics = route.unwrap_or_else(|| metrics_route(req.uri().path()));
    let mut resp = next.run(req).await;
    if let Some(info) = resp.extensions_mut().remove::<ErrorInfo>() {
        let status = resp.status();
        let mut headers = std::mem::take(resp.headers_mut());
        headers.remove(header::CONTENT_LENGTH);
        let body = error_body(&info, &id);
        resp = (status, axum::Json(body)).into_response();
        for (k, v) in headers.iter() {
            if k != header::CONTENT_TYPE {
                resp.headers_mut().insert(k.clone(), v.clone());
            }
        }
    }
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert("x-request-id", v);
    }
    state.metrics.http_request(method.as_str(), &path_for_metrics, resp.status().as_u16());
    resp
}

/// Bucket unmatched paths so metrics labels stay bounded.
fn metrics_route(path: &str) -> String {
    let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
    match first {
        "files" => "/files/{name}".into(),
        "s" => "/s/{token}".into(),
        _ => "unmatched".into(),
    }
}

/// Validate `X-Organization-ID` (`[A-Za-z0-9_-]{6,64}`); unknown values are ignored.
pub async fn organization_id(req: Request, next: Next) -> Response {
    if let Some(v) = req.headers().get("x-organization-id") {
        let ok = v.to_str().is_ok_and(|s| is_token(s, 6, 64));
        if !ok {
            return ApiError::new(ErrorCode::InvalidOrganizationId, "X-Organization-ID must match [A-Za-z0-9_-]{6,64}")
                .details(json!({"field": "X-Organization-ID", "reason": "must match [A-Za-z0-9_-]{6,64}"}))
                .into_response();
        }
    }
    next.run(req).await
}

/// The authenticated caller, in request extensions.
#[derive(Debug, Clone)]
pub struct Account {
    pub user: capture_store::User,
    pub key_id: Option<String>,
    pub is_admin: bool,
    /// The plan's monthly cap (also reported for admins, who are not held to it).
    pub plan_limit: i64,
    pub used: i64,
    pub window: MonthWindow,
}

impl Account {
    /// The cap that applies: None for admins.
    pub fn limit(&self) -> Option<i64> {
        (!self.is_admin).then_some(self.plan_limit)
    }
}

/// Usage after the handler changed it (set in response extensions by create handlers).
#[derive(Debug, Clone, Copy)]
pub struct UsageAfter(pub i64);

/// Resolve a bearer API key to its account.
pub async fn authenticate(state: &AppState, headers: &HeaderMap) -> Result<Account, ApiError> {
    let unauthorized = || ApiError::new(ErrorCode::Unauthorized, "missing, unknown or revoked API key");
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .ok_or_else(unauthorized)?;
    if !token.starts_with("sk_live_") || token.len() > 200 {
        return Err(unauthorized());
    }
    let window = MonthWindow::containing(now_ms());
    let hash = crate::crypto::sha256_hex(token.as_bytes());
    // Read the version before the lookup: a change committed in between makes the
    // cached entry stale at once (see hotcache).
    let version = state.store.auth_version();
    if let Some(v) = version
        && let Some((user, key_id)) = state.hot.key(&hash, v)
    {
        let used = match state.hot.usage(&user.id, &window.label) {
            Some(u) => u,
            None => {
                let u = state.store.month_usage(&user.id, &window.label).await?;
                state.hot.put_usage(&user.id, &window.label, u);
                u
            }
        };
        return Ok(state.account_for(user, Some(key_id), used, window));
    }
    let rec = state.store.authenticate(&hash, &window.label).await?.ok_or_else(unauthorized)?;
    if let Some(v) = version {
        state.hot.put_key(&hash, &rec.user, &rec.key_id, v);
    }
    state.hot.put_usage(&rec.user.id, &window.label, rec.used);
    Ok(state.account_for(rec.user, Some(rec.key_id), rec.used, window))
}

/// Authenticate every call of the router it wraps and add `X-RateLimit-*` headers to
/// every authenticated response, errors included. Accepts an API key, or an OAuth access
/// token issued for the REST API itself (audience `{base_url}`, what `capture login`
/// asks for); tokens minted for the MCP server (audience `{base_url}/mcp`) are refused.
pub async fn require_api_key(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let audiences = [state.base_url.as_str()];
    match account_from_credential(&state, req.headers(), &audiences).await {
        Ok(account) => run_as(&state, account, req, next).await,
        Err(e) => e.into_response(),
    }
}

/// Like [`require_api_key`], but OAuth tokens of either audience (REST or MCP) pass: the
/// contract lets the balance accept the CLI's and the MCP clients' sessions.
pub async fn require_api_key_or_oauth(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let mcp = crate::oauth::mcp_resource(&state);
    let audiences = [state.base_url.as_str(), mcp.as_str()];
    match account_from_credential(&state, req.headers(), &audiences).await {
        Ok(account) => run_as(&state, account, req, next).await,
        Err(e) => e.into_response(),
    }
}

/// An API key, or an OAuth access token whose audience is one of `audiences`.
async fn account_from_credential(
    state: &AppState,
    headers: &HeaderMap,
    audiences: &[&str],
) -> Result<Account, ApiError> {
    match crate::oauth::bearer(headers) {
        Some(t) if crate::oauth::looks_like_access_token(t) => {
            crate::oauth::account_for_access_token(state, t, audiences).await?.ok_or_else(|| {
                ApiError::new(
                    ErrorCode::Unauthorized,
                    "unknown, expired or revoked access token (or one issued for another resource)",
                )
            })
        }
        _ => authenticate(state, headers).await,
    }
}

/// Run the handler as `account` and add the rate-limit headers to its response.
async fn run_as(state: &AppState, account: Account, mut req: Request, next: Next) -> Response {
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

/// A JSON object body: 415 without a JSON content type, 413 past the limit, 400 when
/// it is not valid JSON or not an object.
pub struct JsonObject(pub Map<String, Value>, pub Bytes);

impl<S: Send + Sync> FromRequest<S> for JsonObject {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, ApiError> {
        let ct =
            req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
        let essence = ct.split(';').next().unwrap_or("").trim().to_string();
        if !(essence == "application/json" || essence.ends_with("+json")) {
            return Err(ApiError::new(
                ErrorCode::UnsupportedMediaType,
                "send the body as JSON with Content-Type: application/json",
            ));
        }
        let bytes = read_body(req.into_body(), JSON_LIMIT).await?;
        let v: Value = serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("malformed JSON: {e}")))?;
        match v {
            Value::Object(m) => Ok(JsonObject(m, bytes)),
            _ => Err(ApiError::new(ErrorCode::InvalidJson, "the body must be a JSON object")),
        }
    }
}

/// Largest JSON body accepted (preScreenshotJs is ≤ 16 KiB, so this is generous).
pub const JSON_LIMIT: usize = 256 * 1024;

/// Read a body up to `limit` bytes, 413 beyond.
pub async fn read_body(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        let too_large = std::error::Error::source(&e).is_some_and(|s| s.to_string().contains("length limit"))
            || e.to_string().contains("length limit");
        if too_large {
            ApiError::new(ErrorCode::PayloadTooLarge, format!("the body is larger than {limit} bytes"))
        } else {
            ApiError::new(ErrorCode::InvalidJson, "could not read the request body")
        }
    })
}
