//! The dashboard: this month's usage, API keys (create, reveal, revoke), recent
//! screenshots (share, unshare, PDF download).

use crate::http::Path;
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use capture_core::time::iso;
use capture_core::{JobStatus, OutputFormat, ids};
use capture_store::{ApiKeyRow, ScreenshotRow};

use super::base::forms::{Signed, SignedForm, account, web_id};
use super::base::layout::{
    Chrome, Nav, SecretPage, WebError, WebResult, date, minute, origin, page, see_other, sentence,
};
use super::base::session::WebSession;
use crate::account::types::Balance;
use crate::admin::{self, AdminError};
use crate::screenshots::pdf_response;
use crate::screenshots::service as screenshots;
use crate::state::AppState;

/// Most live keys one account may hold.
const MAX_LIVE_KEYS: usize = 50;
/// Screenshots listed on the dashboard.
const RECENT_SCREENSHOTS: i64 = 20;
/// Browser runs listed on the dashboard.
const RECENT_RUNS: i64 = 10;

/// `GET /dashboard`
pub async fn show(State(state): State<AppState>, Signed(s): Signed) -> WebResult<Response> {
    render(&state, &s, StatusCode::OK, None).await
}

/// The dashboard page, with an error above the key form when `error` is set.
async fn render(state: &AppState, s: &WebSession, status: StatusCode, error: Option<&str>) -> WebResult<Response> {
    let acc = account(state, s).await?;
    let balance = crate::account::service::balance_of(&acc);
    let keys = state.store.list_keys(&s.user.id).await?;
    let usage = state.store.usage_by_key(&s.user.id, &acc.window.label).await?;
    let rows = state.store.list_screenshots(&s.user.id, None, RECENT_SCREENSHOTS).await?;
    let shots_empty = rows.is_empty();
    let mut shots = Vec::with_capacity(rows.len());
    for r in &rows {
        shots.push(ShotRow::new(state, r).await);
    }
    let mut runs = Vec::new();
    for r in state.store.list_runs(&s.user.id, None, RECENT_RUNS).await? {
        runs.push(RunLine::new(state, &r).await);
    }
    let dashboard = DashboardPage {
        chrome: Chrome::signed("Dashboard", s, Nav::Dashboard),
        csrf: &s.csrf,
        usage: UsageView::new(&balance),
        error,
        keys: keys.iter().map(|k| KeyRow::new(k, &usage)).collect(),
        shots,
        recent: RECENT_SCREENSHOTS,
        unverified: state.store.email_unverified(&s.user.id).await?,
        start: (shots_empty && runs.is_empty()).then(|| super::start::Start::new(state, &keys)),
        runs,
        unavailable: crate::features::unavailable(state).await,
    };
    Ok(page(status, &dashboard, origin(&state.base_url).as_deref()))
}

/// `templates/web/dashboard.html`
#[derive(Template)]
#[template(path = "web/dashboard.html")]
struct DashboardPage<'a> {
    chrome: Chrome<'a>,
    csrf: &'a str,
    usage: UsageView<'a>,
    /// Shown above the key form.
    error: Option<&'a str>,
    keys: Vec<KeyRow<'a>>,
    shots: Vec<ShotRow>,
    recent: i64,
    runs: Vec<RunLine>,
    /// The account waits for its e-mail to be verified (no quota until then).
    unverified: bool,
    /// What cannot work on this server (no SMTP, no ffmpeg, …), shown at the top.
    unavailable: Vec<crate::features::FeatureStatus>,
    /// Getting started, until the account's first job exists.
    start: Option<super::start::Start>,
}

/// A browser run as the dashboard lists it.
struct RunLine {
    id: String,
    kind: String,
    status: String,
    /// The final page's title, else its URL, else the start URL.
    page: String,
    created_at: String,
    created_text: String,
    video_url: Option<String>,
    /// Console errors and failed requests, in words.
    errors: String,
    /// The step error or finalisation error of a failed run.
    failure: Option<String>,
}

