//! The audit operations, scoped to the calling account: create (reserving the page cap's
//! actions), find, view, list, and the public report by its token. Plain async fns returning
//! typed results and the domain [`Error`], shared by the REST handlers, the MCP tools and the
//! website.

use capture_core::time::iso;
use capture_core::{AuditId, JobStatus, ids};
use capture_store::{AuditRow, IdemClaim, IdemResponse, NewAudit};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::types::{Audit, AuditList, AuditOptions, AuditReportType, AuditScores};
use crate::auth::Account;
use crate::error::{Error, Result};
use crate::paging::{ListQuery, Window};
use crate::state::AppState;

/// What an `audit` task needs from the worker (the task's payload).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPayload {
    pub audit_id: AuditId,
    /// The browser profile the pages start from (its id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The customer's proxy (its id) and the pool member chosen for the audit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_member: Option<u32>,
}

/// An audit just accepted, and the caller's usage after it.
#[derive(Debug, Clone)]
pub struct Created {
    pub audit: Audit,
    pub used: i64,
}

/// Create an audit: the page cap's actions (1 for a single page) are reserved against the
/// monthly quota in the same transaction as the audit and its task, so concurrent requests
/// never pass the cap; with `idem`, the response is stored for that Idempotency-Key in that
/// transaction too. The unused part is given back when the audit ends.
pub async fn create(
    state: &AppState,
    account: &Account,
    opts: &AuditOptions,
    idem: Option<&IdemClaim>,
) -> Result<Created> {
    let profile = match &opts.profile {
        Some(p) => Some(crate::profiles::service::resolve(state, account, p, "profile").await?.id),
        None => None,
    };
    let id = AuditId::new();
    let (proxy, proxy_member) = match &opts.proxy {
        Some(p) => {
            let asked = capture_core::options::CaptureOptions {
                url: Some(opts.url.clone()),
                proxy: Some(p.clone()),
                proxy_sticky_key: opts.proxy_sticky_key.clone(),
                ..Default::default()
            };
            let chosen = crate::proxies::service::choose(state, account, &asked).await?;
            (chosen.proxy, chosen.proxy_member)
        }
        None => (None, None),
    };
    let payload = TaskPayload { audit_id: id.clone(), profile, proxy, proxy_member };
    let n = NewAudit {
        id: id.to_string(),
        user_id: account.user.id.clone(),
        key_id: account.key_id.clone(),
        url: opts.url.clone(),
        report_type: opts.report_type.as_str().to_string(),
        max_pages: i64::from(opts.max_pages),
        actions: i64::from(opts.max_pages),
        share_token: ids::random_string(32),
        month: account.window.label.clone(),
        limit: account.limit(),
        reset_at: iso(account.window.reset_ms),
        now: state.clock.now_ms(),
        // The queue runs on the system clock (leases, claims), whatever the service's clock says.
        task_run_at: state.clock.now_ms(),
        task_payload: serde_json::to_string(&payload).map_err(Error::internal)?,
        queue_limits: state.cfg.queue.limits(),
    };
    let render = |r: &AuditRow| {
        let audit = view(state, r, false);
        (202u16, serde_json::to_value(&audit).map(|v| v.to_string()).unwrap_or_default())
    };
    let idem = idem.map(|claim| IdemResponse { claim, render: &render });
    match state.store.create_audit_with(&n, idem).await? {
        Ok((row, used)) => {
            state.wake.queued(crate::queues::Queue::Audit);
            state.job_changed(&row.id);
            Ok(Created { audit: view(state, &row, false), used })
        }
        Err(refused) => Err(account.refused(state, refused, None)),
    }
}

/// The public report page of a token.
pub fn report_url(state: &AppState, token: &str) -> String {
    format!("{}/r/{token}", state.base_url)
}

/// The report's PDF.
pub fn pdf_url(state: &AppState, token: &str) -> String {
    format!("{}/r/{token}.pdf", state.base_url)
}

/// The audit as every channel shows it; `with_report` adds the whole report when done.
pub fn view(state: &AppState, r: &AuditRow, with_report: bool) -> Audit {
    let status = r.status;
    let scores = r.scores.as_deref().and_then(|s| serde_json::from_str::<AuditScores>(s).ok());
    let report = if with_report && status == JobStatus::Done {
        r.report.as_deref().and_then(|s| serde_json::from_str::<Value>(s).ok())
    } else {
        None
    };
    let actions = match status {
        JobStatus::Done | JobStatus::Failed => r.actions_charged,
        _ => r.actions_reserved,
    };
    Audit {
        id: AuditId::from_stored(r.id.clone()),
        status,
        url: r.url.clone(),
        report_type: AuditReportType::parse(&r.report_type).unwrap_or(AuditReportType::SinglePage),
        max_pages: r.max_pages.max(0) as u32,
        pages_audited: r.pages_audited.max(0) as u32,
        pages_total: r.pages_total.max(0) as u32,
        scores,
        report_url: report_url(state, &r.share_token),
        pdf_url: pdf_url(state, &r.share_token),
        actions: actions.max(0) as u32,
        error: r.error.clone(),
        created_at: iso(r.created_at),
        completed_at: r.completed_at.map(iso),
        report,
    }
}

/// An audit of the caller (its stored row), or `NotFound`.
pub async fn find(state: &AppState, account: &Account, id: &AuditId) -> Result<AuditRow> {
    state.store.audit_of(&account.user.id, id.as_str()).await?.ok_or_else(|| Error::not_found(AuditId::NOUN))
}

/// An audit of the caller, as shown, with the whole report once done.
pub async fn get(state: &AppState, account: &Account, id: &AuditId) -> Result<Audit> {
    let row = find(state, account, id).await?;
    Ok(view(state, &row, true))
}

/// The caller's audits, newest first, a page at a time (without their reports).
pub async fn list(state: &AppState, account: &Account, q: &ListQuery) -> Result<AuditList> {
    let w = Window::of(q, |id| ids::looks_like(ids::AUDIT, id))?;
    let rows = state.store.list_audits(&account.user.id, w.before.clone(), w.fetch()).await?;
    let page = w.page(rows, |r| (r.created_at, r.id.as_str()));
    Ok(AuditList::of(page, |r| view(state, &r, false)))
}

/// The audit a public report token names (None for a malformed or unknown token).
pub async fn by_token(state: &AppState, token: &str) -> Result<Option<AuditRow>> {
    if !ids::is_token(token, 16, 64) {
        return Ok(None);
    }
    Ok(state.store.audit_by_token(token).await?)
}
