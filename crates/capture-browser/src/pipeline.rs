//! One capture job inside a fresh browser context.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::cdp::{CdpError, Conn, Event, PendingReply};
use crate::egress::FailureLog;
use crate::imgsize::image_size;
use crate::scripts;
use crate::{CaptureError, CaptureOutput, CaptureRequest, ImageFormat, PageSource, WaitUntil};

/// Quiet window after which the network counts as idle.
const IDLE_QUIET: Duration = Duration::from_millis(300);
/// Tallest output image, in output pixels.
pub(crate) const MAX_OUTPUT_HEIGHT: f64 = 16384.0;
/// Thumbnail width in pixels.
const THUMB_WIDTH: f64 = 320.0;

/// Why a bounded wait stopped early.
enum Stop {
    Elapsed,
    Fail(CaptureError),
}

type EvalOut = Result<Value, String>;

/// Disposes the job's browser context however the job ends (also when cancelled).
struct ContextGuard {
    conn: Arc<Conn>,
    id: String,
}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        self.conn.send_forget("Target.disposeBrowserContext", &json!({ "browserContextId": self.id }), None);
    }
}

/// Flags of the main frame's lifecycle, per loader.
const LC_DCL: u8 = 1;
const LC_LOAD: u8 = 2;
const LC_COMMIT: u8 = 4;

struct Page<'a> {
    conn: &'a Arc<Conn>,
    failures: &'a FailureLog,
    sid: String,
    frame_id: String,
    prepared: Prepared,
    started: Instant,
    deadline: Instant,
    deadline_ms: u128,
    // tracked page state
    inflight: HashSet<String>,
    last_net_change: Instant,
    lifecycle: Vec<(String, u8)>,
    load_at: Option<Instant>,
    main_status: Option<u16>,
    egress_error: Option<String>,
    crashed: Option<&'static str>,
    loading: bool,
    started_loading: u32,
}

fn str_field<'v>(v: &'v Value, k: &str) -> Option<&'v str> {
    v.get(k).and_then(Value::as_str)
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s).trim()
}

fn lost(e: &CdpError, what: &str) -> CaptureError {
    match e {
        CdpError::Closed => CaptureError::Browser("the browser connection was lost".into()),
        CdpError::Protocol(m) => CaptureError::Browser(format!("{what} failed: {m}")),
    }
}

impl<'a> Page<'a> {
    fn deadline_err(&self) -> CaptureError {
        CaptureError::Timeout(format!("capture exceeded the {} ms deadline", self.deadline_ms))
    }

    fn on_event(&mut self, ev: Event) {
        let p = &ev.params;
        let main = str_field(p, "frameId") == Some(self.frame_id.as_str());
        match ev.method.as_str() {
            "Network.requestWillBeSent" => {
                if let Some(id) = str_field(p, "requestId") {
                    if !self.inflight.contains(id) {
                        self.inflight.insert(id.to_owned());
                    }
                    self.last_net_change = Instant::now();
                }
            }
            "Network.loadingFinished" | "Network.loadingFailed" => {
                if let Some(id) = str_field(p, "requestId") {
                    self.inflight.remove(id);
                    self.last_net_change = Instant::now();
                }
            }
            "Network.responseReceived" if main && str_field(p, "type") == Some("Document") => {
                let resp = &p["response"];
                self.main_status = resp.get("status").and_then(Value::as_f64).map(|s| s as u16);
                self.egress_error = resp
                    .get("headers")
                    .and_then(Value::as_object)
                    .and_then(|h| h.iter().find(|(k, _)| k.eq_ignore_ascii_case("x-capture-egress-error")))
                    .and_then(|(_, v)| v.as_str())
                    .map(str::to_owned);
            }
            "Page.lifecycleEvent" if main => {
                let flag = match str_field(p, "name") {
                    Some("DOMContentLoaded") => LC_DCL,
                    Some("load") => LC_LOAD,
                    _ => return,
                };
                let Some(loader) = str_field(p, "loaderId") else {
                    return;
                };
                if flag == LC_LOAD {
                    self.load_at = Some(Instant::now());
                    self.trace("load event");
                }
                let loader = loader.to_owned();
                self.mark_lifecycle(&loader, flag);
            }
            "Page.frameNavigated" => {
                let frame = &p["frame"];
                if str_field(frame, "id") == Some(self.frame_id.as_str())
                    && let Some(loader) = str_field(frame, "loaderId")
                {
                    let loader = loader.to_owned();
                    self.mark_lifecycle(&loader, LC_COMMIT);
                }
            }
            "Page.frameStartedLoading" if main => {
                self.loading = true;
                self.started_loading += 1;
            }
            "Page.frameStoppedLoading" if main => self.loading = false,
            "Page.javascriptDialogOpening" => {
                self.conn.send_forget("Page.handleJavaScriptDialog", &json!({ "accept": true }), Some(&self.sid));
            }
            "Inspector.targetCrashed" => self.crashed = Some("the page crashed"),
            "Target.detachedFromTarget" => {
                self.crashed = Some("the page was closed by the browser");
            }
            _ => {}
        }
    }

