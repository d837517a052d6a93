//! The domain error of every service operation, whatever the channel: the REST handlers
//! map it to [`ApiError`](crate::http::ApiError), the MCP tools to a tool error, the
//! website to a page. It carries the stable [`ErrorCode`], a message for people and, for
//! some, details; it knows nothing of HTTP.

use capture_core::time::iso;
use capture_core::{ErrorCode, FieldError};
use capture_store::{QueueFull, QueueScope, StoreError, SuppressionReason, SuppressionSource};
use serde_json::{Value, json};

/// `Retry-After` (seconds) of a refusal because the account's jobs fill its share of the queue.
pub const QUEUE_FULL_RETRY_ACCOUNT: u64 = 5;
/// `Retry-After` (seconds) of a refusal because the whole queue is full.
pub const QUEUE_FULL_RETRY_GLOBAL: u64 = 10;
/// `Retry-After` (seconds) when the database gave no connection in time.
pub const DATABASE_BUSY_RETRY: u64 = 5;

/// Why an operation did not happen.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// A field of the request is invalid (`VALIDATION_ERROR`, `details: {field, reason}`).
    #[error("invalid {}: {}", .0.field, .0.reason)]
    Invalid(FieldError),
    /// The thing does not exist for this account (never says whether it exists for another).
    #[error("{0} not found")]
    NotFound(String),
    /// The monthly quota is used up.
    #[error("{}", quota_message(.0))]
    QuotaExceeded(QuotaExceeded),
    /// Back-pressure: the account's share of the queue, or the whole queue, is full.
    #[error("{}", queue_full_message(.0))]
    QueueFull(QueueFull),
    /// The request's Idempotency-Key is owned by another request still running (this one
    /// outlived its lease and was taken over).
    #[error("a request with this Idempotency-Key is still in progress; retry shortly")]
    IdempotencyInFlight,
    /// The account has as many runs active as it may (`CONCURRENCY_LIMIT`, 429).
    #[error("{active} of your runs are active, the most allowed at once; retry when one ends")]
    TooManyRuns { active: i64, limit: i64 },
    /// The account has as many automation sessions open as it may (`CONCURRENCY_LIMIT`, a
    /// tool's failure).
    #[error("{active} automation sessions are open, the most allowed at once: end one with session_end")]
    TooManySessions { active: i64, limit: i64 },
    /// Refused with this code and message (no details).
    #[error("{1}")]
    Refused(ErrorCode, String),
    /// The account signed up while outgoing mail is configured and has not opened the link
    /// mailed to it: no quota until it does (`FORBIDDEN`, `details: {reason: "email_unverified"}`).
    #[error("verify your e-mail address first: open the link we mailed to {0} (the dashboard sends a new one)")]
    EmailUnverified(String),
    /// The suppression of an address came from the recipient or the mail system: the account
    /// cannot lift it (`FORBIDDEN`, `details: {reason: "permanent_suppression", source,
    /// suppressionReason}`).
    #[error("{email} was suppressed by {}; only suppressions your account added can be lifted", permanent_by(*.by))]
    PermanentSuppression { email: String, by: SuppressionSource, reason: SuppressionReason },
    /// A storage destination failed its check (`STORAGE_CHECK_FAILED`, 422, `details:
    /// {reason, s3Code}`).
    #[error("{message}")]
    StorageCheck { reason: &'static str, s3_code: Option<String>, message: String },
    /// The sign-in helper did not end signed in (`LOGIN_FAILED`, 422, `details: {steps,
    /// finalUrl}`).
    #[error("{message}")]
    LoginFailed { message: String, steps: Vec<String>, final_url: String },
    /// A rate set by the resource's owner was reached (`RATE_LIMITED`, 429, `Retry-After`,
    /// `details: {limit, per, retryAfter}`).
    #[error("{message}")]
    RateLimited { message: String, limit: u32, per: &'static str, retry_after: i64 },
    /// The database gave no connection in time (all busy, or it refuses more): nothing was
    /// done; retry (`SERVICE_UNAVAILABLE`, 503, `Retry-After`, `details: {reason:
    /// "database_busy"}`). Logged where it is made.
    #[error("the service's database is busy; nothing was done; retry in {DATABASE_BUSY_RETRY} seconds")]
    DatabaseBusy,
    /// An unexpected failure, already logged; the client sees an opaque `INTERNAL_ERROR`.
    #[error("internal error")]
    Internal,
}

/// The figures of a quota refusal.
#[derive(Debug, Clone)]
pub struct QuotaExceeded {
    pub used: i64,
    pub limit: i64,
    pub plan: String,
    pub reset_ms: i64,
    /// Seconds until the reset, on the service's clock (`Retry-After`).
    pub retry_after_s: i64,
    /// A bulk request: how many of its jobs would fit.
    pub fits: Option<i64>,
}

fn quota_message(q: &QuotaExceeded) -> String {
    match q.fits {
        Some(fits) => format!(
            "monthly quota of {} actions: only {fits} of this batch's jobs would fit ({} used); nothing was created; \
             it resets at {}",
            q.limit,
            q.used,
            iso(q.reset_ms)
        ),
        None => format!("monthly quota of {} actions reached; it resets at {}", q.limit, iso(q.reset_ms)),
    }
}

fn permanent_by(source: SuppressionSource) -> &'static str {
    match source {
        SuppressionSource::Recipient => "the recipient (an unsubscribe or a complaint)",
        SuppressionSource::MailSystem => "the mail system (the receiving server refused the address for good)",
        SuppressionSource::Tenant => "your account",
    }
}

