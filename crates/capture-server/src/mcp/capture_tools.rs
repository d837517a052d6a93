//! The capture tools: the account's balance, screenshots (take, get, list, share), webhook
//! endpoints (list, create, test) and video ads (draft, render, get), on the same service
//! functions as the REST API.

use std::time::Duration;

use base64::Engine;
use capture_core::options::ScreenshotIn;
use capture_core::{ErrorCode, JobStatus, ScreenshotId};
use capture_store::ScreenshotRow;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ProgressNotificationParam};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::account::types::NoArgs;
use crate::ads::service as ads;
use crate::ads::types::{DraftIn, GetAdArgs, RenderIn};
use crate::error::{Error, Result};
use crate::paging::ListQuery;
use crate::screenshots::service::{self as screenshots, NewJob};
use crate::screenshots::types::{GetScreenshotArgs, ShareScreenshotArgs};
use crate::state::AppState;
use crate::tool::{Cx, annotations, id_arg, query, reply, string_arg, structured, tool_group, valid};
use crate::webhooks::service as webhooks;
use crate::webhooks::types::{EndpointArgs, EndpointIn};

/// Largest image returned inline; a bigger capture is returned as its thumbnail (the full
/// file stays at `publicUrl`). MCP clients refuse or truncate much larger images.
const MAX_INLINE_IMAGE: usize = 3 * 1024 * 1024 + 512 * 1024;
/// Most characters of a text job's file returned inline (`markdown`, `text`).
const MAX_INLINE_TEXT: usize = 20_000;
/// The code of a tool error for a job that failed (its `error` says why).
/// How long `take_screenshot` waits beyond the job's own timeout and delay.
const WAIT_MARGIN: Duration = Duration::from_secs(90);

