//! The `audit` queue: run each website audit with the `capture-audit` engine on the shared
//! browser pool, store its screenshots as files, report progress, and record the outcome —
//! fenced on the task lease — with the actions settled in the same transaction.
//!
//! - Every fetch goes through the egress guard: pages and their sub-requests, and the
//!   engine's own requests (robots.txt, sitemaps, link checks, by the guarded client), all
//!   through the browser pool's egress proxy, which checks every resolved address.
//! - Each page gets a fresh session (context) of the pool: loaded at 1280×800 with the
//!   engine's observers installed before any page script, settled, collected, checked with
//!   axe-core (built in; `CAPTURE_AXE_PATH` may replace it: [`crate::features`]),
//!   screenshotted, then emulated as a phone (390×844, DPR 3, touch, a mobile user agent),
//!   reloaded and screenshotted again.
//! - Time bounds: a page load is bounded by [`PAGE_LOAD_TIMEOUT`], the whole page by
//!   [`PAGE_BUDGET`] (its session's deadline), and no page starts after the audit's deadline
//!   ([`audit_budget`]); link checks have their own budget (`capture_audit::fetch`).
//! - Charges: the page cap was reserved at creation; a finished audit keeps 1 action per page
//!   audited and gives the rest back; a failed one (nothing could be loaded) gives everything
//!   back.

use std::sync::Arc;
use std::time::Duration;

use capture_audit::checks::PageFacts;
use capture_audit::collect::{
    AXE_RUN_JS, AxeResults, COLLECT_JS, ConsoleMessage, FailedRequest, OBSERVERS_JS, PageCollection, clip, settle_js,
};
use capture_audit::fetch::Hop;
use capture_audit::report::{PageInput, Report, Screenshots};
use capture_audit::robots::user_agent;
use capture_audit::run::{AuditPlan, Progress, run_audit};
use capture_browser::session::{Device, ScreenshotSpec, Session, SessionOptions};
use capture_browser::{BrowserPool, CaptureError, ImageFormat, WaitUntil};
use capture_core::egress::UpstreamProxy;
use capture_core::profile::BrowserState;
use capture_core::{AuditId, ids};
use capture_store::{AuditDone, AuditRow, Task};
use tokio_util::sync::CancellationToken;

use super::claim_loop;
use crate::audits::service::{TaskPayload, pdf_url, report_url};
use crate::audits::types::{AuditCompleted, AuditFailed, AuditReportType, AuditScores};
use crate::blob;
use crate::state::AppState;

/// Claims beyond this many (crashed workers, lost leases) fail the audit for good.
const MAX_CLAIMS: i64 = 3;
/// How long one page may take to load (the `load` event).
pub const PAGE_LOAD_TIMEOUT: Duration = Duration::from_secs(20);
/// Everything one page may take in the browser: load, settle, collection, axe-core, both
/// screenshots (its session ends then, whatever it was doing).
pub const PAGE_BUDGET: Duration = Duration::from_secs(60);
/// The phone the mobile screenshot emulates.
const MOBILE_UA: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) \
    Chrome/124.0.0.0 Mobile Safari/537.36";

/// The audit's deadline: no page starts after it (the report then covers the pages audited
/// so far). A page already started may take up to [`PAGE_BUDGET`] plus its link checks (30 s).
pub fn audit_budget(max_pages: u32) -> Duration {
    Duration::from_secs(30 + 40 * u64::from(max_pages)).min(Duration::from_secs(20 * 60))
}
/// Audits: they load their pages one after another; half the capture slots keep captures flowing.
pub const WORKERS: super::Kind = super::Kind {
    name: "audit",
    runs_on: super::RunsOn::Browser,
    start: |s| {
        Box::pin(async move {
            let n = (s.state.cfg.browser.worker_concurrency / 2).max(1);
            run(s.state.clone(), s.pool(), n, s.stop, s.hard_stop).await
        })
    },
};

