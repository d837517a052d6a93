//! The MCP tools: JSON schemas, descriptions, and dispatch to the same service functions the
//! REST API uses. Failures come back as tool errors (`isError: true`) whose text starts with
//! our stable error code and whose structured content is `{code, error, details?}`.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use capture_core::options::CaptureOptions;
use capture_store::ScreenshotRow;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ProgressNotificationParam, Tool, ToolAnnotations};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};

use crate::auth::Account;
use crate::http::{ApiError, ApiResult};
use crate::screenshots::{self, job_json};
use crate::state::AppState;

/// Largest image returned inline; a bigger capture is returned as its thumbnail (the full
/// file stays at `publicUrl`). MCP clients refuse or truncate much larger images.
const MAX_INLINE_IMAGE: usize = 3 * 1024 * 1024 + 512 * 1024;
/// The code of a tool error for a job that failed (its `error` says why).
const CAPTURE_FAILED: &str = "CAPTURE_FAILED";
/// How long `take_screenshot` waits beyond the job's own timeout and delay.
const WAIT_MARGIN: Duration = Duration::from_secs(90);

fn schema(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

fn no_args() -> Arc<JsonObject> {
    schema(json!({"type": "object", "properties": {}, "additionalProperties": false}))
}

fn id_arg(what: &str) -> Arc<JsonObject> {
    schema(json!({
        "type": "object",
        "properties": {"id": {"type": "string", "description": what}},
        "required": ["id"],
        "additionalProperties": false,
    }))
}

/// The capture options of `POST /v1/screenshot`, with their defaults and bounds.
fn capture_schema() -> Arc<JsonObject> {
    schema(json!({
        "type": "object",
        "properties": {
            "url": {"type": "string", "format": "uri", "description": "The page to capture (http or https)."},
            "width": {"type": "integer", "minimum": 100, "maximum": 3840, "default": 1280, "description": "Viewport width in CSS pixels."},
            "height": {"type": "integer", "minimum": 100, "maximum": 2160, "default": 800, "description": "Viewport height in CSS pixels."},
            "fullPage": {"type": "boolean", "default": false, "description": "Capture the whole scrollable page (scrolls first so lazy content loads), up to 16384 px tall."},
            "format": {"type": "string", "enum": ["png", "jpeg", "webp"], "default": "png", "description": "Image format."},
            "pdf": {"type": "boolean", "default": false, "description": "Produce a PDF instead of an image (the result is a link)."},
            "delay": {"type": "integer", "minimum": 0, "maximum": 30000, "default": 0, "description": "Milliseconds to wait after the page loads."},
            "darkMode": {"type": "boolean", "default": false, "description": "Send prefers-color-scheme: dark."},
            "cookieConsent": {"type": "string", "enum": ["auto", "none"], "default": "auto", "description": "auto dismisses common cookie banners; none leaves them."},
            "waitFor": {"type": "string", "maxLength": 1024, "description": "CSS selector to wait for before capturing (best effort)."},
            "waitUntil": {"type": "string", "enum": ["networkidle", "load", "domcontentloaded", "none"], "default": "networkidle", "description": "When navigation counts as finished."},
            "timeoutMs": {"type": "integer", "minimum": 1000, "maximum": 60000, "default": 10000, "description": "Timeout for navigation, waitFor and clickBefore."},
            "preScreenshotJs": {"type": "string", "maxLength": 16384, "description": "JavaScript evaluated in the page right before the capture."},
            "deviceScaleFactor": {"type": "number", "minimum": 0.5, "maximum": 3, "default": 1, "description": "Device pixel ratio (2 for retina-sharp images)."},
            "clickBefore": {"type": "string", "maxLength": 1024, "description": "CSS selector to click before waiting and capturing."}
        },
        "required": ["url"],
        "additionalProperties": false,
    }))
}

fn annotations(title: &str, read_only: bool, idempotent: bool, open_world: bool) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(read_only)
        .destructive(false)
        .idempotent(idempotent)
        .open_world(open_world)
}

