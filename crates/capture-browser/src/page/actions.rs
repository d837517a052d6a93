//! What a capture does on a loaded page: dismiss consent banners, click, wait for a
//! selector, wait, run the user's script, read title and URL.

use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use capture_core::options::CookieConsent;

use super::{Page, Stop};
use crate::protocol as p;
use crate::{CaptureError, scripts};

/// The most `cookieConsent` may spend on a page after it loaded.
pub(crate) const CONSENT_BUDGET: Duration = Duration::from_secs(2);

impl Page {
    /// Arm `cookieConsent` before navigation: the consent engine runs at the start of every
    /// document the page loads ([`crate::consent`]).
    pub(crate) async fn arm_consent(&mut self, mode: CookieConsent) -> Result<(), CaptureError> {
        use crate::protocol::session::{AddScriptToEvaluateOnNewDocument, RemoveScriptToEvaluateOnNewDocument};
        let want = crate::consent::arm_script(mode);
        // The spare page was armed for the most recent job's mode: keep it when it is this
        // one's, else take it off.
        if let Some((armed, id)) = self.prepared.consent.take() {
            if want.is_some_and(|w| std::ptr::eq(w, armed) || w == armed) {
                self.prepared.consent = Some((armed, id));
                return Ok(());
            }
            self.call(&RemoveScriptToEvaluateOnNewDocument { identifier: &id }).await?;
        }
        if let Some(source) = want {
            let added = self.call(&AddScriptToEvaluateOnNewDocument { source }).await?;
            self.prepared.consent = Some((source, added.identifier));
        }
        Ok(())
    }

    /// Give the consent engine the sites' own rules for `url` ([`crate::consent::site_script`]),
    /// in place of those given for an earlier URL: a script added after the engine's, for the
    /// documents the page loads from now on. Nothing when no site's rule matches.
    pub(crate) async fn arm_site_rules(&mut self, mode: CookieConsent, url: &str) -> Result<(), CaptureError> {
        use crate::protocol::session::{AddScriptToEvaluateOnNewDocument, RemoveScriptToEvaluateOnNewDocument};
        if let Some(id) = self.site_consent.take() {
            self.call(&RemoveScriptToEvaluateOnNewDocument { identifier: &id }).await?;
        }
        if let Some(source) = crate::consent::site_script(mode, url) {
            let added = self.call(&AddScriptToEvaluateOnNewDocument { source: &source }).await?;
            self.site_consent = Some(added.identifier);
        }
        self.site_rules_url = Some(url.to_owned());
        Ok(())
    }

    /// Once the page's own actions ran: hide what still covers it (`hidePopups`, tag
    /// `popups-hidden`), then look again and report anything left over a quarter of the
    /// viewport (tag `overlay-remaining`, `metadata.overlay`) — never silently.
    ///
    /// `hid`: the hiding pass's value when it already ran (in the lists' call).
    pub(crate) async fn overlays(
        &mut self,
        hide: bool,
        hid: Option<Value>,
        tags: &mut Vec<String>,
    ) -> Result<(), CaptureError> {
        use crate::overlays::{Overlays, script};
        let read = |v: Value| serde_json::from_value::<Overlays>(v).unwrap_or_default();
        let pass = match (hide, hid) {
            (false, _) => None,
            (true, Some(v)) => Some(Ok(v)),
            (true, None) => Some(self.eval_job(&script(true)).await?),
        };
        if let Some(Ok(v)) = pass {
            let hid = read(v);
            // Nothing covered the page: nothing to look for again.
            if hid.found.is_empty() {
                return Ok(());
            }
            if hid.hidden > 0 {
                tags.push("popups-hidden".into());
            }
        }
        let Ok(v) = self.eval_job(&script(false)).await? else { return Ok(()) };
        if let Some(top) = read(v).found.into_iter().next() {
            tags.push("overlay-remaining".into());
            self.overlay_report =
                Some(capture_core::metadata::OverlayReport { selector: top.selector, coverage: top.coverage });
        }
        Ok(())
    }

