//! The MCP tools: JSON schemas, descriptions, and dispatch to the same service functions the
//! REST API uses. Failures come back as tool errors (`isError: true`) whose text starts with
//! our stable error code and whose structured content is `{code, error, details?}`.

use std::time::Duration;

use base64::Engine;
use capture_core::{FieldError, JobStatus, ScreenshotId};
use capture_store::ScreenshotRow;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ProgressNotificationParam, Tool};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};

use super::common::{annotations, id_arg, string_arg, structured, tool_error};
use crate::account::types::NoArgs;
use crate::auth::Account;
use crate::error::{Error, Result};
use crate::paging::ListQuery;
use crate::schema::tool_input;
use crate::screenshots::service::{self as screenshots, NewJob};
use crate::screenshots::types::{GetScreenshotArgs, ShareScreenshotArgs};
use crate::state::AppState;
use crate::webhooks::types::{EndpointArgs, EndpointIn};
use capture_core::options::ScreenshotIn;

/// Largest image returned inline; a bigger capture is returned as its thumbnail (the full
/// file stays at `publicUrl`). MCP clients refuse or truncate much larger images.
const MAX_INLINE_IMAGE: usize = 3 * 1024 * 1024 + 512 * 1024;
/// The code of a tool error for a job that failed (its `error` says why).
const CAPTURE_FAILED: &str = "CAPTURE_FAILED";
/// How long `take_screenshot` waits beyond the job's own timeout and delay.
const WAIT_MARGIN: Duration = Duration::from_secs(90);

