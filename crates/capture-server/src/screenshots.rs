//! Screenshot jobs: create (JSON and upload), read, list, stream, share, PDF download.
//! The operations are plain async fns so REST, MCP tools and the CLI share them.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Multipart, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use capture_core::options::CaptureOptions;
use capture_core::time::{iso, now_ms, parse_iso};
use capture_core::{ErrorCode, FieldError, ids};
use capture_store::{
    IdemBegin, NewScreenshot, QueueFull, QueueLimits, QueueScope, Refused, ScreenshotDone, ScreenshotRow,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::blob;
use crate::error::{ApiError, ApiResult};
use crate::pipeline::{Account, JsonObject, UsageAfter};
use crate::state::AppState;

/// Routes under `/v1` (authenticated by the caller's router).
pub fn v1_router() -> Router<AppState> {
    Router::new()
        .route("/v1/screenshot", post(create))
        .route("/v1/screenshot/upload", post(upload))
        .route("/v1/screenshot/{id}", get(get_one))
        .route("/v1/screenshot/{id}/stream", get(stream))
        .route("/v1/screenshots", get(list))
}

/// Routes under `/api` (authenticated by the caller's router).
pub fn api_router() -> Router<AppState> {
    Router::new()
        .route("/api/screenshots/{id}/share", post(share).delete(unshare))
        .route("/api/pdf/download/{id}", get(pdf_download))
}

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

fn quota_error(a: &Account, used: i64) -> ApiError {
    let retry = (a.window.reset_ms - now_ms()).max(0) / 1000 + 1;
    let mut e = ApiError::new(
        ErrorCode::PlanQuotaExceeded,
        format!("monthly quota of {} actions reached; it resets at {}", a.plan_limit, iso(a.window.reset_ms)),
    )
    .details(json!({"used": used, "limit": a.plan_limit, "plan": a.user.plan, "resetAt": iso(a.window.reset_ms)}))
    .header(header::RETRY_AFTER, retry.to_string());
    e.usage_after = Some(used);
    e
}

/// `Retry-After` (seconds) of a refusal because the account's jobs fill its share of the queue.
pub const QUEUE_FULL_RETRY_ACCOUNT: u64 = 5;
/// `Retry-After` (seconds) of a refusal because the whole queue is full.
pub const QUEUE_FULL_RETRY_GLOBAL: u64 = 10;

/// Back-pressure: the account's share of the queue (429 `QUEUE_FULL`) or the whole queue
/// (503 `SERVICE_UNAVAILABLE`) is full. Both are transient and carry `Retry-After`. The
/// global refusal does not tell one tenant how busy the others keep the service.
fn queue_full_error(state: &AppState, q: QueueFull) -> ApiError {
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
pub async fn create_job(
    state: &AppState,
    account: &Account,
    opts: &CaptureOptions,
    url_label: Option<String>,
    html_blob: Option<String>,
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
    match state.store.create_screenshot(&n).await? {
        Ok((row, used)) => {
            state.work.notify_one();
            state.job_changed(&row.id);
            Ok((row, used))
        }
        Err(Refused::Quota(q)) => Err(quota_error(account, q.used)),
        Err(Refused::QueueFull(q)) => Err(queue_full_error(state, q)),
        Err(Refused::IdempotencyTakenOver) => Err(idempotency_in_flight()),
    }
}

/// How long a request owns its Idempotency-Key before a retry may take over a key whose
/// request never finished (its process died).
pub const IDEMPOTENCY_LEASE_MS: i64 = 60_000;

fn idempotency_in_flight() -> ApiError {
    ApiError::new(
        ErrorCode::IdempotencyInFlight,
        "a request with this Idempotency-Key is still in progress; retry shortly",
    )
    .header(header::RETRY_AFTER, "1")
}

/// Run `f` under the Idempotency-Key of `headers` (if any): replay a stored response,
/// refuse a concurrent duplicate or a different body, store the first success.
pub async fn idempotent<F, Fut>(
    state: &AppState,
    account: &Account,
    headers: &HeaderMap,
    route: &str,
    request_hash: String,
    f: F,
) -> Response
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ApiResult<(StatusCode, Value, i64)>>,
{
    let key = match headers.get("idempotency-key") {
        None => None,
        Some(v) => match v.to_str().ok().filter(|k| ids::is_token(k, 8, 128)) {
            Some(k) => Some(k.to_string()),
            None => {
                return ApiError::new(
                    ErrorCode::InvalidIdempotencyKey,
                    "Idempotency-Key must match [A-Za-z0-9_-]{8,128}",
                )
                .into_response();
            }
        },
    };
    let Some(key) = key else {
        return match f().await {
            Ok((status, body, used)) => with_usage((status, Json(body)).into_response(), used),
            Err(e) => e.into_response(),
        };
    };
    const TTL_MS: i64 = 24 * 3600 * 1000;
    let begin = state
        .store
        .idem_begin(&account.user.id, route, &key, &request_hash, now_ms(), TTL_MS, IDEMPOTENCY_LEASE_MS)
        .await;
    match begin {
        Err(e) => ApiError::from(e).into_response(),
        Ok(IdemBegin::InFlight) => idempotency_in_flight().into_response(),
        Ok(IdemBegin::Mismatch) => ApiError::new(
            ErrorCode::IdempotencyKeyReused,
            "this Idempotency-Key was used with a different request body",
        )
        .into_response(),
        Ok(IdemBegin::Replay(status, body)) => {
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let mut r = (crate::error::status(status), Json(v)).into_response();
            r.headers_mut().insert("idempotency-replayed", HeaderValue::from_static("true"));
            r
        }
        Ok(IdemBegin::Owned(claim)) => match f().await {
            Ok((status, body, used)) => {
                if let Err(e) = state.store.idem_complete(&claim, status.as_u16(), &body.to_string()).await {
                    tracing::error!(error = %e, "storing idempotent response failed");
                }
                with_usage((status, Json(body)).into_response(), used)
            }
            Err(e) => {
                if let Err(err) = state.store.idem_abort(&claim).await {
                    tracing::error!(error = %err, "releasing idempotency key failed");
                }
                e.into_response()
            }
        },
    }
}

fn with_usage(mut r: Response, used: i64) -> Response {
    r.extensions_mut().insert(UsageAfter(used));
    r
}

#[utoipa::path(post, path = "/v1/screenshot", tag = "screenshots", request_body = crate::docs::ScreenshotRequest,
    params(("Idempotency-Key" = Option<String>, Header, description = "[A-Za-z0-9_-]{8,128}; replays the first response for 24 h")),
    responses((status = 202, body = crate::docs::Job), (status = 400, body = crate::docs::ErrorBody), (status = 401, body = crate::docs::ErrorBody),
    (status = 409, body = crate::docs::ErrorBody), (status = 422, body = crate::docs::ErrorBody),
    (status = 429, body = crate::docs::ErrorBody, description = "PLAN_QUOTA_EXCEEDED, or QUEUE_FULL: too many of the account's jobs wait; Retry-After"),
    (status = 503, body = crate::docs::ErrorBody, description = "SERVICE_UNAVAILABLE: the whole queue is full; Retry-After")), security(("api_key" = [])))]