    /// What the consent engine did on the loaded page, within [`CONSENT_BUDGET`]: kept for the
    /// job's `metadata.consent`. With `auto`, a pop-up no rule refused, or a consent-looking
    /// banner no rule knows, is hidden. Tags `consent-rejected`, `consent-accepted`,
    /// `consent-hidden` or `consent-failed` as it ends; a page that keeps the step busy is
    /// captured as it is (`consent-timeout`), never held to the job's deadline.
    pub(crate) async fn consent(&mut self, mode: CookieConsent, tags: &mut Vec<String>) -> Result<(), CaptureError> {
        use crate::consent::{Summary, Verdict, decide};
        use capture_core::metadata::{ConsentAction, ConsentReport};
        if mode == CookieConsent::None {
            return Ok(());
        }
        let started = Instant::now();
        let until = (started + CONSENT_BUDGET).min(self.deadline);
        let auto = mode == CookieConsent::Auto;
        // A redirect took the page to another site than the one its rules were given for: that
        // site's own rules, if it has any, go to the engine now.
        let late = match (&self.site_rules_url, self.document_chain.last()) {
            (Some(given), Some(now)) => crate::consent::late_site_script(mode, given, now),
            _ => None,
        };
        if let Some(js) = late {
            let bound = until.max(Instant::now() + Duration::from_millis(200));
            match self.eval(&js, bound, false).await {
                Ok(Ok(v)) => {
                    tracing::debug!(target: "capture_browser::timing", given = %v, "consent: a redirect's site rules")
                }
                Ok(Err(_)) => {}
                Err(Stop::Elapsed) if self.deadline > Instant::now() => {}
                Err(Stop::Elapsed) => return Err(self.deadline_err()),
                Err(Stop::Fail(e)) => return Err(e),
            }
        }
        // What the fallback hid when the last summary ran it (a page where nothing was found).
        let mut hid_in_summary = None;
        let mut looks = 0u32;
        let mut report = loop {
            looks += 1;
            let out_of_time = Instant::now() >= until;
            let summary: Summary = match self
                .eval(crate::consent::summary(auto), until.max(Instant::now() + Duration::from_millis(200)), false)
                .await
            {
                Ok(Ok(v)) => serde_json::from_value(v).unwrap_or_default(),
                Ok(Err(_)) => Summary::default(),
                Err(Stop::Elapsed) if self.deadline > Instant::now() => {
                    tags.push("consent-timeout".into());
                    break ConsentReport { cmp: None, action: ConsentAction::Failed };
                }
                Err(Stop::Elapsed) => return Err(self.deadline_err()),
                Err(Stop::Fail(e)) => return Err(e),
            };
            hid_in_summary = summary.hid;
            // The engine did not run here (a document it could not reach): nothing to read.
            let armed = !summary.frames.is_empty();
            match decide(mode, &summary, started.elapsed(), out_of_time || !armed) {
                Verdict::Known(r) => break r,
                Verdict::Wait => {
                    if tokio::time::timeout_at(until, tokio::time::sleep(Duration::from_millis(30))).await.is_err() {
                        continue;
                    }
                }
            }
        };
        // `auto`: refuse where a rule could, else hide what is left (in the summary's own call
        // when it found nothing at all).
        let leftover = matches!(report.action, ConsentAction::Failed | ConsentAction::NoneFound);
        if auto && leftover {
            let hid = match hid_in_summary.filter(|_| report.action == ConsentAction::NoneFound) {
                Some(n) => n,
                None => self.consent_fallback(until, tags).await?,
            };
            if hid > 0 {
                report.action = ConsentAction::Hidden;
            }
        }
        let tag = match report.action {
            ConsentAction::Rejected => Some("consent-rejected"),
            ConsentAction::Accepted => Some("consent-accepted"),
            ConsentAction::Hidden => Some("consent-hidden"),
            ConsentAction::Failed => Some("consent-failed"),
            ConsentAction::NoneFound => None,
        };
        if let Some(t) = tag
            && !tags.iter().any(|x| x == t)
        {
            tags.push(t.into());
        }
        tracing::debug!(target: "capture_browser::timing", cmp = ?report.cmp, action = ?report.action,
            took = ?started.elapsed(), looks, "consent");
        self.consent_report = Some(report);
        Ok(())
    }

    /// `auto`'s fallback on its own ([`crate::consent::HIDE_FALLBACK`]), within the step's
    /// budget (at least a moment, if reading took all of it): how many elements it hid.
    async fn consent_fallback(&mut self, until: Instant, tags: &mut Vec<String>) -> Result<u64, CaptureError> {
        let fallback_until = until.max(Instant::now() + Duration::from_millis(200)).min(self.deadline);
        Ok(match self.eval(crate::consent::HIDE_FALLBACK, fallback_until, false).await {
            Ok(Ok(v)) => v.as_u64().unwrap_or(0),
            Ok(Err(_)) => 0,
            Err(Stop::Elapsed) if self.deadline > Instant::now() => {
                if !tags.iter().any(|t| t == "consent-timeout") {
                    tags.push("consent-timeout".into());
                }
                0
            }
            Err(Stop::Elapsed) => return Err(self.deadline_err()),
            Err(Stop::Fail(e)) => return Err(e),
        })
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
