//! `GET /v1/audits/{id}/stream`: an audit's state changes and progress as server-sent events.

use axum::Extension;
use axum::extract::State;
use axum::response::Response;
use axum::response::sse::Event;
use capture_core::{AuditId, JobStatus};
use capture_store::{AUDIT_EVENT, AUDIT_PROGRESS_EVENT};
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

/// An audit's stored events → `progress` after each page, `status`, then `done` or `failed`.
struct Audit {
    id: AuditId,
    row: String,
}

impl Follow for Audit {
    async fn on_event(&mut self, st: &AppState, ty: &str, data: Value) -> (Vec<Event>, Next) {
        if ty == AUDIT_PROGRESS_EVENT {
            let e = StreamEvent::Progress {
                pages_done: data["pagesDone"].as_i64().unwrap_or(0),
                pages_total: data["pagesTotal"].as_i64().unwrap_or(0),
            };
            return (vec![event(&e)], Next::Continue);
        }
        if ty != AUDIT_EVENT {
            return (vec![], Next::Continue);
        }
        let Some(status) = data["status"].as_str().and_then(JobStatus::parse) else {
            tracing::warn!(audit = %self.id, "an audit event without a known status");
            return (vec![], Next::Continue);
        };
        let mut out = vec![event(&StreamEvent::Status { status })];
        if !status.is_final() {
            return (out, Next::Continue);
        }
        let audit = st.store.audit(&self.row).await.ok().flatten();
        let last = match (&audit, status) {
            (Some(a), JobStatus::Done) => {
                let audit = view(st, a, false);
                StreamEvent::Done {
                    status,
                    audit_id: audit.id.clone(),
                    report_url: audit.report_url.clone(),
                    audit: Box::new(audit),
                }
            }
            (a, _) => StreamEvent::Failed {
                status: JobStatus::Failed,
                audit_id: self.id.clone(),
                error: a.as_ref().and_then(|a| a.error.clone()).or_else(|| data["error"].as_str().map(str::to_string)),
            },
        };
        out.push(event(&last));
        (out, Next::End)
    }

    fn timeout(&self) -> Event {
        event(&StreamEvent::Timeout { status: "timeout", audit_id: self.id.clone() })
    }
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
    Ok(sse::follow(&state, row.id.clone(), Audit { id, row: row.id }))
}
