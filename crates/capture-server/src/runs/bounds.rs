//! Bounds of a run request, and the checks that hold a field to them (a `VALIDATION_ERROR`
//! naming the field).

use capture_core::FieldError;

/// The run's whole time, in milliseconds.
pub const TIMEOUT: (u64, u64) = (1_000, 1_800_000);
/// Default timeout of a scripted run.
pub const SCRIPTED_TIMEOUT: u64 = 60_000;
/// Default timeout of a live session.
pub const LIVE_TIMEOUT: u64 = 300_000;
/// One step's own timeout, in milliseconds.
pub const STEP_TIMEOUT: (u64, u64) = (100, 60_000);
/// Default timeout of a step.
pub const STEP_TIMEOUT_DEFAULT: u64 = 10_000;
/// Longest `wait` step.
pub const WAIT_MAX: u64 = 60_000;
/// Most steps in a run.
pub const STEPS_MAX: usize = 100;
pub const URL_MAX: usize = 4096;
pub const SELECTOR_MAX: usize = 1024;
pub const TEXT_MAX: usize = 10_000;
pub const EXPRESSION_MAX: usize = 16 * 1024;
pub const KEY_MAX: usize = 64;
pub const USER_AGENT_MAX: usize = 512;
pub const WIDTH: (u32, u32) = (200, 3840);
pub const HEIGHT: (u32, u32) = (200, 4320);
pub const DSF: (f64, f64) = (0.5, 4.0);

pub(crate) fn http_url(field: &str, u: &str) -> Result<(), FieldError> {
    if u.len() > URL_MAX {
        return Err(FieldError::new(field, format!("must be at most {} characters", URL_MAX)));
    }
    match url::Url::parse(u) {
        Ok(p) if matches!(p.scheme(), "http" | "https") && p.host_str().is_some() => Ok(()),
        _ => Err(FieldError::new(field, "must be an absolute http(s) URL")),
    }
}

pub(crate) fn within(field: &str, v: u64, (min, max): (u64, u64)) -> Result<(), FieldError> {
    if v < min || v > max {
        return Err(FieldError::new(field, format!("must be from {min} to {max}")));
    }
    Ok(())
}

pub(crate) fn text(field: &str, s: &str, max: usize, allow_empty: bool) -> Result<(), FieldError> {
    if !allow_empty && s.is_empty() {
        return Err(FieldError::new(field, "must not be empty"));
    }
    if s.len() > max {
        return Err(FieldError::new(field, format!("must be at most {max} characters")));
    }
    Ok(())
}
