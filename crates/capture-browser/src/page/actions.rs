//! What a capture does on a loaded page: dismiss consent banners, click, wait for a
//! selector, wait, run the user's script, read title and URL.

use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::{Page, Stop};
use crate::protocol as p;
use crate::{CaptureError, scripts};

/// The most `cookieConsent: auto` may spend on a page.
pub(crate) const CONSENT_BUDGET: Duration = Duration::from_secs(2);

impl Page {
    /// Dismiss or hide cookie-consent overlays; tags `consent-dismissed`/`consent-hidden`.
    /// Bounded by [`CONSENT_BUDGET`]: a page that keeps the script busy is captured as it is
    /// (tag `consent-timeout`), never held to the job's deadline.
    pub(crate) async fn consent(&mut self, tags: &mut Vec<String>) -> Result<(), CaptureError> {
        let until = (Instant::now() + CONSENT_BUDGET).min(self.deadline);
        let answer = match self.eval(scripts::CONSENT, until, false).await {
            Ok(r) => r,
            Err(Stop::Elapsed) if until < self.deadline => {
                tags.push("consent-timeout".into());
                return Ok(());
            }
            Err(Stop::Elapsed) => return Err(self.deadline_err()),
            Err(Stop::Fail(e)) => return Err(e),
        };
        if let Ok(v) = answer {
            let clicked = v.get("clicked").and_then(Value::as_u64).unwrap_or(0);
            let hidden = v.get("hidden").and_then(Value::as_u64).unwrap_or(0);
            if clicked > 0 && !tags.iter().any(|t| t == "consent-dismissed") {
                tags.push("consent-dismissed".into());
            }
            if hidden > 0 && !tags.iter().any(|t| t == "consent-hidden") {
                tags.push("consent-hidden".into());
            }
        }
        Ok(())
    }

    /// A real mouse click (move, press, release) at a viewport point.
    pub(crate) async fn mouse_click(&mut self, x: f64, y: f64, clicks: u32) -> Result<(), CaptureError> {
        let ev = |kind: &'static str, button: &'static str| p::DispatchMouseEvent {
            kind,
            x,
            y,
            button,
            click_count: if kind == "mouseMoved" { 0 } else { clicks },
            ..Default::default()
        };
        // Pipelined: one round trip.
        let r1 = self.send(&ev("mouseMoved", "none"));
        let r2 = self.send(&ev("mousePressed", "left"));
        let r3 = self.send(&ev("mouseReleased", "left"));
        self.finish(r1, "Input.dispatchMouseEvent").await?;
        self.finish(r2, "Input.dispatchMouseEvent").await?;
        self.finish(r3, "Input.dispatchMouseEvent").await?;
        Ok(())
    }

    /// Wait up to `timeout_ms` for `sel`, then click its centre; if the click starts a
    /// navigation, wait for it (within `timeout_ms`).
    pub(crate) async fn click_before(&mut self, sel: &str, timeout_ms: u64) -> Result<(), CaptureError> {
        let sel_json = serde_json::to_string(sel).unwrap_or_default();
        let until = (Instant::now() + Duration::from_millis(timeout_ms + 500)).min(self.deadline);
        let not_found = CaptureError::Script(format!("clickBefore: no element matches '{sel}' after {timeout_ms} ms"));
        match self.eval(&scripts::wait_selector(&sel_json, timeout_ms), until, false).await {
            Ok(Ok(Value::Bool(true))) => {}
            Ok(Ok(Value::String(s))) if s == "invalid" => {
                return Err(CaptureError::Script(format!("clickBefore: '{sel}' is not a valid CSS selector")));
            }
            Ok(Ok(_)) => return Err(not_found),
            Ok(Err(m)) => return Err(CaptureError::Script(format!("clickBefore failed: {m}"))),
            Err(Stop::Elapsed) => return Err(self.timeout_err(until, not_found)),
            Err(Stop::Fail(e)) => return Err(e),
        }
        let centre = match self.eval_job(&scripts::element_centre(&sel_json)).await? {
            Ok(v) => v,
            Err(m) => return Err(CaptureError::Script(format!("clickBefore failed: {m}"))),
        };
        if centre.is_null() {
            return Err(not_found);
        }
        if let (Some(x), Some(y)) = (centre.get("x").and_then(Value::as_f64), centre.get("y").and_then(Value::as_f64)) {
            self.mouse_click(x, y, 1).await?;
        }
        // Give the page a moment; if the click started a navigation, wait for it.
        let started = self.started_loading;
        let settle = (Instant::now() + Duration::from_millis(100)).min(self.deadline);
        self.pump_for(settle).await?;
        if self.started_loading != started {
            let until = (Instant::now() + Duration::from_millis(timeout_ms)).min(self.deadline);
            while self.loading {
                match self.pump_until(until).await {
                    Ok(()) => {}
                    Err(Stop::Elapsed) if until >= self.deadline => return Err(self.deadline_err()),
                    Err(Stop::Elapsed) => break,
                    Err(Stop::Fail(e)) => return Err(e),
                }
            }
        }
        Ok(())
    }

