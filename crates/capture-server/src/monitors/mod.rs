//! Monitors (`/v1/monitors`): a page captured on a schedule and compared with its baseline,
//! pixels and text, with `monitor.changed` and `monitor.failing` events and optional mail.
//! The handlers are thin: the operations live in [`service`], the scheduler's side (due runs,
//! comparisons) in [`check`].

pub mod check;
pub mod mail;
pub mod service;
pub mod settings;
pub mod types;

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use capture_core::{MonitorCheckId, MonitorId, TypedId};

use self::types::*;
use crate::auth::Account;
use crate::error::Error;
use crate::http::api::Api;
use crate::http::error::ErrorBody;
use crate::http::{ApiResult, Id, Json, Path, Query, ValidatedJson};
use crate::paging::ListQuery;
use crate::state::AppState;

/// The monitor paths and schemas of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(
    MonitorIn,
    MonitorPatch,
    Monitor,
    MonitorList,
    MonitorCheck,
    MonitorCheckList,
    BaselineIn,
    Region,
    Notify,
    CompareMode,
    BaselineMode,
    MonitorChanged,
    MonitorFailing
)))]
pub struct ApiDoc;

/// Routes under `/v1` (authenticated by the caller's router).
pub fn router() -> Api {
    Api::new()
        .op::<__path_create, _, _>(create)
        .op::<__path_list, _, _>(list)
        .op::<__path_get_one, _, _>(get_one)
        .op::<__path_update, _, _>(update)
        .op::<__path_delete, _, _>(delete)
        .op::<__path_pause, _, _>(pause)
        .op::<__path_resume, _, _>(resume)
        .op::<__path_check_now, _, _>(check_now)
        .op::<__path_checks, _, _>(checks)
        .op::<__path_check_one, _, _>(check_one)
        .op::<__path_baseline, _, _>(baseline)
}

#[utoipa::path(post, path = "/v1/monitors", tag = "monitors", request_body = MonitorIn,
    responses(
        (status = 201, body = Monitor, description = "Due at once (its first check makes the baseline) unless paused"),
        (status = 400, body = ErrorBody, description = "VALIDATION_ERROR naming the field: a schedule under the minimum, an unparseable cron or time zone, an unknown capture option, a selector, a URL the service may not capture"),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody, description = "PLAN_LIMIT_EXCEEDED: the plan's monitors (CAPTURE_PLAN_MONITORS) are all in use"),
    ),
    security(("api_key" = [])))]
/// Monitor a page: capture it on a schedule and compare each capture with the baseline.
async fn create(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    ValidatedJson { valid, .. }: ValidatedJson<MonitorIn>,
) -> ApiResult<(StatusCode, Json<Monitor>)> {
    Ok((StatusCode::CREATED, Json(service::create(&state, &account, valid).await?)))
}

#[utoipa::path(get, path = "/v1/monitors", tag = "monitors", params(ListQuery),
    responses((status = 200, body = MonitorList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("api_key" = [])))]
/// Your monitors, newest first, each with its latest check and next run.
async fn list(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<MonitorList>> {
    Ok(Json(service::list(&state, &account, &q).await?))
}

#[utoipa::path(get, path = "/v1/monitors/{id}", tag = "monitors", params(("id" = String, Path)),
    responses((status = 200, body = Monitor), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
/// One monitor.
async fn get_one(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<MonitorId>,
) -> ApiResult<Json<Monitor>> {
    Ok(Json(service::get(&state, &account, &id).await?))
}

#[utoipa::path(patch, path = "/v1/monitors/{id}", tag = "monitors", params(("id" = String, Path)),
    request_body = MonitorPatch,
    responses((status = 200, body = Monitor), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
/// Change a monitor: the fields given replace its own (a new schedule counts from now).
async fn update(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<MonitorId>,
    ValidatedJson { valid, .. }: ValidatedJson<MonitorPatch>,
) -> ApiResult<Json<Monitor>> {
    Ok(Json(service::update(&state, &account, &id, valid).await?))
}

#[utoipa::path(delete, path = "/v1/monitors/{id}", tag = "monitors", params(("id" = String, Path)),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
/// Delete a monitor and its checks: it never runs again.
async fn delete(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<MonitorId>,
) -> ApiResult<StatusCode> {
    service::delete(&state, &account, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/v1/monitors/{id}/pause", tag = "monitors", params(("id" = String, Path)),
    responses((status = 200, body = Monitor), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
/// Pause a monitor: no check runs until it is resumed.
async fn pause(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<MonitorId>,
) -> ApiResult<Json<Monitor>> {
    Ok(Json(service::set_paused(&state, &account, &id, true).await?))
}

#[utoipa::path(post, path = "/v1/monitors/{id}/resume", tag = "monitors", params(("id" = String, Path)),
    responses((status = 200, body = Monitor), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
/// Resume a paused monitor: due at its next time from now (at once if it was never checked).
async fn resume(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<MonitorId>,
) -> ApiResult<Json<Monitor>> {
    Ok(Json(service::set_paused(&state, &account, &id, false).await?))
}

#[utoipa::path(post, path = "/v1/monitors/{id}/check", tag = "monitors", params(("id" = String, Path)),
    responses(
        (status = 202, body = MonitorCheck, description = "The check, pending while its capture runs (or failed at once when the capture was refused, the quota say)"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 429, body = ErrorBody, description = "CONCURRENCY_LIMIT: a check of this monitor is still running"),
    ),
    security(("api_key" = [])))]
/// Check a monitor now, outside its schedule (charged as one capture).
async fn check_now(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<MonitorId>,
) -> ApiResult<(StatusCode, Json<MonitorCheck>)> {
    Ok((StatusCode::ACCEPTED, Json(service::check_now(&state, &account, &id).await?)))
}

#[utoipa::path(get, path = "/v1/monitors/{id}/checks", tag = "monitors", params(("id" = String, Path), ListQuery),
    responses((status = 200, body = MonitorCheckList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
/// A monitor's checks, newest first.
async fn checks(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<MonitorId>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<MonitorCheckList>> {
    Ok(Json(service::checks(&state, &account, &id, &q).await?))
}

#[utoipa::path(get, path = "/v1/monitors/{id}/checks/{checkId}", tag = "monitors",
    params(("id" = String, Path), ("checkId" = String, Path)),
    responses((status = 200, body = MonitorCheck), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
/// One check of a monitor.
async fn check_one(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path((id, check_id)): Path<(String, String)>,
) -> ApiResult<Json<MonitorCheck>> {
    let id = MonitorId::parse_id(&id).ok_or_else(|| Error::not_found(MonitorId::NOUN))?;
    let check_id = MonitorCheckId::parse_id(&check_id).ok_or_else(|| Error::not_found(MonitorCheckId::NOUN))?;
    Ok(Json(service::check(&state, &account, &id, &check_id).await?))
}

#[utoipa::path(post, path = "/v1/monitors/{id}/baseline", tag = "monitors", params(("id" = String, Path)),
    request_body = BaselineIn,
    responses(
        (status = 200, body = Monitor),
        (status = 400, body = ErrorBody, description = "VALIDATION_ERROR (checkId): not a done check of this monitor"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
    ),
    security(("api_key" = [])))]
/// Accept a check as the monitor's baseline: the next checks are compared with it.
async fn baseline(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<MonitorId>,
    ValidatedJson { valid, .. }: ValidatedJson<BaselineIn>,
) -> ApiResult<Json<Monitor>> {
    Ok(Json(service::accept_baseline(&state, &account, &id, &valid).await?))
}
