//! One attached page: the state its events keep (network in flight, lifecycle per
//! loader, the main document's response, crashes) and the deadline-bounded pump that
//! waits for a reply or a condition while processing those events in order.
//!
//! The steps built on it live beside: [`navigate`] (loading and waiting), [`actions`]
//! (clicks, waits for selectors, scripts), [`fullpage`] (growing the viewport for a
//! full-page capture), [`shaping`] (emulation, hidden elements, the captured region).

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::CaptureError;
use crate::cdp::{CdpError, Conn};
use crate::egress::FailureLog;
use crate::prepare::Prepared;
use crate::protocol::{self as p, Command, PageEvent};
pub(crate) use hooks::PageHooks;

pub(crate) mod actions;
pub(crate) mod filter;
pub(crate) mod fullpage;
pub(crate) mod hooks;
pub(crate) mod navigate;
pub(crate) mod scroll;
pub(crate) mod shaping;
pub(crate) mod text;
pub(crate) mod tiles;

/// Why a bounded wait stopped early.
pub(crate) enum Stop {
    Elapsed,
    Fail(CaptureError),
}

/// A script's outcome: its value, or the message of what it threw.
pub(crate) type EvalOut = Result<Value, String>;

/// Flags of the main frame's lifecycle, per loader.
pub(crate) const LC_DCL: u8 = 1;
pub(crate) const LC_LOAD: u8 = 2;
pub(crate) const LC_COMMIT: u8 = 4;

/// A page attached over the browser's connection, with the state its events keep.
pub(crate) struct Page {
    pub(crate) conn: Arc<Conn>,
    pub(crate) failures: Arc<FailureLog>,
    pub(crate) sid: String,
    pub(crate) frame_id: String,
    pub(crate) prepared: Prepared,
    started: Instant,
    /// Every wait and call stops here.
    pub(crate) deadline: Instant,
    /// What went over the deadline, for its error ("capture exceeded the 2000 ms deadline").
    pub(crate) deadline_msg: String,
    // Tracked page state.
    pub(crate) inflight: HashSet<String>,
    pub(crate) last_net_change: Instant,
    lifecycle: Vec<(String, u8)>,
    pub(crate) load_at: Option<Instant>,
    pub(crate) main_status: Option<u16>,
    /// The HTTP status of the main document the page shows (kept after navigation).
    pub(crate) document_status: Option<u16>,
    /// The URLs the main document's request went through (redirects, then the last).
    pub(crate) document_chain: Vec<String>,
    pub(crate) egress_error: Option<String>,
    crashed: Option<&'static str>,
    pub(crate) loading: bool,
    pub(crate) started_loading: u32,
    /// The main frame's newest document (its loader), as last committed.
    pub(crate) last_loader: Option<String>,
    /// What a session adds: logs, dialog handling, screencast (None for a capture).
    pub(crate) hooks: Option<Box<dyn PageHooks>>,
    /// What the capture intercepts (blocked kinds and lists, HTTP credentials), if anything.
    pub(crate) filter: Option<filter::RequestFilter>,
    /// The interception [`Self::block`] left for [`Self::navigate`] to turn on right after
    /// it asks for the page (see there).
    pub(crate) fetch_on_navigate: Option<p::FetchEnable>,
    /// What `cookieConsent` did, once it ran.
    pub(crate) consent_report: Option<capture_core::metadata::ConsentReport>,
    /// The identifier of the script giving the consent engine the sites' own rules for the
    /// URL asked for, while one is added (see [`Page::arm_site_rules`]).
    pub(crate) site_consent: Option<String>,
    /// The URL the sites' own rules were given for (see [`Page::arm_site_rules`]).
    pub(crate) site_rules_url: Option<String>,
    /// What still covered the page when it was captured ([`crate::overlays`]).
    pub(crate) overlay_report: Option<capture_core::metadata::OverlayReport>,
}

pub(crate) use crate::cdp::lost;

