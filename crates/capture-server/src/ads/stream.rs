//! `GET /v1/adshot/{id}/stream`: a draft's or render's state and stage as server-sent
//! events, with the screenshot stream's heartbeat and time limit.

use std::convert::Infallible;
use std::time::Duration;

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::HeaderValue;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use capture_core::JobStatus;
use capture_store::KIND_RENDER;
use serde_json::Value;

use super::service::{find, view};
use super::types::StreamEvent;
use crate::auth::Account;
use crate::http::ApiResult;
use crate::state::AppState;

fn event(e: &StreamEvent) -> Event {
    Event::default().event(e.name()).data(serde_json::to_value(e).map(|v| v.to_string()).unwrap_or_default())
}

#[utoipa::path(get, path = "/v1/adshot/{id}/stream", tag = "ads", params(("id" = String, Path, description = "drf_… or ad_…")),
    responses((status = 200, content_type = "text/event-stream",
        description = "events: status {status, stage, progress}; done {videoUrl, thumbnailUrl, durationMs, width, height, ad} for a render or {draft, ad} for a draft; failed {error}; timeout; `: ping` heartbeats")),
    security(("api_key" = [])))]
/// Follow a draft or render as server-sent events.
pub async fn stream(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
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
                    for (eid, _ty, data) in events {
                        last_event = eid;
                        let data: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
                        let Some(status) = data["status"].as_str().and_then(JobStatus::parse) else {
                            continue;
                        };
                        let stage = data["stage"].as_str().map(str::to_string);
                        let progress =
                            data["progress"].as_i64().unwrap_or(if status == JobStatus::Done { 100 } else { 0 });
                        if tx.send(Ok(event(&StreamEvent::Status { status, stage, progress }))).await.is_err() {
                            return;
                        }
                        if status.is_final() {
                            let now = st.store.adshot(&row.id).await.ok().flatten();
                            let last = match (&now, status) {
                                (Some(r), JobStatus::Done) => {
                                    let ad = view(&st, r).await;
                                    if r.kind == KIND_RENDER {
                                        StreamEvent::RenderDone {
                                            status,
                                            id: ad.id.clone(),
                                            video_url: ad.video_url.clone(),
                                            thumbnail_url: ad.thumbnail_url.clone(),
                                            duration_ms: ad.duration_ms,
                                            width: ad.width,
                                            height: ad.height,
                                            ad: Box::new(ad),
                                        }
                                    } else {
                                        StreamEvent::DraftDone {
                                            status,
                                            id: ad.id.clone(),
                                            draft: ad.draft.clone(),
                                            ad: Box::new(ad),
                                        }
                                    }
                                }
                                (r, _) => StreamEvent::Failed {
                                    status: JobStatus::Failed,
                                    id: row.id.clone(),
                                    error: r
                                        .as_ref()
                                        .and_then(|r| r.error.clone())
                                        .or_else(|| data["error"].as_str().map(str::to_string)),
                                },
                            };
                            let _ = tx.send(Ok(event(&last))).await;
                            return;
                        }
                    }
                }
                Err(e) => tracing::error!(error = %e, "ad stream: reading events failed"),
            }
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => {
                        let timeout = StreamEvent::Timeout { status: "timeout", id: row.id.clone() };
                        let _ = tx.send(Ok(event(&timeout))).await;
                        return;
                    }
                    _ = ping.tick() => {
                        if tx.send(Ok(Event::default().comment("ping"))).await.is_err() { return; }
                    }
                    r = changes.recv() => match r {
                        Ok(id) if id != row.id && !id.is_empty() => {}
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
