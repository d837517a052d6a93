//! When and how long the client waits before trying a request again: the contract's error
//! rules (5xx and 429 are retried with exponential backoff and the same Idempotency-Key,
//! honouring `Retry-After`; an unknown error code is transient), bounded in attempts and in
//! total time.

use std::time::{Duration, SystemTime};

use capture_core::ErrorCode;
use rand::RngExt;

/// How a client command retries its requests.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 = never retry).
    pub max_attempts: u32,
    /// No wait may end later than this after the first attempt started.
    pub max_elapsed: Duration,
    /// The first backoff; each later one doubles, up to `max_delay`.
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// Do not print the waits.
    pub quiet: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            max_elapsed: Duration::from_secs(120),
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            quiet: false,
        }
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Wait this long, then try again.
    Retry(Duration),
    /// The failure is not transient: retrying cannot help.
    Permanent,
    /// Every allowed attempt was made.
    OutOfAttempts,
    /// The server asks for a wait (`Retry-After`) that ends past the time budget.
    WaitTooLong(Duration),
}

impl RetryPolicy {
    /// The jittered exponential backoff after `failed` failed attempts (1 = the first):
    /// half of `base × 2^(failed-1)` (capped) plus a random part up to the other half, so
    /// clients that failed together do not come back together, and no wait is near zero.
    pub fn backoff(&self, failed: u32) -> Duration {
        let exp = self.base_delay.saturating_mul(1u32 << failed.saturating_sub(1).min(20)).min(self.max_delay);
        let half = exp / 2;
        half + half.mul_f64(rand::rng().random_range(0.0..=1.0))
    }

    /// After attempt number `failed` failed `elapsed` after the first began, with the
    /// server's `Retry-After` if it sent one: wait and retry, or stop (and why).
    pub fn decide(&self, transient: bool, failed: u32, elapsed: Duration, retry_after: Option<Duration>) -> Decision {
        if !transient {
            return Decision::Permanent;
        }
        let left = self.max_elapsed.saturating_sub(elapsed);
        // The server's wait first: a wait it asked for that does not fit is reported as such
        // (a quota that resets in days), whatever attempts remain.
        if let Some(after) = retry_after
            && after > left
        {
            return Decision::WaitTooLong(after);
        }
        if failed >= self.max_attempts {
            return Decision::OutOfAttempts;
        }
        let wait = match retry_after {
            // The server knows when it expects to cope; a little jitter spreads the herd.
            Some(after) => after + Duration::from_millis(rand::rng().random_range(0..=250)),
            None => self.backoff(failed),
        };
        if wait > left {
            return Decision::OutOfAttempts;
        }
        Decision::Retry(wait)
    }
}

/// Is a failed response worth retrying? 5xx, 408 and 429 are; so is an error code this
/// client does not know (the contract's rule 1) and `IDEMPOTENCY_IN_FLIGHT` (the first
/// request with the key is still running). A known code of a client error is not; nor a
/// 4xx without a code (a proxy's answer).
pub fn is_transient(status: u16, code: Option<&str>) -> bool {
    if status >= 500 || status == 408 || status == 429 {
        return true;
    }
    match code.filter(|c| !c.is_empty()) {
        None => false,
        Some(c) => match serde_json::from_value::<ErrorCode>(serde_json::Value::String(c.to_string())) {
            Ok(ErrorCode::IdempotencyInFlight) => true,
            Ok(known) => known.status() >= 500 || known.status() == 429,
            Err(_) => true,
        },
    }
}

/// Parse a `Retry-After` value: delay seconds, or an HTTP date (a date in the past is no wait).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A duration for people: `800ms`, `2.5s`, `4m10s`, `3h20m`, `6d4h`.
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0 => format!("{}ms", d.as_millis()),
        1..60 => format!("{:.1}s", d.as_secs_f64()),
        60..3600 => format!("{}m{}s", s / 60, s % 60),
        3600..86400 => format!("{}h{}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{}h", s / 86400, s % 86400 / 3600),
    }
}

/// A fresh Idempotency-Key: `cli_` and 32 random letters and digits (the contract's
/// pattern is `[A-Za-z0-9_-]{8,128}`).
pub fn new_idempotency_key() -> String {
    let r: String = rand::rng().sample_iter(&rand::distr::Alphanumeric).take(32).map(char::from).collect();
    format!("cli_{r}")
}