/// Every tool, with its schema and description.
pub fn catalogue() -> Vec<Tool> {
    let mut all = vec![
        Tool::new(
            "account_balance",
            "Show this account's live monthly balance: plan, actions used, limit, remaining, and when the window \
             resets (the same object as GET /v1/account/balance). Each screenshot or PDF costs one action.",
            tool_input::<NoArgs>(),
        )
        .annotate(annotations("Account balance", true, true, false)),
        Tool::new(
            "take_screenshot",
            "Capture a web page as an image (PNG, JPEG or WebP) or a PDF. Waits until the capture is done, then \
             returns the image itself plus its publicUrl (a PDF is returned as a link). Costs one monthly action; \
             a capture that fails gives it back. Accepts every option of POST /v1/screenshot.",
            tool_input::<ScreenshotIn>(),
        )
        .annotate(annotations("Take a screenshot", false, false, true)),
        Tool::new(
            "get_screenshot",
            "Get one screenshot job by id: status (pending, processing, done, failed), publicUrl, thumbnailUrl, \
             size, page title and error. Set includeImage to also receive a finished image.",
            tool_input::<GetScreenshotArgs>(),
        )
        .annotate(annotations("Get a screenshot", true, true, false)),
        Tool::new(
            "list_screenshots",
            "List this account's screenshots, newest first, as {data, nextCursor}. Pass nextCursor as before to get \
             the next page; nextCursor is null on the last page.",
            tool_input::<ListQuery>(),
        )
        .annotate(annotations("List screenshots", true, true, false)),
        Tool::new(
            "share_screenshot",
            "Create (or return the existing) public share link of a screenshot: a page anyone can open without \
             signing in. Returns {shareUrl, screenshotId}.",
            tool_input::<ShareScreenshotArgs>(),
        )
        .annotate(annotations("Share a screenshot", false, true, false)),
        Tool::new(
            "list_webhooks",
            "List this account's webhook endpoints (id, url, subscribed events, description). Secrets are not shown.",
            tool_input::<NoArgs>(),
        )
        .annotate(annotations("List webhook endpoints", true, true, false)),
        Tool::new(
            "create_webhook",
            "Create a webhook endpoint that receives signed event deliveries (screenshot.completed, \
             screenshot.failed, quota.warning, test.ping, …). Returns the endpoint with its signing secret \
             (whsec_…), shown only this once: verify deliveries with HMAC-SHA256 over \"<timestamp>.<body>\".",
            tool_input::<EndpointIn>(),
        )
        .annotate(annotations("Create a webhook endpoint", false, false, true)),
        Tool::new(
            "test_webhook",
            "Send a test.ping delivery to a webhook endpoint now. Returns the delivery id; its outcome appears in \
             the endpoint's deliveries.",
            tool_input::<EndpointArgs>(),
        )
        .annotate(annotations("Test a webhook endpoint", false, false, true)),
        Tool::new(
            "create_ad_draft",
            "Start drafting a 15–30 s vertical video ad from a web page (url) and/or screenshots (screenshotUrls): \
             the page is captured on desktop and mobile and read for its name, headline, supporting lines, call to \
             action, logo and brand colour; a storyboard and voice-over script are written. Returns the draft \
             (drf_…, pending) at once; call get_ad until its status is done, then render_ad. Costs one action, \
             given back if the page cannot be reached.",
            tool_input::<crate::ads::types::DraftIn>(),
        )
        .annotate(annotations("Draft a video ad", false, false, true)),
        Tool::new(
            "render_ad",
            "Render a finished ad draft to an MP4 (H.264 + AAC, 1080×1920 or landscape 1920×1080, 30 fps): pans and \
             zooms over the screenshots, captions in the brand colour, a voice-over (voiceId: en-us, en-us+f3, \
             en-gb, en-gb+f3, de, fr-fr, es, it, pt-br, nl, …) and generated music (musicId: upbeat, calm, \
             corporate, none). Returns the render (ad_…, pending); call get_ad until done for videoUrl. Costs ten \
             actions, given back if the render fails.",
            tool_input::<crate::ads::types::RenderIn>(),
        )
        .annotate(annotations("Render a video ad", false, false, false)),
        Tool::new(
            "get_ad",
            "Get an ad draft (drf_…) or render (ad_…) by id: status, stage and progress; a finished draft's copy, \
             brand colour, storyboard and script; a finished render's videoUrl, thumbnailUrl, durationMs, width \
             and height; or the error.",
            tool_input::<crate::ads::types::GetAdArgs>(),
        )
        .annotate(annotations("Get an ad", true, true, false)),
    ];
    all.extend(super::audit_tools::catalogue());
    all.extend(super::run_tools::catalogue());
    all.extend(super::inbox_tools::catalogue());
    all.extend(crate::automation::catalogue());
    all.extend(super::campaign_tools::catalogue());
    all
}

/// Run tool `name`. Unknown tools are protocol errors; everything else is a tool result.
pub async fn call(
    state: &AppState,
    account: &Account,
    name: &str,
    args: JsonObject,
    ctx: &RequestContext<RoleServer>,
) -> std::result::Result<CallToolResult, rmcp::ErrorData> {
    if let Some(out) = super::audit_tools::call(state, account, name, &args, ctx).await {
        return Ok(out.unwrap_or_else(tool_error));
    }
    if let Some(out) = super::inbox_tools::call(state, account, name, &args).await {
        return Ok(out.unwrap_or_else(tool_error));
    }
    if let Some(out) = crate::automation::call(state, account, name, &args).await {
        return Ok(out);
    }
    if let Some(out) = super::campaign_tools::call(state, account, name, &args).await {
        return Ok(out.unwrap_or_else(tool_error));
    }
    let out = match name {
        "account_balance" => Ok(structured(&crate::account::service::balance_of(account))),
        "take_screenshot" => take_screenshot(state, account, args, ctx).await,
        "get_screenshot" => get_screenshot(state, account, &args).await,
        "list_screenshots" => list_screenshots(state, account, &args).await,
        "share_screenshot" => share_screenshot(state, account, &args).await,
        "list_webhooks" => crate::webhooks::service::list_endpoints(state, account).await.map(|l| structured(&l)),
        "create_webhook" => create_webhook(state, account, &args).await,
        "test_webhook" => test_webhook(state, account, &args).await,
        "start_run" => super::run_tools::start_run(state, account, args).await,
        "get_run" => super::run_tools::get_run(state, account, &args).await,
        "stop_run" => super::run_tools::stop_run(state, account, &args).await,
        "create_ad_draft" => create_ad_draft(state, account, &args).await,
        "render_ad" => render_ad(state, account, &args).await,
        "get_ad" => get_ad(state, account, &args).await,
        other => return Err(rmcp::ErrorData::invalid_params(format!("unknown tool '{other}'"), None)),
    };
    Ok(out.unwrap_or_else(tool_error))
}

