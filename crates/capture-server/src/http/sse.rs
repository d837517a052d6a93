//! One way to follow a stored subject (a job, an audit, a run, an ad) as server-sent events:
//! read its events from the store's event log, wake on the node's change broadcast or the
//! queue poll, send `: ping` heartbeats, end at the stream's time limit or on shutdown, and
//! answer with the headers that keep proxies from buffering. A resource only says what each
//! stored event becomes ([`Follow`]).

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use axum::http::HeaderValue;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;

use crate::state::AppState;

/// Whether the stream goes on after a stored event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Continue,
    /// The subject reached a final state: send what was returned, then close the stream.
    End,
}

/// What a resource's stream makes of its subject's stored events.
pub trait Follow: Send + 'static {
    /// The stored event `ty` with its JSON `data`: the SSE events to send, and whether to end.
    fn on_event(&mut self, state: &AppState, ty: &str, data: Value) -> impl Future<Output = (Vec<Event>, Next)> + Send;
    /// The last event when the stream's own time (`CAPTURE_SSE_MAX_DURATION`) is up.
    fn timeout(&self) -> Event;
}

/// An SSE event named `name` carrying `data` as JSON.
pub fn event(name: &str, data: &impl Serialize) -> Event {
    Event::default().event(name).data(serde_json::to_string(data).unwrap_or_default())
}

/// Follow the stored events of `subject` (its row id in the event log) as an SSE response.
pub fn follow(state: &AppState, subject: String, mut f: impl Follow) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Event, Infallible>>(16);
    let mut changes = state.job_events.subscribe();
    let st = state.clone();
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + st.cfg.http.sse_max_duration;
        let mut last_event = 0i64;
        let mut poll = tokio::time::interval(st.cfg.queue.poll);
        let mut ping = tokio::time::interval_at(
            tokio::time::Instant::now() + st.cfg.http.sse_heartbeat,
            st.cfg.http.sse_heartbeat,
        );
        loop {
            match st.store.events_after(&subject, last_event).await {
                Ok(events) => {
                    for (eid, ty, data) in events {
                        last_event = eid;
                        let data: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
                        let (out, next) = f.on_event(&st, &ty, data).await;
                        for e in out {
                            if tx.send(Ok(e)).await.is_err() {
                                return;
                            }
                        }
                        if next == Next::End {
                            return;
                        }
                    }
                }
                Err(e) => tracing::error!(error = %e, subject = %subject, "stream: reading events failed"),
            }
            // Wait for a reason to read the events again: a change to this subject (or to any,
            // after a gap), or the poll. Other subjects' changes (every node's, on PostgreSQL)
            // are skipped without a query.
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => {
                        let _ = tx.send(Ok(f.timeout())).await;
                        return;
                    }
                    _ = ping.tick() => {
                        if tx.send(Ok(Event::default().comment("ping"))).await.is_err() { return; }
                    }
                    r = changes.recv() => match r {
                        Ok(changed) if changed != subject && !changed.is_empty() => {}
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                        _ => break,
                    },
                    _ = poll.tick() => break,
                    _ = tx.closed() => return,
                    // The node is shutting down: end the stream so the client reconnects elsewhere.
                    _ = st.shutdown.cancelled() => return,
                }
            }
        }
    });
    let body = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) });
    // Heartbeats are the `: ping` comments above (CAPTURE_SSE_HEARTBEAT); axum's own keep-alive
    // is pushed out of the way.
    let mut resp = Sse::new(body).keep_alive(KeepAlive::new().interval(Duration::from_secs(3600))).into_response();
    resp.headers_mut().insert("cache-control", HeaderValue::from_static("no-cache"));
    resp.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}
