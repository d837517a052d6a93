//! The live-session relay: a DevTools client (`puppeteer.connect({browserWSEndpoint})`,
//! Playwright's `chromium.connectOverCDP`) drives a [`Session`] as if it were a browser
//! whose only context is the session's.
//!
//! The relay speaks the protocol to the client and forwards to the pool's pipe
//! connection: the client's message ids become the connection's own, its session ids are
//! translated both ways (a client never sees or names a session of the pool's), replies
//! come back in order with the events around them. Browser-level commands are answered
//! by the relay itself or forwarded scoped to the session's context:
//!
//! | client command | what the relay does |
//! |---|---|
//! | `Browser.getVersion` | forwarded |
//! | `Browser.close`, `Browser.crash`, `Browser.crashGpuProcess` | refused: the browser is shared (disconnect to end) |
//! | `Browser.setDownloadBehavior` | answered, not applied: downloads stay denied |
//! | `Browser.grantPermissions`, `resetPermissions`, `setPermission`; `Storage.getCookies`, `setCookies`, `clearCookies` | forwarded with the session's context; clipboard permissions refused (Chromium's clipboard is the whole browser's: the session has its own, see [`crate::session::clipboard`]), and denied again after a reset |
//! | `Browser.getWindowForTarget` (own targets), `getWindowBounds`/`setWindowBounds` (their windows) | forwarded |
//! | `Target.getBrowserContexts` | none: the session's context is the default one |
//! | `Target.createBrowserContext`, `disposeBrowserContext`, `attachToBrowserTarget`, `exposeDevToolsProtocol`, `setRemoteLocations`, `sendMessageToTarget` (non-flat), `openDevTools` | refused |
//! | `Target.setDiscoverTargets` | emulated: events for the context's targets only |
//! | `Target.setAutoAttach` (browser level) | emulated: the relay attaches to the context's tabs/pages (flat mode only; new targets are not paused) |
//! | `Target.getTargets`, `getTargetInfo`, `attachToTarget`, `detachFromTarget`, `activateTarget`, `closeTarget` | the context's targets only |
//! | `Target.createTarget` | in the session's context, `http(s)`/`about:blank` only, at most [`RelayOptions::max_pages`] pages |
//! | anything else at browser level | refused |
//! | commands on a page session | forwarded, through [`crate::session::filter`] (no `file:`, no local files, no browser-wide domains, no middle clicks); `Input.dispatchKeyEvent` clipboard shortcuts and `commands` rewritten to use the session's clipboard; session-level `Target.setAutoAttach`/`detachFromTarget`/`getTargetInfo` forwarded |
//!
//! Everything the pages load still goes through the egress guard. The relay ends when the
//! client disconnects, the session ends, or the browser goes; it then detaches every
//! session it attached, so nothing the client set up (interception, paused scripts)
//! outlives it. The session itself goes on until it is closed.
//!
//! **A client that stops reading is closed, not buffered for.** The relay never waits for
//! the client: what it sends waits in a queue bounded in bytes
//! ([`RelayOptions::max_queued_bytes`], [`MAX_QUEUED_BYTES`] by default). A client whose
//! unread messages pass the bound (a page logging megabytes a second with `Runtime` events
//! on, and a socket nobody reads) is closed at once with WebSocket close code
//! [`CLOSE_TOO_SLOW`] (1008, policy violation, as browserless closes clients it refuses) and
//! a reason, and everything queued for it is freed. One message larger than the bound
//! (a big screenshot) still goes through when nothing else waits.

mod browser;
mod queue;
mod socket;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::cdp::{CdpError, Conn, Event};
use crate::session::{Session, clipboard, filter};

pub use queue::{CLOSE_TOO_SLOW, ClientRx, ClientTx, MAX_QUEUED_BYTES, client_queue};
pub use socket::{serve_socket, serve_websocket};

/// How long closing a client's socket may take (its close frame waits behind what the
/// client has not read) before the connection is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(10);

/// Limits of one relayed client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayOptions {
    /// Pages the client may have open at once in the session's context.
    pub max_pages: usize,
    /// Bytes of messages that may wait unread for the client; past this it is closed
    /// ([`RelayEnd::ClientTooSlow`]).
    pub max_queued_bytes: usize,
}

impl Default for RelayOptions {
    fn default() -> RelayOptions {
        RelayOptions { max_pages: crate::session::MAX_PAGES, max_queued_bytes: MAX_QUEUED_BYTES }
    }
}

