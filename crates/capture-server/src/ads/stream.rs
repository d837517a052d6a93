//! `GET /v1/adshot/{id}/stream`: a draft's or render's state and stage as server-sent
//! events, with the screenshot stream's heartbeat and time limit.

use crate::http::Path;
use axum::Extension;
use axum::extract::State;
use axum::response::Response;
use axum::response::sse::Event;
use capture_core::JobStatus;
use capture_store::KIND_RENDER;
use serde_json::Value;

use super::service::{find, view};
use super::types::StreamEvent;
use crate::auth::Account;
use crate::http::ApiResult;
use crate::http::sse::{self, Follow, Next};
use crate::state::AppState;

fn event(e: &StreamEvent) -> Event {
    sse::event(e.name(), e)
}

/// A draft's or render's stored events → `status` with stage and progress, then `done` or `failed`.
struct Ad {
    row: String,
}

impl Follow for Ad {
    async fn on_event(&mut self, st: &AppState, _ty: &str, data: Value) -> (Vec<Event>, Next) {
        let Some(status) = data["status"].as_str().and_then(JobStatus::parse) else {
            return (vec![], Next::Continue);
        };
        let stage = data["stage"].as_str().map(str::to_string);
        let progress = data["progress"].as_i64().unwrap_or(if status == JobStatus::Done { 100 } else { 0 });
        let mut out = vec![event(&StreamEvent::Status { status, stage, progress })];
        if !status.is_final() {
            return (out, Next::Continue);
        }
        let now = st.store.adshot(&self.row).await.ok().flatten();
        let last = match (&now, status) {
            (Some(r), JobStatus::Done) => {
                let ad = view(st, r).await;
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
                    StreamEvent::DraftDone { status, id: ad.id.clone(), draft: ad.draft.clone(), ad: Box::new(ad) }
                }
            }
            (r, _) => StreamEvent::Failed {
                status: JobStatus::Failed,
                id: self.row.clone(),
                error: r.as_ref().and_then(|r| r.error.clone()).or_else(|| data["error"].as_str().map(str::to_string)),
            },
        };
        out.push(event(&last));
        (out, Next::End)
    }

    fn timeout(&self) -> Event {
        event(&StreamEvent::Timeout { status: "timeout", id: self.row.clone() })
    }
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
    Ok(sse::follow(&state, row.id.clone(), Ad { row: row.id }))
}
