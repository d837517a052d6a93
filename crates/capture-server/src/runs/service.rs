//! The run operations, scoped to the calling account: create (scripted or live), find,
//! view, list, stop — plus the end of a run, shared by the worker, the live relay, stops and
//! the sweep. Plain async fns returning typed results and the domain [`Error`], shared by
//! the REST handlers, the MCP tools and the website.

use capture_core::time::iso;
use capture_core::{EndReason, RunId, RunKind, RunStatus, ids};
use capture_store::{IdemClaim, IdemResponse, NewRun, RunEnd, RunRow};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::types::{DeviceSpec, Run, RunEnded, RunList, RunSpec, Step, StepResult};
use crate::auth::Account;
use crate::error::{Error, Result};
use crate::paging::{ListQuery, Window};
use crate::state::AppState;

/// What a `run` task carries.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPayload {
    pub run_id: RunId,
}

/// A run just accepted, and the caller's usage after it.
#[derive(Debug, Clone)]
pub struct Created {
    pub run: Run,
    pub used: i64,
}

/// Actions a run of `timeout_ms` wants: 1 per started minute.
pub fn actions_for(ms: i64) -> i64 {
    ((ms.max(1) + 59_999) / 60_000).max(1)
}

/// The DevTools endpoint of a live run.
pub fn connect_url(state: &AppState, id: &str, token: &str) -> String {
    let base = &state.base_url;
    let ws = if let Some(rest) = base.strip_prefix("https://") {
        format!("wss://{rest}")
    } else {
        format!("ws://{}", base.strip_prefix("http://").unwrap_or(base))
    };
    format!("{ws}/v1/runs/{id}/devtools?token={token}")
}

/// Create a run: its actions are reserved (1 per started minute of `timeoutMs`, or what the
/// month has left) and the account's bound on active runs checked in the same transaction,
/// which also stores the idempotent response. A scripted run is queued; a live one waits for
/// its client at the `connectUrl` of the answer.
pub async fn create(state: &AppState, account: &Account, spec: &RunSpec, idem: Option<&IdemClaim>) -> Result<Created> {
    // The profile is the caller's and has a state; the run keeps its id.
    let profile_id = match &spec.profile {
        Some(p) => Some(crate::profiles::service::resolve(state, account, p, "profile").await?.id),
        None => None,
    };
    if let Some(p) = &spec.save_profile
        && state.store.find_profile(&account.user.id, p).await?.is_none()
    {
        // A name that is not one of the caller's makes a new profile at the end: it must be one.
        if capture_core::ProfileId::parse(p).is_some() {
            return Err(Error::Invalid(capture_core::FieldError::new(
                "saveProfile",
                format!("{p} is not one of your profiles (GET /v1/profiles lists them)"),
            )));
        }
        crate::profiles::types::check_name("saveProfile", p)?;
    }
    let id = RunId::new();
    // The proxy is the caller's; the run keeps its id and the pool member that serves it.
    let (proxy_id, proxy_member) = match &spec.proxy {
        Some(p) => {
            let asked = capture_core::options::CaptureOptions {
                url: Some(spec.start_url.clone()),
                proxy: Some(p.clone()),
                proxy_sticky_key: spec.proxy_sticky_key.clone(),
                ..Default::default()
            };
            let chosen = crate::proxies::service::choose(state, account, &asked).await?;
            (chosen.proxy, chosen.proxy_member.map(i64::from))
        }
        None => (None, None),
    };
    let now = state.clock.now_ms();
    let token = spec.live.then(|| ids::random_string(40));
    let payload = TaskPayload { run_id: id.clone() };
    let n = NewRun {
        id: id.to_string(),
        user_id: account.user.id.clone(),
        key_id: account.key_id.clone(),
        kind: if spec.live { RunKind::Live } else { RunKind::Scripted },
        start_url: spec.start_url.clone(),
        device: serde_json::to_string(&spec.device).map_err(Error::internal)?,
        record_video: spec.record_video,
        timeout_ms: spec.timeout_ms as i64,
        steps: serde_json::to_string(&spec.steps).map_err(Error::internal)?,
        connect_token_hash: token.as_deref().map(|t| crate::crypto::sha256_hex(t.as_bytes())),
        connect_expires_at: token.as_ref().map(|_| now + state.cfg.runs.connect_ttl.as_millis() as i64),
        actions_wanted: actions_for(spec.timeout_ms as i64),
        month: account.window.label.clone(),
        limit: account.limit(),
        reset_at: iso(account.window.reset_ms),
        now,
        max_active: state.cfg.runs.max_active_per_account,
        task_payload: if spec.live { None } else { Some(serde_json::to_string(&payload).map_err(Error::internal)?) },
        client_id: account.client_id.clone(),
        shared: spec.shared,
        profile_id,
        save_profile: spec.save_profile.clone(),
        cookie_consent: spec.cookie_consent.as_str().to_owned(),
        proxy_id,
        proxy_member,
    };
    let connect = token.as_deref().map(|t| connect_url(state, id.as_str(), t));
    let render = |r: &RunRow| {
        let mut run = view_with(r, None, state.clock.now_ms());
        run.connect_url = connect.clone();
        (202, serde_json::to_value(&run).map(|v| v.to_string()).unwrap_or_default())
    };
    let idem = idem.map(|claim| IdemResponse { claim, render: &render });
    match state.store.create_run(&n, idem).await? {
        Ok((row, used)) => {
            if !spec.live {
                state.wake.queued(crate::queues::Queue::Run);
            }
            state.job_changed(&row.id);
            let mut run = view(state, &row).await;
            run.connect_url = connect;
            Ok(Created { run, used })
        }
        Err(refused) => Err(account.refused(state, refused, None)),
    }
}

