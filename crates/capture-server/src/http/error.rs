//! The one API error type. Client errors carry a stable code; unexpected failures are
//! logged once and answered with an opaque `INTERNAL_ERROR`. The request-id middleware
//! renders every error body so `requestId` always equals the `X-Request-ID` header.
//!
//! The error type knows nothing about usage or rate limits: whoever builds an error may
//! attach response extensions (the quota refusal attaches the caller's usage), which the
//! rate-limit middleware reads.

use axum::http::{Extensions, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use capture_core::{ErrorCode, FieldError};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::auth::UsageAfter;

/// An error answered to a client.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub details: Option<Value>,
    pub headers: Vec<(HeaderName, String)>,
    /// Response extensions for the middleware (e.g. the caller's usage as this error found it).
    pub extensions: Extensions,
}

/// What the request-id middleware needs to render the body (kept in response extensions).
#[derive(Debug, Clone)]
pub struct ErrorInfo {
    pub code: ErrorCode,
    pub message: String,
    pub details: Option<Value>,
}

impl ApiError {
    /// An error with a code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError { code, message: message.into(), details: None, headers: Vec::new(), extensions: Extensions::new() }
    }

    /// Attach `details`.
    pub fn details(mut self, d: Value) -> Self {
        self.details = Some(d);
        self
    }

    /// Attach a response header.
    pub fn header(mut self, name: HeaderName, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// Attach a response extension for the middleware.
    pub fn extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// 404 that never reveals whether the resource exists for someone else.
    pub fn not_found(what: &str) -> Self {
        ApiError::new(ErrorCode::NotFound, format!("{what} not found"))
    }

    /// 400 VALIDATION_ERROR with `{field, reason}`.
    pub fn validation(e: FieldError) -> Self {
        ApiError::new(ErrorCode::ValidationError, format!("invalid {}: {}", e.field, e.reason))
            .details(json!({"field": e.field, "reason": e.reason}))
    }

    /// An unexpected failure: logged here with its cause, opaque to the client.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        ApiError::new(ErrorCode::InternalError, "internal error")
    }
}

/// A service operation's error as the API answers it: its code, message and details, plus
/// `Retry-After` on the transient refusals and, on a quota refusal, the caller's usage for
/// the rate-limit headers.
impl From<crate::error::Error> for ApiError {
    fn from(e: crate::error::Error) -> Self {
        use crate::error::{DATABASE_BUSY_RETRY, Error, QUEUE_FULL_RETRY_ACCOUNT, QUEUE_FULL_RETRY_GLOBAL};
        let mut a = ApiError::new(e.code(), e.to_string());
        a.details = e.details();
        match &e {
            Error::QuotaExceeded(q) => {
                a.header(header::RETRY_AFTER, q.retry_after_s.to_string()).extension(UsageAfter(q.used))
            }
            Error::QueueFull(q) => {
                let retry = match q.scope {
                    capture_store::QueueScope::Account => QUEUE_FULL_RETRY_ACCOUNT,
                    capture_store::QueueScope::Global => QUEUE_FULL_RETRY_GLOBAL,
                };
                a.header(header::RETRY_AFTER, retry.to_string())
            }
            Error::IdempotencyInFlight => a.header(header::RETRY_AFTER, "1"),
            Error::TooManyRuns { .. } => a.header(header::RETRY_AFTER, "5"),
            Error::DatabaseBusy => a.header(header::RETRY_AFTER, DATABASE_BUSY_RETRY.to_string()),
            Error::RateLimited { retry_after, .. } => a.header(header::RETRY_AFTER, retry_after.max(&1).to_string()),
            _ => a,
        }
    }
}

impl From<capture_store::StoreError> for ApiError {
    fn from(e: capture_store::StoreError) -> Self {
        crate::error::Error::from(e).into()
    }
}

impl From<FieldError> for ApiError {
    fn from(e: FieldError) -> Self {
        ApiError::validation(e)
    }
}

/// The JSON error body of `info` for the request `request_id`.
pub fn error_body(info: &ErrorInfo, request_id: &str) -> ErrorBody {
    ErrorBody {
        error: info.message.clone(),
        code: info.code,
        request_id: request_id.to_string(),
        details: info.details.clone(),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let info = ErrorInfo { code: self.code, message: self.message, details: self.details };
        // Body without requestId for callers outside the middleware; the middleware re-renders it.
        let mut resp = (status, super::Json(error_body(&info, ""))).into_response();
        for (k, v) in self.headers {
            if let Ok(v) = HeaderValue::from_str(&v) {
                resp.headers_mut().insert(k, v);
            }
        }
        if self.code == ErrorCode::Unauthorized {
            resp.headers_mut().insert(axum::http::header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp.extensions_mut().extend(self.extensions);
        resp.extensions_mut().insert(info);
        resp
    }
}

/// Result alias for handlers.
pub type ApiResult<T> = Result<T, ApiError>;

/// 405 for a known path with the wrong method.
pub async fn method_not_allowed() -> ApiError {
    ApiError::new(ErrorCode::MethodNotAllowed, "method not allowed on this route")
}

/// 404 for an unknown route.
pub async fn unknown_route() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "no such route")
}

/// Map a status code to `StatusCode` (helper for stored responses).
pub fn status(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::OK)
}

/// The error body of every /v1 error.
#[derive(Debug, Clone, Serialize, serde::Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    pub error: String,
    /// Stable machine code, e.g. VALIDATION_ERROR, PLAN_QUOTA_EXCEEDED.
    #[schema(value_type = String)]
    pub code: ErrorCode,
    /// Equals the X-Request-ID header.
    pub request_id: String,
    /// Present for some codes (e.g. `{field, reason}` for VALIDATION_ERROR).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

#[cfg(test)]
mod tests {
    use axum::response::IntoResponse;

    use super::*;

    /// A database that gives no connection in time is a 503 the client may retry, not an
    /// opaque 500; any other store failure stays internal.
    #[test]
    fn a_busy_database_is_a_503_with_retry_after() {
        let busy = ApiError::from(capture_store::StoreError::Unavailable(
            "pool timed out while waiting for an open connection".into(),
        ));
        assert_eq!(busy.code, ErrorCode::ServiceUnavailable);
        assert_eq!(busy.details, Some(json!({"reason": "database_busy"})));
        let r = busy.into_response();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()[header::RETRY_AFTER], "5");

        let corrupt = ApiError::from(capture_store::StoreError::Corrupt("a row".into()));
        assert_eq!(corrupt.code, ErrorCode::InternalError);
        assert_eq!(corrupt.into_response().status(), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
