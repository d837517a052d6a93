//! `GET /openapi.json` and the `/docs` page.

use axum::Router;
use axum::routing::get;
use axum::Json;

use crate::state::AppState;

/// Docs routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/openapi.json", get(|| async { Json(serde_json::json!({"openapi": "3.1.0"})) }))
}
