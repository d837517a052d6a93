//! Browser session runs: create (scripted or live), read, list, stream, stop, and the live
//! session's DevTools endpoint. The handlers are thin: the operations live in [`service`],
//! shared by REST, MCP tools and the website; what every session run shares in [`session`];
//! the scripted runs' driving lives in `jobs::run`.

pub mod bounds;
pub mod devices;
pub mod live;
pub mod service;
pub mod session;
mod stream;
pub mod types;

use crate::http::Query;
use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use capture_core::RunId;

pub use stream::stream;

use self::types::{Run, RunIn, RunList};
use crate::auth::Account;
use crate::http::api::Api;
use crate::http::error::ErrorBody;
use crate::http::{ApiResult, Id, IdemCreate, Json};
use crate::paging::ListQuery;
use crate::state::AppState;

/// The run paths and schemas of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(
    components(schemas(RunIn, Run, RunList)),
    tags((name = "runs", description = "Browser session runs: scripted steps or a live DevTools session, recorded"))
)]
pub struct ApiDoc;

/// Routes under `/v1` (authenticated by the caller's router).
pub fn v1_router() -> Api {
    Api::new()
        .op::<__path_create, _, _>(create)
        .op::<__path_list, _, _>(list)
        .op::<__path_get_one, _, _>(get_one)
        .op::<stream::__path_stream, _, _>(stream)
        .op::<__path_stop, _, _>(stop)
}

/// The live session's endpoint: authenticated by its single-use token, not an API key
/// (DevTools clients connect with a bare URL).
pub fn devtools_router() -> Api {
    Api::new().op::<live::__path_devtools, _, _>(live::devtools)
}

#[utoipa::path(post, path = "/v1/runs", tag = "runs", request_body = RunIn,
    params(("Idempotency-Key" = Option<String>, Header, description = "[A-Za-z0-9_-]{8,128}; replays the first response for 24 h")),
    responses((status = 202, body = Run, description = "accepted; a live run carries connectUrl"),
    (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody),
    (status = 429, body = ErrorBody, description = "PLAN_QUOTA_EXCEEDED (no action left), or CONCURRENCY_LIMIT: the account's runs in progress are at its bound; Retry-After")),
    security(("api_key" = [])))]
/// Start a run: scripted `steps`, or `live: true` for a DevTools client.
pub async fn create(create: IdemCreate<RunIn>) -> Response {
    create
        .run(StatusCode::ACCEPTED, |st, acc, spec, claim| async move {
            let created = service::create(&st, &acc, &spec, claim.as_ref()).await?;
            Ok((created.run, created.used))
        })
        .await
}

#[utoipa::path(get, path = "/v1/runs/{id}", tag = "runs", params(("id" = String, Path)), responses((status = 200, body = Run), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// One run: its status, step results, final URL and title, video, console and network errors.
pub async fn get_one(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<RunId>,
) -> ApiResult<Json<Run>> {
    Ok(Json(service::get(&state, &account, &id).await?))
}

#[utoipa::path(get, path = "/v1/runs", tag = "runs", params(ListQuery), responses((status = 200, body = RunList)), security(("api_key" = [])))]
/// List runs, newest first.
pub async fn list(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<RunList>> {
    Ok(Json(service::list(&state, &account, &q).await?))
}

#[utoipa::path(post, path = "/v1/runs/{id}/stop", tag = "runs", params(("id" = String, Path)),
    responses((status = 202, body = Run, description = "a pending run ends at once; a running one within about a second, finalised as usual"), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
/// Stop a run.
pub async fn stop(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<RunId>,
) -> ApiResult<(StatusCode, Json<Run>)> {
    Ok((StatusCode::ACCEPTED, Json(service::stop(&state, &account, &id).await?)))
}
