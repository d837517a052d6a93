//! The screenshots list (every job, a page at a time with the API's cursor, filtered by
//! status and format, searched by URL or title) and a job's page: its file, options,
//! timings, tags, error, events and the webhook deliveries it caused, the same request as
//! code, and its progress while it runs (server-sent events with JavaScript, a refresh
//! without).

use crate::http::Path;
use crate::paging::Window;
use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::{Extension, extract};
use capture_core::options::CaptureOptions;
use capture_core::time::iso;
use capture_core::{JobStatus, OutputFormat, ScreenshotId, ids};
use capture_store::{ScreenshotFilter, ScreenshotRow};
use serde::Deserialize;

use super::base::forms::{Signed, account, web_id};
use super::base::layout::{Chrome, Nav, WebError, WebResult, minute, origin, page};
use super::snippets::{Snippet, request_body, snippets};
use crate::http::Id;
use crate::screenshots::service as screenshots;
use crate::state::AppState;

/// Jobs on one page of the list unless `limit` says otherwise.
const PAGE: i64 = 25;
/// Deliveries shown on a job's page.
const DELIVERIES: i64 = 50;

/// The list's query: filters, search and the cursor.
#[derive(Debug, Default, Deserialize)]
pub struct ListParams {
    status: Option<String>,
    format: Option<String>,
    q: Option<String>,
    before: Option<String>,
    limit: Option<String>,
}

/// A choice of a filter's `<select>`.
struct Choice {
    value: &'static str,
    label: &'static str,
    selected: bool,
}

fn choices(all: &[(&'static str, &'static str)], current: &str) -> Vec<Choice> {
    all.iter().map(|(value, label)| Choice { value, label, selected: *value == current }).collect()
}

const STATUSES: &[(&str, &str)] =
    &[("", "Any status"), ("pending", "Pending"), ("processing", "Processing"), ("done", "Done"), ("failed", "Failed")];
const FORMATS: &[(&str, &str)] = &[
    ("", "Any format"),
    ("png", "PNG"),
    ("jpeg", "JPEG"),
    ("webp", "WebP"),
    ("pdf", "PDF"),
    ("mp4", "MP4"),
    ("webm", "WebM"),
    ("gif", "GIF"),
];

fn query_string(pairs: &[(&str, &str)]) -> String {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs.iter().filter(|(_, v)| !v.is_empty()) {
        q.append_pair(k, v);
    }
    q.finish()
}

/// `GET /dashboard/screenshots`
pub async fn list(
    State(state): State<AppState>,
    Signed(s): Signed,
    Query(p): Query<ListParams>,
) -> WebResult<Response> {
    let text = |o: &Option<String>| o.as_deref().map(str::trim).unwrap_or("").to_string();
    let (status, format, search) = (text(&p.status), text(&p.format), text(&p.q));
    if !status.is_empty() && JobStatus::parse(&status).is_none() {
        return Err(WebError::invalid("The status filter must be pending, processing, done or failed."));
    }
    if !format.is_empty() && OutputFormat::parse(&format).is_none() {
        return Err(WebError::invalid("The format filter must be png, jpeg, webp, pdf, mp4, webm or gif."));
    }
    if search.chars().count() > 200 {
        return Err(WebError::invalid("The search may be at most 200 characters."));
    }
    // The dashboard's own default page size; the rules are the API's.
    let limit_raw =
        p.limit.as_deref().map(str::trim).filter(|l| !l.is_empty()).map_or(PAGE.to_string(), str::to_string);
    let before_raw = text(&p.before);
    let w =
        Window::parse(Some(&limit_raw), Some(&before_raw), |id| ids::looks_like(ids::SCREENSHOT, id)).map_err(|e| {
            if e.field == "limit" {
                WebError::invalid("The page size must be a whole number from 1 to 100.")
            } else {
                WebError::invalid("This page link is not valid; start from the first page.")
            }
        })?;
    let limit = w.limit;
    let filter =
        ScreenshotFilter { status: Some(status.clone()), format: Some(format.clone()), search: Some(search.clone()) };
    let rows = state.store.search_screenshots(&s.user.id, &filter, w.before.clone(), w.fetch()).await?;
    let found = w.page(rows, |r| (r.created_at, r.id.as_str()));
    let next = found.next_cursor.map(|cursor| {
        let lim = if limit == PAGE { String::new() } else { limit.to_string() };
        format!(
            "/dashboard/screenshots?{}",
            query_string(&[
                ("status", &status),
                ("format", &format),
                ("q", &search),
                ("limit", &lim),
                ("before", &cursor)
            ])
        )
    });
    let mut shots = Vec::with_capacity(found.rows.len());
    for r in &found.rows {
        shots.push(ListRow::new(&state, r).await);
    }
    let filtered = !(status.is_empty() && format.is_empty() && search.is_empty());
    let view = ListPage {
        chrome: Chrome::signed("Screenshots", &s, Nav::Screenshots),
        statuses: choices(STATUSES, &status),
        formats: choices(FORMATS, &format),
        search: &search,
        shots,
        next,
        paged: !before_raw.is_empty(),
        filtered,
    };
    Ok(page(StatusCode::OK, &view, origin(&state.base_url).as_deref()))
}