tool_group! {
    "account_balance": NoArgs, annotations("Account balance", true, true, false),
        "Show this account's live monthly balance: plan, actions used, limit, remaining, and when the window \
             resets (the same object as GET /v1/account/balance). Each screenshot or PDF costs one action."
        => account_balance;
    "take_screenshot": ScreenshotIn, annotations("Take a screenshot", false, false, true),
        "Capture a web page as an image (PNG, JPEG or WebP) or a PDF. Waits until the capture is done, then \
             returns the image itself plus its publicUrl (a PDF is returned as a link). Costs one monthly action; \
             a capture that fails gives it back. Accepts every option of POST /v1/screenshot."
        => take_screenshot;
    "read_page": ReadPageIn, annotations("Read a page as Markdown", true, false, true),
        "Read a web page as Markdown, rendered by a real browser after its scripts ran, with the cookie banner \
             refused: by default only the article (as Firefox's Reader View finds it: navigation, sidebars, footers \
             and comments left out), under YAML front matter (title, description, author, published time, source). \
             Returns at most maxChars characters (default 8000, about 2000 tokens); when there is more, the answer \
             says so and gives nextFrom: call again with from=nextFrom to read on. Costs one monthly action per call."
        => read_page;
    "extract": ExtractToolIn, annotations("Extract fields from a page", true, false, true),
        "Read structured fields from a web page by CSS selector rules: {field: {selector, attr?, type?: string|number|\
             boolean|url|date|html|markdown, all?, fallback?: [rules]}}, optionally validated by a JSON Schema (a \
             failure names the JSON path). A field that matches nothing is null, never guessed. Returns data and \
             sources (the selector each field came from). Costs one monthly action."
        => extract;
    "get_screenshot": GetScreenshotArgs, annotations("Get a screenshot", true, true, false),
        "Get one screenshot job by id: status (pending, processing, done, failed), publicUrl, thumbnailUrl, \
             size, page title and error. Set includeImage to also receive a finished image."
        => get_screenshot;
    "list_screenshots": ListQuery, annotations("List screenshots", true, true, false),
        "List this account's screenshots, newest first, as {data, nextCursor}. Pass nextCursor as before to get \
             the next page; nextCursor is null on the last page."
        => list_screenshots;
    "share_screenshot": ShareScreenshotArgs, annotations("Share a screenshot", false, true, false),
        "Create (or return the existing) public share link of a screenshot: a page anyone can open without \
             signing in. Returns {shareUrl, screenshotId}."
        => share_screenshot;
    "list_webhooks": NoArgs, annotations("List webhook endpoints", true, true, false),
        "List this account's webhook endpoints (id, url, subscribed events, description). Secrets are not shown."
        => list_webhooks;
    "create_webhook": EndpointIn, annotations("Create a webhook endpoint", false, false, true),
        "Create a webhook endpoint that receives signed event deliveries (screenshot.completed, \
             screenshot.failed, quota.warning, test.ping, …). Returns the endpoint with its signing secret \
             (whsec_…), shown only this once: verify deliveries with HMAC-SHA256 over \"<timestamp>.<body>\"."
        => create_webhook;
    "test_webhook": EndpointArgs, annotations("Test a webhook endpoint", false, false, true),
        "Send a test.ping delivery to a webhook endpoint now. Returns the delivery id; its outcome appears in \
             the endpoint's deliveries."
        => test_webhook;
    "create_ad_draft": DraftIn, annotations("Draft a video ad", false, false, true),
        "Start drafting a 15–30 s vertical video ad from a web page (url) and/or screenshots (screenshotUrls): \
             the page is captured on desktop and mobile and read for its name, headline, supporting lines, call to \
             action, logo and brand colour; a storyboard and voice-over script are written. Returns the draft \
             (drf_…, pending) at once; call get_ad until its status is done, then render_ad. Costs one action, \
             given back if the page cannot be reached."
        => create_ad_draft;
    "render_ad": RenderIn, annotations("Render a video ad", false, false, false),
        "Render a finished ad draft to an MP4 (H.264 + AAC, 1080×1920 or landscape 1920×1080, 30 fps): pans and \
             zooms over the screenshots, captions in the brand colour, a voice-over (voiceId: en-us, en-us+f3, \
             en-gb, en-gb+f3, de, fr-fr, es, it, pt-br, nl, …) and generated music (musicId: upbeat, calm, \
             corporate, none). Returns the render (ad_…, pending); call get_ad until done for videoUrl. Costs ten \
             actions, given back if the render fails."
        => render_ad;
    "get_ad": GetAdArgs, annotations("Get an ad", true, true, false),
        "Get an ad draft (drf_…) or render (ad_…) by id: status, stage and progress; a finished draft's copy, \
             brand colour, storyboard and script; a finished render's videoUrl, thumbnailUrl, durationMs, width \
             and height; or the error."
        => get_ad;
}

async fn account_balance(cx: &Cx<'_>, _args: &JsonObject) -> Result<CallToolResult> {
    Ok(structured(&crate::account::service::balance_of(cx.account)))
}

async fn get_screenshot(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    let id: ScreenshotId = id_arg(args)?;
    let include_image = matches!(args.get("includeImage"), Some(Value::Bool(true)));
    let row = screenshots::find(cx.state, cx.account, &id).await?;
    job_result(cx.state, &row, include_image).await
}

async fn list_screenshots(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    reply(screenshots::list(cx.state, cx.account, &query::<ListQuery>(args)?).await)
}

async fn share_screenshot(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    reply(screenshots::share(cx.state, cx.account, &id_arg::<ScreenshotId>(args)?).await)
}

async fn list_webhooks(cx: &Cx<'_>, _args: &JsonObject) -> Result<CallToolResult> {
    reply(webhooks::list_endpoints(cx.state, cx.account).await)
}

async fn create_webhook(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    let input = webhooks::parse_endpoint(cx.state, args)?;
    reply(webhooks::create_endpoint(cx.state, cx.account, input).await)
}

async fn test_webhook(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    reply(webhooks::send_test(cx.state, cx.account, &id_arg(args)?).await)
}