/// Run `n` audit loops until `stop` is cancelled; running audits go on until `hard_stop`,
/// then they are handed back to the queue (and start over).
pub async fn run(
    state: AppState,
    pool: Arc<BrowserPool>,
    n: usize,
    stop: CancellationToken,
    hard_stop: CancellationToken,
) {
    let node = ids::random_string(8);
    let mut handles = Vec::new();
    for i in 0..n.max(1) {
        let worker = format!("aud-{node}-{i}");
        let (state, pool, stop, hard_stop) = (state.clone(), pool.clone(), stop.clone(), hard_stop.clone());
        handles.push(tokio::spawn(async move {
            let lease_ms = state.cfg.queue.lease.as_millis() as i64;
            let share = state.cfg.queue.fair_share();
            claim_loop(
                &state,
                "audit",
                &worker,
                lease_ms,
                Some(&share),
                state.wake.of(crate::queues::Queue::Audit),
                &stop,
                |task| process(&state, &pool, &worker, task, &hard_stop),
            )
            .await
        }));
    }
    for h in handles {
        let _ = h.await;
    }
}

async fn process(state: &AppState, pool: &Arc<BrowserPool>, worker: &str, task: Task, hard_stop: &CancellationToken) {
    let audit_id = task.subject_id.clone();
    let fail = |row: Option<AuditRow>, msg: String| {
        let state = state.clone();
        let (tid, w, aid) = (task.id.clone(), worker.to_string(), audit_id.clone());
        async move {
            let event = AuditFailed {
                audit_id: AuditId::from_stored(aid.clone()),
                url: row.as_ref().map(|r| r.url.clone()).unwrap_or_default(),
                report_type: row
                    .as_ref()
                    .and_then(|r| AuditReportType::parse(&r.report_type))
                    .unwrap_or(AuditReportType::SinglePage),
                error: msg.clone(),
            };
            let event = serde_json::to_value(&event).unwrap_or_default();
            match state.store.fail_audit(&tid, &w, &aid, &msg, &event, state.clock.now_ms()).await {
                Ok(true) => state.job_changed(&aid),
                Ok(false) => tracing::warn!(audit = %aid, "lease lost before recording the failure"),
                Err(e) => tracing::error!(audit = %aid, error = %e, "recording an audit failure failed"),
            }
        }
    };
    let row = match state.store.audit(&audit_id).await {
        Ok(Some(r)) => r,
        Ok(None) => return fail(None, "the audit no longer exists".into()).await,
        Err(e) => {
            tracing::error!(error = %e, "loading an audit failed; the lease will expire and it will be retried");
            return;
        }
    };
    if task.attempts > MAX_CLAIMS {
        return fail(Some(row), "the audit was interrupted too many times (worker restarts)".into()).await;
    }
    let payload = match serde_json::from_str::<TaskPayload>(&task.payload) {
        Ok(p) => p,
        Err(e) => return fail(Some(row), format!("corrupt task payload: {e}")).await,
    };
    // A signed-in audit: the profile's state, opened now (a state saved since counts).
    let profile = match &payload.profile {
        Some(id) => match crate::profiles::service::for_job(state, &row.user_id, id).await {
            Ok(s) => Some(Arc::new(s)),
            Err(why) => return fail(Some(row), why).await,
        },
        None => None,
    };
    // The customer's proxy, opened now; the crawl's own requests take a route of the egress
    // proxy through it, the pages their sessions' own.
    let proxy = match &payload.proxy {
        Some(id) => {
            match crate::proxies::service::for_job(state, &row.user_id, id, payload.proxy_member.unwrap_or(0)).await {
                Ok(up) => Some(up),
                Err(why) => return fail(Some(row), why).await,
            }
        }
        None => None,
    };
    let route = match &proxy {
        Some(up) => match pool.egress_route(up.clone()).await {
            Ok(r) => Some(r),
            Err(e) => return fail(Some(row), e.to_string()).await,
        },
        None => None,
    };
    let Some(report_type) = AuditReportType::parse(&row.report_type) else {
        return fail(Some(row), "the audit has an unknown report type".into()).await;
    };
    match state.store.mark_audit_processing(&audit_id, state.clock.now_ms()).await {
        Ok(_) => state.job_changed(&audit_id),
        Err(e) => tracing::error!(error = %e, "marking an audit processing failed"),
    }

    // Keep the lease alive while the audit runs.
    let _lease = super::keep_lease(state, &task.id, worker);

    // Progress is written by a task of its own: the engine's callback cannot wait.
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel::<Progress>();
    let progress_writer = {
        let (st, tid, w, aid) = (state.clone(), task.id.clone(), worker.to_string(), audit_id.clone());
        tokio::spawn(async move {
            while let Some(p) = prx.recv().await {
                let (done, total) = (i64::from(p.pages_done), i64::from(p.pages_total));
                match st.store.audit_progress(&tid, &w, &aid, done, total, st.clock.now_ms()).await {
                    Ok(_) => st.job_changed(&aid),
                    Err(e) => tracing::warn!(audit = %aid, error = %e, "recording progress failed"),
                }
            }
        })
    };

    let ua = user_agent(&state.base_url);
    let max_pages = row.max_pages.clamp(1, i64::from(capture_audit::crawl::MAX_PAGES)) as u32;
    let mut plan = AuditPlan::new(&row.url, report_type.engine(), max_pages, &ua);
    plan.deadline = Some(tokio::time::Instant::now() + audit_budget(max_pages));
    plan.crawl.skip_sign_out = profile.is_some();
    plan.links.skip_sign_out = profile.is_some();
    // Through the pool's egress proxy: it checks every address, literal ones included (the
    // guarded resolver alone never sees a URL whose host is an IP address).
    let client = match crate::egress::via_proxy(
        state.egress.clone(),
        plan.fetch.timeout,
        route.as_ref().map_or_else(|| pool.egress_addr(), capture_browser::egress::EgressRoute::addr),
    )
    .and_then(|b| {
        let b = b.user_agent(ua.clone());
        // The crawl's own requests carry the profile's cookies, as the pages' do.
        match &profile {
            Some(s) => b.cookie_provider(Arc::new(cookie_jar(s))),
            None => b,
        }
        .build()
    }) {
        Ok(c) => c,
        Err(e) => return fail(Some(row), format!("the HTTP client could not be built: {e}")).await,
    };
    let audit = run_audit(
        &client,
        &plan,
        |url| {
            let (state, pool, profile, proxy) = (state.clone(), pool.clone(), profile.clone(), proxy.clone());
            async move { audit_page(&state, &pool, url.as_str(), profile.as_deref(), proxy).await }
        },
        move |p| {
            let _ = ptx.send(p);
        },
    );
    let result = tokio::select! {
        r = audit => r,
        _ = hard_stop.cancelled() => {
            progress_writer.abort();
            match state.store.release_audit(&task.id, worker, &audit_id, state.clock.now_ms()).await {
                Ok(_) => state.job_changed(&audit_id),
                Err(e) => tracing::error!(error = %e, "handing an audit back failed; its lease will expire"),
            }
            tracing::info!(audit = %audit_id, "shutdown: audit handed back to the queue");
            return;
        }
    };
    // Every progress event is written before the outcome.
    let _ = progress_writer.await;
    let report = match result {
        Ok(r) => r,
        Err(e) => return fail(Some(row), format!("the URL cannot be audited: {e}")).await,
    };
    // The start page went to a sign-in form: the profile's session expired.
    if let (Some(id), Some(why)) = (&payload.profile, report.pages.first().and_then(|p| p.error.clone()))
        && why.starts_with("profile_expired:")
    {
        crate::profiles::service::expired(state, id, &audit_id, row.created_at).await;
        return fail(Some(row), why).await;
    }
    // The customer's proxy failed the start page: the audit fails naming it (free).
    if let Some(why) = report.pages.first().and_then(|p| p.error.clone())
        && why.starts_with(capture_core::egress::PROXY_FAILED)
    {
        return fail(Some(row), why).await;
    }
    if let Some(why) = unreachable(&report) {
        return fail(Some(row), why).await;
    }
    // The PDF is made here, while the browser is at hand, so every node can serve it.
    match crate::audits::report_page::render_pdf(state, pool, &report).await {
        Ok(pdf) => crate::audits::report_page::store_pdf(state, &audit_id, pdf).await,
        Err(e) => {
            tracing::warn!(audit = %audit_id, error = %e, "rendering the report's PDF failed; it is made on request")
        }
    }
    complete(state, &task, worker, &row, report_type, &report).await;
}