/// Why a relay ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelayEnd {
    /// The client closed its connection.
    ClientClosed,
    /// The session ended (its deadline, `close`, a crash): the reason.
    SessionEnded(String),
    /// The browser's connection closed.
    BrowserGone,
    /// The client did not read what it was sent: `queued` bytes were waiting when it was
    /// closed (code [`CLOSE_TOO_SLOW`]).
    ClientTooSlow { queued: usize, limit: usize },
}

impl RelayEnd {
    /// The close reason a client that fell behind is given (at most 123 bytes, as a
    /// WebSocket close frame allows).
    pub fn close_reason(&self) -> Option<String> {
        match self {
            RelayEnd::ClientTooSlow { limit, .. } => Some(format!(
                "client too slow: more than {} MB of DevTools messages waited unread",
                limit.div_ceil(1 << 20)
            )),
            _ => None,
        }
    }
}

/// What a forwarded command's reply needs before it goes back to the client.
enum Kind {
    Plain,
    AttachToTarget(String),
    /// The relay's own attach (emulated auto-attach) of a target.
    AutoAttach(Value),
    GetTargets,
    CreateTarget,
    WindowForTarget,
    Detach(String),
}

struct Pending {
    client_id: Value,
    client_sid: Option<String>,
    kind: Kind,
}

/// The client's browser-level auto-attach, emulated.
struct AutoAttach {
    filter: Option<Value>,
}

struct Relay {
    conn: Arc<Conn>,
    ctx: String,
    /// Our stream: routed replies, the relay's sessions' events, browser-level events.
    tx: mpsc::UnboundedSender<Event>,
    to_client: ClientTx,
    opts: RelayOptions,
    real_to_client: HashMap<String, String>,
    client_to_real: HashMap<String, String>,
    /// Sessions the relay attached itself (detached when it ends).
    own_sessions: HashSet<String>,
    /// The context's targets, by id (target info as Chromium reports it).
    targets: HashMap<String, Value>,
    /// Targets attached to by the emulated auto-attach.
    auto_attached: HashSet<String>,
    /// Of those, the ones whose attachment the client has been told of.
    attach_reported: HashSet<String>,
    /// `Target.createTarget` replies held until the new page's attachment is reported
    /// (Chromium reports it first; Playwright relies on that).
    held_creates: HashMap<String, (Value, Value)>,
    discover: bool,
    auto: Option<AutoAttach>,
    /// A browser-level `Target.setAutoAttach` answered once its attaches are done.
    deferred: Option<(Value, usize)>,
    windows: HashSet<i64>,
    pending: HashMap<u64, Pending>,
    next_tag: u64,
}

fn error(id: &Value, sid: Option<&str>, code: i64, message: &str) -> String {
    let mut m = json!({ "id": id, "error": { "code": code, "message": message } });
    if let Some(s) = sid {
        m["sessionId"] = json!(s);
    }
    m.to_string()
}

/// Does a `Browser.grantPermissions` or `setPermission` ask for a clipboard permission?
fn asks_clipboard(params: &Value) -> bool {
    let granted = params.get("permissions").and_then(Value::as_array).into_iter().flatten();
    let set = params.pointer("/permission/name");
    granted.chain(set).filter_map(Value::as_str).any(clipboard::is_clipboard_permission)
}

/// Does a `Target.TargetFilter` include a target of `kind`? (The first entry whose
/// `type` matches decides; no filter: everything but `browser` and `tab`.)
fn filter_includes(filter: Option<&Value>, kind: &str) -> bool {
    let default = json!([{ "type": "browser", "exclude": true }, { "type": "tab", "exclude": true }, {}]);
    let entries = filter.and_then(Value::as_array).or_else(|| default.as_array()).cloned().unwrap_or_default();
    for e in entries {
        let matches = e.get("type").and_then(Value::as_str).is_none_or(|t| t == kind);
        if matches {
            return !e.get("exclude").and_then(Value::as_bool).unwrap_or(false);
        }
    }
    false
}

fn random_session_id() -> String {
    format!("{:032X}", rand::random::<u128>())
}

impl Relay {
    /// Never waits for the client: a client that does not keep up is closed instead.
    async fn send(&self, msg: String) -> bool {
        self.to_client.push(msg)
    }

    async fn reply(&self, id: &Value, sid: Option<&str>, r: Result<Value, CdpError>) -> bool {
        let msg = match r {
            Ok(result) => {
                let mut m = json!({ "id": id, "result": result });
                if let Some(s) = sid {
                    m["sessionId"] = json!(s);
                }
                m.to_string()
            }
            Err(CdpError::Protocol(message)) => error(id, sid, -32000, &message),
            Err(CdpError::Closed) => error(id, sid, -32000, "the browser connection closed"),
        };
        self.send(msg).await
    }