impl RunLine {
    async fn new(state: &AppState, r: &capture_store::RunRow) -> Self {
        let run = crate::runs::service::view(state, r).await;
        RunLine {
            id: r.id.clone(),
            kind: run.kind.to_string(),
            status: run.status.to_string(),
            page: run
                .page_title
                .clone()
                .filter(|t| !t.is_empty())
                .or_else(|| run.final_url.clone())
                .unwrap_or_else(|| run.start_url.clone()),
            created_at: iso(r.created_at),
            created_text: minute(r.created_at),
            video_url: run.video_url.clone(),
            errors: format!("{} console, {} network", run.console_error_count, run.network_error_count),
            failure: run.error.clone().or_else(|| run.finalization_error.clone()),
        }
    }
}

/// Usage against the plan, from the same object `GET /v1/account/balance` returns.
struct UsageView<'a> {
    unlimited: bool,
    used: i64,
    limit: i64,
    remaining: i64,
    percent: f64,
    /// Where the meter turns "high" and then "too high".
    low: i64,
    high: i64,
    plan: &'a str,
    reset_at: &'a str,
    reset_date: &'a str,
}

impl<'a> UsageView<'a> {
    fn new(b: &'a Balance) -> Self {
        let u = &b.usage;
        let limit = u.limit.unwrap_or(0);
        let reset_at = b.window.reset_at.as_str();
        UsageView {
            unlimited: u.unlimited,
            used: u.used,
            limit,
            remaining: u.remaining.unwrap_or(0),
            percent: u.percent_used.unwrap_or(0.0),
            low: limit * 80 / 100,
            high: limit * 95 / 100,
            plan: &b.plan,
            reset_at,
            reset_date: reset_at.get(..10).unwrap_or(reset_at),
        }
    }
}

/// A row of the keys table.
struct KeyRow<'a> {
    name: &'a str,
    prefix: &'a str,
    created: String,
    used: i64,
    /// The date it was revoked.
    revoked: Option<String>,
    reveal_action: String,
    revoke_action: String,
}

impl<'a> KeyRow<'a> {
    fn new(k: &'a ApiKeyRow, usage: &[(String, i64)]) -> Self {
        KeyRow {
            name: &k.name,
            prefix: &k.prefix,
            created: date(k.created_at),
            used: usage.iter().find(|(id, _)| *id == k.id).map_or(0, |(_, n)| *n),
            revoked: k.revoked_at.map(date),
            reveal_action: format!("/dashboard/keys/{}/reveal", k.id),
            revoke_action: format!("/dashboard/keys/{}/revoke", k.id),
        }
    }
}

/// A row of the screenshots table.
struct ShotRow {
    url: String,
    /// The page title, else the URL.
    title: String,
    status: JobStatus,
    /// Why it failed, for a failed job.
    failure: Option<String>,
    format: OutputFormat,
    created_at: String,
    created_text: String,
    thumbnail_url: Option<String>,
    share_url: Option<String>,
    share_action: String,
    unshare_action: String,
    file: ShotFile,
}

/// How a finished job's file is offered.
enum ShotFile {
    /// Downloaded through the website (the owner's session, no API key).
    Pdf(String),
    Image(String),
    /// The page as text: its file and format.
    Text(String, OutputFormat),
    None,
}

impl ShotRow {
    async fn new(state: &AppState, r: &ScreenshotRow) -> Self {
        let job = screenshots::view(state, r).await;
        let file = match (job.format, job.public_url.clone()) {
            (OutputFormat::Pdf, Some(_)) => ShotFile::Pdf(format!("/dashboard/screenshots/{}/pdf", job.id)),
            (f @ (OutputFormat::Markdown | OutputFormat::Text | OutputFormat::Html), Some(p)) => ShotFile::Text(p, f),
            (_, Some(p)) => ShotFile::Image(p),
            _ => ShotFile::None,
        };
        ShotRow {
            title: job.page_title.clone().filter(|t| !t.is_empty()).unwrap_or_else(|| job.url.clone()),
            failure: job.error.clone().filter(|_| job.status == JobStatus::Failed),
            created_at: iso(r.created_at),
            created_text: minute(r.created_at),
            share_url: r.share_token.as_deref().map(|t| screenshots::share_url(state, t)),
            share_action: format!("/dashboard/screenshots/{}/share", job.id),
            unshare_action: format!("/dashboard/screenshots/{}/unshare", job.id),
            file,
            url: job.url,
            status: job.status,
            format: job.format,
            thumbnail_url: job.thumbnail_url,
        }
    }
}