    fn trace(&self, what: &str) {
        tracing::trace!(target: "capture_browser::timing", at = ?self.started.elapsed(), "{what}");
    }

    fn mark_lifecycle(&mut self, loader: &str, flag: u8) {
        if let Some(e) = self.lifecycle.iter_mut().find(|(l, _)| l == loader) {
            e.1 |= flag;
        } else {
            if self.lifecycle.len() > 16 {
                self.lifecycle.remove(0);
            }
            self.lifecycle.push((loader.to_owned(), flag));
        }
    }

    fn crash_err(&self) -> Option<CaptureError> {
        self.crashed.map(|c| CaptureError::Browser(c.to_owned()))
    }

    /// Process one event, or stop at `until`.
    async fn pump_until(&mut self, until: Instant) -> Result<(), Stop> {
        match tokio::time::timeout_at(until, self.prepared.events.recv()).await {
            Err(_) => Err(Stop::Elapsed),
            Ok(None) => Err(Stop::Fail(
                self.crash_err().unwrap_or_else(|| CaptureError::Browser("the browser connection was lost".into())),
            )),
            Ok(Some(ev)) => {
                self.on_event(ev);
                match self.crash_err() {
                    Some(e) => Err(Stop::Fail(e)),
                    None => Ok(()),
                }
            }
        }
    }

