//! `GET /v1/runs/{id}/stream`: a run's progress as server-sent events — `status`
//! (`{status}`), `step` (`{index, action, ok, durationMs, error}`), then `completed` (the
//! whole run; also for a stopped run) or `failed` (the run, `error`, `finalizationError`);
//! `timeout` when the stream's own time is up (the run goes on).

use std::convert::Infallible;
use std::time::Duration;

use axum::Extension;
use axum::extract::State;
use axum::http::HeaderValue;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use capture_core::RunId;
use serde_json::{Value, json};

use super::service::{find, view};
use crate::auth::Account;
use crate::http::{ApiResult, Id};
use crate::state::AppState;

fn event(name: &str, data: &Value) -> Event {
    Event::default().event(name).data(data.to_string())
}

#[utoipa::path(get, path = "/v1/runs/{id}/stream", tag = "runs", params(("id" = String, Path)),
    responses((status = 200, content_type = "text/event-stream", description = "events: status {status}, step {index, action, ok, durationMs, error}, completed {run}, failed {run, error, finalizationError}, timeout; `: ping` heartbeats")),
    security(("api_key" = [])))]
/// Follow a run as server-sent events.
pub async fn stream(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<RunId>,
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
                        if ty == "run.step" {
                            if tx.send(Ok(event("step", &data))).await.is_err() {
                                return;
                            }
                            continue;
                        }
                        let status = data["status"].as_str().unwrap_or("").to_string();
                        if tx.send(Ok(event("status", &json!({ "status": status })))).await.is_err() {
                            return;
                        }
                        if matches!(status.as_str(), "completed" | "failed" | "stopped") {
                            let run = match st.store.run(&row.id).await {
                                Ok(Some(r)) => serde_json::to_value(view(&st, &r).await).unwrap_or(Value::Null),
                                _ => Value::Null,
                            };
                            let last = if status == "failed" {
                                event(
                                    "failed",
                                    &json!({"status": status, "run": run, "error": data["error"], "finalizationError": data["finalizationError"]}),
                                )
                            } else {
                                event("completed", &json!({"status": status, "run": run}))
                            };
                            let _ = tx.send(Ok(last)).await;
                            return;
                        }
                    }
                }
                Err(e) => tracing::error!(error = %e, "run stream: reading events failed"),
            }
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => {
                        let _ = tx.send(Ok(event("timeout", &json!({"status": "timeout", "runId": id})))).await;
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
