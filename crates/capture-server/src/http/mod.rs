//! The HTTP edge shared by every resource: the request id and organisation id layers,
//! authentication with the rate-limit headers, the one error type and its rendering, and
//! JSON in and out. Resources build on this; nothing here knows a resource.

pub mod authenticate;
pub mod error;
pub mod json;
pub mod request;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use capture_core::ids::TypedId;

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