/// Create a capture job.
pub async fn create(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    headers: HeaderMap,
    JsonObject(body, _raw): JsonObject,
) -> Response {
    let opts = match CaptureOptions::from_json(&body, true) {
        Ok(o) => o,
        Err(e) => return ApiError::validation(e).into_response(),
    };
    // serde_json maps are ordered by key, so this is a canonical form of the body.
    let hash = crate::crypto::sha256_hex(Value::Object(body).to_string().as_bytes());
    idempotent(&state, &account, &headers, "POST /v1/screenshot", hash, || async {
        let (row, used) = create_job(&state, &account, &opts, None, None).await?;
        Ok((StatusCode::ACCEPTED, job_json(&state, &row).await, used))
    })
    .await
}

#[utoipa::path(get, path = "/v1/screenshot/{id}", tag = "screenshots", params(("id" = String, Path)), responses((status = 200, body = crate::docs::Job), (status = 404, body = crate::docs::ErrorBody)), security(("api_key" = [])))]
/// One job.
pub async fn get_one(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let row = find(&state, &account, &id).await?;
    Ok(Json(job_json(&state, &row).await))
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
pub struct ListQuery {
    limit: Option<String>,
    before: Option<String>,
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

#[utoipa::path(get, path = "/v1/screenshots", tag = "screenshots", params(("limit" = Option<u32>, Query, description = "1–100, default 20"), ("before" = Option<String>, Query, description = "nextCursor or an ISO 8601 timestamp")),
    responses((status = 200, body = crate::docs::JobList)), security(("api_key" = [])))]
