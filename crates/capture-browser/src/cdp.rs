//! A minimal Chrome DevTools Protocol client: one connection per browser, flattened
//! sessions, responses routed by id and events routed by session id.
//!
//! The transport is Chromium's `--remote-debugging-pipe`: JSON messages each ended by a
//! NUL byte, over any byte stream ([`Conn::start`]); in production two FIFOs that Chromium
//! has as fds 3 (it reads) and 4 (it writes). No TCP port exists that a page could reach.

use std::collections::HashMap;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::{mpsc, oneshot, watch};

use crate::protocol::Command;

/// The largest message accepted from the browser (a full-page PNG of 16384 px at 3840 px
/// wide is about 250 MB raw; base64 adds a third). A bigger one closes the connection.
const MAX_MESSAGE: u64 = 512 << 20;
/// Read buffer of the pipe: big screenshots arrive in few reads.
const READ_BUF: usize = 1 << 20;
/// A message buffer grown past this by a big message is not kept for the next one.
const KEEP_BUF: usize = 4 << 20;

/// A failed DevTools call.
#[derive(Debug, Clone)]
pub(crate) enum CdpError {
    /// The browser answered with a protocol error.
    Protocol(String),
    /// The connection is gone (browser exited or the socket dropped).
    Closed,
}

impl std::fmt::Display for CdpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CdpError::Protocol(m) => f.write_str(m),
            CdpError::Closed => f.write_str("the DevTools connection closed"),
        }
    }
}

/// One DevTools event delivered to a session (or, for the relay, a routed reply).
#[derive(Debug)]
pub(crate) struct Event {
    pub method: String,
    pub params: Value,
    /// The session it came on (None: browser-level).
    pub session_id: Option<String>,
    /// A reply routed into an event stream ([`Conn::send_routed`]): its tag and outcome.
    pub reply: Option<(u64, Reply)>,
}

impl Event {
    fn new(method: String, params: Value, session_id: Option<String>) -> Event {
        Event { method, params, session_id, reply: None }
    }
}

pub(crate) type Reply = Result<Value, CdpError>;

/// Who waits for a command's reply.
enum Waiter {
    Once(oneshot::Sender<Reply>),
    /// Delivered into an event stream, in order with the events around it.
    Routed(mpsc::UnboundedSender<Event>, u64),
}

impl Waiter {
    fn deliver(self, r: Reply) {
        match self {
            Waiter::Once(tx) => {
                let _ = tx.send(r);
            }
            Waiter::Routed(tx, tag) => {
                let _ = tx.send(Event {
                    method: String::new(),
                    params: Value::Null,
                    session_id: None,
                    reply: Some((tag, r)),
                });
            }
        }
    }
}

#[derive(Default)]
struct Inner {
    pending: HashMap<u64, Waiter>,
    sessions: HashMap<String, mpsc::UnboundedSender<Event>>,
    /// Receivers of browser-level events (live relays), by subscription id.
    browser_subs: Vec<(u64, mpsc::UnboundedSender<Event>)>,
    next_sub: u64,
    closed: bool,
}

/// A DevTools connection to one browser.
pub(crate) struct Conn {
    out: mpsc::UnboundedSender<Vec<u8>>,
    /// The writer task: aborted when the browser's side closes (a write to a pipe nobody
    /// reads any more would block forever).
    writer: Mutex<Option<tokio::task::AbortHandle>>,
    next_id: AtomicU64,
    inner: Mutex<Inner>,
    closed_tx: watch::Sender<bool>,
}

#[derive(Serialize)]
struct Outgoing<'a, P: Serialize + ?Sized> {
    id: u64,
    method: &'a str,
    params: &'a P,
    #[serde(rename = "sessionId", skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
}

#[derive(Deserialize)]
struct Incoming {
    id: Option<u64>,
    method: Option<String>,
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
    #[serde(default)]
    params: Value,
    result: Option<Value>,
    error: Option<ProtoError>,
}

#[derive(Deserialize)]
struct ProtoError {
    #[serde(default)]
    message: String,
    #[serde(default)]
    data: Option<String>,
}

impl Conn {
    /// Start a connection over a NUL-framed byte stream: `reader` carries the browser's
    /// messages, `writer` ours.
    pub(crate) fn start<R, W>(reader: R, writer: W) -> Arc<Conn>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, mut out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let (closed_tx, _) = watch::channel(false);
        let conn = Arc::new(Conn {
            out,
            writer: Mutex::new(None),
            next_id: AtomicU64::new(1),
            inner: Mutex::new(Inner::default()),
            closed_tx,
        });

        // Writer: write whatever is queued, then flush once.
        let write_task = tokio::spawn(async move {
            let mut w = BufWriter::with_capacity(64 * 1024, writer);
            while let Some(msg) = out_rx.recv().await {
                if w.write_all(&msg).await.is_err() || w.write_all(b"\0").await.is_err() {
                    return;
                }
                while let Ok(msg) = out_rx.try_recv() {
                    if w.write_all(&msg).await.is_err() || w.write_all(b"\0").await.is_err() {
                        return;
                    }
                }
                if w.flush().await.is_err() {
                    return;
                }
            }
            let _ = w.shutdown().await;
        });
        *conn.writer.lock().unwrap() = Some(write_task.abort_handle());

