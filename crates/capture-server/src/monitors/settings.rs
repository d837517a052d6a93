//! What a monitor is made of, read and checked: its schedule against the service's minimum, the
//! capture options of its checks, where a check's text is, and its stored (sealed) options.
//! Shared by the resource's operations ([`super::service`]) and the scheduler's side
//! ([`super::check`]).

use capture_core::FieldError;
use capture_core::monitor::{Schedule, ScheduleIn};
use capture_core::options::{CaptureOptions, ContentFormat, ScreenshotIn};
use capture_store::MonitorRow;

use super::types::{CompareMode, Notify};
use crate::error::{Error, Result};
use crate::state::AppState;

/// Prefix of a capture column sealed with the master key (its options carry credentials).
const SEALED: &str = "sealed:";

/// The schedule as the service checks it: never more often than `CAPTURE_MONITOR_MIN_INTERVAL`.
pub fn schedule(state: &AppState, s: &ScheduleIn) -> std::result::Result<Schedule, FieldError> {
    s.check(state.cfg.accounts.monitor_min_interval.as_millis() as u64)
}

/// A stored schedule (checked when it was stored; read again with no minimum so a lowered
/// operator minimum never stops a monitor).
pub fn stored_schedule(m: &MonitorRow) -> Option<Schedule> {
    let s: ScheduleIn = serde_json::from_str(&m.schedule).ok()?;
    s.check(1).ok()
}

/// The capture options of a check of `url`: the monitor's own, with a full page and an HTTP
/// error status failing the check unless they say otherwise; the page's text beside the image
/// when text is compared (less the ignored elements); the ignored elements' boxes measured.
pub fn check_options(
    capture: &ScreenshotIn,
    url: &str,
    compare: CompareMode,
    ignore: &[String],
) -> std::result::Result<CaptureOptions, FieldError> {
    let mut c = capture.clone();
    c.url = Some(url.to_owned());
    if c.selector.is_none() && c.clip.is_none() {
        c.full_page.get_or_insert(true);
    }
    c.fail_on_http_error.get_or_insert(true);
    let own_text = c.format.and_then(|f| f.content());
    if compare.text() {
        if own_text.is_none() {
            let forms = c.content.get_or_insert_with(Vec::new);
            if !forms.contains(&ContentFormat::Text) {
                forms.push(ContentFormat::Text);
            }
        }
        if !ignore.is_empty() {
            c.exclude_selectors.get_or_insert_with(Vec::new).extend(ignore.iter().cloned());
        }
    }
    let mut opts = c.into_options(true).map_err(|e| FieldError::new(format!("capture.{}", e.field), e.reason))?;
    if compare.pixels() && opts.format.content().is_some() {
        return Err(FieldError::new(
            "compare",
            "pixels need an image capture (format png, jpeg or webp): compare text instead",
        ));
    }
    opts.mask_selectors = ignore.to_vec();
    Ok(opts)
}

/// Where a done check's text is: the job's own file when it is text, else the text beside it.
pub fn text_key(result_key: &str, opts: &CaptureOptions) -> String {
    match opts.format.content() {
        Some(_) => result_key.to_owned(),
        None => crate::blob::content_name(result_key, ContentFormat::Text),
    }
}

fn has_credentials(c: &ScreenshotIn) -> bool {
    c.headers.is_some() || c.cookies.is_some() || c.http_auth.is_some()
}

/// The capture options as stored: sealed when they carry credentials.
pub(super) fn seal_capture(state: &AppState, c: &ScreenshotIn) -> Result<String> {
    let json = serde_json::to_string(c).map_err(Error::internal)?;
    Ok(if has_credentials(c) { format!("{SEALED}{}", state.master.encrypt(&json)) } else { json })
}

/// The stored capture options, opened.
pub fn open_capture(state: &AppState, stored: &str) -> std::result::Result<ScreenshotIn, String> {
    let json = match stored.strip_prefix(SEALED) {
        Some(enc) => state
            .master
            .decrypt(enc)
            .ok_or("the monitor's capture options do not open with this master key (CAPTURE_MASTER_KEY changed?)")?,
        None => stored.to_owned(),
    };
    serde_json::from_str(&json).map_err(|e| format!("the monitor's capture options do not read: {e}"))
}

/// The monitor's notify settings.
pub fn notify_of(m: &MonitorRow) -> Notify {
    serde_json::from_str(&m.notify).unwrap_or_default()
}