async fn create_ad_draft(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    reply(ads::create_draft(cx.state, cx.account, &valid::<DraftIn>(args)?, None).await.map(|c| c.ad))
}

async fn render_ad(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    reply(ads::create_render(cx.state, cx.account, &valid::<RenderIn>(args)?, None).await.map(|c| c.ad))
}

async fn get_ad(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    reply(ads::get(cx.state, cx.account, &string_arg(args, "id")?).await)
}

/// The input of `read_page`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadPageIn {
    /// The page to read (http or https).
    pub url: String,
    /// Keep only the article (default true); false reads the whole page.
    pub main_content: Option<bool>,
    /// Most characters of Markdown in the answer, front matter aside (default 8000, 200–100000).
    #[schemars(range(min = 200, max = 100000))]
    pub max_chars: Option<u64>,
    /// Start at this character (a previous answer's nextFrom).
    pub from: Option<u64>,
    /// Any other capture option of POST /v1/screenshot (cookieConsent, blockAds, blockAnnoyances,
    /// profile, device, waitFor, includeSelectors, excludeSelectors, timeoutMs…).
    pub options: Option<JsonObject>,
}

/// The input of `extract`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExtractToolIn {
    /// The page to read (http or https).
    pub url: String,
    /// The fields, each by a rule: {"price": {"selector": ".price", "type": "number"}}.
    pub rules: Option<std::collections::BTreeMap<String, capture_core::options::ExtractRule>>,
    /// JSON Schema the data must match.
    pub schema: Option<JsonObject>,
    /// Ask the operator's language model for the fields schema describes, following this
    /// instruction (instead of rules; only where the operator configured a model).
    pub prompt: Option<String>,
    /// Any other capture option of POST /v1/screenshot (cookieConsent, profile, waitFor…).
    pub options: Option<JsonObject>,
}

/// A capture request of `extra` capture options and these fields, checked like POST
/// /v1/screenshot (a bad option is named as there).
fn tool_capture(extra: Option<JsonObject>, fields: JsonObject) -> Result<capture_core::options::CaptureOptions> {
    let mut m = extra.unwrap_or_default();
    for k in fields.keys() {
        if m.contains_key(k) {
            return Err(crate::tool::invalid(&format!("options.{k}"), "is set by the tool's own argument"));
        }
    }
    m.extend(fields);
    Ok(crate::http::validated::validate::<ScreenshotIn>(&m)?)
}

async fn read_page(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    let a = crate::tool::parse::<ReadPageIn>(args)?;
    let mut fields = JsonObject::new();
    fields.insert("url".into(), json!(a.url));
    fields.insert("format".into(), json!("markdown"));
    fields.insert("mainContent".into(), json!(a.main_content.unwrap_or(true)));
    fields.insert("maxChars".into(), json!(a.max_chars.unwrap_or(8000).clamp(200, 100_000)));
    if let Some(f) = a.from {
        fields.insert("from".into(), json!(f));
    }
    let opts = tool_capture(a.options, fields)?;
    let row = match run_to_done(cx, &opts).await? {
        Ok(row) => row,
        Err(answer) => return Ok(answer),
    };
    let job = screenshots::view(cx.state, &row).await;
    let key = row.result_key.as_deref().ok_or_else(|| Error::internal("done job without file"))?;
    let bytes = cx.state.blobs.get(key).await.map_err(Error::internal)?.unwrap_or_default();
    let markdown = String::from_utf8_lossy(&bytes).into_owned();
    let report = job.metadata.as_ref().and_then(|m| m.content.clone());
    let mut text = markdown.clone();
    if let Some(r) = &report
        && (r.from > 0 || r.next_from.is_some())
    {
        let to = r.next_from.unwrap_or(r.total_chars);
        let mut note = format!("[characters {}–{to} of {}", r.from, r.total_chars);
        if let Some(n) = r.next_from {
            note.push_str(&format!("; read on with from={n}"));
        }
        note.push(']');
        text.push_str(&note);
    }
    let data = json!({
        "screenshotId": job.id, "url": row.url, "title": job.page_title, "markdown": markdown,
        "from": report.as_ref().map(|r| r.from), "nextFrom": report.as_ref().and_then(|r| r.next_from),
        "totalChars": report.as_ref().map(|r| r.total_chars), "tokens": report.as_ref().map(|r| r.tokens),
        "publicUrl": job.public_url,
    });
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(data);
    Ok(r)
}