        // Reader: route responses by id and events by session id.
        let reader_conn = conn.clone();
        tokio::spawn(async move {
            let mut r = BufReader::with_capacity(READ_BUF, reader);
            let mut buf = Vec::with_capacity(64 * 1024);
            loop {
                buf.clear();
                match (&mut r).take(MAX_MESSAGE + 1).read_until(0, &mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                if buf.pop() != Some(0) {
                    if buf.len() as u64 > MAX_MESSAGE {
                        tracing::warn!("a DevTools message passed {} MB: closing the connection", MAX_MESSAGE >> 20);
                    }
                    break;
                }
                if let Ok(inc) = serde_json::from_slice::<Incoming>(&buf) {
                    reader_conn.dispatch(inc);
                }
                if buf.capacity() > KEEP_BUF {
                    buf = Vec::with_capacity(64 * 1024);
                }
            }
            reader_conn.mark_closed();
        });
        conn
    }

    fn dispatch(&self, inc: Incoming) {
        if let Some(id) = inc.id {
            let waiter = self.inner.lock().unwrap().pending.remove(&id);
            if let Some(waiter) = waiter {
                let reply = match inc.error {
                    Some(e) => Err(CdpError::Protocol(match e.data {
                        Some(d) if !d.is_empty() => format!("{} ({d})", e.message),
                        _ => e.message,
                    })),
                    None => Ok(inc.result.unwrap_or(Value::Null)),
                };
                waiter.deliver(reply);
            }
            return;
        }
        let Some(method) = inc.method else { return };
        match inc.session_id {
            Some(sid) => {
                let mut inner = self.inner.lock().unwrap();
                let Some(tx) = inner.sessions.get(&sid).cloned() else { return };
                // A session's child (auto-attached frame, worker, a tab's page) is routed
                // where its parent is, from its first event on.
                let child = inc.params.get("sessionId").and_then(Value::as_str).map(str::to_owned);
                match (method.as_str(), child) {
                    ("Target.attachedToTarget", Some(child)) => {
                        inner.sessions.insert(child, tx.clone());
                    }
                    ("Target.detachedFromTarget", Some(child)) => {
                        inner.sessions.remove(&child);
                    }
                    _ => {}
                }
                drop(inner);
                let _ = tx.send(Event::new(method, inc.params, Some(sid)));
            }
            None => {
                let mut inner = self.inner.lock().unwrap();
                // A detached session is a dead tab for its job (or its relay).
                if method == "Target.detachedFromTarget"
                    && let Some(sid) = inc.params.get("sessionId").and_then(Value::as_str)
                    && let Some(tx) = inner.sessions.remove(sid)
                {
                    drop(inner);
                    let _ = tx.send(Event::new(method, inc.params, None));
                    return;
                }
                if inner.browser_subs.is_empty() {
                    return;
                }
                inner.browser_subs.retain(|(_, tx)| !tx.is_closed());
                for (_, tx) in &inner.browser_subs {
                    let _ = tx.send(Event::new(method.clone(), inc.params.clone(), None));
                }
            }
        }
    }

