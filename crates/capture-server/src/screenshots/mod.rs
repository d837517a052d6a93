//! Screenshot jobs: create (JSON and upload), read, list, stream, share, PDF download.
//! The handlers are thin: the operations live in [`service`], shared by REST, MCP tools
//! and the website.

mod files;
pub mod service;
mod share_page;
mod stream;
pub mod types;
mod upload;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use capture_core::ids;
use capture_core::options::CaptureOptions;
use serde_json::{Value, json};

pub use files::{pdf_download, serve_file};
pub use service::{ListQuery, TaskPayload, create_job, find, job_json, list_jobs};
pub use share_page::share_page;
pub use stream::stream;
pub use upload::upload;

use crate::auth::Account;
use crate::http::{ApiError, ApiResult, JsonObject};
use crate::idempotency::idempotent;
use crate::state::AppState;

/// The screenshot paths and schemas of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(create, upload::upload, get_one, list, stream::stream, share, unshare, files::pdf_download),
    components(schemas(types::ScreenshotRequest, types::Job, types::JobList, types::ShareLink))
)]
pub struct ApiDoc;

/// Routes under `/v1` (authenticated by the caller's router).
pub fn v1_router() -> Router<AppState> {
    Router::new()
        .route("/v1/screenshot", post(create))
        .route("/v1/screenshot/upload", post(upload))
        .route("/v1/screenshot/{id}", get(get_one))
        .route("/v1/screenshot/{id}/stream", get(stream))
        .route("/v1/screenshots", get(list))
}

/// Routes under `/api` (authenticated by the caller's router).
pub fn api_router() -> Router<AppState> {
    Router::new()
        .route("/api/screenshots/{id}/share", post(share).delete(unshare))
        .route("/api/pdf/download/{id}", get(pdf_download))
}

#[utoipa::path(post, path = "/v1/screenshot", tag = "screenshots", request_body = crate::screenshots::types::ScreenshotRequest,
    params(("Idempotency-Key" = Option<String>, Header, description = "[A-Za-z0-9_-]{8,128}; replays the first response for 24 h")),
    responses((status = 202, body = crate::screenshots::types::Job), (status = 400, body = crate::http::error::ErrorBody), (status = 401, body = crate::http::error::ErrorBody),
    (status = 409, body = crate::http::error::ErrorBody), (status = 422, body = crate::http::error::ErrorBody),
    (status = 429, body = crate::http::error::ErrorBody, description = "PLAN_QUOTA_EXCEEDED, or QUEUE_FULL: too many of the account's jobs wait; Retry-After"),
    (status = 503, body = crate::http::error::ErrorBody, description = "SERVICE_UNAVAILABLE: the whole queue is full; Retry-After")), security(("api_key" = [])))]
/// Create a capture job.
pub async fn create(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    headers: HeaderMap,
    JsonObject(body, _raw): JsonObject,
) -> Response {
    let opts = match CaptureOptions::from_json(&body, true) {
        Ok(o) => o,
        Err(e) => return ApiError::validation(e).into_response(),
    };
    // serde_json maps are ordered by key, so this is a canonical form of the body.
    let hash = crate::crypto::sha256_hex(Value::Object(body).to_string().as_bytes());
    let (st, acc) = (state.clone(), account.clone());
    idempotent(&state, &account, &headers, "POST /v1/screenshot", hash, move |claim| async move {
        let (row, used) = create_job(&st, &acc, &opts, None, None, claim.as_ref()).await?;
        Ok((StatusCode::ACCEPTED, job_json(&st, &row).await, used))
    })
    .await
}

#[utoipa::path(get, path = "/v1/screenshot/{id}", tag = "screenshots", params(("id" = String, Path)), responses((status = 200, body = crate::screenshots::types::Job), (status = 404, body = crate::http::error::ErrorBody)), security(("api_key" = [])))]
/// One job.
pub async fn get_one(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let row = find(&state, &account, &id).await?;
    Ok(Json(job_json(&state, &row).await))
}

#[utoipa::path(get, path = "/v1/screenshots", tag = "screenshots", params(("limit" = Option<u32>, Query, description = "1–100, default 20"), ("before" = Option<String>, Query, description = "nextCursor or an ISO 8601 timestamp")),
    responses((status = 200, body = crate::screenshots::types::JobList)), security(("api_key" = [])))]
/// List jobs, newest first.
pub async fn list(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<Value>> {
    Ok(Json(list_jobs(&state, &account, q.limit.as_deref(), q.before.as_deref()).await?))
}

#[utoipa::path(post, path = "/api/screenshots/{id}/share", tag = "screenshots", params(("id" = String, Path)), responses((status = 201, body = crate::screenshots::types::ShareLink), (status = 404, body = crate::http::error::ErrorBody)), security(("api_key" = [])))]
/// Mint a public share link.
pub async fn share(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    find(&state, &account, &id).await?;
    let token = state
        .store
        .share(&account.user.id, &id, &ids::random_string(32))
        .await?
        .ok_or_else(|| ApiError::not_found("screenshot"))?;
    Ok((StatusCode::CREATED, Json(json!({"shareUrl": format!("{}/s/{token}", state.base_url), "screenshotId": id}))))
}

#[utoipa::path(delete, path = "/api/screenshots/{id}/share", tag = "screenshots", params(("id" = String, Path)), responses((status = 204), (status = 404, body = crate::http::error::ErrorBody)), security(("api_key" = [])))]
/// Revoke the share link.
pub async fn unshare(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    find(&state, &account, &id).await?;
    state.store.unshare(&account.user.id, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
