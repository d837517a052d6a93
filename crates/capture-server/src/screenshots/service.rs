//! The screenshot operations, scoped to the calling account: create a capture job, find,
//! list. Plain async fns shared by the REST handlers, the MCP tools and the website.

use axum::http::header;
use capture_core::options::CaptureOptions;
use capture_core::time::{iso, now_ms, parse_iso};
use capture_core::{ErrorCode, FieldError, ids};
use capture_store::{IdemClaim, IdemResponse, NewScreenshot, QueueFull, QueueScope, Refused, ScreenshotRow};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::auth::{Account, UsageAfter};
use crate::http::{ApiError, ApiResult};
use crate::state::AppState;

/// The job object: one shape everywhere. File URLs come from the blob store (proxied or
/// presigned), so they are made fresh each time a job is shown.
pub async fn job_json(state: &AppState, r: &ScreenshotRow) -> Value {
    let done = r.status == "done";
    let public_url = match r.result_key.as_ref().filter(|_| done) {
        Some(k) => Some(state.file_url(k).await),
        None => None,
    };
    let thumbnail_url = match r.thumb_key.as_ref().filter(|_| done) {
        Some(k) => Some(state.file_url(k).await),
        None => None,
    };
    job_json_with(r, public_url, thumbnail_url)
}

/// The job object with its file URLs already made (the create transaction renders the
/// idempotent response with it, where nothing can be awaited).
pub fn job_json_with(r: &ScreenshotRow, public_url: Option<String>, thumbnail_url: Option<String>) -> Value {
    json!({
        "id": r.id,
        "screenshotId": r.id,
        "status": r.status,
        "url": r.url,
        "format": r.format,
        "publicUrl": public_url,
        "thumbnailUrl": thumbnail_url,
        "pageTitle": r.page_title,
        "tags": r.tags,
        "width": r.width,
        "height": r.height,
        "error": r.error,
        "createdAt": iso(r.created_at),
        "completedAt": r.completed_at.map(iso),
    })
}

/// What a job needs from the worker.
#[derive(Debug, Clone, serde::Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPayload {
    pub screenshot_id: String,
    /// Blob name of an uploaded HTML document to render instead of a URL.
    #[serde(default)]
    pub html_blob: Option<String>,
}

pub(crate) fn quota_error(a: &Account, used: i64) -> ApiError {
    let retry = (a.window.reset_ms - now_ms()).max(0) / 1000 + 1;
    ApiError::new(
        ErrorCode::PlanQuotaExceeded,
        format!("monthly quota of {} actions reached; it resets at {}", a.plan_limit, iso(a.window.reset_ms)),
    )
    .details(json!({"used": used, "limit": a.plan_limit, "plan": a.user.plan, "resetAt": iso(a.window.reset_ms)}))
    .header(header::RETRY_AFTER, retry.to_string())
    .extension(UsageAfter(used))
}

/// `Retry-After` (seconds) of a refusal because the account's jobs fill its share of the queue.
pub const QUEUE_FULL_RETRY_ACCOUNT: u64 = 5;
/// `Retry-After` (seconds) of a refusal because the whole queue is full.
pub const QUEUE_FULL_RETRY_GLOBAL: u64 = 10;

/// Back-pressure: the account's share of the queue (429 `QUEUE_FULL`) or the whole queue
/// (503 `SERVICE_UNAVAILABLE`) is full. Both are transient and carry `Retry-After`. The
/// global refusal does not tell one tenant how busy the others keep the service.
pub(crate) fn queue_full_error(state: &AppState, q: QueueFull) -> ApiError {
    state.metrics.queue_refused(q.scope);
    match q.scope {
        QueueScope::Account => ApiError::new(
            ErrorCode::QueueFull,
            format!(
                "{} of your jobs are waiting for or in capture, the most allowed at once; retry in {} seconds",
                q.pending, QUEUE_FULL_RETRY_ACCOUNT
            ),
        )
        .details(json!({"pending": q.pending, "limit": q.limit, "scope": "account"}))
        .header(header::RETRY_AFTER, QUEUE_FULL_RETRY_ACCOUNT.to_string()),
        QueueScope::Global => ApiError::new(
            ErrorCode::ServiceUnavailable,
            format!(
                "the capture queue is full (workers are not keeping up); retry in {} seconds",
                QUEUE_FULL_RETRY_GLOBAL
            ),
        )
        .details(json!({"reason": "queue_full", "scope": "global"}))
        .header(header::RETRY_AFTER, QUEUE_FULL_RETRY_GLOBAL.to_string()),
    }
}

