//! The outer layers of every call: the request id (echoed or minted; every error body is
//! rendered here so `requestId` equals the header), metrics, the request's trace (`traceparent`
//! in and out), the guard that turns a panic into the JSON 500, and `X-Organization-ID`.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use capture_core::ErrorCode;
use capture_core::ids::is_token;
use futures_util::FutureExt;
use serde_json::json;
use tracing::Instrument;

use super::error::{ApiError, ErrorInfo, error_body};
use crate::state::AppState;

/// The request id, in request extensions.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// The client's address, in request extensions: the socket's peer, or behind a trusted load
/// balancer (`CAPTURE_TRUSTED_PROXIES`) the address its forwarding header gives. Sign-in
/// backoff, sign-up limits and the logs all key on this. None when the server runs without
/// connection info.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub Option<std::net::IpAddr>);

impl std::fmt::Display for ClientAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(ip) => write!(f, "{ip}"),
            None => f.write_str("unknown"),
        }
    }
}

/// The client's address of `req` as [`ClientAddr`] describes it.
fn client_addr(state: &AppState, req: &Request) -> ClientAddr {
    let Some(peer) = req.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip()) else {
        return ClientAddr(None);
    };
    let proxies = &state.cfg.http.trusted_proxies;
    if proxies.is_empty() {
        return ClientAddr(Some(peer));
    }
    let values: Vec<&str> =
        req.headers().get_all(proxies.header().name()).iter().filter_map(|v| v.to_str().ok()).collect();
    ClientAddr(Some(proxies.client(peer, &values)))
}

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
    let client = client_addr(&state, &req);
    req.extensions_mut().insert(client);
    let method = req.method().clone();
    let route = req.extensions().get::<axum::extract::MatchedPath>().map(|p| p.as_str().to_string());
    // Every line logged while the request is served carries its id (work it spawns is
    // instrumented with the same span). Traced, it is the request's server span too (its name and
    // kind are recorded then).
    let span = tracing::info_span!("request", request_id = %id, client = %client, method = %method,
        path = %req.uri().path(), otel.name = tracing::field::Empty, otel.kind = tracing::field::Empty);
    let traced = match state.traces.request_parent(req.uri().path(), req.headers()) {
        Some(parent) => {
            crate::traces::server_span(&span, parent, method.as_str(), route.as_deref(), req.uri().path());
            true
        }
        None => false,
    };
    let path_for_metrics = route.unwrap_or_else(|| metrics_route(req.uri().path()));
    let started = std::time::Instant::now();
    let mut resp = next.run(req).instrument(span.clone()).await;
    let _entered = span.enter();
    if let Some(info) = resp.extensions_mut().remove::<ErrorInfo>() {
        let status = resp.status();
        let mut headers = std::mem::take(resp.headers_mut());
        headers.remove(header::CONTENT_LENGTH);
        let body = error_body(&info, &id);
        resp = (status, super::Json(body)).into_response();
        for (k, v) in headers.iter() {
            if k != header::CONTENT_TYPE {
                resp.headers_mut().insert(k.clone(), v.clone());
            }
        }
    }
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert("x-request-id", v);
    }
    if traced {
        crate::traces::answered(&span, resp.status().as_u16(), resp.headers_mut());
    }
    state.metrics.http_request(method.as_str(), &path_for_metrics, resp.status().as_u16());
    let ms = started.elapsed().as_millis() as u64;
    let status = resp.status().as_u16();
    // The access line (`CAPTURE_LOG=info,capture_server::access=debug` shows it); a 5xx
    // always shows.
    if status >= 500 {
        tracing::warn!(target: "capture_server::access", status, ms, "request answered");
    } else {
        tracing::debug!(target: "capture_server::access", status, ms, "request answered");
    }
    resp
}

/// A handler that panics is answered with the opaque 500 `INTERNAL_ERROR` (rendered with the
/// request id by [`request_id`], whose span this runs in, so the log line of the panic carries
/// the id too) instead of a connection closed with no answer.
pub async fn catch_panic(req: Request, next: Next) -> Response {
    match std::panic::AssertUnwindSafe(next.run(req)).catch_unwind().await {
        Ok(resp) => resp,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            tracing::error!(panic = %what, "a handler panicked");
            ApiError::new(ErrorCode::InternalError, "internal error").into_response()
        }
    }
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