    async fn refuse(&self, id: &Value, sid: Option<&str>, why: &str) -> bool {
        tracing::debug!(target: "capture_browser::relay", why, "refused");
        self.send(error(id, sid, -32000, why)).await
    }

    async fn event(&self, method: &str, params: Value, sid: Option<&str>) -> bool {
        tracing::trace!(target: "capture_browser::relay", %method, ?sid, "event to client");
        let mut m = json!({ "method": method, "params": params });
        if let Some(s) = sid {
            m["sessionId"] = json!(s);
        }
        self.send(m.to_string()).await
    }

    fn forward(&mut self, method: &str, params: &Value, real_sid: Option<&str>, pending: Pending) {
        self.next_tag += 1;
        let tag = self.next_tag;
        self.pending.insert(tag, pending);
        self.conn.send_routed(method, params, real_sid, &self.tx, tag);
    }

    fn ours(&self, target_id: Option<&str>) -> bool {
        target_id.is_some_and(|t| self.targets.contains_key(t))
    }

    fn map_session(&mut self, real: &str) -> String {
        if let Some(c) = self.real_to_client.get(real) {
            return c.clone();
        }
        let c = random_session_id();
        self.real_to_client.insert(real.to_owned(), c.clone());
        self.client_to_real.insert(c.clone(), real.to_owned());
        c
    }

    fn unmap_session(&mut self, real: &str) -> Option<String> {
        let c = self.real_to_client.remove(real)?;
        self.client_to_real.remove(&c);
        self.own_sessions.remove(real);
        Some(c)
    }

    fn pages(&self) -> usize {
        self.targets.values().filter(|t| t["type"] == "page").count()
    }

    /// Attach to one of the context's targets for the emulated auto-attach.
    fn auto_attach(&mut self, info: &Value) {
        let Some(id) = info["targetId"].as_str().map(str::to_owned) else { return };
        if !self.auto_attached.insert(id.clone()) {
            return;
        }
        let pending = Pending { client_id: Value::Null, client_sid: None, kind: Kind::AutoAttach(info.clone()) };
        self.forward("Target.attachToTarget", &json!({ "targetId": id, "flatten": true }), None, pending);
    }

    async fn on_client(&mut self, text: &str) -> bool {
        let Ok(msg) = serde_json::from_str::<Value>(text) else {
            return self.send(error(&Value::Null, None, -32700, "Message must be a valid JSON")).await;
        };
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        let (Some(method), true) = (msg.get("method").and_then(Value::as_str), id.is_u64() || id.is_i64()) else {
            return self
                .send(error(&id, None, -32600, "Message must have integer 'id' and string 'method' fields"))
                .await;
        };
        let method = method.to_owned();
        let params = msg.get("params").cloned().unwrap_or_else(|| json!({}));
        tracing::debug!(target: "capture_browser::relay", %method, "client command");
        match msg.get("sessionId").and_then(Value::as_str) {
            Some(csid) => {
                let csid = csid.to_owned();
                match self.client_to_real.get(&csid).cloned() {
                    Some(real) => self.session_command(id, csid, real, &method, params).await,
                    None => self.send(error(&id, Some(&csid), -32001, "Session with given id not found.")).await,
                }
            }
            None => self.browser_command(id, &method, params).await,
        }
    }

    async fn session_command(
        &mut self,
        id: Value,
        csid: String,
        real: String,
        method: &str,
        mut params: Value,
    ) -> bool {
        let plain = |id: Value, csid: String| Pending { client_id: id, client_sid: Some(csid), kind: Kind::Plain };
        match method {
            "Target.setAutoAttach" => {
                if params.get("flatten").and_then(Value::as_bool) != Some(true) {
                    return self.refuse(&id, Some(&csid), "Target.setAutoAttach: only flat mode is supported").await;
                }
                self.forward(method, &params, Some(&real), plain(id, csid));
            }
            "Target.detachFromTarget" => {
                let child =
                    params.get("sessionId").and_then(Value::as_str).and_then(|c| self.client_to_real.get(c)).cloned();
                let Some(child) = child else {
                    return self.send(error(&id, Some(&csid), -32602, "No session with given id")).await;
                };
                params["sessionId"] = json!(child);
                let p = Pending { client_id: id, client_sid: Some(csid), kind: Kind::Detach(child) };
                self.forward(method, &params, Some(&real), p);
            }
            "Target.getTargetInfo" | "Runtime.runIfWaitingForDebugger" => {
                self.forward(method, &params, Some(&real), plain(id, csid));
            }
            m if m.starts_with("Target.") || m.starts_with("Browser.") => {
                return self.refuse(&id, Some(&csid), &format!("{m} is not available on a page session")).await;
            }
            _ => {
                if let Err(why) = filter::check_page_command(method, &params) {
                    return self.refuse(&id, Some(&csid), &why).await;
                }
                let command =
                    if method == "Input.dispatchKeyEvent" { clipboard::guard_key_event(&mut params) } else { None };
                self.forward(method, &params, Some(&real), plain(id, csid));
                if let Some(op) = command {
                    // The `commands` taken out run on the session's clipboard, through the shim.
                    let expression = clipboard::command_expression(op);
                    self.conn.send_forget("Runtime.evaluate", &json!({ "expression": expression }), Some(&real));
                }
            }
        }
        true
    }