/// Does `key` match the contract's `[A-Za-z0-9_-]{8,128}`?
pub fn valid_idempotency_key(key: &str) -> bool {
    (8..=128).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy { max_attempts: 4, max_elapsed: Duration::from_secs(60), ..RetryPolicy::default() }
    }

    #[test]
    fn transient_failures_follow_the_contract() {
        assert!(is_transient(500, Some("INTERNAL_ERROR")));
        assert!(is_transient(503, None));
        assert!(is_transient(502, Some("")), "a gateway's empty answer");
        assert!(is_transient(429, Some("QUEUE_FULL")));
        assert!(is_transient(429, Some("PLAN_QUOTA_EXCEEDED")), "its Retry-After decides");
        assert!(is_transient(409, Some("IDEMPOTENCY_IN_FLIGHT")));
        assert!(is_transient(400, Some("SOMETHING_NEWER_THAN_THIS_CLIENT")), "rule 1");
        assert!(!is_transient(400, Some("VALIDATION_ERROR")));
        assert!(!is_transient(422, Some("IDEMPOTENCY_KEY_REUSED")));
        assert!(!is_transient(401, Some("UNAUTHORIZED")));
        assert!(!is_transient(404, None));
    }

    #[test]
    fn backoff_doubles_with_jitter_and_a_cap() {
        let p = policy();
        for n in 1..=12 {
            let exp = (Duration::from_millis(500) * (1 << (n - 1))).min(Duration::from_secs(30));
            for _ in 0..50 {
                let d = p.backoff(n);
                assert!(d >= exp / 2 && d <= exp, "attempt {n}: {d:?} outside {:?}..={exp:?}", exp / 2);
            }
        }
        let waits: std::collections::HashSet<Duration> = (0..20).map(|_| p.backoff(3)).collect();
        assert!(waits.len() > 1, "jitter varies the waits");
    }

    #[test]
    fn retry_after_is_honoured_and_bounded() {
        let p = policy();
        let Decision::Retry(d) = p.decide(true, 1, Duration::ZERO, Some(Duration::from_secs(3))) else { panic!() };
        assert!(d >= Duration::from_secs(3) && d <= Duration::from_millis(3250), "{d:?}");
        // A quota that resets in days is not waited for, even with attempts left.
        let days = Duration::from_secs(6 * 86400);
        assert_eq!(p.decide(true, 1, Duration::ZERO, Some(days)), Decision::WaitTooLong(days));
        // Past the time budget.
        assert_eq!(
            p.decide(true, 1, Duration::from_secs(58), Some(Duration::from_secs(5))),
            Decision::WaitTooLong(Duration::from_secs(5))
        );
        assert_eq!(p.decide(true, 4, Duration::ZERO, None), Decision::OutOfAttempts);
        assert_eq!(p.decide(false, 1, Duration::ZERO, None), Decision::Permanent);
        assert!(matches!(p.decide(true, 3, Duration::ZERO, None), Decision::Retry(_)));
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:51:37 GMT", now), Some(Duration::from_secs(120)));
        // The two obsolete forms HTTP still allows.
        assert_eq!(parse_retry_after("Sunday, 06-Nov-94 08:50:37 GMT", now), Some(Duration::from_secs(60)));
        assert_eq!(parse_retry_after("Sun Nov  6 08:49:47 1994", now), Some(Duration::from_secs(10)));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now), Some(Duration::ZERO), "in the past");
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-5", now), None);
    }

    #[test]
    fn idempotency_keys() {
        let a = new_idempotency_key();
        assert!(valid_idempotency_key(&a), "{a}");
        assert_ne!(a, new_idempotency_key());
        assert!(!valid_idempotency_key("short"));
        assert!(!valid_idempotency_key("has space in it"));
        assert!(!valid_idempotency_key(&"x".repeat(129)));
    }

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::from_millis(800)), "800ms");
        assert_eq!(human(Duration::from_millis(2500)), "2.5s");
        assert_eq!(human(Duration::from_secs(250)), "4m10s");
        assert_eq!(human(Duration::from_secs(6 * 86400 + 4 * 3600 + 5)), "6d4h");
    }
}