/// Every tool, with its schema and description.
pub fn catalogue() -> Vec<Tool> {
    vec![
        Tool::new(
            "account_balance",
            "Show this account's live monthly balance: plan, actions used, limit, remaining, and when the window \
             resets (the same object as GET /v1/account/balance). Each screenshot or PDF costs one action.",
            no_args(),
        )
        .annotate(annotations("Account balance", true, true, false)),
        Tool::new(
            "take_screenshot",
            "Capture a web page as an image (PNG, JPEG or WebP) or a PDF. Waits until the capture is done, then \
             returns the image itself plus its publicUrl (a PDF is returned as a link). Costs one monthly action; \
             a capture that fails gives it back. Accepts every option of POST /v1/screenshot.",
            capture_schema(),
        )
        .annotate(annotations("Take a screenshot", false, false, true)),
        Tool::new(
            "get_screenshot",
            "Get one screenshot job by id: status (pending, processing, done, failed), publicUrl, thumbnailUrl, \
             size, page title and error. Set includeImage to also receive a finished image.",
            schema(json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "The job id (scr_…)."},
                    "includeImage": {"type": "boolean", "default": false, "description": "Return the finished image as image content too."}
                },
                "required": ["id"],
                "additionalProperties": false,
            })),
        )
        .annotate(annotations("Get a screenshot", true, true, false)),
        Tool::new(
            "list_screenshots",
            "List this account's screenshots, newest first, as {data, nextCursor}. Pass nextCursor as before to get \
             the next page; nextCursor is null on the last page.",
            schema(json!({
                "type": "object",
                "properties": {
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20, "description": "How many to return."},
                    "before": {"type": "string", "description": "A nextCursor value, or an ISO 8601 time: list jobs created before it."}
                },
                "additionalProperties": false,
            })),
        )
        .annotate(annotations("List screenshots", true, true, false)),
        Tool::new(
            "share_screenshot",
            "Create (or return the existing) public share link of a screenshot: a page anyone can open without \
             signing in. Returns {shareUrl, screenshotId}.",
            id_arg("The job id (scr_…) to share."),
        )
        .annotate(annotations("Share a screenshot", false, true, false)),
        Tool::new(
            "list_webhooks",
            "List this account's webhook endpoints (id, url, subscribed events, description). Secrets are not shown.",
            no_args(),
        )
        .annotate(annotations("List webhook endpoints", true, true, false)),
        Tool::new(
            "create_webhook",
            "Create a webhook endpoint that receives signed event deliveries (screenshot.completed, \
             screenshot.failed, quota.warning, test.ping, …). Returns the endpoint with its signing secret \
             (whsec_…), shown only this once: verify deliveries with HMAC-SHA256 over \"<timestamp>.<body>\".",
            schema(json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "format": "uri", "description": "HTTPS address that receives deliveries."},
                    "events": {"type": "array", "items": {"type": "string"}, "default": ["*"], "description": "Event types, or [\"*\"] for every event including future ones."},
                    "description": {"type": "string", "maxLength": 500, "description": "Optional note."}
                },
                "required": ["url"],
                "additionalProperties": false,
            })),
        )
        .annotate(annotations("Create a webhook endpoint", false, false, true)),
        Tool::new(
            "test_webhook",
            "Send a test.ping delivery to a webhook endpoint now. Returns the delivery id; its outcome appears in \
             the endpoint's deliveries.",
            id_arg("The endpoint id (whe_…)."),
        )
        .annotate(annotations("Test a webhook endpoint", false, false, true)),
    ]
}