/// `POST /dashboard/keys`: create a key and show it in full.
pub async fn create_key(State(state): State<AppState>, f: SignedForm) -> WebResult<Response> {
    let s = &f.session;
    let live = state.store.list_keys(&s.user.id).await?.iter().filter(|k| k.revoked_at.is_none()).count();
    if live >= MAX_LIVE_KEYS {
        let msg = format!("An account may hold at most {MAX_LIVE_KEYS} live keys. Revoke one first.");
        return render(&state, s, StatusCode::BAD_REQUEST, Some(&msg)).await;
    }
    match admin::create_key(&state.store, &state.master, &s.user.id, f.form.text("name"), state.clock.now_ms()).await {
        Ok((row, key)) => Ok(key_page(s, &row, &key, true)),
        Err(AdminError::Invalid(m)) => render(&state, s, StatusCode::BAD_REQUEST, Some(&sentence(&m))).await,
        Err(e) => Err(e.into()),
    }
}

fn key_page(s: &WebSession, row: &ApiKeyRow, key: &str, new: bool) -> Response {
    let (title, intro) = if new {
        (
            format!("New API key “{}”", row.name),
            "Your new key is below. Copy it now and keep it secret; you can reveal it again from the dashboard.",
        )
    } else {
        (format!("API key “{}”", row.name), "Keep this key secret. If it leaked, revoke it and create a new one.")
    };
    let secret = SecretPage {
        chrome: Chrome::signed(&title, s, Nav::Dashboard),
        intro,
        field_id: "api-key",
        field_label: "API key",
        secret: key,
        back_href: "/dashboard#keys",
        back_label: "Back to the dashboard",
    };
    page(StatusCode::OK, &secret, None)
}

async fn own_key(state: &AppState, s: &WebSession, id: &str) -> WebResult<ApiKeyRow> {
    if !ids::looks_like(ids::KEY, id) {
        return Err(WebError::not_found());
    }
    state.store.key_of(&s.user.id, id).await?.ok_or_else(WebError::not_found)
}

/// `POST /dashboard/keys/{id}/reveal`: show the stored key to its owner.
pub async fn reveal_key(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    let row = own_key(&state, &f.session, &id).await?;
    if row.revoked_at.is_some() {
        return Err(WebError::Page(StatusCode::CONFLICT, "This key is revoked; it cannot be revealed or used.".into()));
    }
    let key = state
        .master
        .decrypt(&row.key_enc)
        .ok_or_else(|| WebError::from(crate::http::ApiError::internal(format!("key {} does not decrypt", row.id))))?;
    Ok(key_page(&f.session, &row, &key, false))
}

/// `POST /dashboard/keys/{id}/revoke`: the REST API rejects the key from the next call on.
pub async fn revoke_key(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    own_key(&state, &f.session, &id).await?;
    state.store.revoke_key(&id, Some(&f.session.user.id), state.clock.now_ms()).await?;
    Ok(see_other("/dashboard#keys", None))
}

/// `POST /dashboard/screenshots/{id}/share`: mint the public link (or keep the one in force).
pub async fn share(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    let acc = account(&state, &f.session).await?;
    screenshots::share(&state, &acc, &web_id(&id)?).await?;
    Ok(see_other(&back_to(&f.form), None))
}

/// `POST /dashboard/screenshots/{id}/unshare`: the public link stops working.
pub async fn unshare(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    let acc = account(&state, &f.session).await?;
    screenshots::unshare(&state, &acc, &web_id(&id)?).await?;
    Ok(see_other(&back_to(&f.form), None))
}

/// `GET /dashboard/screenshots/{id}/pdf`: the PDF as an attachment, for the signed-in owner
/// (the same operation as `GET /api/pdf/download/{id}`, which takes an API key or this session).
pub async fn pdf(State(state): State<AppState>, Path(id): Path<String>, Signed(s): Signed) -> WebResult<Response> {
    let acc = account(&state, &s).await?;
    Ok(pdf_response(screenshots::pdf(&state, &acc, &web_id(&id)?).await?))
}

/// Where a share form returns: its `back` field when it is a job's page, else the
/// dashboard's screenshots.
fn back_to(form: &super::base::forms::Form) -> String {
    let back = form.text("back");
    match back.strip_prefix("/dashboard/screenshots/") {
        Some(id) if ids::looks_like(ids::SCREENSHOT, id) => back.to_string(),
        _ => "/dashboard#screenshots".to_string(),
    }
}