/// Why nothing could be audited (no page answered at all), if so: the audit then fails and
/// costs nothing. A page answering with an error status is audited (and reported).
fn unreachable(report: &Report) -> Option<String> {
    if report.pages.iter().any(|p| p.status.is_some()) {
        return None;
    }
    Some(match report.pages.first() {
        Some(p) => format!(
            "the site could not be reached: {}",
            p.error.clone().unwrap_or_else(|| "the page did not answer".into())
        ),
        None => "no page could be audited before the audit's deadline".into(),
    })
}

async fn complete(
    state: &AppState,
    task: &Task,
    worker: &str,
    row: &AuditRow,
    report_type: AuditReportType,
    report: &Report,
) {
    let scores = AuditScores {
        performance: report.scores.performance,
        seo: report.scores.seo,
        accessibility: report.scores.accessibility,
        best_practices: report.scores.best_practices,
    };
    let (scores_json, report_json) = match (serde_json::to_string(&scores), serde_json::to_string(report)) {
        (Ok(s), Ok(r)) => (s, r),
        (Err(e), _) | (_, Err(e)) => {
            tracing::error!(audit = %row.id, error = %e, "a report does not serialize");
            return;
        }
    };
    let event = AuditCompleted {
        audit_id: AuditId::from_stored(row.id.clone()),
        url: row.url.clone(),
        report_type,
        pages_audited: report.pages_audited,
        scores,
        critical: report.summary.critical,
        warning: report.summary.warning,
        info: report.summary.info,
        report_url: report_url(state, &row.share_token),
        pdf_url: pdf_url(state, &row.share_token),
    };
    let event = serde_json::to_value(&event).unwrap_or_default();
    let done = AuditDone { pages_audited: i64::from(report.pages_audited), scores: scores_json, report: report_json };
    match state.store.complete_audit(&task.id, worker, &row.id, &done, &event, state.clock.now_ms()).await {
        Ok(true) => state.job_changed(&row.id),
        Ok(false) => tracing::warn!(audit = %row.id, "lease lost before recording the report"),
        Err(e) => tracing::error!(audit = %row.id, error = %e, "recording a report failed"),
    }
}

