//! Website audits: create, read (with the whole report when done), list, stream, and the
//! public report page with its PDF. The handlers are thin: the operations live in
//! [`service`], shared by REST, the MCP tools and the website; the work is done by the
//! `audit` queue's handler ([`crate::jobs::audit`]) with the engine of `capture-audit`.

pub(crate) mod report_page;
pub mod service;
mod stream;
pub mod types;

use crate::http::Query;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::{Extension, Router};
use capture_core::AuditId;

pub use report_page::report_page;
pub use stream::stream;

use self::types::{Audit, AuditIn, AuditList, AuditReportType, AuditScores};
use crate::auth::Account;
use crate::http::api::Api;
use crate::http::error::ErrorBody;
use crate::http::{ApiResult, Id, IdemCreate, Json};
use crate::paging::ListQuery;
use crate::state::AppState;

/// The audit paths and schemas of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(AuditIn, Audit, AuditList, AuditScores, AuditReportType)))]
pub struct ApiDoc;

/// Routes under `/v1` (authenticated by the caller's router).
pub fn v1_router() -> Api {
    Api::new()
        .op::<__path_create, _, _>(create)
        .op::<__path_list, _, _>(list)
        .op::<__path_get_one, _, _>(get_one)
        .op::<stream::__path_stream, _, _>(stream)
}

/// Public routes: the report page and its PDF.
pub fn public_router() -> Router<AppState> {
    Router::new().route("/r/{token}", get(report_page))
}

#[utoipa::path(post, path = "/v1/audits", tag = "audits", request_body = AuditIn,
    params(("Idempotency-Key" = Option<String>, Header, description = "[A-Za-z0-9_-]{8,128}; replays the first response for 24 h")),
    responses((status = 202, body = Audit, description = "Accepted: 1 action reserved per page of the page cap (1 for single_page); the unused part is given back when the audit ends, everything when it fails"),
    (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
    (status = 409, body = ErrorBody), (status = 422, body = ErrorBody),
    (status = 429, body = ErrorBody, description = "PLAN_QUOTA_EXCEEDED: fewer actions left than the audit's page cap; or QUEUE_FULL: too many of the account's audits wait or run; Retry-After"),
    (status = 503, body = ErrorBody, description = "SERVICE_UNAVAILABLE: too many audits wait or run in all; Retry-After")),
    security(("api_key" = [])))]
/// Start a website audit.
pub async fn create(create: IdemCreate<AuditIn>) -> Response {
    create
        .run(StatusCode::ACCEPTED, |st, acc, opts, claim| async move {
            let created = service::create(&st, &acc, &opts, claim.as_ref()).await?;
            Ok((created.audit, created.used))
        })
        .await
}

#[utoipa::path(get, path = "/v1/audits/{id}", tag = "audits", params(("id" = String, Path)),
    responses((status = 200, body = Audit, description = "With `report` (pages, findings with evidence, scores, crawl) once done"),
    (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// One audit, with its whole report once done.
pub async fn get_one(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<AuditId>,
) -> ApiResult<Json<Audit>> {
    Ok(Json(service::get(&state, &account, &id).await?))
}

#[utoipa::path(get, path = "/v1/audits", tag = "audits", params(ListQuery),
    responses((status = 200, body = AuditList), (status = 400, body = ErrorBody)), security(("api_key" = [])))]
/// List audits, newest first (without their reports).
pub async fn list(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<AuditList>> {
    Ok(Json(service::list(&state, &account, &q).await?))
}