/// The run as every channel shows it (file URLs made fresh each time).
pub async fn view(state: &AppState, r: &RunRow) -> Run {
    let video = match &r.video_key {
        Some(k) => Some(state.file_url(k).await),
        None => None,
    };
    view_with(r, video, state.clock.now_ms())
}

/// The run with its video URL already made.
pub fn view_with(r: &RunRow, video_url: Option<String>, now_ms: i64) -> Run {
    let device: DeviceSpec = serde_json::from_str(&r.device).unwrap_or(DeviceSpec {
        preset: None,
        width: 0,
        height: 0,
        device_scale_factor: 1.0,
        mobile: false,
        touch: false,
        user_agent: None,
    });
    let steps: Vec<Step> = serde_json::from_str(&r.steps).unwrap_or_default();
    let step_results: Vec<StepResult> = serde_json::from_str(&r.step_results).unwrap_or_default();
    let list = |s: &str| serde_json::from_str::<Vec<Value>>(s).unwrap_or_default();
    let duration_ms = r.started_at.map(|s| r.ended_at.unwrap_or(now_ms) - s);
    Run {
        id: RunId::from_stored(r.id.clone()),
        status: r.status,
        kind: r.kind,
        start_url: r.start_url.clone(),
        device,
        record_video: r.record_video,
        timeout_ms: r.timeout_ms,
        steps,
        step_results,
        connect_url: None,
        connect_expires_at: r.connect_expires_at.filter(|_| r.status == RunStatus::Pending).map(iso),
        final_url: r.final_url.clone(),
        page_title: r.page_title.clone(),
        video_url,
        console_error_count: r.console_error_count,
        network_error_count: r.network_error_count,
        console_errors: list(&r.console_errors),
        network_errors: list(&r.network_errors),
        error: r.error.clone(),
        finalization_error: r.finalization_error.clone(),
        end_reason: r.end_reason.map(|e| e.as_str().to_string()),
        stop_requested: r.stop_requested,
        actions_reserved: r.actions_reserved,
        actions_charged: r.actions_charged,
        created_at: iso(r.created_at),
        started_at: r.started_at.map(iso),
        ended_at: r.ended_at.map(iso),
        duration_ms,
        profile: r.profile_id.clone(),
        save_profile: r.save_profile.clone(),
        cookie_consent: r.cookie_consent.clone(),
        proxy: r.proxy_id.clone().map(|id| crate::proxies::types::ProxyServed {
            id,
            member: r.proxy_member.and_then(|m| u32::try_from(m).ok()).unwrap_or(0),
        }),
    }
}

