//! Loading a page and waiting until it counts as loaded.

use std::time::Duration;

use tokio::time::Instant;

use super::{LC_COMMIT, LC_DCL, LC_LOAD, Page, Stop, lost};
use crate::cdp::CdpError;
use crate::protocol as p;
use crate::{CaptureError, PageSource, WaitUntil, scripts};

/// Quiet window after which the network counts as idle.
pub(crate) const IDLE_QUIET: Duration = Duration::from_millis(300);

/// Only `http` and `https` pages are loaded: `file:` would read the machine's files, and
/// `chrome:`, `devtools:`, `data:`… are no pages of the web.
pub(crate) fn check_scheme(url: &str) -> Result<(), CaptureError> {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(()),
        Ok(u) => Err(CaptureError::Navigation(format!(
            "only http and https URLs can be loaded ({}: URLs are refused)",
            u.scheme()
        ))),
        Err(e) => Err(CaptureError::Navigation(format!("not a valid URL: {e}"))),
    }
}

impl Page {
    /// The readable reason a navigation failed: what the egress proxy saw for the host,
    /// else the browser's network error in words.
    pub(crate) fn navigation_error(&self, url: &str, err: &str, since: std::time::Instant) -> CaptureError {
        let host = url::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
        if !host.is_empty()
            && let Some(reason) = self.failures.since(&host, since)
        {
            return CaptureError::navigation(reason);
        }
        let msg = match err {
            "net::ERR_NAME_NOT_RESOLVED" => format!("DNS lookup failed for {host}"),
            "net::ERR_CONNECTION_REFUSED" => format!("connection refused by {host}"),
            "net::ERR_CONNECTION_TIMED_OUT" | "net::ERR_TIMED_OUT" => {
                format!("connection to {host} timed out")
            }
            "net::ERR_TUNNEL_CONNECTION_FAILED" => {
                format!("could not connect to {host} through the egress proxy")
            }
            "net::ERR_ABORTED" => format!("navigation to {url} was aborted (net::ERR_ABORTED)"),
            e if e.starts_with("net::ERR_CERT_") => {
                format!("TLS certificate error for {host} ({e})")
            }
            e if e.starts_with("net::ERR_SSL_") => format!("TLS error for {host} ({e})"),
            e => format!("could not load {url} ({e})"),
        };
        CaptureError::Navigation(msg)
    }

    /// Load `source` and wait per `wait_until`, within `timeout_ms` (and the deadline).
    /// Tags `networkidle-timeout` and `http-<status>` (≥ 400). Returns the new document's
    /// loader (None for uploaded HTML).
    pub(crate) async fn navigate(
        &mut self,
        source: &PageSource,
        wait_until: WaitUntil,
        timeout_ms: u64,
        tags: &mut Vec<String>,
    ) -> Result<Option<String>, CaptureError> {
        let nav_start = Instant::now();
        let nav_std = std::time::Instant::now();
        let nav_until = (nav_start + Duration::from_millis(timeout_ms)).min(self.deadline);
        let nav_timeout = CaptureError::Timeout(format!("navigation timed out after {timeout_ms} ms"));
        let mut loader: Option<String> = None;
        match source {
            PageSource::Url(url) => {
                check_scheme(url)?;
                let reply = self.send(&p::Navigate { url });
                // The job's interception, sent behind the navigation: the browser takes the two
                // in order, so its own request has started unpaused (the page's document, never
                // refused; pausing it cost ~5 ms, and the interceptor on its load ~4 ms more)
                // while everything the document asks for later, its frames included, pauses.
                let intercept = self.fetch_on_navigate.take().map(|f| self.send(&f));
                let res = match self.reply_until(reply, nav_until).await {
                    Ok(Ok(v)) => v,
                    Ok(Err(CdpError::Protocol(m))) => {
                        return Err(CaptureError::Navigation(format!("cannot navigate to {url}: {m}")));
                    }
                    Ok(Err(e)) => return Err(lost(&e, "Page.navigate")),
                    Err(Stop::Elapsed) => return Err(self.timeout_err(nav_until, nav_timeout)),
                    Err(Stop::Fail(e)) => return Err(e),
                };
                if let Some(err) = res.error_text.as_deref().filter(|s| !s.is_empty()) {
                    if err == "net::ERR_ABORTED" {
                        // A renderer that dies mid-navigation aborts it; its crash event
                        // follows the reply. Report the crash (retried), not an abort.
                        let grace = (Instant::now() + Duration::from_millis(250)).min(self.deadline);
                        self.pump_for(grace).await?;
                    }
                    return Err(self.navigation_error(url, err, nav_std));
                }
                if let Some(reply) = intercept {
                    self.finish(reply, "Fetch.enable").await?;
                }
                loader = res.loader_id;
                self.trace("navigation committed");
                if let Some(l) = &loader {
                    // Only this document's load counts.
                    if !self.lifecycle_has(l, LC_LOAD) {
                        self.load_at = None;
                    }
                }
            }
            PageSource::Html(html) => {
                let cmd = p::SetDocumentContent { frame_id: &self.frame_id, html };
                let reply = self.conn.cmd(&cmd, Some(&self.sid));
                match self.reply_until(reply, nav_until).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => return Err(lost(&e, "Page.setDocumentContent")),
                    Err(Stop::Elapsed) => return Err(self.timeout_err(nav_until, nav_timeout)),
                    Err(Stop::Fail(e)) => return Err(e),
                }
            }
        }

        let want = match wait_until {
            WaitUntil::None => LC_COMMIT,
            WaitUntil::Domcontentloaded => LC_DCL,
            WaitUntil::Load | WaitUntil::Networkidle => LC_LOAD,
        };
        match &loader {
            Some(l) => {
                while !self.lifecycle_has(l, want) {
                    match self.pump_until(nav_until).await {
                        Ok(()) => {}
                        Err(Stop::Elapsed) => return Err(self.timeout_err(nav_until, nav_timeout)),
                        Err(Stop::Fail(e)) => return Err(e),
                    }
                }
            }
            None if matches!(source, PageSource::Html(_)) && want == LC_LOAD => {
                match self.eval(scripts::WAIT_LOAD, nav_until, false).await {
                    Ok(_) => self.load_at = Some(Instant::now()),
                    Err(Stop::Elapsed) => return Err(self.timeout_err(nav_until, nav_timeout)),
                    Err(Stop::Fail(e)) => return Err(e),
                }
            }
            None => {}
        }
        if wait_until == WaitUntil::Networkidle && !self.wait_idle(nav_until, IDLE_QUIET).await? {
            if nav_until >= self.deadline {
                return Err(self.deadline_err());
            }
            tags.push("networkidle-timeout".into());
        }
        self.check_main_response(tags)?;
        Ok(loader)
    }

    /// The main document's answer: refused by the egress guard (an error), or an HTTP
    /// error status (a tag).
    fn check_main_response(&mut self, tags: &mut Vec<String>) -> Result<(), CaptureError> {
        if let Some(reason) = self.egress_error.take() {
            return Err(CaptureError::navigation(reason));
        }
        if let Some(status) = self.main_status {
            self.document_status = Some(status);
        }
        if let Some(status) = self.main_status.take()
            && status >= 400
        {
            tags.push(format!("http-{status}"));
        }
        Ok(())
    }
}