    /// Wait up to `timeout_ms` for `sel`; tags `wait-for-timeout` when it never shows.
    pub(crate) async fn wait_for(
        &mut self,
        sel: &str,
        timeout_ms: u64,
        tags: &mut Vec<String>,
    ) -> Result<(), CaptureError> {
        let sel_json = serde_json::to_string(sel).unwrap_or_default();
        let started = Instant::now();
        let until = (started + Duration::from_millis(timeout_ms + 500)).min(self.deadline);
        for _attempt in 0..2 {
            let left = timeout_ms.saturating_sub(started.elapsed().as_millis() as u64);
            match self.eval(&scripts::wait_selector(&sel_json, left), until, false).await {
                Ok(Ok(Value::Bool(true))) => return Ok(()),
                Ok(Ok(Value::String(s))) if s == "invalid" => {
                    return Err(CaptureError::Script(format!("waitFor: '{sel}' is not a valid CSS selector")));
                }
                Ok(Ok(_)) => break,
                // The document was replaced while waiting: try once more.
                Ok(Err(_)) => continue,
                Err(Stop::Elapsed) if until >= self.deadline => return Err(self.deadline_err()),
                Err(Stop::Elapsed) => break,
                Err(Stop::Fail(e)) => return Err(e),
            }
        }
        tags.push("wait-for-timeout".into());
        Ok(())
    }

    /// Wait `ms` (processing events); a wait past the deadline fails at once.
    pub(crate) async fn delay(&mut self, ms: u64) -> Result<(), CaptureError> {
        let end = Instant::now() + Duration::from_millis(ms);
        if end > self.deadline {
            return Err(self.deadline_err());
        }
        self.pump_for(end).await
    }

    /// Run the user's `preScreenshotJs` (awaited, console semantics).
    /// A script whose promise never settles is bounded by `timeout_ms`, the bound the
    /// contract gives navigation, waitFor and clickBefore (and by the job's deadline).
    pub(crate) async fn user_script(&mut self, js: &str, timeout_ms: u64) -> Result<(), CaptureError> {
        let until = (Instant::now() + Duration::from_millis(timeout_ms)).min(self.deadline);
        match self.eval(js, until, true).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(m)) => Err(CaptureError::Script(format!("preScreenshotJs threw: {m}"))),
            Err(Stop::Elapsed) => Err(self.timeout_err(
                until,
                CaptureError::Timeout(format!("preScreenshotJs did not settle within {timeout_ms} ms (timeoutMs)")),
            )),
            Err(Stop::Fail(e)) => Err(e),
        }
    }

    /// `document.title` and `location.href`.
    pub(crate) async fn title_url(&mut self) -> Result<(String, String), CaptureError> {
        Ok(match self.eval_job(scripts::TITLE_URL).await? {
            Ok(Value::Array(a)) if a.len() == 2 => {
                (a[0].as_str().unwrap_or_default().to_owned(), a[1].as_str().unwrap_or_default().to_owned())
            }
            _ => (String::new(), String::new()),
        })
    }
}