    /// Send a command whose reply arrives in `tx`, tagged `tag`, in order with the
    /// events routed there (the relay's stream).
    pub(crate) fn send_routed<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
        session: Option<&str>,
        tx: &mpsc::UnboundedSender<Event>,
        tag: u64,
    ) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let waiter = Waiter::Routed(tx.clone(), tag);
        {
            let mut inner = self.inner.lock().unwrap();
            if inner.closed {
                drop(inner);
                waiter.deliver(Err(CdpError::Closed));
                return;
            }
            inner.pending.insert(id, waiter);
        }
        if self.out.send(self.encode(id, method, params, session)).is_err()
            && let Some(w) = self.inner.lock().unwrap().pending.remove(&id)
        {
            w.deliver(Err(CdpError::Closed));
        }
    }

    /// Route a session's events (and its children's) into `tx`.
    pub(crate) fn route_session(&self, sid: &str, tx: mpsc::UnboundedSender<Event>) {
        let mut inner = self.inner.lock().unwrap();
        if !inner.closed {
            inner.sessions.insert(sid.to_owned(), tx);
        }
    }

    /// Receive every browser-level event (until [`unsubscribe_browser`](Self::unsubscribe_browser)).
    pub(crate) fn subscribe_browser(&self, tx: mpsc::UnboundedSender<Event>) -> u64 {
        let mut inner = self.inner.lock().unwrap();
        inner.next_sub += 1;
        let id = inner.next_sub;
        if !inner.closed {
            inner.browser_subs.push((id, tx));
        }
        id
    }

    /// Stop a browser-level subscription.
    pub(crate) fn unsubscribe_browser(&self, id: u64) {
        self.inner.lock().unwrap().browser_subs.retain(|(i, _)| *i != id);
    }

    fn mark_closed(&self) {
        // Closed first: whoever sees a failed reply or an ended event stream next must
        // find the connection closed (the pool must not hand this browser another job).
        self.closed_tx.send_replace(true);
        let (pending, sessions, subs) = {
            let mut inner = self.inner.lock().unwrap();
            inner.closed = true;
            (
                std::mem::take(&mut inner.pending),
                std::mem::take(&mut inner.sessions),
                std::mem::take(&mut inner.browser_subs),
            )
        };
        for (_, waiter) in pending {
            waiter.deliver(Err(CdpError::Closed));
        }
        drop(sessions);
        drop(subs);
        if let Some(w) = self.writer.lock().unwrap().take() {
            w.abort();
        }
    }

    /// True once the connection has closed.
    pub(crate) fn is_closed(&self) -> bool {
        *self.closed_tx.borrow()
    }

    /// Resolves when the connection closes.
    pub(crate) async fn closed(&self) {
        let mut rx = self.closed_tx.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }

    fn encode<P: Serialize + ?Sized>(&self, id: u64, method: &str, params: &P, session: Option<&str>) -> Vec<u8> {
        serde_json::to_vec(&Outgoing { id, method, params, session_id: session }).unwrap_or_default()
    }

    /// Send a typed command; the returned future resolves with its typed reply.
    pub(crate) fn cmd<C: Command>(self: &Arc<Self>, cmd: &C, session: Option<&str>) -> Typed<C::Response> {
        Typed { reply: self.send(C::METHOD, cmd, session), method: C::METHOD, _t: PhantomData }
    }

    /// Send a command whose reply nobody waits for (cleanup, dialogs).
    pub(crate) fn cmd_forget<C: Command>(&self, cmd: &C, session: Option<&str>) {
        self.send_forget(C::METHOD, cmd, session);
    }

    /// Send a command; the returned future resolves with its raw reply.
    pub(crate) fn send<P: Serialize + ?Sized>(
        self: &Arc<Self>,
        method: &str,
        params: &P,
        session: Option<&str>,
    ) -> PendingReply {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut inner = self.inner.lock().unwrap();
            if inner.closed {
                drop(inner);
                let _ = tx.send(Err(CdpError::Closed));
                return PendingReply { rx, id, conn: self.clone() };
            }
            inner.pending.insert(id, Waiter::Once(tx));
        }
        if self.out.send(self.encode(id, method, params, session)).is_err()
            && let Some(w) = self.inner.lock().unwrap().pending.remove(&id)
        {
            w.deliver(Err(CdpError::Closed));
        }
        PendingReply { rx, id, conn: self.clone() }
    }

    /// Send a raw command whose reply nobody waits for.
    pub(crate) fn send_forget<P: Serialize + ?Sized>(&self, method: &str, params: &P, session: Option<&str>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let _ = self.out.send(self.encode(id, method, params, session));
    }

    /// Receive the events of a flattened session.
    pub(crate) fn register_session(&self, sid: &str) -> mpsc::UnboundedReceiver<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut inner = self.inner.lock().unwrap();
        if !inner.closed {
            inner.sessions.insert(sid.to_owned(), tx);
        }
        rx
    }

    /// Stop routing events to a session.
    pub(crate) fn unregister_session(&self, sid: &str) {
        self.inner.lock().unwrap().sessions.remove(sid);
    }
}

/// The reply of one command; dropping it forgets the command.
pub(crate) struct PendingReply {
    rx: oneshot::Receiver<Reply>,
    id: u64,
    conn: Arc<Conn>,
}

impl Future for PendingReply {
    type Output = Reply;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Reply> {
        Pin::new(&mut self.rx).poll(cx).map(|r| r.unwrap_or(Err(CdpError::Closed)))
    }
}

impl Drop for PendingReply {
    fn drop(&mut self) {
        if let Ok(mut inner) = self.conn.inner.lock() {
            inner.pending.remove(&self.id);
        }
    }
}

/// The typed reply of one command; dropping it forgets the command.
pub(crate) struct Typed<T> {
    reply: PendingReply,
    method: &'static str,
    _t: PhantomData<fn() -> T>,
}

impl<T: serde::de::DeserializeOwned> Future for Typed<T> {
    type Output = Result<T, CdpError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let method = self.method;
        Pin::new(&mut self.reply).poll(cx).map(|r| {
            r.and_then(|v| {
                serde_json::from_value(v).map_err(|e| CdpError::Protocol(format!("unexpected reply to {method}: {e}")))
            })
        })
    }
}

/// A lost connection or a protocol error, as a capture error naming the command.
pub(crate) fn lost(e: &CdpError, what: &str) -> crate::CaptureError {
    use crate::CaptureError;
    match e {
        CdpError::Closed => CaptureError::Browser("the browser connection was lost".into()),
        CdpError::Protocol(m) => CaptureError::Browser(format!("{what} failed: {m}")),
    }
}
