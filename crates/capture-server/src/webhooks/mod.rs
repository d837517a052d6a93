//! Webhooks: endpoint management (`/v1/webhooks`); [`service`] holds the operations,
//! [`delivery`] the signing and sending of one attempt. Deliveries come from the outbox the
//! store writes with each change; `jobs::webhook` claims them from the shared queue.

pub mod delivery;
pub mod service;
pub mod types;

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use capture_core::EndpointId;

use self::types::{
    CreatedEndpoint, Delivery, DeliveryList, Endpoint, EndpointIn, EndpointList, EndpointWithSecret, RotatedSecret,
    TestPing,
};
use crate::auth::Account;
use crate::http::api::Api;
use crate::http::error::ErrorBody;
use crate::http::{ApiError, ApiResult, Id, Json, JsonObject};
use crate::state::AppState;

/// The webhook paths and schemas of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(
    EndpointIn,
    Endpoint,
    EndpointWithSecret,
    CreatedEndpoint,
    EndpointList,
    RotatedSecret,
    TestPing,
    Delivery,
    DeliveryList
)))]
pub struct ApiDoc;

/// Routes (authenticated by the caller's router).
pub fn router() -> Api {
    Api::new()
        .op::<__path_create_handler, _, _>(create_handler)
        .op::<__path_list_handler, _, _>(list_handler)
        .op::<__path_delete_handler, _, _>(delete_handler)
        .op::<__path_rotate_handler, _, _>(rotate_handler)
        .op::<__path_test_handler, _, _>(test_handler)
        .op::<__path_deliveries_handler, _, _>(deliveries_handler)
}

#[utoipa::path(post, path = "/v1/webhooks", tag = "webhooks", request_body = EndpointIn,
    responses((status = 201, body = CreatedEndpoint), (status = 400, body = ErrorBody)), security(("api_key" = [])))]
/// Create an endpoint; the answer carries its signing secret, shown this once.
async fn create_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    JsonObject(body, _): JsonObject,
) -> ApiResult<(StatusCode, Json<CreatedEndpoint>)> {
    let input = service::parse_endpoint(&state, &body).map_err(ApiError::validation)?;
    let endpoint = service::create_endpoint(&state, &account, input).await?;
    Ok((StatusCode::CREATED, Json(CreatedEndpoint { endpoint })))
}

#[utoipa::path(get, path = "/v1/webhooks", tag = "webhooks", responses((status = 200, body = EndpointList)), security(("api_key" = [])))]
/// The caller's endpoints (no secrets).
async fn list_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
) -> ApiResult<Json<EndpointList>> {
    Ok(Json(service::list_endpoints(&state, &account).await?))
}

#[utoipa::path(post, path = "/v1/webhooks/{id}/rotate", tag = "webhooks", params(("id" = String, Path)),
    responses((status = 200, body = RotatedSecret), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// Replace the signing secret; the new one is shown this once.
async fn rotate_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<EndpointId>,
) -> ApiResult<Json<RotatedSecret>> {
    Ok(Json(service::rotate_secret(&state, &account, &id).await?))
}

#[utoipa::path(post, path = "/v1/webhooks/{id}/test", tag = "webhooks", params(("id" = String, Path)),
    responses((status = 202, body = TestPing), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// Queue a `test.ping` delivery.
async fn test_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<EndpointId>,
) -> ApiResult<(StatusCode, Json<TestPing>)> {
    Ok((StatusCode::ACCEPTED, Json(service::send_test(&state, &account, &id).await?)))
}

#[utoipa::path(get, path = "/v1/webhooks/{id}/deliveries", tag = "webhooks", params(("id" = String, Path)),
    responses((status = 200, body = DeliveryList), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// The endpoint's last 50 deliveries, newest first.
async fn deliveries_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<EndpointId>,
) -> ApiResult<Json<DeliveryList>> {
    Ok(Json(service::list_deliveries(&state, &account, &id).await?))
}

#[utoipa::path(delete, path = "/v1/webhooks/{id}", tag = "webhooks", params(("id" = String, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// Delete an endpoint; nothing more is delivered to it.
async fn delete_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<EndpointId>,
) -> ApiResult<StatusCode> {
    service::delete_endpoint(&state, &account, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
