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
    /// A render link's capture failed (the page could not be captured); also the MCP
    /// `take_screenshot` tool's failed job.
    CaptureFailed,
    /// The MCP `audit_website` tool's audit failed (its actions were given back).
    AuditFailed,
    /// A storage destination failed its check (probe object written and deleted).
    StorageCheckFailed,
    /// The sign-in helper did not end signed in (`POST /v1/profiles/login`).
    LoginFailed,
    ServiceUnavailable,
    /// A rate its owner set was reached (a render link's captures per hour); `Retry-After`.
    RateLimited,
    // The codes of MCP automation tools' errors (a tool result, never an HTTP answer).
    /// The session ended (its timeout, idle, `session_end`, a crash).
    SessionExpired,
    /// No element matches the selector (or the selector is not valid CSS).
    ElementNotFound,
    /// An element ref from an earlier snapshot no longer names an element.
    NoSuchElementRef,
    /// A JavaScript dialog is open: only reading and handling it work.
    DialogOpen,
    /// `handle_dialog` with no dialog open.
    NoDialog,
    /// Another element covers the target: an input there would not reach it.
    ElementCovered,
    /// The action could not be done on the page (a script threw, a field refused the input).
    ActionFailed,
    /// The page could not be loaded.
    NavigationFailed,
    /// The browser or the tab failed.
    BrowserFailed,
    /// The session's policy refuses the command or URL.
    Refused,
    /// Something the tool needs is not installed here.
    Unavailable,
    /// The profile's signed-in session expired (the page went to a sign-in form).
    ProfileExpired,
    /// The site answered with a bot wall.
    Blocked,
    /// The customer's proxy refused or failed (`proxy_failed: <name>: <why>`).
    ProxyFailed,
    /// The tool's time ran out.
    Timeout,
    /// The node holding the session could not be reached.
    SessionUnreachable,
    /// Another node of the service holds the session: its tool calls go there.
    SessionElsewhere,
    /// The request needs something the operator has not set up here (`extract.prompt`
    /// without a language model): `/readyz` says what.
    FeatureUnavailable,
    /// The account's plan allows no more of a resource (monitors: `CAPTURE_PLAN_MONITORS`).
    PlanLimitExceeded,
}

impl ErrorCode {
    /// The HTTP status that goes with the code.
    pub fn status(self) -> u16 {
        use ErrorCode::*;
        match self {
            ValidationError | InvalidJson | InvalidIdempotencyKey | InvalidRequestId | InvalidOrganizationId => 400,
            Unauthorized => 401,
            Forbidden | PlanLimitExceeded => 403,
            NotFound => 404,
            MethodNotAllowed => 405,
            IdempotencyInFlight => 409,
            PayloadTooLarge => 413,
            UnsupportedMediaType => 415,
            IdempotencyKeyReused | StorageCheckFailed | LoginFailed => 422,
            PlanQuotaExceeded | QueueFull | ConcurrencyLimit | RateLimited => 429,
            InternalError => 500,
            CaptureFailed | AuditFailed => 502,
            ServiceUnavailable => 503,
            FeatureUnavailable => 501,
            // Tool results carry these; were one ever an HTTP answer, it would be the
            // request's failure as the page made it.
            SessionExpired | ElementNotFound | NoSuchElementRef | DialogOpen | NoDialog | ElementCovered
            | ActionFailed | NavigationFailed | BrowserFailed | Refused | Unavailable | ProfileExpired | Blocked
            | ProxyFailed | Timeout | SessionUnreachable | SessionElsewhere => 422,
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
            AuditFailed => "AUDIT_FAILED",
            StorageCheckFailed => "STORAGE_CHECK_FAILED",
            LoginFailed => "LOGIN_FAILED",
            ServiceUnavailable => "SERVICE_UNAVAILABLE",
            RateLimited => "RATE_LIMITED",
            SessionExpired => "SESSION_EXPIRED",
            ElementNotFound => "ELEMENT_NOT_FOUND",
            NoSuchElementRef => "NO_SUCH_ELEMENT_REF",
            DialogOpen => "DIALOG_OPEN",
            NoDialog => "NO_DIALOG",
            ElementCovered => "ELEMENT_COVERED",
            ActionFailed => "ACTION_FAILED",
            NavigationFailed => "NAVIGATION_FAILED",
            BrowserFailed => "BROWSER_FAILED",
            Refused => "REFUSED",
            Unavailable => "UNAVAILABLE",
            ProfileExpired => "PROFILE_EXPIRED",
            Blocked => "BLOCKED",
            ProxyFailed => "PROXY_FAILED",
            Timeout => "TIMEOUT",
            SessionUnreachable => "SESSION_UNREACHABLE",
            SessionElsewhere => "SESSION_ELSEWHERE",
            FeatureUnavailable => "FEATURE_UNAVAILABLE",
            PlanLimitExceeded => "PLAN_LIMIT_EXCEEDED",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_is_written_as_its_wire_name() {
        use ErrorCode::*;
        let codes = [
            ValidationError,
            PlanQuotaExceeded,
            RateLimited,
            AuditFailed,
            SessionExpired,
            ElementNotFound,
            NoSuchElementRef,
            DialogOpen,
            NoDialog,
            ElementCovered,
            ActionFailed,
            NavigationFailed,
            BrowserFailed,
            Refused,
            Unavailable,
            ProfileExpired,
            Blocked,
            ProxyFailed,
            Timeout,
            SessionUnreachable,
            SessionElsewhere,
            FeatureUnavailable,
        ];
        for code in codes {
            assert_eq!(serde_json::to_value(code).unwrap(), serde_json::json!(code.as_str()));
            assert_eq!(serde_json::from_value::<ErrorCode>(serde_json::json!(code.as_str())).unwrap(), code);
        }
    }
}
