//! Screenshot jobs: create (JSON and upload), read, list, stream, share, PDF download.
//! The handlers are thin: the operations live in [`service`], shared by REST, MCP tools
//! and the website.

mod files;
pub mod service;
mod share_page;
mod stream;
pub mod types;
mod upload;

use crate::http::Query;
use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use capture_core::ScreenshotId;

pub use files::{pdf_download, pdf_response, serve_file};
pub use share_page::share_page;
pub use stream::stream;
pub use upload::upload;

use self::service::NewJob;
use self::types::{BatchCreated, BulkIn, DeviceList, Job, JobList, ScreenshotQuery, ShareLink};
use crate::auth::Account;
use crate::http::api::Api;
use crate::http::error::ErrorBody;
use crate::http::{ApiResult, Id, IdemCreate, Json};
use crate::paging::ListQuery;
use crate::state::AppState;
use capture_core::options::ScreenshotIn;

/// The screenshot paths and schemas of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(ScreenshotIn, Job, JobList, ShareLink, DeviceList, BulkIn, BatchCreated)))]
pub struct ApiDoc;

/// Routes under `/v1` (authenticated by the caller's router).
pub fn v1_router() -> Api {
    Api::new()
        .op::<__path_create, _, _>(create)
        .op::<upload::__path_upload, _, _>(upload)
        .op::<__path_get_one, _, _>(get_one)
        .op::<stream::__path_stream, _, _>(stream)
        .op::<__path_list, _, _>(list)
        .op::<__path_create_bulk, _, _>(create_bulk)
        .op::<__path_devices, _, _>(devices)
}

/// Routes under `/api` (authenticated by the caller's router).
pub fn api_router() -> Api {
    Api::new().op::<__path_share, _, _>(share).op::<__path_unshare, _, _>(unshare)
}

/// Routes "served by the web application": a Bearer key or the website's session
/// (authenticated by the caller's router).
pub fn web_app_router() -> Api {
    Api::new().op::<files::__path_pdf_download, _, _>(pdf_download)
}

#[utoipa::path(post, path = "/v1/screenshot", tag = "screenshots", request_body = ScreenshotIn,
    params(("Idempotency-Key" = Option<String>, Header, description = "[A-Za-z0-9_-]{8,128}; replays the first response for 24 h")),
    responses((status = 202, body = Job), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
    (status = 409, body = ErrorBody), (status = 422, body = ErrorBody),
    (status = 429, body = ErrorBody, description = "PLAN_QUOTA_EXCEEDED, or QUEUE_FULL: too many of the account's jobs wait; Retry-After"),
    (status = 501, body = ErrorBody, description = "FEATURE_UNAVAILABLE: extract.prompt, and no language model is configured (CAPTURE_LLM_URL)"),
    (status = 503, body = ErrorBody, description = "SERVICE_UNAVAILABLE: the whole queue is full; Retry-After")), security(("api_key" = [])))]
/// Create a capture job.
pub async fn create(create: IdemCreate<ScreenshotIn>) -> Response {
    create
        .run(StatusCode::ACCEPTED, |st, acc, opts, claim| async move {
            let new = NewJob::Capture { opts: &opts, label: None, html_blob: None };
            let created = service::create(&st, &acc, new, claim.as_ref()).await?;
            Ok((created.job, created.used))
        })
        .await
}

#[utoipa::path(get, path = "/v1/screenshot/{id}", tag = "screenshots", params(("id" = String, Path)), responses((status = 200, body = Job), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// One job.
pub async fn get_one(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<ScreenshotId>,
) -> ApiResult<Json<Job>> {
    Ok(Json(service::get(&state, &account, &id).await?))
}

#[utoipa::path(get, path = "/v1/devices", tag = "screenshots",
    responses((status = 200, body = DeviceList)), security(("api_key" = [])))]
/// The device presets a capture's `device` names (also a run's and a session's).
pub async fn devices() -> Json<DeviceList> {
    Json(DeviceList::all())
}

#[utoipa::path(get, path = "/v1/screenshots", tag = "screenshots", params(ScreenshotQuery),
    responses((status = 200, body = JobList)), security(("api_key" = [])))]
/// List jobs, newest first; with `batch`, one bulk request's jobs in its order.
pub async fn list(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Query(q): Query<ScreenshotQuery>,
) -> ApiResult<Json<JobList>> {
    if let Some(batch) = q.batch.as_deref() {
        return Ok(Json(service::list_batch(&state, &account, batch).await?));
    }
    let page = ListQuery { limit: q.limit, before: q.before };
    Ok(Json(service::list(&state, &account, &page).await?))
}

#[utoipa::path(post, path = "/v1/screenshots/bulk", tag = "screenshots", request_body = BulkIn,
    params(("Idempotency-Key" = Option<String>, Header, description = "[A-Za-z0-9_-]{8,128}; one key covers the whole batch; replays the first response for 24 h")),
    responses((status = 202, body = BatchCreated), (status = 400, body = ErrorBody, description = "VALIDATION_ERROR naming the request: requests[3].width"),
    (status = 401, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody),
    (status = 429, body = ErrorBody, description = "PLAN_QUOTA_EXCEEDED (details.fits: how many of the jobs would fit; nothing is created), or QUEUE_FULL"),
    (status = 501, body = ErrorBody, description = "FEATURE_UNAVAILABLE: a request's extract.prompt, and no language model is configured"),
    (status = 503, body = ErrorBody)), security(("api_key" = [])))]
/// Create up to 500 capture jobs at once, all or none; the jobs in the request's order.
pub async fn create_bulk(create: IdemCreate<BulkIn>) -> Response {
    create
        .run(StatusCode::ACCEPTED, |st, acc, all, claim| async move {
            let b = service::create_batch(&st, &acc, &all, claim.as_ref()).await?;
            Ok((BatchCreated { batch_id: b.batch_id, data: b.jobs }, b.used))
        })
        .await
}

#[utoipa::path(post, path = "/api/screenshots/{id}/share", tag = "screenshots", params(("id" = String, Path)), responses((status = 201, body = ShareLink), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// Mint a public share link.
pub async fn share(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<ScreenshotId>,
) -> ApiResult<(StatusCode, Json<ShareLink>)> {
    Ok((StatusCode::CREATED, Json(service::share(&state, &account, &id).await?)))
}

#[utoipa::path(delete, path = "/api/screenshots/{id}/share", tag = "screenshots", params(("id" = String, Path)), responses((status = 204), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// Revoke the share link.
pub async fn unshare(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<ScreenshotId>,
) -> ApiResult<StatusCode> {
    service::unshare(&state, &account, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
