//! The internal route another node forwards an automation tool call to (see `cluster`):
//! signed with the cluster key, run here as the account it names, answered whole.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::cluster::{ForwardedCall, verified};
use crate::state::AppState;

/// The internal routes (signed; no API key).
pub fn router() -> Router<AppState> {
    Router::new().route("/internal/v1/automation/call", post(call_handler))
}

async fn call_handler(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if !verified(&state, &headers, &body) {
        let body = json!({"error": "not a signed call of this deployment", "code": "UNAUTHORIZED"});
        return (StatusCode::UNAUTHORIZED, Json(body)).into_response();
    }
    let Ok(call) = serde_json::from_slice::<ForwardedCall>(&body) else {
        let body = json!({"error": "unreadable call", "code": "INVALID_JSON"});
        return (StatusCode::BAD_REQUEST, Json(body)).into_response();
    };
    let user = match state.store.user_by_id(&call.user_id).await {
        Ok(Some(u)) => u,
        Ok(None) => {
            return (StatusCode::NOT_FOUND, Json(json!({"error": "no such account", "code": "NOT_FOUND"})))
                .into_response();
        }
        Err(e) => return crate::http::ApiError::internal(e).into_response(),
    };
    let account = match crate::auth::account_of_user(&state, &user).await {
        Ok(a) => crate::auth::Account { client_id: call.client_id.clone(), ..a },
        Err(e) => return crate::http::ApiError::internal(e).into_response(),
    };
    match super::call_here(&state, &account, &call.tool, &call.args).await {
        Some(out) => Json(serde_json::to_value(out).unwrap_or(Value::Null)).into_response(),
        None => (StatusCode::NOT_FOUND, Json(json!({"error": "no such tool", "code": "NOT_FOUND"}))).into_response(),
    }
}
