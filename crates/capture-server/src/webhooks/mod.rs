//! Webhooks: endpoint management (`/v1/webhooks`); [`service`] holds the operations,
//! [`delivery`] the signing and sending of one attempt. Deliveries come from the outbox the
//! store writes with each change; `jobs::webhook` claims them from the shared queue.

pub mod delivery;
pub mod service;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde_json::{Value, json};

pub use service::{create_endpoint, delete_endpoint, list_deliveries, list_endpoints, rotate_secret, send_test};

use crate::auth::Account;
use crate::http::{ApiResult, JsonObject};
use crate::state::AppState;

/// Routes (authenticated by the caller's router).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/webhooks", post(create_handler).get(list_handler))
        .route("/v1/webhooks/{id}", axum::routing::delete(delete_handler))
        .route("/v1/webhooks/{id}/rotate", post(rotate_handler))
        .route("/v1/webhooks/{id}/test", post(test_handler))
        .route("/v1/webhooks/{id}/deliveries", get(deliveries_handler))
}

async fn create_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    JsonObject(body, _): JsonObject,
) -> ApiResult<(StatusCode, Json<Value>)> {
    Ok((StatusCode::CREATED, Json(json!({"endpoint": create_endpoint(&state, &account, &body).await?}))))
}

async fn list_handler(State(state): State<AppState>, Extension(account): Extension<Account>) -> ApiResult<Json<Value>> {
    Ok(Json(list_endpoints(&state, &account).await?))
}

async fn rotate_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    Ok(Json(rotate_secret(&state, &account, &id).await?))
}

async fn test_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    Ok((StatusCode::ACCEPTED, Json(send_test(&state, &account, &id).await?)))
}

async fn deliveries_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    Ok(Json(list_deliveries(&state, &account, &id).await?))
}

async fn delete_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    delete_endpoint(&state, &account, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
