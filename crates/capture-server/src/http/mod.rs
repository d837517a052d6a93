//! The HTTP edge shared by every resource: the request id and organisation id layers,
//! authentication with the rate-limit headers, the one error type and its rendering, and
//! JSON in and out. Resources build on this; nothing here knows a resource.

pub mod api;
pub mod authenticate;
pub mod error;
pub mod json;
pub mod request;
pub mod sse;
pub mod validated;

use axum::extract::FromRequestParts;
use axum::extract::path::ErrorKind;
use axum::extract::rejection::PathRejection;
use axum::http::request::Parts;
use capture_core::ids::TypedId;
use capture_core::{ErrorCode, FieldError};
use serde::de::DeserializeOwned;

pub use error::{ApiError, ApiResult};
pub use json::{Json, JsonObject};
pub use validated::{Checked, IdemCreate, OptionalJson, ValidatedJson};

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

/// The route's path parameters, deserialised: axum's `Path` with the app's error as its
/// rejection. A parameter that cannot be decoded (`%FF` is not UTF-8) or parsed (a word where
/// a number belongs) names nothing that exists, so it is the JSON 404 `NOT_FOUND` that an
/// unknown id gets, never axum's plain-text 400 "Invalid URL". Every handler takes its path
/// parameters through this (or [`Id`]); clippy's `disallowed-types` keeps axum's out.
#[derive(Debug, Clone)]
pub struct Path<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        #[allow(clippy::disallowed_types)] // the one place that wraps it
        let decoded = axum::extract::Path::<T>::from_request_parts(parts, state).await;
        match decoded {
            Ok(axum::extract::Path(v)) => Ok(Path(v)),
            Err(PathRejection::FailedToDeserializePathParams(e)) => match e.into_kind() {
                // The route and the handler's type disagree: our bug, not the caller's.
                kind @ (ErrorKind::WrongNumberOfParameters { .. } | ErrorKind::UnsupportedType { .. }) => {
                    Err(ApiError::internal(format!("path parameters of {}: {kind}", parts.uri.path())))
                }
                ErrorKind::InvalidUtf8InPathParam { key }
                | ErrorKind::ParseErrorAtKey { key, .. }
                | ErrorKind::DeserializeError { key, .. } => {
                    Err(ApiError::new(ErrorCode::NotFound, format!("not found: the path's {key} is not valid")))
                }
                _ => Err(ApiError::new(ErrorCode::NotFound, "not found: a segment of the path is not valid")),
            },
            Err(e) => Err(ApiError::internal(format!("path parameters of {}: {e}", parts.uri.path()))),
        }
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