async fn get_screenshot(state: &AppState, account: &Account, args: &Map<String, Value>) -> Result<CallToolResult> {
    let a = GetScreenshotArgs {
        id: string_arg(args, "id")?,
        include_image: matches!(args.get("includeImage"), Some(Value::Bool(true))),
    };
    let id = ScreenshotId::parse(&a.id).ok_or_else(|| Error::not_found(ScreenshotId::NOUN))?;
    let row = screenshots::find(state, account, &id).await?;
    job_result(state, &row, a.include_image).await
}

async fn list_screenshots(state: &AppState, account: &Account, args: &Map<String, Value>) -> Result<CallToolResult> {
    // The REST query, from JSON: a number or a string for `limit`.
    let limit = match args.get("limit") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(FieldError::new("limit", "must be a whole number from 1 to 100").into()),
    };
    let before = match args.get("before") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(FieldError::new("before", "must be a string").into()),
    };
    let list = screenshots::list(state, account, &ListQuery { limit, before }).await?;
    Ok(structured(&list))
}

async fn share_screenshot(state: &AppState, account: &Account, args: &Map<String, Value>) -> Result<CallToolResult> {
    let id = id_arg::<ScreenshotId>(args)?;
    Ok(structured(&screenshots::share(state, account, &id).await?))
}

async fn create_webhook(state: &AppState, account: &Account, args: &Map<String, Value>) -> Result<CallToolResult> {
    let input = crate::webhooks::service::parse_endpoint(state, args)?;
    Ok(structured(&crate::webhooks::service::create_endpoint(state, account, input).await?))
}

async fn test_webhook(state: &AppState, account: &Account, args: &Map<String, Value>) -> Result<CallToolResult> {
    let id = id_arg(args)?;
    Ok(structured(&crate::webhooks::service::send_test(state, account, &id).await?))
}

async fn create_ad_draft(state: &AppState, account: &Account, args: &Map<String, Value>) -> Result<CallToolResult> {
    let input = crate::http::validated::validate::<crate::ads::types::DraftIn>(args)?;
    Ok(structured(&crate::ads::service::create_draft(state, account, &input, None).await?.ad))
}

async fn render_ad(state: &AppState, account: &Account, args: &Map<String, Value>) -> Result<CallToolResult> {
    let input = crate::http::validated::validate::<crate::ads::types::RenderIn>(args)?;
    Ok(structured(&crate::ads::service::create_render(state, account, &input, None).await?.ad))
}

async fn get_ad(state: &AppState, account: &Account, args: &Map<String, Value>) -> Result<CallToolResult> {
    Ok(structured(&crate::ads::service::get(state, account, &string_arg(args, "id")?).await?))
}