impl Page {
    /// Take over a prepared page; its queued events are processed first.
    pub(crate) fn new(
        conn: Arc<Conn>,
        failures: Arc<FailureLog>,
        prepared: Prepared,
        deadline: Instant,
        deadline_msg: String,
    ) -> Page {
        let now = Instant::now();
        let mut page = Page {
            conn,
            failures,
            sid: prepared.sid.clone(),
            frame_id: prepared.target_id.clone(),
            prepared,
            started: now,
            deadline,
            deadline_msg,
            inflight: HashSet::new(),
            last_net_change: now,
            lifecycle: Vec::new(),
            load_at: None,
            main_status: None,
            document_status: None,
            document_chain: Vec::new(),
            egress_error: None,
            crashed: None,
            loading: false,
            started_loading: 0,
            last_loader: None,
            hooks: None,
            filter: None,
            fetch_on_navigate: None,
            consent_report: None,
            site_consent: None,
            site_rules_url: None,
            overlay_report: None,
        };
        for ev in std::mem::take(&mut page.prepared.backlog) {
            page.on_event(PageEvent::decode(&ev.method, ev.params));
        }
        page
    }

    pub(crate) fn deadline_err(&self) -> CaptureError {
        CaptureError::Deadline(self.deadline_msg.clone())
    }

    /// `what` if `until` came before the deadline, else the deadline's own error.
    pub(crate) fn timeout_err(&self, until: Instant, what: CaptureError) -> CaptureError {
        if until >= self.deadline { self.deadline_err() } else { what }
    }

    pub(crate) fn on_event(&mut self, ev: PageEvent) {
        if let Some(h) = self.hooks.as_deref_mut() {
            h.on_event(&ev, &self.frame_id);
        }
        match ev {
            PageEvent::RequestWillBeSent(r) => {
                if let Some(f) = self.filter.as_mut() {
                    f.note_kind(&r.request_id, &r.resource_type);
                    // A paused request that waited for this kind is decided now.
                    for waited in f.ready(Some(&r.request_id)) {
                        self.answer_paused(&waited);
                    }
                }
                if r.resource_type == "Document" && r.frame_id.as_deref() == Some(self.frame_id.as_str()) {
                    // A redirect keeps its request: the chain grows; a new request starts one.
                    if r.redirect_response.is_none() {
                        self.document_chain.clear();
                    }
                    if self.document_chain.len() <= capture_core::metadata::REDIRECTS_MAX {
                        self.document_chain.push(r.request.url.clone());
                    }
                }
                self.inflight.insert(r.request_id);
                self.last_net_change = Instant::now();
            }
            PageEvent::LoadingFinished(r) | PageEvent::LoadingFailed(r) => {
                self.inflight.remove(&r.request_id);
                self.last_net_change = Instant::now();
            }
            PageEvent::ResponseReceived(r)
                if r.frame_id.as_deref() == Some(self.frame_id.as_str()) && r.resource_type == "Document" =>
            {
                self.main_status = Some(r.response.status as u16);
                self.egress_error = r.response.header("x-capture-egress-error").map(str::to_owned);
            }
            PageEvent::Lifecycle(l) if l.frame_id == self.frame_id => {
                let flag = match l.name.as_str() {
                    "DOMContentLoaded" => LC_DCL,
                    "load" => LC_LOAD,
                    _ => return,
                };
                if flag == LC_LOAD {
                    self.load_at = Some(Instant::now());
                    self.trace("load event");
                }
                self.mark_lifecycle(&l.loader_id, flag);
            }
            PageEvent::FrameNavigated(n) if n.frame.id == self.frame_id => {
                self.mark_lifecycle(&n.frame.loader_id, LC_COMMIT);
                self.last_loader = Some(n.frame.loader_id);
            }
            PageEvent::FrameStartedLoading(f) if f.frame_id == self.frame_id => {
                self.loading = true;
                self.started_loading += 1;
            }
            PageEvent::FrameStoppedLoading(f) if f.frame_id == self.frame_id => self.loading = false,
            PageEvent::DialogOpening(d) => {
                let accept = match self.hooks.as_deref_mut() {
                    None => Some(true),
                    Some(h) => h.dialog_opened(&d),
                };
                if let Some(accept) = accept {
                    self.conn.cmd_forget(&p::HandleDialog { accept, prompt_text: None }, Some(&self.sid));
                }
            }
            PageEvent::DialogClosed => {
                if let Some(h) = self.hooks.as_deref_mut() {
                    h.dialog_closed();
                }
            }
            PageEvent::ScreencastFrame(f) => {
                // Unacknowledged, Chromium sends no more frames.
                self.conn.cmd_forget(&p::session::ScreencastFrameAck { session_id: f.session_id }, Some(&self.sid));
                if let Some(h) = self.hooks.as_deref_mut() {
                    h.frame(f);
                }
            }
            PageEvent::RequestPaused(r) => {
                if !self.filter.as_mut().is_some_and(|f| f.must_wait(&r)) {
                    self.answer_paused(&r);
                }
                // Any that waited too long for their Network kind go by the paused kind.
                let late = self.filter.as_mut().map(|f| f.ready(None)).unwrap_or_default();
                for waited in late {
                    self.answer_paused(&waited);
                }
            }
            PageEvent::AuthRequired(a) => {
                let cancel = p::AuthChallengeResponse { response: "CancelAuth", username: None, password: None };
                let answer = self.filter.as_mut().map_or(cancel, |f| f.answer(&a));
                let reply = p::ContinueWithAuth { request_id: &a.request_id, auth_challenge_response: answer };
                self.conn.cmd_forget(&reply, Some(&self.sid));
            }
            PageEvent::TargetCrashed => self.crashed = Some("the page crashed"),
            PageEvent::Detached => self.crashed = Some("the page was closed by the browser"),
            _ => {}
        }
    }