/// List jobs, newest first.
pub async fn list(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<Value>> {
    Ok(Json(list_jobs(&state, &account, q.limit.as_deref(), q.before.as_deref()).await?))
}

#[utoipa::path(get, path = "/v1/screenshot/{id}/stream", tag = "screenshots", params(("id" = String, Path)),
    responses((status = 200, content_type = "text/event-stream", description = "events: status, done {publicUrl}, failed {error}, timeout; `: ping` heartbeats")), security(("api_key" = [])))]
/// Follow a job as server-sent events.
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
                        let status = data["status"].as_str().unwrap_or("").to_string();
                        let ev = Event::default().event("status").data(json!({"status": status}).to_string());
                        if tx.send(Ok(ev)).await.is_err() {
                            return;
                        }
                        if status == "done" || status == "failed" {
                            let job = st.store.screenshot(&row.id).await.ok().flatten();
                            let body = match (&job, status.as_str()) {
                                (Some(j), "done") => {
                                    let v = job_json(&st, j).await;
                                    json!({"status": "done", "screenshotId": j.id, "publicUrl": v["publicUrl"], "thumbnailUrl": v["thumbnailUrl"], "job": v})
                                }
                                (j, _) => {
                                    json!({"status": "failed", "screenshotId": row.id, "error": j.as_ref().and_then(|j| j.error.clone()).or_else(|| data["error"].as_str().map(str::to_string))})
                                }
                            };
                            let _ = tx.send(Ok(Event::default().event(status.as_str()).data(body.to_string()))).await;
                            return;
                        }
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "stream: reading events failed");
                }
            }
            // Wait for a reason to read the events again: a change to this job (or to any,
            // after a gap), or the poll. Other jobs' changes (every node's, on PostgreSQL)
            // are skipped without a query.
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => {
                        let _ = tx.send(Ok(Event::default().event("timeout").data(json!({"status": "timeout", "screenshotId": row.id}).to_string()))).await;
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
                    // The node is shutting down: end the stream so the client reconnects elsewhere.
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

/// Detected kind of an uploaded file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UploadKind {
    Png,
    Jpeg,
    Webp,
    Pdf,
    Html,
}

fn sniff(bytes: &[u8], filename: &str, content_type: &str) -> Option<UploadKind> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Some(UploadKind::Png);
    }
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        return Some(UploadKind::Jpeg);
    }
    if bytes.len() > 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        return Some(UploadKind::Webp);
    }
    if bytes.starts_with(b"%PDF-") {
        return Some(UploadKind::Pdf);
    }
    let name = filename.to_ascii_lowercase();
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(1024)]).to_ascii_lowercase();
    let head = head.trim_start_matches('\u{feff}').trim_start();
    let htmlish = content_type.starts_with("text/html")
        || name.ends_with(".html")
        || name.ends_with(".htm")
        || head.starts_with("<!doctype html")
        || head.starts_with("<html");
    (htmlish && std::str::from_utf8(bytes).is_ok()).then_some(UploadKind::Html)
}

/// Make a ≤320 px wide PNG thumbnail of an image (off the async threads).
async fn image_thumbnail(bytes: Vec<u8>) -> Result<(Vec<u8>, u32, u32), String> {
    tokio::task::spawn_blocking(move || {
        let img = image::load_from_memory(&bytes).map_err(|e| format!("the image could not be decoded: {e}"))?;
        let (w, h) = (img.width(), img.height());
        let tw = w.min(320);
        let th = ((h as u64 * tw as u64) / w.max(1) as u64).clamp(1, 4096) as u32;
        let thumb = image::imageops::thumbnail(&img, tw, th);
        let mut out = std::io::Cursor::new(Vec::new());
        thumb.write_to(&mut out, image::ImageFormat::Png).map_err(|e| e.to_string())?;
        Ok((out.into_inner(), w, h))
    })
    .await
    .map_err(|e| e.to_string())?
}

