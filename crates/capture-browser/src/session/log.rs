//! What a session records from its page's events: every request (with its transfer size
//! and outcome), console messages and uncaught exceptions, dialogs. Bounded: past the
//! caps the oldest entries are dropped, the counts go on.

use std::collections::{HashMap, VecDeque};

use serde::Serialize;
use tokio::time::Instant;

use crate::protocol::{PageEvent, RemoteObject};

/// Requests kept in a session's network log.
pub const MAX_REQUESTS: usize = 5_000;
/// Console entries kept in a session's console log.
pub const MAX_CONSOLE: usize = 2_000;
/// Longest text kept of one console message or URL, in bytes.
pub const MAX_TEXT: usize = 4_096;

/// One request a session's page made.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestRecord {
    /// The URL (a redirect hop has a record of its own).
    pub url: String,
    pub method: String,
    /// DevTools' resource type: `Document`, `Stylesheet`, `Image`, `Script`, `Fetch`, `XHR`…
    pub resource_type: String,
    /// HTTP status, when a response arrived.
    pub status: Option<u16>,
    pub mime_type: Option<String>,
    /// Bytes received over the network (headers and body as transferred; 0 from cache).
    pub transfer_bytes: u64,
    /// Why it failed (`net::ERR_CONNECTION_REFUSED`, the egress guard's reason…).
    pub failure: Option<String>,
    /// It was cancelled (a navigation away, `fetch` aborted): not counted as failed.
    pub canceled: bool,
    pub from_cache: bool,
    /// A CORS preflight (`OPTIONS` the browser sends before a cross-origin request): not
    /// counted on its own; its failure is reported on the request it preceded.
    pub preflight: bool,
    /// The request belongs to the main frame's document of this loader.
    #[serde(skip)]
    pub(crate) loader_id: String,
    #[serde(skip)]
    pub(crate) request_id: String,
    /// Response headers (documents only, to keep the log small).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
    #[serde(skip)]
    pub(crate) response_at: Option<Instant>,
}

impl RequestRecord {
    /// A failed request: a network failure (not a cancellation) or an HTTP status ≥ 400.
    pub fn failed(&self) -> bool {
        !self.preflight && ((self.failure.is_some() && !self.canceled) || self.status.is_some_and(|s| s >= 400))
    }
}

/// One console message or uncaught exception.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsoleEntry {
    /// `log`, `info`, `warning`, `error`, `debug`…, or `exception` (uncaught).
    pub level: String,
    pub text: String,
    /// Where an exception was thrown.
    pub url: Option<String>,
    pub line: Option<u64>,
}

impl ConsoleEntry {
    /// `console.error` or an uncaught exception.
    pub fn is_error(&self) -> bool {
        self.level == "error" || self.level == "exception" || self.level == "assert"
    }
}

/// A JavaScript dialog the page opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dialog {
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    pub kind: String,
    pub message: String,
    pub default_prompt: Option<String>,
}