/// Create a capture job (quota reserved and queue bounds checked atomically). Returns the
/// job and usage after it.
/// With `idem`, the response (the pending job, 202) is stored for the Idempotency-Key in the
/// same transaction that creates the job.
pub async fn create_job(
    state: &AppState,
    account: &Account,
    opts: &CaptureOptions,
    url_label: Option<String>,
    html_blob: Option<String>,
    idem: Option<&IdemClaim>,
) -> ApiResult<(ScreenshotRow, i64)> {
    let id = ids::new_id(ids::SCREENSHOT);
    let now = now_ms();
    let payload = TaskPayload { screenshot_id: id.clone(), html_blob };
    let n = NewScreenshot {
        id: id.clone(),
        user_id: account.user.id.clone(),
        key_id: account.key_id.clone(),
        url: url_label.or_else(|| opts.url.clone()).unwrap_or_default(),
        options: serde_json::to_string(opts).map_err(ApiError::internal)?,
        format: opts.format_name().to_string(),
        actions: 1,
        month: account.window.label.clone(),
        limit: account.limit(),
        reset_at: iso(account.window.reset_ms),
        now,
        done: None,
        task_payload: serde_json::to_string(&payload).map_err(ApiError::internal)?,
        queue_limits: state.cfg.queue_limits(),
    };
    let render = |r: &ScreenshotRow| (202, job_json_with(r, None, None).to_string());
    let idem = idem.map(|claim| IdemResponse { claim, render: &render });
    match state.store.create_screenshot_with(&n, idem).await? {
        Ok((row, used)) => {
            state.work.notify_one();
            state.job_changed(&row.id);
            Ok((row, used))
        }
        Err(refused) => Err(refused_error(state, account, refused)),
    }
}

/// The answer to a create the store refused (nothing was written).
pub(crate) fn refused_error(state: &AppState, account: &Account, refused: Refused) -> ApiError {
    match refused {
        Refused::Quota(q) => quota_error(account, q.used),
        Refused::QueueFull(q) => queue_full_error(state, q),
        Refused::IdempotencyTakenOver => crate::idempotency::in_flight(),
    }
}

/// A job of the caller, or 404.
pub async fn find(state: &AppState, account: &Account, id: &str) -> ApiResult<ScreenshotRow> {
    if !ids::looks_like(ids::SCREENSHOT, id) {
        return Err(ApiError::not_found("screenshot"));
    }
    if let Some(row) = state.hot.job(id, &account.user.id) {
        return Ok((*row).clone());
    }
    let row =
        state.store.screenshot_of(&account.user.id, id).await?.ok_or_else(|| ApiError::not_found("screenshot"))?;
    state.hot.put_job(&row);
    Ok(row)
}

#[derive(Deserialize)]
/// The query of `GET /v1/screenshots` (kept as text: the service checks it).
pub struct ListQuery {
    pub limit: Option<String>,
    pub before: Option<String>,
}

/// List the caller's jobs, newest first: `{data, nextCursor}`.
pub async fn list_jobs(
    state: &AppState,
    account: &Account,
    limit: Option<&str>,
    before: Option<&str>,
) -> ApiResult<Value> {
    let limit = match limit {
        None | Some("") => 20,
        Some(s) => match s.parse::<i64>() {
            Ok(n) if (1..=100).contains(&n) => n,
            _ => return Err(FieldError::new("limit", "must be a whole number from 1 to 100").into()),
        },
    };
    let before = match before.filter(|b| !b.is_empty()) {
        None => None,
        Some(b) => Some(parse_cursor(b).ok_or_else(|| {
            ApiError::from(FieldError::new("before", "must be an ISO 8601 timestamp or a nextCursor value"))
        })?),
    };
    let rows = state.store.list_screenshots(&account.user.id, before, limit).await?;
    let next =
        (rows.len() as i64 == limit).then(|| rows.last().map(|r| format!("{}~{}", iso(r.created_at), r.id))).flatten();
    let mut data = Vec::with_capacity(rows.len());
    for r in &rows {
        data.push(job_json(state, r).await);
    }
    Ok(json!({
        "data": data,
        "nextCursor": next,
    }))
}

/// `ts~id` (our cursor) or a bare ISO timestamp.
fn parse_cursor(s: &str) -> Option<(i64, Option<String>)> {
    match s.split_once('~') {
        Some((ts, id)) if ids::looks_like(ids::SCREENSHOT, id) => Some((parse_iso(ts)?, Some(id.to_string()))),
        Some(_) => None,
        None => Some((parse_iso(s)?, None)),
    }
}
