//! The watch a session keeps over its whole browser context, beside the page its task
//! drives: every page the context gets (popups from `window.open` and `target=_blank`,
//! pages a relayed client creates) and every out-of-process frame.
//!
//! - **Pages are counted**: a context holds at most [`SessionOptions::max_pages`](super::SessionOptions::max_pages)
//!   pages; a page past that (a popup, a `Target.createTarget` that slipped by the relay's
//!   own count) is closed as soon as Chromium reports it. Popup blocking cannot be relied on
//!   for this (the headless shell has none, and a click lets any page open popups).
//! - **The clipboard is the session's** ([`super::clipboard`]): every page and frame gets
//!   the shim and the binding to the session's store, and the context's clipboard
//!   permissions are denied. Out-of-process frames are held (`waitForDebuggerOnStart`)
//!   until they have the shim.
//!
//! The guard has its own DevTools sessions (the page's events the session's task handles
//! are not disturbed) and runs until the session ends.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::clipboard::{self, Store};
use crate::CaptureError;
use crate::cdp::{Conn, Event};

/// Set up the guard of context `ctx` whose first page is `main` (before anything loads in
/// it), then keep watching until `done` turns true.
pub(crate) async fn start(
    conn: &Arc<Conn>,
    ctx: &str,
    main: &str,
    max_pages: usize,
    store: Store,
    until: Instant,
    done: watch::Receiver<bool>,
) -> Result<(), CaptureError> {
    let (tx, rx) = mpsc::unbounded_channel::<Event>();
    // Browser-level target events for the whole browser (filtered to the context below).
    let sub = conn.subscribe_browser(tx.clone());
    let mut g = Guard {
        conn: conn.clone(),
        ctx: ctx.to_owned(),
        max_pages: max_pages.max(1),
        store,
        tx,
        sub,
        pages: HashSet::from([main.to_owned()]),
        sessions: HashSet::new(),
        pending: HashMap::new(),
        next_tag: 0,
        closed: 0,
    };
    let setup = async {
        g.call("Target.setDiscoverTargets", json!({ "discover": true, "filter": [{}] }), None).await?;
        for permission in clipboard::denied_permissions() {
            let p = json!({ "permission": permission, "setting": "denied", "browserContextId": ctx });
            g.call("Browser.setPermission", p, None).await?;
        }
        let attached = g.call("Target.attachToTarget", json!({ "targetId": main, "flatten": true }), None).await?;
        let sid = attached["sessionId"].as_str().unwrap_or_default().to_owned();
        g.conn.route_session(&sid, g.tx.clone());
        g.sessions.insert(sid.clone());
        // Awaited: the first page has its shim before its first document loads.
        for (method, params) in install_commands() {
            g.call(method, params, Some(&sid)).await?;
        }
        Ok::<(), CaptureError>(())
    };
    match tokio::time::timeout_at(until, setup).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            g.stop();
            return Err(e);
        }
        Err(_) => {
            g.stop();
            return Err(CaptureError::Timeout("setting up the session's guard timed out".into()));
        }
    }
    tokio::spawn(g.run(rx, done));
    Ok(())
}

/// What every page and frame of the session gets (on its own DevTools session of the guard).
fn install_commands() -> Vec<(&'static str, Value)> {
    vec![
        // Scripts reach new documents only with the page domain enabled, and bindings only
        // with the runtime enabled.
        ("Page.enable", json!({})),
        ("Runtime.enable", json!({})),
        ("Runtime.addBinding", json!({ "name": clipboard::BINDING })),
        ("Page.addScriptToEvaluateOnNewDocument", json!({ "source": clipboard::SHIM, "runImmediately": true })),
        ("Target.setAutoAttach", json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true })),
    ]
}

struct Guard {
    conn: Arc<Conn>,
    ctx: String,
    max_pages: usize,
    store: Store,
    tx: mpsc::UnboundedSender<Event>,
    sub: u64,
    /// The context's pages (the session's own first).
    pages: HashSet<String>,
    /// The guard's sessions (detached at the end).
    sessions: HashSet<String>,
    /// Attaches in flight, by tag: the target.
    pending: HashMap<u64, String>,
    next_tag: u64,
    /// Pages closed for passing the limit.
    closed: u64,
}