fn clip(mut s: String) -> String {
    if s.len() > MAX_TEXT {
        let mut end = MAX_TEXT;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

fn describe(o: &RemoteObject) -> String {
    match (&o.value, &o.description, &o.unserializable_value) {
        (Some(serde_json::Value::String(s)), _, _) => s.clone(),
        (Some(v), _, _) => v.to_string(),
        (None, _, Some(u)) => u.clone(),
        (None, Some(d), _) => d.clone(),
        (None, None, None) => o.kind.clone(),
    }
}

/// The logs of one session.
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    pub(crate) requests: VecDeque<RequestRecord>,
    /// Request id → the number of its newest record (records are numbered from 0).
    index: HashMap<String, u64>,
    /// Records dropped from the front.
    dropped: u64,
    pub(crate) console: VecDeque<ConsoleEntry>,
    pub(crate) console_errors: u64,
    pub(crate) failed_requests: u64,
    pub(crate) dialogs: Vec<Dialog>,
    /// When the main frame's lifecycle events fired, per loader.
    pub(crate) lifecycle_at: Vec<(String, &'static str, Instant)>,
    /// URL → why its last preflight failed (a request failing after it says so).
    preflight_failures: HashMap<String, String>,
}

impl Recorder {
    fn record_mut(&mut self, request_id: &str) -> Option<&mut RequestRecord> {
        let n = *self.index.get(request_id)?;
        let i = n.checked_sub(self.dropped)? as usize;
        self.requests.get_mut(i)
    }

    fn push(&mut self, r: RequestRecord) {
        if self.requests.len() >= MAX_REQUESTS {
            self.requests.pop_front();
            self.dropped += 1;
        }
        let n = self.dropped + self.requests.len() as u64;
        self.index.insert(r.request_id.clone(), n);
        self.requests.push_back(r);
        if self.index.len() > 4 * MAX_REQUESTS {
            let dropped = self.dropped;
            self.index.retain(|_, n| *n >= dropped);
        }
    }

    fn preflight_failed(&mut self, url: String, why: String) {
        if self.preflight_failures.len() > 256 {
            self.preflight_failures.clear();
        }
        self.preflight_failures.insert(url, why);
    }

    /// A request ended: count it once if it failed.
    fn settle(&mut self, request_id: &str) {
        let failed = self.record_mut(request_id).is_some_and(|r| r.failed());
        if failed {
            self.failed_requests += 1;
        }
    }

    fn console(&mut self, e: ConsoleEntry) {
        if e.is_error() {
            self.console_errors += 1;
        }
        if self.console.len() >= MAX_CONSOLE {
            self.console.pop_front();
        }
        self.console.push_back(e);
    }

    /// Record what `ev` says (before the page acts on it); `main_frame` is the page's.
    pub(crate) fn on_event(&mut self, ev: &PageEvent, main_frame: &str) {
        match ev {
            PageEvent::RequestWillBeSent(r) => {
                if let Some(redirect) = &r.redirect_response {
                    // The hop that redirected ends here, with its status.
                    if let Some(prev) = self.record_mut(&r.request_id) {
                        prev.status = Some(redirect.status as u16);
                        prev.mime_type = Some(redirect.mime_type.clone());
                    }
                    self.settle(&r.request_id);
                }
                let preflight =
                    r.request.method == "OPTIONS" && (r.resource_type == "Preflight" || r.frame_id.is_none());
                self.push(RequestRecord {
                    preflight,
                    url: clip(r.request.url.clone()),
                    method: r.request.method.clone(),
                    resource_type: r.resource_type.clone(),
                    status: None,
                    mime_type: None,
                    transfer_bytes: 0,
                    failure: None,
                    canceled: false,
                    from_cache: false,
                    loader_id: if r.frame_id.as_deref() == Some(main_frame) {
                        r.loader_id.clone()
                    } else {
                        String::new()
                    },
                    request_id: r.request_id.clone(),
                    headers: Vec::new(),
                    response_at: None,
                });
            }
            PageEvent::ResponseReceived(r) => {
                let document = r.resource_type == "Document";
                if let Some(rec) = self.record_mut(&r.request_id) {
                    rec.status = Some(r.response.status as u16);
                    rec.mime_type = Some(r.response.mime_type.clone());
                    rec.from_cache = r.response.from_disk_cache;
                    rec.response_at = Some(Instant::now());
                    if let Some(reason) = r.response.header("x-capture-egress-error") {
                        rec.failure = Some(reason.to_owned());
                    }
                    let refused_preflight =
                        rec.preflight.then(|| rec.failure.clone()).flatten().map(|f| (rec.url.clone(), f));
                    if document {
                        let mut h: Vec<(String, String)> = r
                            .response
                            .headers
                            .iter()
                            .map(|(k, v)| {
                                (k.to_ascii_lowercase(), v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                            })
                            .collect();
                        h.sort();
                        rec.headers = h;
                    }
                    if let Some((url, why)) = refused_preflight {
                        self.preflight_failed(url, why);
                    }
                }
            }
            PageEvent::LoadingFinished(d) => {
                if let Some(rec) = self.record_mut(&d.request_id) {
                    rec.transfer_bytes = d.encoded_data_length.max(0.0) as u64;
                }
                self.settle(&d.request_id);
            }
            PageEvent::LoadingFailed(d) => {
                let mut preflight_failed = None;
                if let Some(rec) = self.record_mut(&d.request_id) {
                    rec.canceled = d.canceled;
                    let why = d.blocked_reason.as_ref().map(|b| format!("blocked: {b}"));
                    if rec.failure.is_none() {
                        rec.failure = why.or_else(|| d.error_text.clone()).or_else(|| Some("failed".into()));
                    }
                    if rec.preflight {
                        preflight_failed = Some((rec.url.clone(), rec.failure.clone().unwrap_or_default()));
                    }
                }
                if let Some((url, why)) = preflight_failed {
                    self.preflight_failed(url, why);
                } else if d.error_text.as_deref() == Some("net::ERR_FAILED") {
                    // The browser's generic failure after a refused preflight: say why.
                    let url = self.record_mut(&d.request_id).map(|r| r.url.clone());
                    if let Some(why) = url.and_then(|u| self.preflight_failures.remove(&u))
                        && let Some(r) = self.record_mut(&d.request_id)
                    {
                        r.failure = Some(why);
                    }
                }
                self.settle(&d.request_id);
            }
            PageEvent::ConsoleApiCalled(c) => {
                let text = c.args.iter().map(describe).collect::<Vec<_>>().join(" ");
                self.console(ConsoleEntry { level: c.kind.clone(), text: clip(text), url: None, line: None });
            }
            PageEvent::ExceptionThrown(e) => {
                let d = &e.exception_details;
                self.console(ConsoleEntry {
                    level: "exception".into(),
                    text: clip(d.message()),
                    url: d.url.clone().filter(|u| !u.is_empty()),
                    line: d.line_number,
                });
            }
            PageEvent::DialogOpening(d) if self.dialogs.len() < 100 => {
                self.dialogs.push(Dialog {
                    kind: d.kind.clone(),
                    message: clip(d.message.clone()),
                    default_prompt: d.default_prompt.clone(),
                });
            }
            PageEvent::Lifecycle(l) if l.frame_id == main_frame => {
                let name = match l.name.as_str() {
                    "DOMContentLoaded" => "DOMContentLoaded",
                    "load" => "load",
                    _ => return,
                };
                if self.lifecycle_at.len() > 32 {
                    self.lifecycle_at.remove(0);
                }
                self.lifecycle_at.push((l.loader_id.clone(), name, Instant::now()));
            }
            _ => {}
        }
    }

    /// Requests seen so far (also those dropped from the log).
    pub(crate) fn total_requests(&self) -> u64 {
        self.dropped + self.requests.len() as u64
    }

    /// The records of one request id, oldest first (its redirect hops, then the last).
    pub(crate) fn chain(&self, request_id: &str) -> Vec<&RequestRecord> {
        self.requests.iter().filter(|r| r.request_id == request_id).collect()
    }

    /// When `name` fired for `loader`.
    pub(crate) fn lifecycle(&self, loader: &str, name: &str) -> Option<Instant> {
        self.lifecycle_at.iter().rev().find(|(l, n, _)| l == loader && *n == name).map(|(_, _, t)| *t)
    }
}
