//! `GET /v1/runs/{id}/stream`: a run's progress as server-sent events — `status`
//! (`{status}`), `step` (`{index, action, ok, durationMs, error}`), then `completed` (the
//! whole run; also for a stopped run) or `failed` (the run, `error`, `finalizationError`);
//! `timeout` when the stream's own time is up (the run goes on).

use axum::Extension;
use axum::extract::State;
use axum::response::Response;
use axum::response::sse::Event;
use capture_core::RunId;
use serde_json::{Value, json};

use super::service::{find, view};
use crate::auth::Account;
use crate::http::sse::{self, Follow, Next, event};
use crate::http::{ApiResult, Id};
use crate::state::AppState;

/// A run's stored events → `step` per finished step, `status`, then `completed` or `failed`.
struct Run {
    id: RunId,
    row: String,
}

impl Follow for Run {
    async fn on_event(&mut self, st: &AppState, ty: &str, data: Value) -> (Vec<Event>, Next) {
        if ty == "run.step" {
            return (vec![event("step", &data)], Next::Continue);
        }
        let status = data["status"].as_str().unwrap_or("").to_string();
        let mut out = vec![event("status", &json!({ "status": status }))];
        if !matches!(status.as_str(), "completed" | "failed" | "stopped") {
            return (out, Next::Continue);
        }
        let run = match st.store.run(&self.row).await {
            Ok(Some(r)) => serde_json::to_value(view(st, &r).await).unwrap_or(Value::Null),
            _ => Value::Null,
        };
        out.push(if status == "failed" {
            event(
                "failed",
                &json!({"status": status, "run": run, "error": data["error"], "finalizationError": data["finalizationError"]}),
            )
        } else {
            event("completed", &json!({"status": status, "run": run}))
        });
        (out, Next::End)
    }

    fn timeout(&self) -> Event {
        event("timeout", &json!({"status": "timeout", "runId": self.id}))
    }
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
    Ok(sse::follow(&state, row.id.clone(), Run { id, row: row.id }))
}