    async fn on_reply(&mut self, tag: u64, r: Result<Value, CdpError>) -> bool {
        let Some(p) = self.pending.remove(&tag) else { return true };
        let sid = p.client_sid.as_deref();
        match p.kind {
            Kind::Plain => self.reply(&p.client_id, sid, r).await,
            Kind::GetTargets => {
                let r = r.map(|mut v| {
                    let ctx = self.ctx.clone();
                    if let Some(list) = v.get_mut("targetInfos").and_then(Value::as_array_mut) {
                        list.retain(|t| t["browserContextId"] == ctx.as_str());
                    }
                    v
                });
                self.reply(&p.client_id, None, r).await
            }
            Kind::CreateTarget => {
                let target = r.as_ref().ok().and_then(|v| v["targetId"].as_str()).map(str::to_owned);
                let waits = self.auto.as_ref().is_some_and(|a| filter_includes(a.filter.as_ref(), "page"));
                match (target, r) {
                    (Some(t), Ok(v)) if waits && !self.attach_reported.contains(&t) => {
                        self.held_creates.insert(t, (p.client_id, v));
                        true
                    }
                    (_, r) => self.reply(&p.client_id, None, r).await,
                }
            }
            Kind::WindowForTarget => {
                if let Ok(v) = &r
                    && let Some(w) = v.get("windowId").and_then(Value::as_i64)
                {
                    self.windows.insert(w);
                }
                self.reply(&p.client_id, None, r).await
            }
            Kind::Detach(real) => {
                self.unmap_session(&real);
                self.reply(&p.client_id, sid, r).await
            }
            Kind::AttachToTarget(target) => match r {
                Ok(v) => {
                    let Some(real) = v.get("sessionId").and_then(Value::as_str).map(str::to_owned) else {
                        return self.reply(&p.client_id, None, Err(CdpError::Protocol("no session id".into()))).await;
                    };
                    let csid = self.attached(&real);
                    let info = self.targets.get(&target).cloned().unwrap_or_else(|| json!({ "targetId": target }));
                    let ev = json!({ "sessionId": csid, "targetInfo": info, "waitingForDebugger": false });
                    self.event("Target.attachedToTarget", ev, None).await
                        && self.reply(&p.client_id, None, Ok(json!({ "sessionId": csid }))).await
                }
                Err(e) => self.reply(&p.client_id, None, Err(e)).await,
            },
            Kind::AutoAttach(info) => {
                let mut ok = true;
                if let Ok(v) = r
                    && let Some(real) = v.get("sessionId").and_then(Value::as_str).map(str::to_owned)
                {
                    let csid = self.attached(&real);
                    let target = info["targetId"].as_str().unwrap_or_default().to_owned();
                    let ev = json!({ "sessionId": csid, "targetInfo": info, "waitingForDebugger": false });
                    ok = self.event("Target.attachedToTarget", ev, None).await;
                    self.attach_reported.insert(target.clone());
                    if let Some((id, v)) = self.held_creates.remove(&target) {
                        ok = ok && self.reply(&id, None, Ok(v)).await;
                    }
                }
                if let Some((id, left)) = self.deferred.take() {
                    if left <= 1 {
                        ok = ok && self.reply(&id, None, Ok(json!({}))).await;
                    } else {
                        self.deferred = Some((id, left - 1));
                    }
                }
                ok
            }
        }
    }

    /// A session the relay attached: routed to us, named for the client.
    fn attached(&mut self, real: &str) -> String {
        self.conn.route_session(real, self.tx.clone());
        self.own_sessions.insert(real.to_owned());
        self.map_session(real)
    }