/// The profile's live cookies for the crawl's own requests.
fn cookie_jar(s: &BrowserState) -> reqwest::cookie::Jar {
    let jar = reqwest::cookie::Jar::default();
    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    for c in s.live_cookies(now) {
        let host = c.domain.trim_start_matches('.');
        let scheme = if c.secure { "https" } else { "http" };
        let Ok(url) = format!("{scheme}://{host}{}", c.path).parse::<url::Url>() else { continue };
        // A leading dot covers subdomains; without one the cookie is the host's alone.
        let domain = if c.domain.starts_with('.') { format!("; Domain={host}") } else { String::new() };
        jar.add_cookie_str(&format!("{}={}; Path={}{domain}", c.name, c.value, c.path), &url);
    }
    jar
}

/// Load one page in a fresh session and gather its facts and screenshots; never fails (a
/// page that cannot be loaded is reported with its error). A browser crash is retried once.
async fn audit_page(
    state: &AppState,
    pool: &BrowserPool,
    url: &str,
    profile: Option<&BrowserState>,
    proxy: Option<UpstreamProxy>,
) -> PageInput {
    let mut last = None;
    for _ in 0..2 {
        match audit_page_once(state, pool, url, profile, proxy.clone()).await {
            Ok(input) => return input,
            Err(e) if e.is_transient() => last = Some(e),
            Err(e) => return failed_page(url, e.to_string()),
        }
    }
    failed_page(url, last.map(|e| e.to_string()).unwrap_or_default())
}