fn queue_full_message(q: &QueueFull) -> String {
    match q.scope {
        QueueScope::Account => format!(
            "{} of your jobs are waiting for or in capture, the most allowed at once; retry in {} seconds",
            q.pending, QUEUE_FULL_RETRY_ACCOUNT
        ),
        QueueScope::Global => format!(
            "the capture queue is full (workers are not keeping up); retry in {} seconds",
            QUEUE_FULL_RETRY_GLOBAL
        ),
    }
}

impl Error {
    /// 404 for `what` ("screenshot", "webhook endpoint", …).
    pub fn not_found(what: impl Into<String>) -> Self {
        Error::NotFound(what.into())
    }

    /// An unexpected failure: logged here with its cause, opaque to the client.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Error::Internal
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Invalid(_) => ErrorCode::ValidationError,
            Error::NotFound(_) => ErrorCode::NotFound,
            Error::QuotaExceeded(_) => ErrorCode::PlanQuotaExceeded,
            Error::QueueFull(q) => match q.scope {
                QueueScope::Account => ErrorCode::QueueFull,
                QueueScope::Global => ErrorCode::ServiceUnavailable,
            },
            Error::IdempotencyInFlight => ErrorCode::IdempotencyInFlight,
            Error::TooManyRuns { .. } | Error::TooManySessions { .. } => ErrorCode::ConcurrencyLimit,
            Error::Refused(code, _) => *code,
            Error::EmailUnverified(_) | Error::PermanentSuppression { .. } => ErrorCode::Forbidden,
            Error::StorageCheck { .. } => ErrorCode::StorageCheckFailed,
            Error::LoginFailed { .. } => ErrorCode::LoginFailed,
            Error::RateLimited { .. } => ErrorCode::RateLimited,
            Error::DatabaseBusy => ErrorCode::ServiceUnavailable,
            Error::Internal => ErrorCode::InternalError,
        }
    }

    /// Machine-readable details, for the codes that have them.
    pub fn details(&self) -> Option<Value> {
        match self {
            Error::Invalid(e) => Some(json!({"field": e.field, "reason": e.reason})),
            Error::QuotaExceeded(q) => {
                let mut d = json!({"used": q.used, "limit": q.limit, "plan": q.plan, "resetAt": iso(q.reset_ms)});
                if let Some(fits) = q.fits {
                    d["fits"] = json!(fits);
                }
                Some(d)
            }
            Error::QueueFull(q) => Some(match q.scope {
                QueueScope::Account => json!({"pending": q.pending, "limit": q.limit, "scope": "account"}),
                // The global refusal does not tell one tenant how busy the others keep the service.
                QueueScope::Global => json!({"reason": "queue_full", "scope": "global"}),
            }),
            Error::TooManyRuns { active, limit } => Some(json!({"active": active, "limit": limit, "scope": "runs"})),
            Error::TooManySessions { active, limit } => {
                Some(json!({"active": active, "limit": limit, "scope": "automation_sessions"}))
            }
            Error::EmailUnverified(_) => Some(json!({"reason": "email_unverified"})),
            Error::DatabaseBusy => Some(json!({"reason": "database_busy"})),
            Error::StorageCheck { reason, s3_code, .. } => Some(json!({"reason": reason, "s3Code": s3_code})),
            Error::LoginFailed { steps, final_url, .. } => Some(json!({"steps": steps, "finalUrl": final_url})),
            Error::RateLimited { limit, per, retry_after, .. } => {
                Some(json!({"limit": limit, "per": per, "retryAfter": retry_after}))
            }
            Error::PermanentSuppression { by, reason, .. } => Some(
                json!({"reason": "permanent_suppression", "source": by.as_str(), "suppressionReason": reason.as_str()}),
            ),
            _ => None,
        }
    }
}

impl From<FieldError> for Error {
    fn from(e: FieldError) -> Self {
        Error::Invalid(e)
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        if e.is_unavailable() {
            tracing::warn!(error = %e, "database busy: answered 503");
            return Error::DatabaseBusy;
        }
        Error::internal(e)
    }
}

/// Result alias of service operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;