/// First page of a PDF as a 320 px wide PNG, via poppler's `pdftoppm` when installed.
async fn pdf_thumbnail(pdf: &[u8]) -> Option<Vec<u8>> {
    let dir = std::env::temp_dir().join(format!("capture-pdf-{}", ids::random_string(12)));
    tokio::fs::create_dir_all(&dir).await.ok()?;
    let input = dir.join("in.pdf");
    tokio::fs::write(&input, pdf).await.ok()?;
    let out = dir.join("thumb");
    let status = tokio::time::timeout(
        Duration::from_secs(20),
        tokio::process::Command::new("pdftoppm")
            .args(["-png", "-f", "1", "-l", "1", "-singlefile", "-scale-to-x", "320", "-scale-to-y", "-1"])
            .arg(&input)
            .arg(&out)
            .kill_on_drop(true)
            .status(),
    )
    .await;
    let bytes = match status {
        Ok(Ok(s)) if s.success() => tokio::fs::read(dir.join("thumb.png")).await.ok(),
        _ => None,
    };
    let _ = tokio::fs::remove_dir_all(&dir).await;
    bytes
}

#[utoipa::path(post, path = "/v1/screenshot/upload", tag = "screenshots", request_body(content_type = "multipart/form-data", description = "`file` (PNG, JPEG, WebP, PDF or HTML) plus capture options as fields for HTML"),
    responses((status = 201, description = "image or PDF stored as a done job", body = crate::docs::Job), (status = 202, description = "HTML queued for rendering", body = crate::docs::Job),
    (status = 400, body = crate::docs::ErrorBody), (status = 413, body = crate::docs::ErrorBody), (status = 429, body = crate::docs::ErrorBody),
    (status = 503, body = crate::docs::ErrorBody, description = "HTML only: the whole queue is full")), security(("api_key" = [])))]
