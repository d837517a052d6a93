//! `GET /v1/audits/{id}/stream`: an audit's state changes and progress as server-sent events.

use std::convert::Infallible;
use std::time::Duration;

use axum::Extension;
use axum::extract::State;
use axum::http::HeaderValue;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use capture_core::{AuditId, JobStatus};
use capture_store::{AUDIT_EVENT, AUDIT_PROGRESS_EVENT};
use serde_json::Value;

use super::service::{find, view};
use super::types::StreamEvent;
use crate::auth::Account;
use crate::http::{ApiResult, Id};
use crate::state::AppState;

/// An SSE event carrying `e` as its data.
fn event(e: &StreamEvent) -> Event {
    Event::default().event(e.name()).data(serde_json::to_value(e).map(|v| v.to_string()).unwrap_or_default())
}

#[utoipa::path(get, path = "/v1/audits/{id}/stream", tag = "audits", params(("id" = String, Path)),
    responses((status = 200, content_type = "text/event-stream",
        description = "events: status {status}, progress {pagesDone, pagesTotal} after each audited page, done {auditId, reportUrl, audit}, failed {error}, timeout; `: ping` heartbeats"),
    (status = 404, body = crate::http::error::ErrorBody)), security(("api_key" = [])))]
/// Follow an audit as server-sent events.
pub async fn stream(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<AuditId>,
) -> ApiResult<Response> {
    let row = find(&state, &account, &id).await?;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Event, Infallible>>(16);
    let mut changes = state.job_events.subscribe();
    let st = state.clone();
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + st.cfg.sse_max_duration;
        let mut last_event = 0i64;
        let mut poll = tokio::time::interval(st.cfg.queue_poll);
        let mut ping =
            tokio::time::interval_at(tokio::time::Instant::now() + st.cfg.sse_heartbeat, st.cfg.sse_heartbeat);
        loop {
            match st.store.events_after(&row.id, last_event).await {
                Ok(events) => {
                    for (eid, ty, data) in events {
                        last_event = eid;
                        let data: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
                        if ty == AUDIT_PROGRESS_EVENT {
                            let e = StreamEvent::Progress {
                                pages_done: data["pagesDone"].as_i64().unwrap_or(0),
                                pages_total: data["pagesTotal"].as_i64().unwrap_or(0),
                            };
                            if tx.send(Ok(event(&e))).await.is_err() {
                                return;
                            }
                            continue;
                        }
                        if ty != AUDIT_EVENT {
                            continue;
                        }
                        let Some(status) = data["status"].as_str().and_then(JobStatus::parse) else {
                            tracing::warn!(audit = %id, event = eid, "an audit event without a known status");
                            continue;
                        };
                        if tx.send(Ok(event(&StreamEvent::Status { status }))).await.is_err() {
                            return;
                        }
                        if status.is_final() {
                            let audit = st.store.audit(&row.id).await.ok().flatten();
                            let last = match (&audit, status) {
                                (Some(a), JobStatus::Done) => {
                                    let audit = view(&st, a, false);
                                    StreamEvent::Done {
                                        status,
                                        audit_id: audit.id.clone(),
                                        report_url: audit.report_url.clone(),
                                        audit: Box::new(audit),
                                    }
                                }
                                (a, _) => StreamEvent::Failed {
                                    status: JobStatus::Failed,
                                    audit_id: id.clone(),
                                    error: a
                                        .as_ref()
                                        .and_then(|a| a.error.clone())
                                        .or_else(|| data["error"].as_str().map(str::to_string)),
                                },
                            };
                            let _ = tx.send(Ok(event(&last))).await;
                            return;
                        }
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "audit stream: reading events failed");
                }
            }
            // Wait for a reason to read the events again: a change to this audit (or to any,
            // after a gap), or the poll.
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => {
                        let timeout = StreamEvent::Timeout { status: "timeout", audit_id: id.clone() };
                        let _ = tx.send(Ok(event(&timeout))).await;
                        return;
                    }
                    _ = ping.tick() => {
                        if tx.send(Ok(Event::default().comment("ping"))).await.is_err() { return; }
                    }
                    r = changes.recv() => match r {
                        Ok(changed) if changed != row.id && !changed.is_empty() => {}
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                        _ => break,
                    },
                    _ = poll.tick() => break,
                    _ = tx.closed() => return,
                    _ = st.shutdown.cancelled() => return,
                }
            }
        }
    });
    let s = tokio_stream::wrappers::ReceiverStream::new(rx);
    let mut resp = Sse::new(s).keep_alive(KeepAlive::new().interval(Duration::from_secs(3600))).into_response();
    resp.headers_mut().insert("cache-control", HeaderValue::from_static("no-cache"));
    resp.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(resp)
}