    /// Wait for a reply while processing events; stop at `until`.
    async fn reply_until(&mut self, mut reply: PendingReply, until: Instant) -> Result<Result<Value, CdpError>, Stop> {
        let sleep = tokio::time::sleep_until(until);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                biased;
                r = &mut reply => return Ok(r),
                ev = self.prepared.events.recv() => match ev {
                    Some(ev) => {
                        self.on_event(ev);
                        if let Some(e) = self.crash_err() {
                            return Err(Stop::Fail(e));
                        }
                    }
                    None => {
                        return Err(Stop::Fail(self.crash_err().unwrap_or_else(|| {
                            CaptureError::Browser("the browser connection was lost".into())
                        })));
                    }
                },
                _ = &mut sleep => return Err(Stop::Elapsed),
            }
        }
    }

    fn send(&self, method: &str, params: &Value) -> PendingReply {
        self.conn.send(method, params, Some(&self.sid))
    }

    async fn finish(&mut self, reply: PendingReply, method: &str) -> Result<Value, CaptureError> {
        match self.reply_until(reply, self.deadline).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(lost(&e, method)),
            Err(Stop::Elapsed) => Err(self.deadline_err()),
            Err(Stop::Fail(e)) => Err(e),
        }
    }

    async fn call(&mut self, method: &str, params: Value) -> Result<Value, CaptureError> {
        let reply = self.send(method, &params);
        self.finish(reply, method).await
    }

    /// Runtime.evaluate; Ok(Err(msg)) for a thrown exception or a protocol error.
    async fn eval(&mut self, expression: &str, until: Instant, user: bool) -> Result<EvalOut, Stop> {
        let params = if user {
            json!({ "expression": expression, "awaitPromise": true, "replMode": true,
                    "userGesture": true, "returnByValue": false, "silent": false })
        } else {
            json!({ "expression": expression, "awaitPromise": true, "returnByValue": true,
                    "userGesture": true })
        };
        let reply = self.send("Runtime.evaluate", &params);
        match self.reply_until(reply, until).await? {
            Ok(v) => {
                if let Some(ex) = v.get("exceptionDetails") {
                    let exc = &ex["exception"];
                    let msg = str_field(exc, "description")
                        .map(first_line)
                        .map(str::to_owned)
                        .or_else(|| {
                            exc.get("value").map(|v| match v {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            })
                        })
                        .or_else(|| str_field(ex, "text").map(str::to_owned))
                        .unwrap_or_else(|| "unknown error".into());
                    Ok(Err(msg))
                } else {
                    Ok(Ok(v["result"].get("value").cloned().unwrap_or(Value::Null)))
                }
            }
            Err(CdpError::Protocol(m)) => Ok(Err(m)),
            Err(CdpError::Closed) => Err(Stop::Fail(CaptureError::Browser("the browser connection was lost".into()))),
        }
    }

    /// eval bounded by the job deadline only.
    async fn eval_job(&mut self, expression: &str) -> Result<EvalOut, CaptureError> {
        match self.eval(expression, self.deadline, false).await {
            Ok(r) => Ok(r),
            Err(Stop::Elapsed) => Err(self.deadline_err()),
            Err(Stop::Fail(e)) => Err(e),
        }
    }

    fn lifecycle_has(&self, loader: &str, flag: u8) -> bool {
        self.lifecycle.iter().any(|(l, f)| l == loader && f & flag != 0)
    }

    fn timeout_err(&self, until: Instant, what: CaptureError) -> CaptureError {
        if until >= self.deadline { self.deadline_err() } else { what }
    }

    /// Wait until the network has been quiet for IDLE_QUIET after load.
    async fn wait_idle(&mut self, until: Instant) -> Result<bool, CaptureError> {
        loop {
            if self.inflight.is_empty() {
                let base = match self.load_at {
                    Some(l) if l > self.last_net_change => l,
                    _ => self.last_net_change,
                };
                let quiet_until = base + IDLE_QUIET;
                if Instant::now() >= quiet_until {
                    return Ok(true);
                }
                match self.pump_until(quiet_until.min(until)).await {
                    Ok(()) => {}
                    Err(Stop::Elapsed) if quiet_until <= until => {}
                    Err(Stop::Elapsed) => return Ok(false),
                    Err(Stop::Fail(e)) => return Err(e),
                }
            } else {
                match self.pump_until(until).await {
                    Ok(()) => {}
                    Err(Stop::Elapsed) => return Ok(false),
                    Err(Stop::Fail(e)) => return Err(e),
                }
            }
        }
    }

    fn navigation_error(&self, url: &str, err: &str, since: std::time::Instant) -> CaptureError {
        let host = url::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
        if !host.is_empty()
            && let Some(reason) = self.failures.since(&host, since)
        {
            return CaptureError::Navigation(reason);
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

    async fn navigate(&mut self, req: &CaptureRequest, tags: &mut Vec<String>) -> Result<(), CaptureError> {
        let nav_start = Instant::now();
        let nav_std = std::time::Instant::now();
        let nav_until = (nav_start + Duration::from_millis(req.timeout_ms)).min(self.deadline);
        let nav_timeout = CaptureError::Timeout(format!("navigation timed out after {} ms", req.timeout_ms));
        let mut loader: Option<String> = None;
        match &req.source {
            PageSource::Url(url) => {
                check_scheme(url)?;
                let reply = self.send("Page.navigate", &json!({ "url": url }));
                let res = match self.reply_until(reply, nav_until).await {
                    Ok(Ok(v)) => v,
                    Ok(Err(CdpError::Protocol(m))) => {
                        return Err(CaptureError::Navigation(format!("cannot navigate to {url}: {m}")));
                    }
                    Ok(Err(e)) => return Err(lost(&e, "Page.navigate")),
                    Err(Stop::Elapsed) => return Err(self.timeout_err(nav_until, nav_timeout)),
                    Err(Stop::Fail(e)) => return Err(e),
                };
                if let Some(err) = str_field(&res, "errorText").filter(|s| !s.is_empty()) {
                    if err == "net::ERR_ABORTED" {
                        // A renderer that dies mid-navigation aborts it; its crash event
                        // follows the reply. Report the crash (retried), not an abort.
                        let grace = (Instant::now() + Duration::from_millis(250)).min(self.deadline);
                        loop {
                            match self.pump_until(grace).await {
                                Ok(()) => {}
                                Err(Stop::Elapsed) => break,
                                Err(Stop::Fail(e)) => return Err(e),
                            }
                        }
                    }
                    return Err(self.navigation_error(url, err, nav_std));
                }
                loader = str_field(&res, "loaderId").map(str::to_owned);
                self.trace("navigation committed");
                if let Some(l) = &loader {
                    // Only this document's load counts.
                    if !self.lifecycle_has(l, LC_LOAD) {
                        self.load_at = None;
                    }
                }
            }
            PageSource::Html(html) => {
                let params = json!({ "frameId": self.frame_id, "html": html });
                let reply = self.send("Page.setDocumentContent", &params);
                match self.reply_until(reply, nav_until).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => return Err(lost(&e, "Page.setDocumentContent")),
                    Err(Stop::Elapsed) => return Err(self.timeout_err(nav_until, nav_timeout)),
                    Err(Stop::Fail(e)) => return Err(e),
                }
            }
        }

        let want = match req.wait_until {
            WaitUntil::None => LC_COMMIT,
            WaitUntil::DomContentLoaded => LC_DCL,
            WaitUntil::Load | WaitUntil::NetworkIdle => LC_LOAD,
        };
        if want != 0 {
            match &loader {
                Some(l) => {
                    while !self.lifecycle_has(l, want) {
                        match self.pump_until(nav_until).await {
                            Ok(()) => {}
                            Err(Stop::Elapsed) => {
                                return Err(self.timeout_err(nav_until, nav_timeout));
                            }
                            Err(Stop::Fail(e)) => return Err(e),
                        }
                    }
                }
                None if matches!(req.source, PageSource::Html(_)) && want == LC_LOAD => {
                    match self.eval(scripts::WAIT_LOAD, nav_until, false).await {
                        Ok(_) => self.load_at = Some(Instant::now()),
                        Err(Stop::Elapsed) => {
                            return Err(self.timeout_err(nav_until, nav_timeout));
                        }
                        Err(Stop::Fail(e)) => return Err(e),
                    }
                }
                None => {}
            }
        }
        if req.wait_until == WaitUntil::NetworkIdle && !self.wait_idle(nav_until).await? {
            if nav_until >= self.deadline {
                return Err(self.deadline_err());
            }
            tags.push("networkidle-timeout".into());
        }
        self.check_main_response(tags)
    }

    fn check_main_response(&mut self, tags: &mut Vec<String>) -> Result<(), CaptureError> {
        if let Some(reason) = self.egress_error.take() {
            return Err(CaptureError::Navigation(reason));
        }
        if let Some(status) = self.main_status.take()
            && status >= 400
        {
            tags.push(format!("http-{status}"));
        }
        Ok(())
    }

    async fn consent(&mut self, tags: &mut Vec<String>) -> Result<(), CaptureError> {
        if let Ok(v) = self.eval_job(scripts::CONSENT).await? {
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

    async fn click_before(&mut self, sel: &str, timeout_ms: u64) -> Result<(), CaptureError> {
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
            let base = json!({ "x": x, "y": y, "button": "left", "clickCount": 1 });
            let mut moved = base.clone();
            moved["type"] = "mouseMoved".into();
            moved["button"] = "none".into();
            let mut down = base.clone();
            down["type"] = "mousePressed".into();
            let mut up = base;
            up["type"] = "mouseReleased".into();
            let r1 = self.send("Input.dispatchMouseEvent", &moved);
            let r2 = self.send("Input.dispatchMouseEvent", &down);
            let r3 = self.send("Input.dispatchMouseEvent", &up);
            self.finish(r1, "Input.dispatchMouseEvent").await?;
            self.finish(r2, "Input.dispatchMouseEvent").await?;
            self.finish(r3, "Input.dispatchMouseEvent").await?;
        }
        // Give the page a moment; if the click started a navigation, wait for it.
        let started = self.started_loading;
        let settle = (Instant::now() + Duration::from_millis(100)).min(self.deadline);
        loop {
            match self.pump_until(settle).await {
                Ok(()) => {}
                Err(Stop::Elapsed) => break,
                Err(Stop::Fail(e)) => return Err(e),
            }
        }
        if self.started_loading != started {
            let until = (Instant::now() + Duration::from_millis(timeout_ms)).min(self.deadline);
            while self.loading {
                match self.pump_until(until).await {
                    Ok(()) => {}
                    Err(Stop::Elapsed) if until >= self.deadline => {
                        return Err(self.deadline_err());
                    }
                    Err(Stop::Elapsed) => break,
                    Err(Stop::Fail(e)) => return Err(e),
                }
            }
        }
        Ok(())
    }

    async fn wait_for(&mut self, sel: &str, timeout_ms: u64, tags: &mut Vec<String>) -> Result<(), CaptureError> {
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

    async fn delay(&mut self, ms: u64) -> Result<(), CaptureError> {
        let end = Instant::now() + Duration::from_millis(ms);
        if end > self.deadline {
            return Err(self.deadline_err());
        }
        loop {
            match self.pump_until(end).await {
                Ok(()) => {}
                Err(Stop::Elapsed) => return Ok(()),
                Err(Stop::Fail(e)) => return Err(e),
            }
        }
    }

    async fn user_script(&mut self, js: &str) -> Result<(), CaptureError> {
        match self.eval(js, self.deadline, true).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(m)) => Err(CaptureError::Script(format!("preScreenshotJs threw: {m}"))),
            Err(Stop::Elapsed) => Err(self.deadline_err()),
            Err(Stop::Fail(e)) => Err(e),
        }
    }

    /// `document.title` and `location.href`.
    async fn title_url(&mut self) -> Result<(String, String), CaptureError> {
        Ok(match self.eval_job(scripts::TITLE_URL).await? {
            Ok(Value::Array(a)) if a.len() == 2 => {
                (a[0].as_str().unwrap_or_default().to_owned(), a[1].as_str().unwrap_or_default().to_owned())
            }
            _ => (String::new(), String::new()),
        })
    }

    fn metrics(&self, req: &CaptureRequest, height: u64) -> Value {
        json!({
            "width": req.width,
            "height": height,
            "deviceScaleFactor": req.device_scale_factor,
            "mobile": false,
        })
    }

    /// Scroll through, grow the viewport to the page height, wait for images and fonts.
    async fn prepare_full_page(&mut self, req: &CaptureRequest, tags: &mut Vec<String>) -> Result<(), CaptureError> {
        let dsf = req.device_scale_factor.max(0.1);
        let cap_css = (MAX_OUTPUT_HEIGHT / dsf).floor().max(1.0) as u64;
        let measured = match self.eval_job(&scripts::scroll_through(cap_css)).await? {
            Ok(v) => v.as_f64().unwrap_or(req.height as f64).ceil() as u64,
            Err(_) => u64::from(req.height),
        };
        let mut truncated = measured > cap_css;
        let mut height = measured.clamp(1, cap_css);
        self.call("Emulation.setDeviceMetricsOverride", self.metrics(req, height)).await?;
        for round in 0..2 {
            let settled = match self.eval_job(scripts::SETTLE).await? {
                Ok(v) => v.as_f64().unwrap_or(height as f64).ceil() as u64,
                Err(_) => height,
            };
            if settled > cap_css {
                truncated = true;
            }
            let next = settled.clamp(1, cap_css);
            if next <= height || round == 1 {
                break;
            }
            height = next;
            self.call("Emulation.setDeviceMetricsOverride", self.metrics(req, height)).await?;
        }
        // Let requests the growth started (lazy backgrounds) finish, briefly.
        let until = (Instant::now() + Duration::from_secs(3)).min(self.deadline);
        while !self.inflight.is_empty() {
            match self.pump_until(until).await {
                Ok(()) => {}
                Err(Stop::Elapsed) => break,
                Err(Stop::Fail(e)) => return Err(e),
            }
        }
        if truncated {
            tags.push("fullpage-truncated".into());
        }
        Ok(())
    }

    async fn screenshot(&mut self, params: Value) -> Result<Vec<u8>, CaptureError> {
        for _ in 0..3 {
            let reply = self.send("Page.captureScreenshot", &params);
            match self.reply_until(reply, self.deadline).await {
                Ok(Ok(v)) => {
                    self.trace("screenshot taken");
                    return decode_data(&v, "screenshot");
                }
                // A page that is still swapping in its new document: give it a moment.
                Ok(Err(CdpError::Protocol(m))) if m.contains("Not attached to an active page") => {
                    let until = (Instant::now() + Duration::from_millis(50)).min(self.deadline);
                    while let Ok(()) = self.pump_until(until).await {}
                }
                Ok(Err(e)) => return Err(lost(&e, "Page.captureScreenshot")),
                Err(Stop::Elapsed) => return Err(self.deadline_err()),
                Err(Stop::Fail(e)) => return Err(e),
            }
        }
        Err(CaptureError::Browser("Page.captureScreenshot failed: the page never became active".into()))
    }

    fn thumbnail_params(req: &CaptureRequest) -> Value {
        let scale = THUMB_WIDTH / (f64::from(req.width) * req.device_scale_factor.max(0.1));
        json!({
            "format": "png",
            "fromSurface": true,
            "clip": { "x": 0, "y": 0, "width": req.width, "height": req.height, "scale": scale },
        })
    }
}