/// Upload a file as a job.
pub async fn upload(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    headers: HeaderMap,
    req: Request,
) -> Response {
    let ct = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !ct.to_ascii_lowercase().starts_with("multipart/form-data") {
        return ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "send the upload as multipart/form-data with a 'file' part",
        )
        .into_response();
    }
    let limit = state.cfg.max_upload_bytes;
    // Read the body ourselves: past the limit keep draining (bounded) so the client gets
    // a clean 413 instead of a connection reset in the middle of its upload.
    let (parts, body) = req.into_parts();
    let raw = match read_draining(body, limit + 64 * 1024).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let req = Request::from_parts(parts, axum::body::Body::from(raw));
    let mut mp = match <Multipart as axum::extract::FromRequest<AppState>>::from_request(req, &state).await {
        Ok(m) => m,
        Err(e) => {
            return ApiError::new(ErrorCode::InvalidJson, format!("malformed multipart body: {e}")).into_response();
        }
    };
    let (file, fields) = match read_multipart(&mut mp, limit).await {
        Ok(x) => x,
        Err(e) => return e.into_response(),
    };
    let Some((filename, file_ct, bytes)) = file else {
        return ApiError::validation(FieldError::new("file", "is required (a PNG, JPEG, WebP, PDF or HTML file)"))
            .into_response();
    };
    let Some(kind) = sniff(&bytes, &filename, &file_ct) else {
        return ApiError::validation(FieldError::new(
            "file",
            "unsupported file type: upload a PNG, JPEG, WebP, PDF or HTML document",
        ))
        .into_response();
    };
    if bytes.is_empty() {
        return ApiError::validation(FieldError::new("file", "is empty")).into_response();
    }
    let mut hasher_input = Vec::with_capacity(bytes.len() + 256);
    for (k, v) in &fields {
        hasher_input.extend_from_slice(k.as_bytes());
        hasher_input.push(0);
        hasher_input.extend_from_slice(v.as_bytes());
        hasher_input.push(0);
    }
    hasher_input.extend_from_slice(filename.as_bytes());
    hasher_input.push(0);
    hasher_input.extend_from_slice(&bytes);
    let hash = crate::crypto::sha256_hex(&hasher_input);
    drop(hasher_input);
    idempotent(&state, &account, &headers, "POST /v1/screenshot/upload", hash, || async {
        let label = format!("upload://{}", sanitize_filename(&filename));
        if kind == UploadKind::Html {
            let opts = CaptureOptions::from_json(&CaptureOptions::form_to_json(&fields), false)?;
            if opts.url.is_some() {
                return Err(FieldError::new("url", "must not be sent with an HTML upload").into());
            }
            let name = blob::new_name("html");
            state.blobs.put(&name, bytes, "text/html").await.map_err(ApiError::internal)?;
            let (row, used) = create_job(&state, &account, &opts, Some(label), Some(name)).await?;
            return Ok((StatusCode::ACCEPTED, job_json(&state, &row).await, used));
        }
        let (format, ext, width, height, thumb) = match kind {
            UploadKind::Pdf => ("pdf", "pdf", None, None, pdf_thumbnail(&bytes).await),
            _ => {
                let (thumb, w, h) = image_thumbnail(bytes.clone())
                    .await
                    .map_err(|e| ApiError::validation(FieldError::new("file", e)))?;
                let (f, e) = match kind {
                    UploadKind::Png => ("png", "png"),
                    UploadKind::Jpeg => ("jpeg", "jpeg"),
                    _ => ("webp", "webp"),
                };
                (f, e, Some(i64::from(w)), Some(i64::from(h)), Some(thumb))
            }
        };
        let name = blob::new_name(ext);
        state.blobs.put(&name, bytes, blob::content_type(&name)).await.map_err(ApiError::internal)?;
        let thumb_key = match thumb {
            Some(t) => {
                let n = blob::new_name("png");
                state.blobs.put(&n, t, "image/png").await.map_err(ApiError::internal)?;
                Some(n)
            }
            None => None,
        };
        let id = ids::new_id(ids::SCREENSHOT);
        let n = NewScreenshot {
            id: id.clone(),
            user_id: account.user.id.clone(),
            key_id: account.key_id.clone(),
            url: label,
            options: "{}".into(),
            format: format.into(),
            actions: 1,
            month: account.window.label.clone(),
            limit: account.limit(),
            reset_at: iso(account.window.reset_ms),
            now: now_ms(),
            done: Some(ScreenshotDone {
                result_key: name,
                thumb_key,
                page_title: Some(filename.clone()),
                tags: vec!["upload".into()],
                width,
                height,
            }),
            task_payload: String::new(),
            // Done at once: nothing waits in the queue.
            queue_limits: QueueLimits::default(),
        };
        match state.store.create_screenshot(&n).await? {
            Ok((row, used)) => {
                state.job_changed(&row.id);
                Ok((StatusCode::CREATED, job_json(&state, &row).await, used))
            }
            Err(Refused::Quota(q)) => Err(quota_error(&account, q.used)),
            Err(Refused::QueueFull(q)) => Err(queue_full_error(&state, q)),
            Err(Refused::IdempotencyTakenOver) => Err(idempotency_in_flight()),
        }
    })
    .await
}

type UploadedFile = (String, String, Vec<u8>);

/// Read at most `limit` bytes of `body`. A larger body is drained and discarded (up to
/// 8 × the limit or 30 s) before answering 413, so the client can read the answer.
async fn read_draining(body: axum::body::Body, limit: usize) -> ApiResult<bytes::Bytes> {
    use futures_util::StreamExt;
    let mut stream = body.into_data_stream();
    let mut buf = bytes::BytesMut::new();
    let mut total = 0usize;
    let too_large = || ApiError::new(ErrorCode::PayloadTooLarge, format!("the upload is larger than {limit} bytes"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let next = tokio::time::timeout_at(deadline, stream.next()).await;
        match next {
            Err(_) if total > limit => return Err(too_large()),
            Err(_) => return Err(ApiError::new(ErrorCode::InvalidJson, "the upload took too long")),
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(ApiError::new(ErrorCode::InvalidJson, format!("could not read the upload: {e}")));
            }
            Ok(Some(Ok(chunk))) => {
                total += chunk.len();
                if total <= limit {
                    buf.extend_from_slice(&chunk);
                } else if total > limit * 8 {
                    return Err(too_large());
                }
            }
        }
    }
    if total > limit {
        return Err(too_large());
    }
    Ok(buf.freeze())
}