async fn take_screenshot(
    state: &AppState,
    account: &Account,
    args: JsonObject,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResult> {
    let opts = crate::http::validated::validate::<ScreenshotIn>(&args)?;
    // Subscribe before creating so no change is missed.
    let mut changes = state.job_events.subscribe();
    let new = NewJob::Capture { opts: &opts, label: None, html_blob: None };
    let id = screenshots::create(state, account, new, None).await?.job.id;
    let wait = WAIT_MARGIN + Duration::from_millis(opts.timeout_ms + opts.delay);
    let deadline = tokio::time::Instant::now() + wait;
    let progress = ctx.meta.get_progress_token();
    let mut poll = tokio::time::interval(state.cfg.queue_poll);
    let mut last_status = String::new();
    let mut step = 0.0;
    loop {
        let current = state.store.screenshot(id.as_str()).await?.ok_or_else(|| Error::not_found(ScreenshotId::NOUN))?;
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
        if JobStatus::parse(&current.status).is_some_and(JobStatus::is_final) {
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
                    Ok(changed) if changed == id.as_str() || changed.is_empty() => break true,
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
            let current = state.store.screenshot(id.as_str()).await?.unwrap_or(current);
            let mut r = structured(&screenshots::view(state, &current).await);
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
async fn job_result(state: &AppState, row: &ScreenshotRow, with_image: bool) -> Result<CallToolResult> {
    let job = screenshots::view(state, row).await;
    let public_url = job.public_url.clone().unwrap_or_default();
    let job = serde_json::to_value(&job).map_err(Error::internal)?;
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
        ("done", "pdf") => format!("PDF of {} is ready: {public_url}", row.url),
        ("done", _) => format!("Screenshot of {} ({}): {public_url}", row.url, row.format),
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
async fn inline_image(state: &AppState, row: &ScreenshotRow) -> Result<Option<ContentBlock>> {
    let Some(key) = &row.result_key else { return Ok(None) };
    let mime = match row.format.as_str() {
        "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        _ => "image/png",
    };
    let bytes = state.blobs.get(key).await.map_err(Error::internal)?;
    let (bytes, mime) = match bytes {
        Some(b) if b.len() <= MAX_INLINE_IMAGE => (b, mime),
        Some(_) => match &row.thumb_key {
            Some(t) => match state.blobs.get(t).await.map_err(Error::internal)? {
                Some(b) => (b, crate::blob::content_type(t)),
                None => return Ok(None),
            },
            None => return Ok(None),
        },
        None => return Ok(None),
    };
    Ok(Some(ContentBlock::image(base64::engine::general_purpose::STANDARD.encode(bytes), mime)))
}

#[cfg(test)]
mod tests {
    /// The ad tools are listed with their input schemas.
    #[test]
    fn the_ad_tools_are_in_the_catalogue() {
        let tools = super::catalogue();
        for (name, field) in [("create_ad_draft", "screenshotUrls"), ("render_ad", "voiceId"), ("get_ad", "id")] {
            let t = tools.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("{name} is listed"));
            assert!(t.input_schema["properties"].get(field).is_some(), "{name}: {:?}", t.input_schema);
        }
    }

    #[test]
    fn the_campaign_tools_are_in_the_catalogue_and_none_sends() {
        let tools = super::catalogue();
        for (name, field) in [
            ("list_campaigns", "limit"),
            ("create_campaign", "recipients"),
            ("add_campaign_targets", "recipients"),
            ("launch_campaign", "id"),
            ("get_campaign", "id"),
        ] {
            let t = tools.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("{name} is listed"));
            assert!(t.input_schema["properties"].get(field).is_some(), "{name}: {:?}", t.input_schema);
        }
        assert!(tools.iter().any(|t| t.name == "sender_capacity"));
        let create = tools.iter().find(|t| t.name == "create_campaign").unwrap();
        for field in ["name", "sendAt", "timezone", "reportType", "sendHours"] {
            assert!(create.input_schema["properties"].get(field).is_some(), "{field}");
        }
        // No tool offers to send now: campaign mail leaves only through the campaign loop.
        for t in super::super::campaign_tools::catalogue() {
            let text = format!("{} {}", t.name, t.description.as_deref().unwrap_or_default()).to_lowercase();
            assert!(!t.name.contains("send") || t.name == "sender_capacity", "{}", t.name);
            assert!(!text.contains("send now") && !text.contains("send_now"), "{text}");
        }
    }
}