async fn extract(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    let a = crate::tool::parse::<ExtractToolIn>(args)?;
    let mut spec = JsonObject::new();
    if let Some(r) = a.rules {
        spec.insert("rules".into(), serde_json::to_value(r).map_err(Error::internal)?);
    }
    if let Some(s) = a.schema {
        spec.insert("schema".into(), Value::Object(s));
    }
    if let Some(p) = a.prompt {
        spec.insert("prompt".into(), json!(p));
    }
    let mut fields = JsonObject::new();
    fields.insert("url".into(), json!(a.url));
    // The job's file is the page's text, the cheapest to keep.
    fields.insert("format".into(), json!("text"));
    fields.insert("extract".into(), Value::Object(spec));
    let opts = tool_capture(a.options, fields)?;
    let row = match run_to_done(cx, &opts).await? {
        Ok(row) => row,
        Err(answer) => return Ok(answer),
    };
    let job = screenshots::view(cx.state, &row).await;
    let data = json!({"screenshotId": job.id, "url": row.url, "data": job.data, "sources": job.sources});
    let mut r = CallToolResult::success(vec![ContentBlock::text(
        serde_json::to_string_pretty(&data["data"]).unwrap_or_default(),
    )]);
    r.structured_content = Some(data);
    Ok(r)
}

async fn take_screenshot(cx: &Cx<'_>, args: &JsonObject) -> Result<CallToolResult> {
    let opts = valid::<ScreenshotIn>(args)?;
    match run_job(cx, &opts).await? {
        Ok(row) => job_result(cx.state, &row, true).await,
        Err(pending) => Ok(pending),
    }
}

/// [`run_job`] for the tools that answer from a done job's file: its row when it is done, else
/// the answer already (the job as it stands while pending, or its failure).
async fn run_to_done(
    cx: &Cx<'_>,
    opts: &capture_core::options::CaptureOptions,
) -> Result<std::result::Result<ScreenshotRow, CallToolResult>> {
    match run_job(cx, opts).await? {
        Ok(row) if row.status == JobStatus::Done => Ok(Ok(row)),
        Ok(row) => Ok(Err(job_result(cx.state, &row, false).await?)),
        Err(pending) => Ok(Err(pending)),
    }
}

/// Create a capture job and wait for it to end: its row, or — when the wait runs out or the
/// caller stops — the job as it stands, with how to fetch it later.
async fn run_job(
    cx: &Cx<'_>,
    opts: &capture_core::options::CaptureOptions,
) -> Result<std::result::Result<ScreenshotRow, CallToolResult>> {
    let (state, account) = (cx.state, cx.account);
    // Subscribe before creating so no change is missed.
    let mut changes = state.job_events.subscribe();
    let new = NewJob::Capture { opts, label: None, html_blob: None };
    let id = screenshots::create(state, account, new, None).await?.job.id;
    let wait = WAIT_MARGIN + Duration::from_millis(opts.timeout_ms + opts.delay);
    let deadline = tokio::time::Instant::now() + wait;
    let progress = cx.progress_token();
    let mut poll = tokio::time::interval(state.cfg.queue.poll);
    let mut last_status = None;
    let mut step = 0.0;
    loop {
        let current = state.store.screenshot(id.as_str()).await?.ok_or_else(|| Error::not_found(ScreenshotId::NOUN))?;
        if last_status != Some(current.status) {
            last_status = Some(current.status);
            step += 1.0;
            if let Some(token) = &progress {
                let note = ProgressNotificationParam::new(token.clone(), step)
                    .with_total(3.0)
                    .with_message(format!("screenshot {} is {}", current.id, current.status));
                // A client that stopped listening for progress still gets the result.
                cx.notify_progress(note).await;
            }
        }
        if current.status.is_final() {
            return Ok(Ok(current));
        }
        // Wake on this node's change notices, or poll (a worker on another node finished it).
        // The caller stopping ends the wait too.
        let woke = tokio::select! {
            _ = cx.cancelled() => false,
            w = state.next_change(&mut changes, id.as_str(), &mut poll, deadline) => w,
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
            return Ok(Err(r));
        }
    }
}