fn failed_page(url: &str, error: String) -> PageInput {
    PageInput {
        facts: PageFacts { url: url.to_owned(), final_url: url.to_owned(), error: Some(error), ..PageFacts::default() },
        screenshots: Screenshots::default(),
    }
}

async fn audit_page_once(
    state: &AppState,
    pool: &BrowserPool,
    url: &str,
    profile: Option<&BrowserState>,
    proxy: Option<UpstreamProxy>,
) -> Result<PageInput, CaptureError> {
    let session = pool
        .open_session(SessionOptions {
            device: Device::desktop(1280, 800),
            init_scripts: vec![OBSERVERS_JS.to_owned()],
            deadline: PAGE_BUDGET,
            slot_timeout: Duration::from_secs(60),
            state: profile.cloned(),
            // The page a visitor sees once its consent pop-up is refused (or hidden), as captures.
            cookie_consent: capture_core::options::CookieConsent::Auto,
            proxy,
            ..SessionOptions::default()
        })
        .await?;
    let r = gather(state, &session, url, profile.is_some()).await;
    session.close().await;
    r
}

/// The bot wall the session's page is (`capture_browser::walls`), after a challenge had a
/// moment (3 s) to clear itself.
async fn wall_of(s: &Session) -> Option<capture_browser::walls::Wall> {
    use capture_browser::walls::{DETECT_JS, Wall};
    let read =
        || async { s.evaluate(DETECT_JS, false, Duration::from_secs(5)).await.ok().and_then(|v| Wall::read(&v)) };
    let wall = read().await?;
    if wall.may_clear() {
        let until = std::time::Instant::now() + Duration::from_secs(3);
        while std::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(300)).await;
            if read().await.is_none() {
                // Cleared: the page it loaded, once settled.
                let _ = s.evaluate(&settle_js(3000, 300), true, Duration::from_secs(5)).await;
                return None;
            }
        }
    }
    Some(wall)
}

