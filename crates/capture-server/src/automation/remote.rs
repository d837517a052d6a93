//! The internal route another node forwards an automation tool call to (see `cluster`):
//! signed with the cluster key, run here as the account it names, answered whole.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::cluster::{ForwardedCall, accept};
use crate::state::AppState;
use crate::tool::{Cx, tool_error};

/// The internal routes (signed; no API key).
pub fn router() -> Router<AppState> {
    Router::new().route("/internal/v1/automation/call", post(call_handler))
}

async fn call_handler(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let (call, account) =
        match accept(&state, &headers, &body, |c: &ForwardedCall| (&c.user_id, c.client_id.as_deref())).await {
            Ok(accepted) => accepted,
            Err(refused) => return refused,
        };
    let cx = Cx { state: &state, account: &account, request: None };
    match super::call_here(&cx, &call.tool, &call.args).await {
        Some(out) => Json(serde_json::to_value(out.unwrap_or_else(tool_error)).unwrap_or(Value::Null)).into_response(),
        None => (StatusCode::NOT_FOUND, Json(json!({"error": "no such tool", "code": "NOT_FOUND"}))).into_response(),
    }
}
