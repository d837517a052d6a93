//! The HTTP edge shared by every resource: the request id and organisation id layers,
//! authentication with the rate-limit headers, the one error type and its rendering, and
//! the JSON body extractor. Resources build on this; nothing here knows a resource.

pub mod authenticate;
pub mod error;
pub mod json;
pub mod request;

pub use error::{ApiError, ApiResult};
pub use json::JsonObject;