async fn gather(state: &AppState, s: &Session, url: &str, signed_in: bool) -> Result<PageInput, CaptureError> {
    const STEP: Duration = Duration::from_secs(15);
    let mut facts = PageFacts { url: url.to_owned(), final_url: url.to_owned(), ..PageFacts::default() };
    let nav = match s.goto(url, WaitUntil::Load, PAGE_LOAD_TIMEOUT).await {
        Ok(n) => n,
        Err(e) if e.is_timeout() => {
            facts.error = Some(format!("the page did not finish loading within {} s", PAGE_LOAD_TIMEOUT.as_secs()));
            return Ok(PageInput { facts, screenshots: Screenshots::default() });
        }
        Err(CaptureError::Navigation(e)) => {
            facts.error = Some(e);
            return Ok(PageInput { facts, screenshots: Screenshots::default() });
        }
        Err(e) => return Err(e),
    };
    facts.status = nav.status;
    facts.final_url = nav.final_url.clone();
    // A signed-in audit sent to a sign-in form: reported, not audited as the page.
    if signed_in
        && let Ok(v) = s.evaluate(capture_core::profile::SIGNED_OUT_JS, false, STEP).await
        && let Some(why) = capture_core::profile::signed_out(url, &v)
    {
        facts.error = Some(why);
        return Ok(PageInput { facts, screenshots: Screenshots::default() });
    }
    // A bot wall instead of the page: reported as blocked (by whom), not audited as the page.
    if let Some(wall) = wall_of(s).await {
        facts.blocked = Some(wall.vendor.clone());
        facts.error = Some(wall.message());
        return Ok(PageInput { facts, screenshots: Screenshots::default() });
    }
    // The consent engine refused the page's pop-up as it loaded; a pop-up no rule knows is
    // hidden now, so the screenshots and the checks see the page, not the banner.
    let _ = s.consent(STEP).await;
    facts.redirects = nav.redirects.iter().map(|r| Hop { url: r.url.clone(), status: r.status }).collect();
    facts.headers = nav.headers.clone();

    // What the page itself measures (a page that throws here is reported without it).
    if s.evaluate(&settle_js(3000, 300), true, STEP).await.is_ok()
        && let Ok(v) = s.evaluate(COLLECT_JS, false, STEP).await
    {
        facts.collection = serde_json::from_value::<PageCollection>(v).ok();
    }
    facts.axe = Some(match state.features.axe().script() {
        Ok(src) => match s.evaluate(src, false, STEP).await {
            Ok(_) => match s.evaluate(AXE_RUN_JS, true, Duration::from_secs(30)).await {
                Ok(v) => serde_json::from_value::<AxeResults>(v).unwrap_or_else(|e| AxeResults {
                    error: Some(format!("axe-core's results did not parse: {e}")),
                    ..AxeResults::default()
                }),
                Err(e) => AxeResults { error: Some(e.to_string()), ..AxeResults::default() },
            },
            Err(e) => AxeResults {
                error: Some(format!("axe-core could not be loaded in the page: {e}")),
                ..AxeResults::default()
            },
        },
        Err(why) => AxeResults { error: Some(why.to_owned()), ..AxeResults::default() },
    });

    // Console errors and failed sub-requests, from DevTools.
    for c in s.console().await?.iter().filter(|c| c.is_error()) {
        facts.console_errors.push(ConsoleMessage {
            source: if c.level == "exception" { "exception".into() } else { "console".into() },
            text: clip(c.text.lines().next().unwrap_or(&c.text), 500),
            url: c.url.clone(),
            line: c.line.map(|l| l as u32),
        });
    }
    let document_urls: Vec<&str> = std::iter::once(url)
        .chain(std::iter::once(nav.final_url.as_str()))
        .chain(nav.redirects.iter().map(|r| r.url.as_str()))
        .collect();
    for r in s.network().await?.iter().filter(|r| r.failed()) {
        if r.resource_type == "Document" && document_urls.contains(&r.url.as_str()) {
            continue;
        }
        facts.failed_requests.push(FailedRequest {
            url: clip(&r.url, 500),
            resource_type: Some(r.resource_type.clone()),
            status: r.status.filter(|s| *s >= 400),
            error: if r.status.is_some_and(|s| s >= 400) { None } else { r.failure.clone() },
        });
    }

    // The screenshots: desktop as loaded, then the phone (its user agent needs a reload).
    let mut shots = Screenshots::default();
    let spec = |q| ScreenshotSpec { format: ImageFormat::Jpeg, quality: Some(q), ..ScreenshotSpec::default() };
    if let Ok(img) = s.screenshot(spec(70), STEP).await {
        shots.desktop_url = store_shot(state, img.bytes).await;
    }
    let phone = Device { user_agent: Some(MOBILE_UA.into()), ..Device::phone(390, 844, 3.0) };
    if s.set_device(phone, STEP).await.is_ok() {
        let _ = s.reload(PAGE_LOAD_TIMEOUT.min(Duration::from_secs(10))).await;
        if let Ok(img) = s.screenshot(spec(60), STEP).await {
            shots.mobile_url = store_shot(state, img.bytes).await;
        }
    }
    Ok(PageInput { facts, screenshots: shots })
}

/// Store a screenshot; its lasting URL (`/files/…`) goes in the report.
async fn store_shot(state: &AppState, bytes: Vec<u8>) -> Option<String> {
    let name = blob::new_name("jpeg");
    match state.blobs.put(&name, bytes, "image/jpeg").await {
        Ok(()) => Some(state.lasting_file_url(&name)),
        Err(e) => {
            tracing::warn!(error = %e, "storing an audit screenshot failed");
            None
        }
    }
}