/// Decode a capture once: re-encode a PNG with a better deflate (kept only when
/// smaller) and make the thumbnail (THUMB_WIDTH px wide) of its top `top_px` rows.
/// A thumbnail of None means the capture could not be decoded.
fn finish_image(shot: Vec<u8>, png: bool, top_px: u32) -> (Vec<u8>, Option<Vec<u8>>) {
    let Ok(img) = image::load_from_memory(&shot) else {
        return (shot, None);
    };
    let img = img.into_rgb8();
    let (w, h) = img.dimensions();
    if w == 0 || h == 0 {
        return (shot, None);
    }
    let bytes = if png {
        let mut out = Vec::with_capacity(shot.len());
        let enc = image::codecs::png::PngEncoder::new_with_quality(
            &mut out,
            image::codecs::png::CompressionType::Default,
            image::codecs::png::FilterType::Adaptive,
        );
        let ok = image::ImageEncoder::write_image(enc, img.as_raw(), w, h, image::ExtendedColorType::Rgb8).is_ok();
        if ok && out.len() < shot.len() { out } else { shot }
    } else {
        shot
    };
    let top = top_px.clamp(1, h);
    let th = ((f64::from(top) * THUMB_WIDTH / f64::from(w)).round() as u32).max(1);
    let view = image::imageops::crop_imm(&img, 0, 0, w, top);
    let thumb = image::imageops::thumbnail(&*view, THUMB_WIDTH as u32, th);
    let mut out = std::io::Cursor::new(Vec::with_capacity(32 * 1024));
    let thumb = thumb.write_to(&mut out, image::ImageFormat::Png).ok().map(|()| out.into_inner());
    (bytes, thumb)
}

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

