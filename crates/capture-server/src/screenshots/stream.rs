//! `GET /v1/screenshot/{id}/stream`: a job's state changes as server-sent events.

use axum::Extension;
use axum::extract::State;
use axum::response::Response;
use axum::response::sse::Event;
use capture_core::{JobStatus, ScreenshotId};
use serde_json::Value;

use super::service::{find, view};
use super::types::StreamEvent;
use crate::auth::Account;
use crate::http::sse::{self, Follow, Next};
use crate::http::{ApiResult, Id};
use crate::state::AppState;

fn event(e: &StreamEvent) -> Event {
    sse::event(e.name(), e)
}

/// A job's stored status changes → `status`, then `done` or `failed`.
struct Job {
    id: ScreenshotId,
    row: String,
}

impl Follow for Job {
    async fn on_event(&mut self, st: &AppState, _ty: &str, data: Value) -> (Vec<Event>, Next) {
        let Some(status) = data["status"].as_str().and_then(JobStatus::parse) else {
            tracing::warn!(job = %self.id, "a job event without a known status");
            return (vec![], Next::Continue);
        };
        let mut out = vec![event(&StreamEvent::Status { status })];
        if !status.is_final() {
            return (out, Next::Continue);
        }
        let job = st.store.screenshot(&self.row).await.ok().flatten();
        let last = match (&job, status) {
            (Some(j), JobStatus::Done) => {
                let job = view(st, j).await;
                StreamEvent::Done {
                    status,
                    screenshot_id: job.id.clone(),
                    public_url: job.public_url.clone(),
                    thumbnail_url: job.thumbnail_url.clone(),
                    job,
                }
            }
            (j, _) => StreamEvent::Failed {
                status: JobStatus::Failed,
                screenshot_id: self.id.clone(),
                error: j.as_ref().and_then(|j| j.error.clone()).or_else(|| data["error"].as_str().map(str::to_string)),
            },
        };
        out.push(event(&last));
        (out, Next::End)
    }

    fn timeout(&self) -> Event {
        event(&StreamEvent::Timeout { status: "timeout", screenshot_id: self.id.clone() })
    }
}

#[utoipa::path(get, path = "/v1/screenshot/{id}/stream", tag = "screenshots", params(("id" = String, Path)),
    responses((status = 200, content_type = "text/event-stream", description = "events: status, done {publicUrl}, failed {error}, timeout; `: ping` heartbeats")), security(("api_key" = [])))]
/// Follow a job as server-sent events.
pub async fn stream(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<ScreenshotId>,
) -> ApiResult<Response> {
    let row = find(&state, &account, &id).await?;
    Ok(sse::follow(&state, row.id.clone(), Job { id, row: row.id }))
}