    /// An event on one of the relay's sessions (or a child of one).
    async fn on_session_event(&mut self, real: &str, method: &str, mut params: Value) -> bool {
        let Some(csid) = self.real_to_client.get(real).cloned() else { return true };
        match method {
            "Target.attachedToTarget" => {
                if let Some(child) = params.get("sessionId").and_then(Value::as_str).map(str::to_owned) {
                    let c = self.map_session(&child);
                    params["sessionId"] = json!(c);
                }
                if let Some(info) = params.get("targetInfo") {
                    if info["browserContextId"] != self.ctx.as_str() && info.get("browserContextId").is_some() {
                        return true;
                    }
                    if let Some(t) = info["targetId"].as_str() {
                        self.targets.insert(t.to_owned(), info.clone());
                    }
                }
            }
            "Target.detachedFromTarget" => {
                if let Some(child) = params.get("sessionId").and_then(Value::as_str).map(str::to_owned) {
                    match self.unmap_session(&child) {
                        Some(c) => params["sessionId"] = json!(c),
                        None => return true,
                    }
                }
            }
            _ => {}
        }
        self.event(method, params, Some(&csid)).await
    }

    async fn on_event(&mut self, ev: Event) -> bool {
        if let Some((tag, r)) = ev.reply {
            return self.on_reply(tag, r).await;
        }
        match ev.session_id {
            Some(real) => self.on_session_event(&real, &ev.method, ev.params).await,
            None => self.on_browser_event(&ev.method, ev.params).await,
        }
    }
}

/// Relay one client to `session` until the client leaves, the session ends, the browser
/// goes or the client falls behind. `from_client` carries the client's text messages,
/// `to_client` (from [`client_queue`]) takes the relay's; dropping its receiver ends the
/// relay too.
pub async fn run(
    session: &Session,
    mut from_client: mpsc::Receiver<String>,
    to_client: ClientTx,
    opts: RelayOptions,
) -> RelayEnd {
    let conn = session.conn().clone();
    let (tx, mut rx) = mpsc::unbounded_channel::<Event>();
    let sub = conn.subscribe_browser(tx.clone());
    let mut relay = Relay {
        conn: conn.clone(),
        ctx: session.context_id().to_owned(),
        tx,
        to_client,
        opts,
        real_to_client: HashMap::new(),
        client_to_real: HashMap::new(),
        own_sessions: HashSet::new(),
        targets: HashMap::new(),
        auto_attached: HashSet::new(),
        attach_reported: HashSet::new(),
        held_creates: HashMap::new(),
        discover: false,
        auto: None,
        deferred: None,
        windows: HashSet::new(),
        pending: HashMap::new(),
        next_tag: 0,
    };
    // Target events for the whole browser (filtered to the context here), then the
    // context's targets as they are now.
    // (Every type: tabs too, which the default filter leaves out.)
    let _ = conn.send("Target.setDiscoverTargets", &json!({ "discover": true, "filter": [{}] }), None).await;
    if let Ok(v) = conn.send("Target.getTargets", &json!({ "filter": [{}] }), None).await
        && let Some(list) = v["targetInfos"].as_array()
    {
        for t in list {
            if t["browserContextId"] == relay.ctx.as_str()
                && let Some(id) = t["targetId"].as_str()
            {
                relay.targets.insert(id.to_owned(), t.clone());
            }
        }
    }
    let end = loop {
        if conn.is_closed() {
            break RelayEnd::BrowserGone;
        }
        tokio::select! {
            msg = from_client.recv() => match msg {
                Some(text) => {
                    if !relay.on_client(&text).await {
                        break RelayEnd::ClientClosed;
                    }
                }
                None => break RelayEnd::ClientClosed,
            },
            ev = rx.recv() => match ev {
                Some(ev) => {
                    if !relay.on_event(ev).await {
                        break RelayEnd::ClientClosed;
                    }
                }
                None => break RelayEnd::BrowserGone,
            },
            () = session.ended() => {
                break RelayEnd::SessionEnded(session.end_reason().unwrap_or_default());
            }
            () = conn.closed() => break RelayEnd::BrowserGone,
        }
    };
    let end = match (end, relay.to_client.overflowed()) {
        (RelayEnd::ClientClosed, Some(queued)) => RelayEnd::ClientTooSlow { queued, limit: opts.max_queued_bytes },
        (end, _) => end,
    };
    conn.unsubscribe_browser(sub);
    // Nothing the client set up outlives it.
    for real in relay.own_sessions.drain() {
        conn.send_forget("Target.detachFromTarget", &json!({ "sessionId": real }), None);
    }
    tracing::debug!(target: "capture_browser::relay", ?end, "relay ended");
    end
}