fn decode_data(v: &Value, what: &str) -> Result<Vec<u8>, CaptureError> {
    let data =
        str_field(v, "data").ok_or_else(|| CaptureError::Browser(format!("the browser returned no {what} data")))?;
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| CaptureError::Browser(format!("bad {what} data: {e}")))
}

/// The emulation a page is set up with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct View {
    pub width: u32,
    pub height: u32,
    pub dsf: f64,
    pub dark: bool,
}

impl View {
    /// The emulation a request needs.
    pub(crate) fn of(req: &CaptureRequest) -> View {
        View { width: req.width, height: req.height, dsf: req.device_scale_factor, dark: req.dark_mode }
    }

    fn metrics(&self, height: u64) -> Value {
        json!({ "width": self.width, "height": height, "deviceScaleFactor": self.dsf, "mobile": false })
    }

    fn media(&self) -> Value {
        if self.dark {
            json!({ "features": [{ "name": "prefers-color-scheme", "value": "dark" }] })
        } else {
            json!({ "features": [] })
        }
    }
}

impl Default for View {
    fn default() -> View {
        View { width: 1280, height: 800, dsf: 1.0, dark: false }
    }
}

/// A fresh browser context with one attached page, not yet used by any job.
pub(crate) struct Prepared {
    view: View,
    guard: ContextGuard,
    target_id: String,
    sid: String,
    events: mpsc::UnboundedReceiver<Event>,
    /// Events received before the job started (see `still_usable`).
    backlog: Vec<Event>,
}