/// A run of the caller (its stored row), or `NotFound`.
pub async fn find(state: &AppState, account: &Account, id: &RunId) -> Result<RunRow> {
    state.store.run_of(&account.user.id, id.as_str()).await?.ok_or_else(|| Error::not_found(RunId::NOUN))
}

/// A run of the caller, as shown.
pub async fn get(state: &AppState, account: &Account, id: &RunId) -> Result<Run> {
    let row = find(state, account, id).await?;
    Ok(view(state, &row).await)
}

/// The caller's runs, newest first, a page at a time.
pub async fn list(state: &AppState, account: &Account, q: &ListQuery) -> Result<RunList> {
    let w = Window::of(q, |id| ids::looks_like(ids::RUN, id))?;
    let rows = state.store.list_runs(&account.user.id, w.before.clone(), w.fetch()).await?;
    let page = w.page(rows, |r| (r.created_at, r.id.as_str()));
    let mut data = Vec::with_capacity(page.rows.len());
    for r in &page.rows {
        data.push(view(state, r).await);
    }
    Ok(RunList { data, next_cursor: page.next_cursor })
}

/// Stop a run: one nobody has started ends at once (nothing charged); a running one is
/// ended by the node that holds it at its next heartbeat (within a second or so), which
/// finalises it like any other end (video, counts, `run.completed`). Stopping an ended run
/// changes nothing. Returns the run as it is now.
pub async fn stop(state: &AppState, account: &Account, id: &RunId) -> Result<Run> {
    let row = state
        .store
        .request_run_stop(&account.user.id, id.as_str())
        .await?
        .ok_or_else(|| Error::not_found(RunId::NOUN))?;
    if row.status == RunStatus::Pending {
        let mut end = ended(state, &row, RunStatus::Stopped, EndReason::Stopped, None, None);
        end.only_if_pending = true;
        if state.store.finish_run(&end).await? {
            state.job_changed(&row.id);
        }
    }
    let row = find(state, account, id).await?;
    Ok(view(state, &row).await)
}

/// An end of `row` with nothing recorded beyond what it holds (no page: it never started,
/// or its node is gone): `status` `completed`, `stopped` or `failed`; charged for the
/// minutes it ran up to now (none if it never started).
pub fn ended(
    state: &AppState,
    row: &RunRow,
    status: RunStatus,
    reason: EndReason,
    error: Option<String>,
    finalization_error: Option<String>,
) -> RunEnd {
    let now = state.clock.now_ms();
    let charged = row.started_at.map_or(0, |s| actions_for(row.lease_until.unwrap_or(now).min(now) - s));
    let mut end = RunEnd {
        id: row.id.clone(),
        status,
        end_reason: reason,
        console_error_count: row.console_error_count,
        network_error_count: row.network_error_count,
        error,
        finalization_error,
        charged,
        now,
        ..Default::default()
    };
    set_event(state, &mut end, row.final_url.clone(), row.page_title.clone(), row.video_key.clone());
    end
}

/// Fill in the `run.completed` / `run.failed` event of an end.
pub fn set_event(
    state: &AppState,
    end: &mut RunEnd,
    final_url: Option<String>,
    page_title: Option<String>,
    video_key: Option<String>,
) {
    let failed = end.status == RunStatus::Failed;
    let data = RunEnded {
        run_id: RunId::from_stored(end.id.clone()),
        status: end.status,
        final_url,
        page_title,
        // Stored and possibly retried for hours: never a presigned URL.
        video_url: video_key.as_deref().map(|k| state.lasting_file_url(k)),
        console_error_count: end.console_error_count,
        network_error_count: end.network_error_count,
        finalization_error: failed
            .then(|| end.finalization_error.clone().or_else(|| end.error.clone()))
            .flatten()
            .or_else(|| failed.then(|| "the run failed".to_string())),
    };
    end.event_type = if failed { "run.failed" } else { "run.completed" }.into();
    end.event = serde_json::to_value(&data).unwrap_or(Value::Null);
}