    /// Refuse or continue a paused request, as the filter decides.
    fn answer_paused(&mut self, r: &p::RequestPaused) {
        let source = self.document_chain.last().map_or("", String::as_str);
        // Without a filter nothing should pause: refuse what does.
        let refuse = self.filter.as_mut().is_none_or(|f| f.refuses(r, source, &self.frame_id));
        if refuse {
            let fail = p::FailRequest { request_id: &r.request_id, error_reason: "BlockedByClient" };
            self.conn.cmd_forget(&fail, Some(&self.sid));
        } else {
            self.conn.cmd_forget(&p::ContinueRequest { request_id: &r.request_id }, Some(&self.sid));
        }
    }

    pub(crate) fn trace(&self, what: &str) {
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

    pub(crate) fn lifecycle_has(&self, loader: &str, flag: u8) -> bool {
        self.lifecycle.iter().any(|(l, f)| l == loader && f & flag != 0)
    }

    pub(crate) fn crash_err(&self) -> Option<CaptureError> {
        self.crashed.map(|c| CaptureError::Browser(c.to_owned()))
    }

    fn gone_err(&self) -> CaptureError {
        self.crash_err().unwrap_or_else(|| CaptureError::Browser("the browser connection was lost".into()))
    }

    /// Process one event, or stop at `until`.
    pub(crate) async fn pump_until(&mut self, until: Instant) -> Result<(), Stop> {
        match tokio::time::timeout_at(until, self.prepared.events.recv()).await {
            Err(_) => Err(Stop::Elapsed),
            Ok(None) => Err(Stop::Fail(self.gone_err())),
            Ok(Some(ev)) => {
                self.on_event(PageEvent::decode(&ev.method, ev.params));
                match self.crash_err() {
                    Some(e) => Err(Stop::Fail(e)),
                    None => Ok(()),
                }
            }
        }
    }

    /// Process events until `until` (a pause that still notices a crash).
    pub(crate) async fn pump_for(&mut self, until: Instant) -> Result<(), CaptureError> {
        loop {
            match self.pump_until(until).await {
                Ok(()) => {}
                Err(Stop::Elapsed) => return Ok(()),
                Err(Stop::Fail(e)) => return Err(e),
            }
        }
    }

    /// Wait for a reply while processing events; stop at `until`.
    pub(crate) async fn reply_until<T, F>(&mut self, reply: F, until: Instant) -> Result<Result<T, CdpError>, Stop>
    where
        F: Future<Output = Result<T, CdpError>>,
    {
        let sleep = tokio::time::sleep_until(until);
        tokio::pin!(sleep);
        tokio::pin!(reply);
        loop {
            tokio::select! {
                biased;
                r = &mut reply => return Ok(r),
                ev = self.prepared.events.recv() => match ev {
                    Some(ev) => {
                        self.on_event(PageEvent::decode(&ev.method, ev.params));
                        if let Some(e) = self.crash_err() {
                            return Err(Stop::Fail(e));
                        }
                        // A dialog left open for the caller blocks the page: stop waiting.
                        if let Some((kind, message)) = self.hooks.as_deref_mut().and_then(|h| h.take_new_dialog()) {
                            return Err(Stop::Fail(CaptureError::Script(format!(
                                "a JavaScript {kind} dialog opened: {message}"
                            ))));
                        }
                    }
                    None => return Err(Stop::Fail(self.gone_err())),
                },
                _ = &mut sleep => return Err(Stop::Elapsed),
            }
        }
    }

    /// Send a typed command of this page's session.
    pub(crate) fn send<C: Command>(&self, cmd: &C) -> crate::cdp::Typed<C::Response> {
        self.conn.cmd(cmd, Some(&self.sid))
    }

    /// Wait for a sent command's reply, bounded by the deadline.
    pub(crate) async fn finish<T>(
        &mut self,
        reply: impl Future<Output = Result<T, CdpError>>,
        method: &str,
    ) -> Result<T, CaptureError> {
        match self.reply_until(reply, self.deadline).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(lost(&e, method)),
            Err(Stop::Elapsed) => Err(self.deadline_err()),
            Err(Stop::Fail(e)) => Err(e),
        }
    }