async fn read_multipart(mp: &mut Multipart, limit: usize) -> ApiResult<(Option<UploadedFile>, Vec<(String, String)>)> {
    let too_large = || ApiError::new(ErrorCode::PayloadTooLarge, format!("the upload is larger than {limit} bytes"));
    let mut file = None;
    let mut fields = Vec::new();
    loop {
        let field = match mp.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => return Err(too_large()),
            Err(e) => return Err(ApiError::new(ErrorCode::InvalidJson, format!("malformed multipart body: {e}"))),
        };
        let name = field.name().unwrap_or("").to_string();
        if name == "file" {
            let filename = field.file_name().unwrap_or("upload").to_string();
            let ct = field.content_type().unwrap_or("").to_ascii_lowercase();
            let mut buf = Vec::new();
            let mut field = field;
            loop {
                match field.chunk().await {
                    Ok(Some(c)) => {
                        if buf.len() + c.len() > limit {
                            return Err(too_large());
                        }
                        buf.extend_from_slice(&c);
                    }
                    Ok(None) => break,
                    Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => return Err(too_large()),
                    Err(e) => {
                        return Err(ApiError::new(ErrorCode::InvalidJson, format!("malformed multipart body: {e}")));
                    }
                }
            }
            file = Some((filename, ct, buf));
        } else if CaptureOptions::field_names().contains(&name.as_str()) {
            let v = field
                .text()
                .await
                .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("malformed multipart field: {e}")))?;
            if v.len() > 32 * 1024 {
                return Err(FieldError::new(name, "is too long").into());
            }
            fields.push((name, v));
        } else {
            return Err(FieldError::new(name, "is not a known field (file or a capture option)").into());
        }
    }
    Ok((file, fields))
}

fn sanitize_filename(s: &str) -> String {
    let base = s.rsplit(['/', '\\']).next().unwrap_or(s);
    let clean: String = base
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' { c } else { '_' })
        .take(100)
        .collect();
    if clean.is_empty() { "upload".into() } else { clean }
}

#[utoipa::path(post, path = "/api/screenshots/{id}/share", tag = "screenshots", params(("id" = String, Path)), responses((status = 201, body = crate::docs::ShareLink), (status = 404, body = crate::docs::ErrorBody)), security(("api_key" = [])))]
/// Mint a public share link.
pub async fn share(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    find(&state, &account, &id).await?;
    let token = state
        .store
        .share(&account.user.id, &id, &ids::random_string(32))
        .await?
        .ok_or_else(|| ApiError::not_found("screenshot"))?;
    Ok((StatusCode::CREATED, Json(json!({"shareUrl": format!("{}/s/{token}", state.base_url), "screenshotId": id}))))
}

