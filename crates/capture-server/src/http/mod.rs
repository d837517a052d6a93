//! The HTTP edge shared by every resource: the request id and organisation id layers,
//! authentication with the rate-limit headers, the one error type and its rendering, and
//! JSON in and out. Resources build on this; nothing here knows a resource.

pub mod authenticate;
pub mod error;
pub mod json;
pub mod request;
pub mod sse;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use capture_core::FieldError;
use capture_core::ids::TypedId;
use serde::de::DeserializeOwned;

pub use error::{ApiError, ApiResult};
pub use json::{Json, JsonObject};

/// A typed id from the route's one path parameter (`/v1/screenshot/{id}` → `ScreenshotId`).
/// Anything that is not such an id is a 404 "{noun} not found", exactly as for an id of
/// another account.
#[derive(Debug, Clone)]
pub struct Id<T>(pub T);

impl<S: Send + Sync, T: TypedId> FromRequestParts<S> for Id<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let not_found = || ApiError::from(crate::error::Error::not_found(T::NOUN));
        let Path(raw) = Path::<String>::from_request_parts(parts, state).await.map_err(|_| not_found())?;
        T::parse_id(&raw).map(Id).ok_or_else(not_found)
    }
}

/// The query string, deserialised. A query that does not fit `T` (a repeated `limit`, a
/// number where a word belongs) is the same JSON 400 `VALIDATION_ERROR` as any other bad
/// field, never axum's plain-text rejection.
#[derive(Debug, Clone, Default)]
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let raw = parts.uri.query().unwrap_or_default();
        serde_urlencoded::from_str::<T>(raw).map(Query).map_err(|e| {
            let message = e.to_string();
            // serde names the field in backticks ("duplicate field `limit`").
            let field = message.split('`').nth(1).filter(|f| !f.is_empty()).unwrap_or("query").to_owned();
            ApiError::from(FieldError::new(field, format!("the query string is not valid: {message}")))
        })
    }
}
