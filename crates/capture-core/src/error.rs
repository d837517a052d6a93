//! Stable machine error codes shared by every channel (REST, MCP, CLI).

use serde::{Deserialize, Serialize};

/// A stable error code with its HTTP status. Deserialize lets clients tell the codes they
/// know from new ones (the contract's rule 1: an unknown code is transient).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    ValidationError,
    InvalidJson,
    UnsupportedMediaType,
    PayloadTooLarge,
    Unauthorized,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    InvalidIdempotencyKey,
    IdempotencyInFlight,
    IdempotencyKeyReused,
    InvalidRequestId,
    InvalidOrganizationId,
    PlanQuotaExceeded,
    QueueFull,
    /// Too many of the account's runs are active at once.
    ConcurrencyLimit,
    InternalError,
    /// A render link's capture failed (the page could not be captured).
    CaptureFailed,
    /// A storage destination failed its check (probe object written and deleted).
    StorageCheckFailed,
    /// The sign-in helper did not end signed in (`POST /v1/profiles/login`).
    LoginFailed,
    ServiceUnavailable,
    /// A rate its owner set was reached (a render link's captures per hour); `Retry-After`.
    RateLimited,
}

impl ErrorCode {
    /// The HTTP status that goes with the code.
    pub fn status(self) -> u16 {
        use ErrorCode::*;
        match self {
            ValidationError | InvalidJson | InvalidIdempotencyKey | InvalidRequestId | InvalidOrganizationId => 400,
            Unauthorized => 401,
            Forbidden => 403,
            NotFound => 404,
            MethodNotAllowed => 405,
            IdempotencyInFlight => 409,
            PayloadTooLarge => 413,
            UnsupportedMediaType => 415,
            IdempotencyKeyReused | StorageCheckFailed | LoginFailed => 422,
            PlanQuotaExceeded | QueueFull | ConcurrencyLimit | RateLimited => 429,
            InternalError => 500,
            CaptureFailed => 502,
            ServiceUnavailable => 503,
        }
    }

    /// The code as it appears on the wire (`PLAN_QUOTA_EXCEEDED`).
    pub fn as_str(self) -> &'static str {
        use ErrorCode::*;
        match self {
            ValidationError => "VALIDATION_ERROR",
            InvalidJson => "INVALID_JSON",
            UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            Unauthorized => "UNAUTHORIZED",
            Forbidden => "FORBIDDEN",
            NotFound => "NOT_FOUND",
            MethodNotAllowed => "METHOD_NOT_ALLOWED",
            InvalidIdempotencyKey => "INVALID_IDEMPOTENCY_KEY",
            IdempotencyInFlight => "IDEMPOTENCY_IN_FLIGHT",
            IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
            InvalidRequestId => "INVALID_REQUEST_ID",
            InvalidOrganizationId => "INVALID_ORGANIZATION_ID",
            PlanQuotaExceeded => "PLAN_QUOTA_EXCEEDED",
            QueueFull => "QUEUE_FULL",
            ConcurrencyLimit => "CONCURRENCY_LIMIT",
            InternalError => "INTERNAL_ERROR",
            CaptureFailed => "CAPTURE_FAILED",
            StorageCheckFailed => "STORAGE_CHECK_FAILED",
            LoginFailed => "LOGIN_FAILED",
            ServiceUnavailable => "SERVICE_UNAVAILABLE",
            RateLimited => "RATE_LIMITED",
        }
    }
}

/// A validation failure on one field: becomes `details: {field, reason}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct FieldError {
    pub field: String,
    pub reason: String,
}

impl FieldError {
    /// A failure of `field` for `reason`.
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self { field: field.into(), reason: reason.into() }
    }
}