impl Guard {
    async fn call(&self, method: &str, params: Value, sid: Option<&str>) -> Result<Value, CaptureError> {
        self.conn.send(method, &params, sid).await.map_err(|e| crate::page::lost(&e, method))
    }

    fn forget(&self, method: &str, params: Value, sid: Option<&str>) {
        self.conn.send_forget(method, &params, sid);
    }

    fn install(&self, sid: &str) {
        for (method, params) in install_commands() {
            self.forget(method, params, Some(sid));
        }
    }

    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Event>, mut done: watch::Receiver<bool>) {
        loop {
            tokio::select! {
                ev = rx.recv() => match ev {
                    Some(ev) => self.on_event(ev),
                    None => break,
                },
                _ = done.wait_for(|d| *d) => break,
            }
        }
        if self.closed > 0 {
            tracing::info!(context = %self.ctx, closed = self.closed, "pages past the session's limit were closed");
        }
        self.stop();
    }

    fn stop(&mut self) {
        self.conn.unsubscribe_browser(self.sub);
        for sid in self.sessions.drain() {
            self.conn.send_forget("Target.detachFromTarget", &json!({ "sessionId": sid }), None);
        }
    }

    fn on_event(&mut self, ev: Event) {
        if let Some((tag, r)) = ev.reply {
            // An attach of a page the context got.
            let Some(target) = self.pending.remove(&tag) else { return };
            match r.ok().and_then(|v| v["sessionId"].as_str().map(str::to_owned)) {
                Some(sid) if self.pages.contains(&target) => {
                    self.conn.route_session(&sid, self.tx.clone());
                    self.sessions.insert(sid.clone());
                    self.install(&sid);
                }
                Some(sid) => self.forget("Target.detachFromTarget", json!({ "sessionId": sid }), None),
                None => {}
            }
            return;
        }
        match ev.session_id {
            Some(sid) => self.on_session_event(&sid, &ev.method, &ev.params),
            None => self.on_browser_event(&ev.method, &ev.params),
        }
    }

    fn on_session_event(&mut self, sid: &str, method: &str, params: &Value) {
        match method {
            "Runtime.bindingCalled" if params["name"] == clipboard::BINDING => {
                let payload = params["payload"].as_str().unwrap_or_default();
                if let Some(expression) = self.store.answer(payload) {
                    let ctx = params["executionContextId"].clone();
                    self.forget("Runtime.evaluate", json!({ "expression": expression, "contextId": ctx }), Some(sid));
                }
            }
            // A frame in its own process (or a worker) of one of our pages: held until it
            // has the shim.
            "Target.attachedToTarget" => {
                let Some(child) = params["sessionId"].as_str() else { return };
                if params["targetInfo"]["type"] == "iframe" {
                    self.install(child);
                }
                self.forget("Runtime.runIfWaitingForDebugger", json!({}), Some(child));
            }
            _ => {}
        }
    }

    fn on_browser_event(&mut self, method: &str, params: &Value) {
        match method {
            "Target.targetCreated" => {
                let info = &params["targetInfo"];
                if info["browserContextId"] != self.ctx.as_str() || info["type"] != "page" {
                    return;
                }
                let Some(id) = info["targetId"].as_str().map(str::to_owned) else { return };
                if self.pages.contains(&id) {
                    return;
                }
                if self.pages.len() >= self.max_pages {
                    self.closed += 1;
                    tracing::debug!(context = %self.ctx, target = %id, "a page past the session's limit: closed");
                    self.forget("Target.closeTarget", json!({ "targetId": id }), None);
                    return;
                }
                self.pages.insert(id.clone());
                self.next_tag += 1;
                self.pending.insert(self.next_tag, id.clone());
                self.conn.send_routed(
                    "Target.attachToTarget",
                    &json!({ "targetId": id, "flatten": true }),
                    None,
                    &self.tx,
                    self.next_tag,
                );
            }
            "Target.targetDestroyed" => {
                if let Some(id) = params["targetId"].as_str() {
                    self.pages.remove(id);
                }
            }
            _ => {}
        }
    }
}