/// `templates/web/screenshots.html`
#[derive(Template)]
#[template(path = "web/screenshots.html")]
struct ListPage<'a> {
    chrome: Chrome<'a>,
    statuses: Vec<Choice>,
    formats: Vec<Choice>,
    search: &'a str,
    shots: Vec<ListRow>,
    /// The next page, with the same filters.
    next: Option<String>,
    /// This is not the first page.
    paged: bool,
    filtered: bool,
}

/// A row of the list.
struct ListRow {
    href: String,
    title: String,
    url: String,
    status: JobStatus,
    format: OutputFormat,
    created_at: String,
    created_text: String,
    thumbnail_url: Option<String>,
}

impl ListRow {
    async fn new(state: &AppState, r: &ScreenshotRow) -> Self {
        let job = screenshots::view(state, r).await;
        ListRow {
            href: format!("/dashboard/screenshots/{}", r.id),
            title: job.page_title.clone().filter(|t| !t.is_empty()).unwrap_or_else(|| job.url.clone()),
            url: job.url,
            status: job.status,
            format: job.format,
            created_at: iso(r.created_at),
            created_text: minute(r.created_at),
            thumbnail_url: job.thumbnail_url,
        }
    }
}

/// `GET /dashboard/screenshots/{id}`
pub async fn show(State(state): State<AppState>, Path(id): Path<String>, Signed(s): Signed) -> WebResult<Response> {
    let acc = account(&state, &s).await?;
    let id: ScreenshotId = web_id(&id)?;
    let row = screenshots::find(&state, &acc, &id).await?;
    // The hot cache may hold an older state of a running job: read it fresh.
    let row = state.store.screenshot_of(&s.user.id, &row.id).await?.unwrap_or(row);
    let job = screenshots::view(&state, &row).await;
    let opts: Option<CaptureOptions> =
        serde_json::from_str(&row.options).ok().filter(|o: &CaptureOptions| o.url.is_some());
    let options = match &opts {
        Some(o) => request_body(o)
            .into_iter()
            .map(|(k, v)| (k, v.as_str().map_or_else(|| v.to_string(), str::to_string)))
            .collect(),
        None => Vec::new(),
    };
    let code = opts.as_ref().map(|o| snippets(&state.base_url, &request_body(o))).unwrap_or_default();
    let mut events = Vec::new();
    for (_, ty, data, at) in state.store.events_of(&s.user.id, &row.id).await? {
        let v: serde_json::Value = serde_json::from_str(&data).unwrap_or_default();
        let mut what = v["status"].as_str().unwrap_or(&ty).to_string();
        if let Some(e) = v["error"].as_str() {
            what = format!("{what}: {e}");
        }
        events.push(EventLine { at_iso: iso(at), at: precise(at), kind: ty, what });
    }
    let deliveries = state
        .store
        .deliveries_about(&s.user.id, &row.id, DELIVERIES)
        .await?
        .into_iter()
        .map(|d| DeliveryLine {
            href: format!("/dashboard/webhooks/{}", d.endpoint_id),
            endpoint: d.endpoint_id,
            event_type: d.event_type,
            status: d.status,
            attempts: d.attempts,
            response: d.response_code.map(|c| c.to_string()).or(d.error_message).unwrap_or_else(|| "—".into()),
            at_iso: iso(d.created_at),
            at: minute(d.created_at),
        })
        .collect();
    let secs = |a: Option<i64>, b: Option<i64>| match (a, b) {
        (Some(a), Some(b)) if b >= a => Some(format!("{:.1} s", (b - a) as f64 / 1000.0)),
        _ => None,
    };
    let file = match (job.format, job.public_url.clone()) {
        (OutputFormat::Pdf, Some(_)) => Some(format!("/dashboard/screenshots/{}/pdf", job.id)),
        (_, Some(u)) => Some(u),
        _ => None,
    };
    let running = !job.status.is_final();
    let view = DetailPage {
        chrome: Chrome::signed("Screenshot", &s, Nav::Screenshots),
        csrf: &s.csrf,
        title: job.page_title.clone().filter(|t| !t.is_empty()).unwrap_or_else(|| job.url.clone()),
        id: job.id.to_string(),
        url: job.url.clone(),
        status: job.status,
        format: job.format,
        pdf: job.format == OutputFormat::Pdf,
        video: matches!(job.format, OutputFormat::Mp4 | OutputFormat::Webm),
        text: matches!(job.format, OutputFormat::Markdown | OutputFormat::Text | OutputFormat::Html),
        storage_url: job.storage_url.clone(),
        storage_error: job.storage_error.clone(),
        running,
        events_url: format!("/dashboard/screenshots/{}/events", job.id),
        public_url: job.public_url.clone(),
        thumbnail_url: job.thumbnail_url.clone(),
        file,
        size: match (job.width, job.height) {
            (Some(w), Some(h)) => Some(format!("{w} × {h} px")),
            _ => None,
        },
        share_url: row.share_token.as_deref().map(|t| screenshots::share_url(&state, t)),
        share_action: format!("/dashboard/screenshots/{}/share", job.id),
        unshare_action: format!("/dashboard/screenshots/{}/unshare", job.id),
        back: format!("/dashboard/screenshots/{}", job.id),
        error: job.error.clone().filter(|_| job.status == JobStatus::Failed),
        tags: job.tags.clone(),
        options,
        created_iso: iso(row.created_at),
        created: precise(row.created_at),
        started: row.started_at.map(precise),
        completed: row.completed_at.map(precise),
        waited: secs(Some(row.created_at), row.started_at),
        worked: secs(row.started_at, row.completed_at),
        total: secs(Some(row.created_at), row.completed_at),
        events,
        deliveries,
        snippets: code,
    };
    Ok(page(StatusCode::OK, &view, origin(&state.base_url).as_deref()))
}