/// Run tool `name`. Unknown tools are protocol errors; everything else is a tool result.
pub async fn call(
    state: &AppState,
    account: &Account,
    name: &str,
    args: JsonObject,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResult, rmcp::ErrorData> {
    let out = match name {
        "account_balance" => Ok(structured(crate::account::balance(account))),
        "take_screenshot" => take_screenshot(state, account, args, ctx).await,
        "get_screenshot" => get_screenshot(state, account, &args).await,
        "list_screenshots" => list_screenshots(state, account, &args).await,
        "share_screenshot" => share_screenshot(state, account, &args).await,
        "list_webhooks" => crate::webhooks::list_endpoints(state, account).await.map(structured),
        "create_webhook" => crate::webhooks::create_endpoint(state, account, &args).await.map(structured),
        "test_webhook" => match string_arg(&args, "id") {
            Ok(id) => crate::webhooks::send_test(state, account, &id).await.map(structured),
            Err(e) => Err(e),
        },
        other => return Err(rmcp::ErrorData::invalid_params(format!("unknown tool '{other}'"), None)),
    };
    Ok(out.unwrap_or_else(tool_error))
}

fn structured(v: Value) -> CallToolResult {
    CallToolResult::structured(v)
}

/// A tool error carrying our error code.
fn tool_error(e: ApiError) -> CallToolResult {
    let mut body = json!({"code": e.code.as_str(), "error": e.message});
    if let Some(d) = &e.details {
        body["details"] = d.clone();
    }
    let mut r = CallToolResult::error(vec![ContentBlock::text(format!("{}: {}", e.code.as_str(), e.message))]);
    r.structured_content = Some(body);
    r
}

fn string_arg(args: &Map<String, Value>, field: &str) -> ApiResult<String> {
    match args.get(field) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        None | Some(Value::Null) => Err(capture_core::FieldError::new(field, "is required").into()),
        Some(_) => Err(capture_core::FieldError::new(field, "must be a string").into()),
    }
}

async fn get_screenshot(state: &AppState, account: &Account, args: &Map<String, Value>) -> ApiResult<CallToolResult> {
    let id = string_arg(args, "id")?;
    let row = screenshots::find(state, account, &id).await?;
    let want_image = matches!(args.get("includeImage"), Some(Value::Bool(true)));
    job_result(state, &row, want_image).await
}

async fn list_screenshots(state: &AppState, account: &Account, args: &Map<String, Value>) -> ApiResult<CallToolResult> {
    let limit = match args.get("limit") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(capture_core::FieldError::new("limit", "must be a whole number from 1 to 100").into()),
    };
    let before = match args.get("before") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(capture_core::FieldError::new("before", "must be a string").into()),
    };
    screenshots::list_jobs(state, account, limit.as_deref(), before.as_deref()).await.map(structured)
}

async fn share_screenshot(state: &AppState, account: &Account, args: &Map<String, Value>) -> ApiResult<CallToolResult> {
    let id = string_arg(args, "id")?;
    // The same two steps as `POST /api/screenshots/{id}/share`.
    screenshots::find(state, account, &id).await?;
    let token = state
        .store
        .share(&account.user.id, &id, &capture_core::ids::random_string(32))
        .await?
        .ok_or_else(|| ApiError::not_found("screenshot"))?;
    Ok(structured(json!({"shareUrl": format!("{}/s/{token}", state.base_url), "screenshotId": id})))
}