/// An event that means the page is gone: its renderer crashed or its target was closed.
fn page_gone(method: &str) -> bool {
    matches!(method, "Inspector.targetCrashed" | "Target.detachedFromTarget")
}

impl Prepared {
    /// Wait for each reply in turn, keeping the page's events aside; a page that crashes
    /// or is closed meanwhile fails at once (a dead renderer never answers), and the
    /// deadline gives a [`CaptureError::Timeout`] like every other step of `prepare`.
    async fn await_all(
        &mut self,
        replies: Vec<(&'static str, PendingReply)>,
        deadline: Instant,
    ) -> Result<(), CaptureError> {
        for (method, mut reply) in replies {
            loop {
                tokio::select! {
                    biased;
                    r = &mut reply => match r {
                        Ok(_) => break,
                        Err(e) => return Err(lost(&e, method)),
                    },
                    ev = self.events.recv() => match ev {
                        Some(ev) if page_gone(&ev.method) => {
                            return Err(CaptureError::Browser("the page crashed while it was being set up".into()));
                        }
                        Some(ev) => self.backlog.push(ev),
                        None => return Err(CaptureError::Browser("the browser connection was lost".into())),
                    },
                    _ = tokio::time::sleep_until(deadline) => {
                        return Err(CaptureError::Timeout(format!("{method}: the browser did not answer in time")));
                    }
                }
            }
        }
        Ok(())
    }

    /// Move queued events aside; false if the page crashed or was detached meanwhile.
    pub(crate) fn still_usable(&mut self) -> bool {
        while let Ok(ev) = self.events.try_recv() {
            if page_gone(&ev.method) {
                return false;
            }
            self.backlog.push(ev);
        }
        !self.events.is_closed()
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        self.guard.conn.unregister_session(&self.sid);
    }
}

/// Create a fresh browser context with a page in its own window, attach to it and enable
/// the domains the pipeline needs. Done ahead of jobs so it is off their critical path.
pub(crate) async fn prepare(conn: &Arc<Conn>, deadline: Instant, view: View) -> Result<Prepared, CaptureError> {
    let deadline_err = || CaptureError::Timeout("preparing a browser context timed out".into());
    let browser_call = |method: &'static str, params: Value| {
        let conn = conn.clone();
        async move {
            match tokio::time::timeout_at(deadline, conn.call(method, params, None)).await {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(lost(&e, method)),
                Err(_) => Err(deadline_err()),
            }
        }
    };
    let ctx = browser_call("Target.createBrowserContext", json!({ "disposeOnDetach": true })).await?;
    let ctx_id = str_field(&ctx, "browserContextId")
        .ok_or_else(|| CaptureError::Browser("no browser context id".into()))?
        .to_owned();
    let guard = ContextGuard { conn: conn.clone(), id: ctx_id.clone() };
    conn.send_forget("Browser.setDownloadBehavior", &json!({ "behavior": "deny", "browserContextId": ctx_id }), None);
    let target = browser_call(
        "Target.createTarget",
        json!({ "url": "about:blank", "browserContextId": ctx_id, "newWindow": true,
                "width": view.width, "height": view.height }),
    )
    .await?;
    let target_id =
        str_field(&target, "targetId").ok_or_else(|| CaptureError::Browser("no target id".into()))?.to_owned();
    let attached = browser_call("Target.attachToTarget", json!({ "targetId": target_id, "flatten": true })).await?;
    let sid =
        str_field(&attached, "sessionId").ok_or_else(|| CaptureError::Browser("no session id".into()))?.to_owned();
    let events = conn.register_session(&sid);
    let mut prepared = Prepared { view, guard, target_id, sid, events, backlog: Vec::new() };
    // Pipelined: one round trip.
    let sid = Some(prepared.sid.as_str());
    let replies = vec![
        ("Page.enable", conn.send("Page.enable", &json!({}), sid)),
        (
            "Page.setLifecycleEventsEnabled",
            conn.send("Page.setLifecycleEventsEnabled", &json!({ "enabled": true }), sid),
        ),
        (
            "Network.enable",
            conn.send("Network.enable", &json!({ "maxTotalBufferSize": 0, "maxResourceBufferSize": 0 }), sid),
        ),
        ("Inspector.enable", conn.send("Inspector.enable", &json!({}), sid)),
        (
            "Emulation.setDeviceMetricsOverride",
            conn.send("Emulation.setDeviceMetricsOverride", &view.metrics(u64::from(view.height)), sid),
        ),
        ("Emulation.setEmulatedMedia", conn.send("Emulation.setEmulatedMedia", &view.media(), sid)),
    ];
    prepared.await_all(replies, deadline).await?;
    // Warm the new renderer up (fonts, layout, the compositor's first frame) so the
    // job's first paint is cheap. Our own content; the context stays fresh.
    let sid = Some(prepared.sid.as_str());
    let warm = vec![
        (
            "Page.setDocumentContent",
            conn.send(
                "Page.setDocumentContent",
                &json!({ "frameId": prepared.target_id, "html": scripts::WARM_UP_HTML }),
                sid,
            ),
        ),
        (
            "Page.captureScreenshot",
            conn.send(
                "Page.captureScreenshot",
                &json!({ "format": "jpeg", "quality": 1,
                         "clip": { "x": 0, "y": 0, "width": 8, "height": 8, "scale": 1 } }),
                sid,
            ),
        ),
    ];
    prepared.await_all(warm, deadline).await?;
    Ok(prepared)
}