/// `2026-05-01 14:03:07 UTC`
fn precise(ms: i64) -> String {
    let t = iso(ms);
    format!("{} {} UTC", &t[..10], &t[11..19])
}

/// `templates/web/screenshot.html`
#[derive(Template)]
#[template(path = "web/screenshot.html")]
struct DetailPage<'a> {
    chrome: Chrome<'a>,
    csrf: &'a str,
    title: String,
    id: String,
    url: String,
    status: JobStatus,
    format: OutputFormat,
    pdf: bool,
    /// An MP4 or WebM (played; a GIF shows as an image).
    video: bool,
    /// The page as text (markdown, text, html): a preview and a link, not an image.
    text: bool,
    /// Where the copy for the request's storage destination went, or why it did not.
    storage_url: Option<String>,
    storage_error: Option<String>,
    /// Not done or failed yet: the page follows its progress.
    running: bool,
    events_url: String,
    public_url: Option<String>,
    thumbnail_url: Option<String>,
    /// Where the file downloads from.
    file: Option<String>,
    size: Option<String>,
    share_url: Option<String>,
    share_action: String,
    unshare_action: String,
    back: String,
    error: Option<String>,
    tags: Vec<String>,
    /// The request's options in the contract's names (those that differ from the defaults).
    options: Vec<(String, String)>,
    created_iso: String,
    created: String,
    started: Option<String>,
    completed: Option<String>,
    waited: Option<String>,
    worked: Option<String>,
    total: Option<String>,
    events: Vec<EventLine>,
    deliveries: Vec<DeliveryLine>,
    snippets: Vec<Snippet>,
}

struct EventLine {
    at_iso: String,
    at: String,
    kind: String,
    what: String,
}

struct DeliveryLine {
    href: String,
    endpoint: String,
    event_type: String,
    status: String,
    attempts: i64,
    response: String,
    at_iso: String,
    at: String,
}

/// `GET /dashboard/screenshots/{id}/events`: the job's server-sent events (the stream of
/// `GET /v1/screenshot/{id}/stream`) for the signed-in owner, which the job's page follows.
pub async fn events(State(state): State<AppState>, Path(id): Path<String>, Signed(s): Signed) -> WebResult<Response> {
    let acc = account(&state, &s).await?;
    let id: ScreenshotId = web_id(&id)?;
    let r = crate::screenshots::stream(extract::State(state.clone()), Extension(acc), Id(id)).await?;
    Ok(r)
}
