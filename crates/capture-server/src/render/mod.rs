//! Render links (`GET /v1/render`, signed, no API key) and their keys (`/v1/render-keys`,
//! with an API key). [`service`] holds the operations.

pub mod service;
pub mod types;

use axum::Extension;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use capture_core::RenderKeyId;

use self::service::Answer;
use self::types::{RenderKey, RenderKeyCreated, RenderKeyIn, RenderKeyList, RenderPending};
use crate::auth::Account;
use crate::http::api::Api;
use crate::http::error::ErrorBody;
use crate::http::{ApiResult, Id, Json, ValidatedJson};
use crate::state::AppState;

/// The render paths and schemas of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(RenderKeyIn, RenderKey, RenderKeyCreated, RenderKeyList, RenderPending)))]
pub struct ApiDoc;

/// The key routes (authenticated by the caller's router).
pub fn keys_router() -> Api {
    Api::new()
        .op::<__path_create_key_handler, _, _>(create_key_handler)
        .op::<__path_list_keys_handler, _, _>(list_keys_handler)
        .op::<__path_delete_key_handler, _, _>(delete_key_handler)
}

/// The link itself: its signature is its credential.
pub fn public_router() -> Api {
    Api::new().op::<__path_render_handler, _, _>(render_handler)
}

#[utoipa::path(post, path = "/v1/render-keys", tag = "render links", request_body = RenderKeyIn,
    responses((status = 201, body = RenderKeyCreated), (status = 400, body = ErrorBody)), security(("api_key" = [])))]
/// Make a link key; the answer carries its signing secret, shown this once.
async fn create_key_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    ValidatedJson { valid: name, .. }: ValidatedJson<RenderKeyIn>,
) -> ApiResult<(StatusCode, Json<RenderKeyCreated>)> {
    Ok((StatusCode::CREATED, Json(service::create_key(&state, &account, name).await?)))
}

#[utoipa::path(get, path = "/v1/render-keys", tag = "render links", responses((status = 200, body = RenderKeyList)), security(("api_key" = [])))]
/// The caller's link keys in force (no secrets).
async fn list_keys_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
) -> ApiResult<Json<RenderKeyList>> {
    Ok(Json(service::list_keys(&state, &account).await?))
}

#[utoipa::path(delete, path = "/v1/render-keys/{id}", tag = "render links", params(("id" = String, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// Revoke a link key: every link it signed answers 403 from now on.
async fn delete_key_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<RenderKeyId>,
) -> ApiResult<StatusCode> {
    service::delete_key(&state, &account, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/v1/render", tag = "render links",
    params(
        ("url" = String, Query, description = "The page; every other capture option may follow, as in POST /v1/screenshot (objects and lists as JSON)"),
        ("key" = String, Query, description = "The link key's id (rlk_…)"),
        ("expires" = Option<i64>, Query, description = "Unix seconds after which the link answers 403"),
        ("capturesPerHour" = Option<u32>, Query, description = "Captures the link may start in an hour (1-1000, default 60); past that 429 RATE_LIMITED, cache hits still served"),
        ("signature" = String, Query, description = "Last: hex HMAC-SHA256, keyed with the link key's secret, of the query string exactly as sent up to &signature="),
    ),
    responses(
        (status = 200, description = "The image or PDF (Content-Type, Content-Length, ETag, Cache-Control; X-Cache HIT with Age when served from an earlier capture)"),
        (status = 202, body = RenderPending, description = "Not done within 60 s: the same link answers the file once it is"),
        (status = 304, description = "If-None-Match names the file served"),
        (status = 401, body = ErrorBody, description = "No or a wrong signature (costs nothing)"),
        (status = 403, body = ErrorBody, description = "Expired link or revoked key (costs nothing)"),
        (status = 429, body = ErrorBody, description = "RATE_LIMITED: the link started capturesPerHour captures in the last hour (Retry-After; costs nothing)"),
        (status = 502, body = ErrorBody, description = "CAPTURE_FAILED: the page could not be captured (for a minute after, views get the same answer without a new capture)"),
    ))]
/// A signed link's capture, answered as the file itself (for an `<img src>`): captured on
/// first view (one action), from cache after (free); HEAD answers the headers.
async fn render_handler(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let verified = service::verify(&state, q.as_deref().unwrap_or("")).await?;
    let answer = service::render(&state, verified).await?;
    Ok(match answer {
        Answer::File { bytes, name, etag, max_age, hit } => {
            let same = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) == Some(etag.as_str());
            let mut r = if same {
                StatusCode::NOT_MODIFIED.into_response()
            } else {
                let len = bytes.len();
                let mut r = (StatusCode::OK, bytes).into_response();
                r.headers_mut().insert(header::CONTENT_LENGTH, HeaderValue::from(len));
                r
            };
            let h = r.headers_mut();
            crate::blob::serve_headers(&name, h);
            if let Ok(v) = HeaderValue::from_str(&etag) {
                h.insert(header::ETAG, v);
            }
            if let Ok(v) = HeaderValue::from_str(&format!("public, max-age={max_age}")) {
                h.insert(header::CACHE_CONTROL, v);
            }
            h.insert("x-cache", HeaderValue::from_static(if hit.is_some() { "HIT" } else { "MISS" }));
            if let Some(age) = hit {
                h.insert(header::AGE, HeaderValue::from(age));
            }
            h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
            r
        }
        Answer::Pending(p) => {
            let mut r = (StatusCode::ACCEPTED, Json(p)).into_response();
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            r
        }
    })
}