    /// Send a typed command and wait for its reply, bounded by the deadline.
    pub(crate) async fn call<C: Command>(&mut self, cmd: &C) -> Result<C::Response, CaptureError> {
        let reply = self.send(cmd);
        self.finish(reply, C::METHOD).await
    }

    /// `Runtime.evaluate` awaiting promises; Ok(Err(msg)) for a thrown exception or a
    /// protocol error. `user`: a user's script (console semantics, its result not
    /// returned); else ours, returning its value.
    pub(crate) async fn eval(&mut self, expression: &str, until: Instant, user: bool) -> Result<EvalOut, Stop> {
        let cmd = p::Evaluate {
            expression,
            await_promise: true,
            return_by_value: !user,
            user_gesture: true,
            repl_mode: user,
            silent: false,
            object_group: None,
            context_id: None,
        };
        let reply = self.send(&cmd);
        match self.reply_until(reply, until).await? {
            Ok(v) => match v.exception_details {
                Some(ex) => Ok(Err(ex.message())),
                None => Ok(Ok(v.result.value.unwrap_or(Value::Null))),
            },
            Err(CdpError::Protocol(m)) => Ok(Err(m)),
            Err(CdpError::Closed) => Err(Stop::Fail(CaptureError::Browser("the browser connection was lost".into()))),
        }
    }

    /// [`eval`](Self::eval) of our own script, bounded by the deadline only.
    pub(crate) async fn eval_job(&mut self, expression: &str) -> Result<EvalOut, CaptureError> {
        match self.eval(expression, self.deadline, false).await {
            Ok(r) => Ok(r),
            Err(Stop::Elapsed) => Err(self.deadline_err()),
            Err(Stop::Fail(e)) => Err(e),
        }
    }

    /// Wait until the network has been quiet for `quiet` after load; false when `until`
    /// came first.
    pub(crate) async fn wait_idle(&mut self, until: Instant, quiet: Duration) -> Result<bool, CaptureError> {
        loop {
            if self.inflight.is_empty() {
                let base = match self.load_at {
                    Some(l) if l > self.last_net_change => l,
                    _ => self.last_net_change,
                };
                let quiet_until = base + quiet;
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

    /// `Page.captureScreenshot`, retried briefly while a new document is swapped in.
    pub(crate) async fn screenshot(&mut self, params: &p::CaptureScreenshot) -> Result<Vec<u8>, CaptureError> {
        for _ in 0..3 {
            let reply = self.send(params);
            match self.reply_until(reply, self.deadline).await {
                Ok(Ok(v)) => {
                    self.trace("screenshot taken");
                    return crate::encode::decode_base64(&v.data, "screenshot");
                }
                // A page that is still swapping in its new document: give it a moment.
                Ok(Err(CdpError::Protocol(m))) if m.contains("Not attached to an active page") => {
                    let until = (Instant::now() + Duration::from_millis(50)).min(self.deadline);
                    self.pump_for(until).await?;
                }
                Ok(Err(e)) => return Err(lost(&e, p::CaptureScreenshot::METHOD)),
                Err(Stop::Elapsed) => return Err(self.deadline_err()),
                Err(Stop::Fail(e)) => return Err(e),
            }
        }
        Err(CaptureError::Browser("Page.captureScreenshot failed: the page never became active".into()))
    }
}