/// Run one capture on a prepared page; its context is disposed when this returns.
pub(crate) async fn run(
    conn: &Arc<Conn>,
    prepared: Prepared,
    failures: &FailureLog,
    req: &CaptureRequest,
    deadline: Instant,
) -> Result<CaptureOutput, CaptureError> {
    let t0 = Instant::now();
    let mut phases: Vec<(&'static str, Duration)> = Vec::with_capacity(12);
    let mut mark = |name: &'static str| phases.push((name, t0.elapsed()));
    let deadline_ms = req.deadline.as_millis();
    let mut page = Page {
        conn,
        failures,
        sid: prepared.sid.clone(),
        frame_id: prepared.target_id.clone(),
        prepared,
        started: t0,
        deadline,
        deadline_ms,
        inflight: HashSet::new(),
        last_net_change: Instant::now(),
        lifecycle: Vec::new(),
        load_at: None,
        main_status: None,
        egress_error: None,
        crashed: None,
        loading: false,
        started_loading: 0,
    };
    let mut tags: Vec<String> = Vec::new();
    for ev in std::mem::take(&mut page.prepared.backlog) {
        page.on_event(ev);
    }

    // The spare page was set up for the most recent job's view; adjust if this differs.
    let want = View::of(req);
    let have = page.prepared.view;
    let mut setup = Vec::new();
    if (have.width, have.height, have.dsf) != (want.width, want.height, want.dsf) {
        setup.push((
            "Emulation.setDeviceMetricsOverride",
            page.send("Emulation.setDeviceMetricsOverride", &want.metrics(u64::from(req.height))),
        ));
    }
    if have.dark != want.dark {
        setup.push(("Emulation.setEmulatedMedia", page.send("Emulation.setEmulatedMedia", &want.media())));
    }
    for (method, reply) in setup {
        page.finish(reply, method).await?;
    }
    mark("setup");
    page.navigate(req, &mut tags).await?;
    mark("navigate");
    if req.cookie_consent_auto {
        page.consent(&mut tags).await?;
    }
    if let Some(sel) = req.click_before.as_deref().filter(|s| !s.trim().is_empty()) {
        page.click_before(sel, req.timeout_ms).await?;
    }
    if let Some(sel) = req.wait_for.as_deref().filter(|s| !s.trim().is_empty()) {
        page.wait_for(sel, req.timeout_ms, &mut tags).await?;
    }
    if req.delay_ms > 0 {
        page.delay(req.delay_ms).await?;
    }
    if let Some(js) = req.pre_screenshot_js.as_deref().filter(|s| !s.trim().is_empty()) {
        page.user_script(js).await?;
    }

    let output = if req.pdf {
        let thumb = page.screenshot(Page::thumbnail_params(req)).await?;
        let pdf = page
            .call(
                "Page.printToPDF",
                json!({ "printBackground": true, "preferCSSPageSize": true,
                        "paperWidth": 8.27, "paperHeight": 11.69 }),
            )
            .await?;
        let bytes = decode_data(&pdf, "PDF")?;
        let meta = page.title_url().await?;
        (bytes, "application/pdf", None, thumb, meta)
    } else {
        if req.full_page {
            page.prepare_full_page(req, &mut tags).await?;
        }
        let (format, content_type) = match req.format {
            ImageFormat::Png => ("png", "image/png"),
            ImageFormat::Jpeg => ("jpeg", "image/jpeg"),
            ImageFormat::Webp => ("webp", "image/webp"),
        };
        let png = req.format == ImageFormat::Png;
        // PNG: Chromium's fast encoder (its default one is the slowest step of a
        // capture), then a better deflate here, off the browser's threads.
        let mut params = json!({ "format": format, "fromSurface": true });
        if png {
            params["optimizeForSpeed"] = true.into();
        } else {
            params["quality"] = 80.into();
        }
        let shot = page.screenshot(params).await?;
        mark("shot");
        let top_px = (f64::from(req.height) * req.device_scale_factor).round() as u32;
        let work = tokio::task::spawn_blocking(move || finish_image(shot, png, top_px));
        // Read title and URL while the image is being encoded.
        let meta = page.title_url().await?;
        mark("title");
        let (bytes, thumb) = match tokio::time::timeout_at(page.deadline, work).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return Err(CaptureError::Browser(format!("image encoding failed: {e}"))),
            Err(_) => return Err(page.deadline_err()),
        };
        let thumb = match thumb {
            Some(t) => t,
            None => page.screenshot(Page::thumbnail_params(req)).await?,
        };
        let size = image_size(&bytes);
        (bytes, content_type, size, thumb, meta)
    };
    let (bytes, content_type, size, thumb, (page_title, final_url)) = output;
    mark("done");
    tracing::debug!(target: "capture_browser::timing", ?phases, "capture phases");
    Ok(CaptureOutput {
        bytes,
        content_type,
        width: size.map(|s| s.0),
        height: size.map(|s| s.1),
        thumbnail: Some(thumb),
        page_title,
        final_url,
        tags,
    })
}