#[utoipa::path(delete, path = "/api/screenshots/{id}/share", tag = "screenshots", params(("id" = String, Path)), responses((status = 204), (status = 404, body = crate::docs::ErrorBody)), security(("api_key" = [])))]
/// Revoke the share link.
pub async fn unshare(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    find(&state, &account, &id).await?;
    state.store.unshare(&account.user.id, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/pdf/download/{id}", tag = "screenshots", params(("id" = String, Path)), responses((status = 200, content_type = "application/pdf", description = "the PDF as an attachment"), (status = 404, body = crate::docs::ErrorBody)), security(("api_key" = [])))]
/// Download a PDF job's file.
pub async fn pdf_download(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let row = find(&state, &account, &id).await?;
    let key = match (&row.result_key, row.format.as_str(), row.status.as_str()) {
        (Some(k), "pdf", "done") => k.clone(),
        (_, "pdf", _) => return Err(ApiError::not_found("PDF (the job has not finished)")),
        _ => return Err(ApiError::not_found("PDF (this job is an image)")),
    };
    let bytes = state.blobs.get(&key).await.map_err(ApiError::internal)?.ok_or_else(|| ApiError::not_found("PDF"))?;
    let host = url::Url::parse(&row.url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| "capture".into());
    let filename = format!("{}-{}.pdf", sanitize_filename(&host), row.id);
    let mut resp = (StatusCode::OK, bytes).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/pdf"));
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{filename}\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
    Ok(resp)
}

/// `GET /files/{name}`: a stored file, by its unguessable name, streamed from the blob store
/// (local folder or S3; in presigned mode too, so older links keep working).
pub async fn serve_file(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    if name.ends_with(".html") {
        // Uploaded documents are inputs, never served (they would run on our origin).
        return ApiError::not_found("file").into_response();
    }
    match state.blobs.open(&name).await {
        Ok(Some(file)) => {
            let mut r = (StatusCode::OK, axum::body::Body::from_stream(file.body)).into_response();
            let h = r.headers_mut();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(blob::content_type(&name)));
            h.insert(header::CONTENT_LENGTH, HeaderValue::from(file.len));
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable"));
            h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
            r
        }
        Ok(None) => ApiError::not_found("file").into_response(),
        Err(e) => ApiError::internal(e).into_response(),
    }
}

/// `GET /s/{token}`: the public share page (no credential), with Open Graph tags.
pub async fn share_page(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    let row = if ids::is_token(&token, 16, 64) { state.store.screenshot_by_share(&token).await } else { Ok(None) };
    let row = match row {
        Ok(Some(r)) => r,
        Ok(None) => {
            return (
                StatusCode::NOT_FOUND,
                axum::response::Html(page(
                    "Not found",
                    "<h1>Not found</h1><p>This share link does not exist or was revoked.</p>",
                    "",
                )),
            )
                .into_response();
        }
        Err(e) => return ApiError::internal(e).into_response(),
    };
    let v = job_json(&state, &row).await;
    let title = row.page_title.clone().filter(|t| !t.is_empty()).unwrap_or_else(|| row.url.clone());
    let public = v["publicUrl"].as_str().unwrap_or("");
    let thumb = v["thumbnailUrl"].as_str().unwrap_or("");
    let og_image = if row.format == "pdf" { thumb } else { public };
    let share_url = format!("{}/s/{token}", state.base_url);
    let meta = format!(
        "<meta property=\"og:type\" content=\"website\">\n<meta property=\"og:title\" content=\"{t}\">\n\
         <meta property=\"og:description\" content=\"Capture of {u}\">\n<meta property=\"og:url\" content=\"{s}\">\n\
         <meta property=\"og:image\" content=\"{i}\">\n<meta name=\"twitter:card\" content=\"summary_large_image\">\n\
         <meta name=\"twitter:image\" content=\"{i}\">",
        t = esc(&title),
        u = esc(&row.url),
        s = esc(&share_url),
        i = esc(og_image)
    );
    let body = match (row.status.as_str(), row.format.as_str()) {
        ("done", "pdf") => format!(
            "<h1>{t}</h1><p>Capture of <code>{u}</code></p><p><a href=\"{p}\">Open the PDF</a></p>{img}",
            t = esc(&title),
            u = esc(&row.url),
            p = esc(public),
            img = if thumb.is_empty() {
                String::new()
            } else {
                format!("<img src=\"{}\" alt=\"First page of the PDF\">", esc(thumb))
            }
        ),
        ("done", _) => format!(
            "<h1>{t}</h1><p>Capture of <code>{u}</code></p><img src=\"{p}\" alt=\"Capture of {u}\">",
            t = esc(&title),
            u = esc(&row.url),
            p = esc(public)
        ),
        (s, _) => format!("<h1>{}</h1><p>This capture is {}.</p>", esc(&title), esc(s)),
    };
    let mut r = axum::response::Html(page(&title, &body, &meta)).into_response();
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn page(title: &str, body: &str, meta: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
         <title>{} · Capture</title>{meta}<style>body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2rem auto;padding:0 1rem}}\
         img{{max-width:100%;border:1px solid #ddd}}</style></head><body>{body}</body></html>",
        esc(title)
    )
}

/// Escape text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}