async fn take_screenshot(
    state: &AppState,
    account: &Account,
    args: JsonObject,
    ctx: &RequestContext<RoleServer>,
) -> ApiResult<CallToolResult> {
    let opts = CaptureOptions::from_json(&args, true)?;
    // Subscribe before creating so no change is missed.
    let mut changes = state.job_events.subscribe();
    let (row, _used) = screenshots::create_job(state, account, &opts, None, None, None).await?;
    let wait = WAIT_MARGIN + Duration::from_millis(opts.timeout_ms + opts.delay);
    let deadline = tokio::time::Instant::now() + wait;
    let progress = ctx.meta.get_progress_token();
    let mut poll = tokio::time::interval(state.cfg.queue_poll);
    let mut last_status = String::new();
    let mut step = 0.0;
    loop {
        let current = state.store.screenshot(&row.id).await?.ok_or_else(|| ApiError::not_found("screenshot"))?;
        if current.status != last_status {
            last_status = current.status.clone();
            step += 1.0;
            if let Some(token) = &progress {
                let note = ProgressNotificationParam::new(token.clone(), step)
                    .with_total(3.0)
                    .with_message(format!("screenshot {} is {}", current.id, current.status));
                // A client that stopped listening for progress still gets the result.
                let _ = ctx.peer.notify_progress(note).await;
            }
        }
        if current.status == "done" || current.status == "failed" {
            return job_result(state, &current, true).await;
        }
        // Wake on this node's change notices, or poll (a worker on another node finished it).
        let woke = loop {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => break false,
                _ = ctx.ct.cancelled() => break false,
                _ = state.shutdown.cancelled() => break false,
                _ = poll.tick() => break true,
                r = changes.recv() => match r {
                    Ok(id) if id == row.id || id.is_empty() => break true,
                    Ok(_) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => break true,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                        poll.tick().await;
                        break true;
                    }
                },
            }
        };
        if !woke {
            let current = state.store.screenshot(&row.id).await?.unwrap_or(current);
            let mut r = structured(job_json(state, &current).await);
            r.content.insert(
                0,
                ContentBlock::text(format!(
                    "Screenshot {} is still {}; call get_screenshot with this id to fetch the result when it is done.",
                    current.id, current.status
                )),
            );
            return Ok(r);
        }
    }
}

/// A job as a tool result: its JSON, and for a finished image (when asked) the image.
async fn job_result(state: &AppState, row: &ScreenshotRow, with_image: bool) -> ApiResult<CallToolResult> {
    let job = job_json(state, row).await;
    if row.status == "failed" {
        // Not an HTTP error: the job exists and failed (its action was given back).
        let error = row.error.as_deref().unwrap_or("unknown error");
        let mut r = CallToolResult::error(vec![ContentBlock::text(format!(
            "{CAPTURE_FAILED}: the capture of {} failed: {error}",
            row.url
        ))]);
        r.structured_content = Some(json!({"code": CAPTURE_FAILED, "error": error, "job": job}));
        return Ok(r);
    }
    let summary = match (row.status.as_str(), row.format.as_str()) {
        ("done", "pdf") => format!("PDF of {} is ready: {}", row.url, job["publicUrl"].as_str().unwrap_or("")),
        ("done", _) => {
            format!("Screenshot of {} ({}): {}", row.url, row.format, job["publicUrl"].as_str().unwrap_or(""))
        }
        (s, _) => format!("Screenshot {} is {s}.", row.id),
    };
    let mut content = vec![ContentBlock::text(summary)];
    if with_image
        && row.status == "done"
        && row.format != "pdf"
        && let Some(image) = inline_image(state, row).await?
    {
        content.insert(0, image);
    }
    content.push(ContentBlock::text(job.to_string()));
    let mut r = CallToolResult::success(content);
    r.structured_content = Some(job);
    Ok(r)
}

/// The finished image as MCP image content (its thumbnail when the file is too large).
async fn inline_image(state: &AppState, row: &ScreenshotRow) -> ApiResult<Option<ContentBlock>> {
    let Some(key) = &row.result_key else { return Ok(None) };
    let mime = match row.format.as_str() {
        "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        _ => "image/png",
    };
    let bytes = state.blobs.get(key).await.map_err(ApiError::internal)?;
    let (bytes, mime) = match bytes {
        Some(b) if b.len() <= MAX_INLINE_IMAGE => (b, mime),
        Some(_) => match &row.thumb_key {
            Some(t) => match state.blobs.get(t).await.map_err(ApiError::internal)? {
                Some(b) => (b, crate::blob::content_type(t)),
                None => return Ok(None),
            },
            None => return Ok(None),
        },
        None => return Ok(None),
    };
    Ok(Some(ContentBlock::image(base64::engine::general_purpose::STANDARD.encode(bytes), mime)))
}
