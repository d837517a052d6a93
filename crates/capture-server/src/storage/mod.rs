//! Storage destinations (`/v1/storage-destinations`): a customer's own S3-compatible bucket
//! that captures naming it in `storage` are also written to. [`service`] holds the
//! operations, [`bucket`] the writes.

pub mod bucket;
pub mod service;
pub mod types;

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use capture_core::StorageDestinationId;

use self::types::{StorageDestination, StorageDestinationIn, StorageDestinationList};
use crate::auth::Account;
use crate::http::api::Api;
use crate::http::error::ErrorBody;
use crate::http::{ApiResult, Id, Json, ValidatedJson};
use crate::state::AppState;

/// The storage paths and schemas of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(StorageDestinationIn, StorageDestination, StorageDestinationList)))]
pub struct ApiDoc;

/// Routes (authenticated by the caller's router).
pub fn router() -> Api {
    Api::new()
        .op::<__path_create_handler, _, _>(create_handler)
        .op::<__path_list_handler, _, _>(list_handler)
        .op::<__path_get_handler, _, _>(get_handler)
        .op::<__path_delete_handler, _, _>(delete_handler)
}

#[utoipa::path(post, path = "/v1/storage-destinations", tag = "storage", request_body = StorageDestinationIn,
    responses(
        (status = 201, body = StorageDestination),
        (status = 400, body = ErrorBody),
        (status = 422, body = ErrorBody, description = "STORAGE_CHECK_FAILED: the probe object could not be written and deleted \
            (details.reason: access_denied, bucket_not_found, unreachable or refused; details.s3Code: the server's error code)"),
    ),
    security(("api_key" = [])))]
/// Add a bucket: checked by writing and deleting a probe object under its prefix; the key
/// pair is stored encrypted and never returned.
async fn create_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    ValidatedJson { valid, .. }: ValidatedJson<StorageDestinationIn>,
) -> ApiResult<(StatusCode, Json<StorageDestination>)> {
    Ok((StatusCode::CREATED, Json(service::create(&state, &account, valid).await?)))
}

#[utoipa::path(get, path = "/v1/storage-destinations", tag = "storage",
    responses((status = 200, body = StorageDestinationList)), security(("api_key" = [])))]
/// The caller's destinations (never their keys).
async fn list_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
) -> ApiResult<Json<StorageDestinationList>> {
    Ok(Json(service::list(&state, &account).await?))
}

#[utoipa::path(get, path = "/v1/storage-destinations/{id}", tag = "storage", params(("id" = String, Path)),
    responses((status = 200, body = StorageDestination), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// One destination.
async fn get_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<StorageDestinationId>,
) -> ApiResult<Json<StorageDestination>> {
    Ok(Json(service::get(&state, &account, &id).await?))
}

#[utoipa::path(delete, path = "/v1/storage-destinations/{id}", tag = "storage", params(("id" = String, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// Delete a destination (its key pair with it); nothing already written is touched.
async fn delete_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<StorageDestinationId>,
) -> ApiResult<StatusCode> {
    service::delete(&state, &account, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