/// A job as a tool result: its JSON, and for a finished image (when asked) the image.
async fn job_result(state: &AppState, row: &ScreenshotRow, with_image: bool) -> Result<CallToolResult> {
    let job = screenshots::view(state, row).await;
    let public_url = job.public_url.clone().unwrap_or_default();
    let job = serde_json::to_value(&job).map_err(Error::internal)?;
    if row.status == JobStatus::Failed {
        // Not an HTTP error: the job exists and failed (its action was given back).
        let error = row.error.as_deref().unwrap_or("unknown error");
        let mut r = CallToolResult::error(vec![ContentBlock::text(format!(
            "{}: the capture of {} failed: {error}",
            ErrorCode::CaptureFailed.as_str(),
            row.url
        ))]);
        r.structured_content = Some(json!({"code": ErrorCode::CaptureFailed.as_str(), "error": error, "job": job}));
        return Ok(r);
    }
    let summary = match (row.status, row.format.as_str()) {
        (JobStatus::Done, "pdf") => format!("PDF of {} is ready: {public_url}", row.url),
        (JobStatus::Done, f @ ("mp4" | "webm" | "gif")) => {
            format!("Scrolling video of {} ({f}): {public_url}", row.url)
        }
        (JobStatus::Done, f @ ("markdown" | "text" | "html")) => format!("The page {} as {f}: {public_url}", row.url),
        (JobStatus::Done, _) => format!("Screenshot of {} ({}): {public_url}", row.url, row.format),
        (s, _) => format!("Screenshot {} is {s}.", row.id),
    };
    let mut content = vec![ContentBlock::text(summary)];
    let text_job = matches!(row.format.as_str(), "markdown" | "text");
    if with_image && row.status == JobStatus::Done && text_job {
        // The page as text is given as text (its first characters; the whole is at publicUrl).
        if let Some(key) = &row.result_key
            && let Some(bytes) = state.blobs.get(key).await.map_err(Error::internal)?
        {
            let whole = String::from_utf8_lossy(&bytes);
            let shown: String = whole.chars().take(MAX_INLINE_TEXT).collect();
            let more = whole.chars().count() > MAX_INLINE_TEXT;
            let note = if more {
                format!("\n[the first {MAX_INLINE_TEXT} characters; all of it: {public_url}]")
            } else {
                String::new()
            };
            content.insert(0, ContentBlock::text(format!("{shown}{note}")));
        }
    } else if with_image
        && row.status == JobStatus::Done
        && row.format != "pdf"
        && row.format != "html"
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
        "png" => "image/png",
        // A video: its poster stands for it.
        _ => "",
    };
    let bytes = match mime {
        "" => None,
        _ => state.blobs.get(key).await.map_err(Error::internal)?,
    };
    let (bytes, mime) = match (bytes, mime.is_empty()) {
        (Some(b), false) if b.len() <= MAX_INLINE_IMAGE => (b, mime),
        // The image is gone.
        (None, false) => return Ok(None),
        // Too large to inline, or not an image: the thumbnail.
        _ => match &row.thumb_key {
            Some(t) => match state.blobs.get(t).await.map_err(Error::internal)? {
                Some(b) => (b, crate::blob::content_type(t)),
                None => return Ok(None),
            },
            None => return Ok(None),
        },
    };
    Ok(Some(ContentBlock::image(base64::engine::general_purpose::STANDARD.encode(bytes), mime)))
}
