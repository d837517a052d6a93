//! Automation sessions: live runs this node holds, with the browser session the tools
//! drive. Start (create the run, spend its token here, open the browser session, record,
//! load the first page), look up (the caller's, on this node, touched so it is not idle),
//! end (on request, at the timeout, when idle, on `stop_run`, at shutdown), finalised like
//! every run.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capture_browser::WaitUntil;
use capture_browser::session::{ColorScheme, DialogPolicy, Geolocation, NetworkConditions};
use capture_core::ErrorCode;
use capture_core::time::iso;
use capture_core::{EndReason, RunId, RunKind, RunStatus};
use rmcp::model::CallToolResult;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::auth::Account;
use crate::error::{Error, Result};
use crate::http::validated::Checked;
use crate::runs::service as runs;
use crate::runs::session::{self, Hold, Opened, Outcome, Video, budget, finalize, session_options};
use crate::runs::types::{DeviceIn, RunIn, RunSpec, bounds};
use crate::state::AppState;
use crate::tool::{Cx, Reply, invalid, refused};

mod devices;
mod human;
pub mod registry;

pub use devices::{
    DeviceKind, ListDevicesIn, Orientation, RotateIn, SetDeviceIn, device_json, device_of, list_devices, presets,
    session_rotate, session_set_device,
};
pub use human::{LiveViewIn, RequestHumanIn, request_human, session_live_view};
use registry::Starting;
pub use registry::{Live, Registry};

/// How long the first page may take to load before the session is handed over anyway.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Default whole time of a session.
const DEFAULT_SESSION_MS: u64 = 300_000;
/// Shortest idle timeout a session may ask for.
const MIN_IDLE_MS: u64 = 1_000;

/// A session as listed.
pub fn view(l: &Live) -> Value {
    let d = l.device.lock().unwrap().clone();
    json!({
        "sessionId": l.id,
        "device": device_json(&d, l.preset.lock().unwrap().as_deref()),
        "startedAt": iso(l.started_at),
        "expiresAt": iso(l.expires_at),
        "idleTimeoutMs": l.idle.as_millis() as u64,
        "idleForMs": l.last_used.lock().unwrap().elapsed().as_millis() as u64,
        "recordVideo": l.record_video,
        "shared": l.shared,
    })
}

/// Whether a session started by OAuth client `client` (`shared` or not) is the caller's to
/// see and use: the account's own sessions, of the same client unless shared. A caller
/// without a client (not over OAuth) and a session without one see each other.
pub(crate) fn visible(shared: bool, client: &Option<String>, account: &Account) -> bool {
    shared || client.is_none() || account.client_id.is_none() || *client == account.client_id
}

/// On shutdown (the shutdown token already ended every session): wait up to `limit` for
/// them to be finalised (video, event).
pub async fn drain(state: &AppState, limit: Duration) {
    let tasks = &state.cluster.sessions.tasks;
    tasks.close();
    if tokio::time::timeout(limit, tasks.wait()).await.is_err() {
        tracing::warn!("automation sessions still finalising at shutdown; the sweep of another node ends them");
    }
}

/// A session in use by a tool call: not idle until dropped.
pub struct Held(Arc<Live>);

impl std::ops::Deref for Held {
    type Target = Live;
    fn deref(&self) -> &Live {
        &self.0
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The caller's session `id` held here, marked as used now. Errors an agent can act on:
/// `SESSION_EXPIRED` for one that ended, `NOT_FOUND` for none of the caller's.
pub async fn live(cx: &Cx<'_>, id: &str) -> Result<Held> {
    let id = id.trim();
    let found = cx.state.cluster.sessions.live.lock().unwrap().get(id).cloned();
    if let Some(l) = found.filter(|l| l.user_id == cx.account.user.id && visible(l.shared, &l.client_id, cx.account)) {
        if l.session.is_closed() {
            return Err(refused(
                ErrorCode::SessionExpired,
                format!("session expired: {} ({})", id, l.session.end_reason().unwrap_or_else(|| "it ended".into())),
            ));
        }
        l.touch();
        l.busy.fetch_add(1, Ordering::SeqCst);
        return Ok(Held(l));
    }
    let Some(rid) = RunId::parse(id) else {
        return Err(refused(
            ErrorCode::NotFound,
            format!("no session {id}: session ids look like run_… (session_start returns one)"),
        ));
    };
    let row = cx.state.store.run_of(&cx.account.user.id, rid.as_str()).await.map_err(Error::from)?;
    match row.filter(|r| visible(r.shared, &r.client_id, cx.account)) {
        None => Err(refused(ErrorCode::NotFound, format!("no session {id}"))),
        Some(row) if row.status.is_final() => Err(refused(
            ErrorCode::SessionExpired,
            format!(
                "session expired: {id} ended ({}, {}); start a new one with session_start",
                row.status,
                row.end_reason.map_or("ended", EndReason::as_str)
            ),
        )),
        Some(row)
            if row.kind == RunKind::Live && row.worker.as_deref().is_some_and(|w| w != cx.state.cluster.node_id()) =>
        {
            Err(refused(
                ErrorCode::SessionElsewhere,
                format!("session {id} is held by another node of the service; send its tool calls to that node"),
            ))
        }
        Some(_) => Err(refused(
            ErrorCode::NotFound,
            format!("{id} is not an automation session (a run driven by a script or a DevTools client)"),
        )),
    }
}

/// `prefers-color-scheme`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Scheme {
    Light,
    Dark,
    NoPreference,
}

impl From<Scheme> for ColorScheme {
    fn from(s: Scheme) -> ColorScheme {
        match s {
            Scheme::Light => ColorScheme::Light,
            Scheme::Dark => ColorScheme::Dark,
            Scheme::NoPreference => ColorScheme::NoPreference,
        }
    }
}

/// A network profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkProfile {
    /// No throttling.
    Online,
    /// No network at all (`navigator.onLine` is false, requests fail).
    Offline,
    /// 400 ms latency, 50 kB/s each way.
    #[serde(rename = "slow-3g")]
    Slow3g,
    /// 150 ms latency, ~200 kB/s down.
    #[serde(rename = "fast-3g")]
    Fast3g,
}

impl NetworkProfile {
    pub fn conditions(self) -> NetworkConditions {
        match self {
            NetworkProfile::Online => NetworkConditions::default(),
            NetworkProfile::Offline => NetworkConditions::offline(),
            NetworkProfile::Slow3g => NetworkConditions::slow_3g(),
            NetworkProfile::Fast3g => NetworkConditions::fast_3g(),
        }
    }
}

/// What happens to alert, confirm and prompt dialogs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Dialogs {
    /// Stay open until handle_dialog (other tools fail with DIALOG_OPEN meanwhile).
    Manual,
    /// Accepted at once.
    Accept,
    /// Dismissed at once.
    Dismiss,
}

/// A position.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GeoIn {
    #[schemars(range(min = -90.0, max = 90.0))]
    pub latitude: f64,
    #[schemars(range(min = -180.0, max = 180.0))]
    pub longitude: f64,
    /// Metres (default 20).
    #[schemars(range(min = 0.0, max = 100000.0))]
    pub accuracy: Option<f64>,
}

impl GeoIn {
    pub fn check(self) -> Result<Geolocation> {
        if !(-90.0..=90.0).contains(&self.latitude) {
            return Err(invalid("latitude", "must be from -90 to 90"));
        }
        if !(-180.0..=180.0).contains(&self.longitude) {
            return Err(invalid("longitude", "must be from -180 to 180"));
        }
        let accuracy = self.accuracy.unwrap_or(20.0);
        if !(0.0..=100_000.0).contains(&accuracy) {
            return Err(invalid("accuracy", "must be from 0 to 100000 metres"));
        }
        Ok(Geolocation { latitude: self.latitude, longitude: self.longitude, accuracy })
    }
}

/// Start a browser session on an emulated device and open url in it. Returns sessionId, which every other automation tool takes. The session is a live run (see get_run): it records a video (videoUrl once ended), costs 1 action per started minute (reserved for timeoutMs up front, the unused rest given back), ends on session_end, after timeoutMs, or when no tool used it for idleTimeoutMs. Next: snapshot to see the page with element refs, then tap/type/fill.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionStartIn {
    /// The first page (http or https).
    #[schemars(length(max = bounds::URL_MAX), extend("examples" = ["https://example.com"]))]
    pub url: String,
    /// A preset name from list_devices (iphone-15, pixel-8, galaxy-s23, ipad-mini, desktop-1280…; default desktop-1280) or {viewport: {width, height}, deviceScaleFactor, touch, mobile, userAgent}.
    pub device: Option<DeviceIn>,
    /// How the device is held (default portrait; a preset's viewport is its portrait one).
    pub orientation: Option<Orientation>,
    /// navigator.language, Intl and Accept-Language, e.g. de-DE.
    #[schemars(length(max = 35))]
    pub locale: Option<String>,
    /// IANA time zone, e.g. Europe/Berlin.
    #[schemars(length(max = 64))]
    pub timezone: Option<String>,
    /// Emulated position (the geolocation permission is granted).
    pub geolocation: Option<GeoIn>,
    /// prefers-color-scheme.
    pub color_scheme: Option<Scheme>,
    /// Network conditions from the start (default online).
    pub network: Option<NetworkProfile>,
    /// Alert/confirm/prompt handling (default manual: they wait for handle_dialog).
    pub dialogs: Option<Dialogs>,
    /// Record the session as an MP4 (default true).
    pub record_video: Option<bool>,
    /// The session's whole time in ms (default 300000, at most 1800000).
    #[schemars(range(min = 60_000, max = bounds::TIMEOUT.1))]
    pub timeout_ms: Option<u64>,
    /// End the session when no tool used it for this long (default and maximum: the service's setting, 120000 unless configured).
    #[schemars(range(min = 1_000))]
    pub idle_timeout_ms: Option<u64>,
    /// Let every MCP client of this account see and use the session (default false: only the client that starts it, so two agents of one account never drive each other's pages).
    pub shared: Option<bool>,
    /// Start signed in: one of your browser profiles (id or name, see profile_list); its cookies and site storage are in place before url loads.
    #[schemars(length(min = 1, max = 100))]
    pub profile: Option<String>,
    /// What every page does with a cookie-consent pop-up (default auto: refused where a rule knows the platform, else hidden; reject, accept, hide, or none to leave it for you to click). The result says what happened on the first page (consent: {cmp, action}).
    pub cookie_consent: Option<capture_core::options::CookieConsent>,
    /// Leave through one of your proxies (id or name, see POST /v1/proxies): every connection of the session goes through it, behind the service's egress guard. A proxy that fails makes navigations fail with PROXY_FAILED naming it.
    #[schemars(length(min = 1, max = 100))]
    pub proxy: Option<String>,
    /// For a sticky pool: the key that picks its member (default: the url's host).
    #[schemars(length(min = 1, max = 200))]
    pub proxy_sticky_key: Option<String>,
}

fn short_text(field: &str, v: &Option<String>, max: usize) -> Result<()> {
    if let Some(s) = v
        && (s.trim().is_empty() || s.len() > max || s.chars().any(|c| c.is_control() || c == ' '))
    {
        return Err(invalid(field, format!("must be a non-empty name of at most {max} characters")));
    }
    Ok(())
}

pub async fn session_start(cx: &Cx<'_>, a: SessionStartIn) -> Result<Reply> {
    let state = cx.state;
    let Some(pool) = state.browser.pool.clone() else {
        return Err(Error::Refused(
            ErrorCode::ServiceUnavailable,
            "this node runs no browser: automation sessions are served by nodes with the worker role".into(),
        ));
    };
    short_text("locale", &a.locale, 35)?;
    short_text("timezone", &a.timezone, 64)?;
    let geolocation = a.geolocation.map(GeoIn::check).transpose()?;
    let max_idle = state.cfg.runs.automation_idle_timeout.as_millis() as u64;
    let idle_ms = a.idle_timeout_ms.unwrap_or(max_idle);
    if !(MIN_IDLE_MS..=max_idle.max(MIN_IDLE_MS)).contains(&idle_ms) {
        return Err(invalid("idleTimeoutMs", format!("must be from {MIN_IDLE_MS} to {max_idle}")));
    }
    let timeout_ms = a.timeout_ms.unwrap_or(DEFAULT_SESSION_MS);
    if !(60_000..=bounds::TIMEOUT.1).contains(&timeout_ms) {
        return Err(invalid("timeoutMs", format!("must be from 60000 to {}", bounds::TIMEOUT.1)));
    }
    // Counted with the sessions being started, so two starts at once cannot both pass.
    let starting = Starting::new(&state.cluster.sessions, &cx.account.user.id);
    if let Some(max) = state.cfg.runs.automation_max_sessions {
        // The account's live sessions on the other nodes count too (read before this node's).
        let elsewhere = state
            .store
            .live_runs_elsewhere(&cx.account.user.id, state.cluster.node_id())
            .await
            .map_err(Error::from)?
            .len();
        let open = {
            let live = state.cluster.sessions.live.lock().unwrap();
            live.values().filter(|l| l.user_id == cx.account.user.id && !l.session.is_closed()).count()
                + state.cluster.sessions.starting.lock().unwrap().get(&cx.account.user.id).copied().unwrap_or(1)
                - 1
                + elsewhere
        } as i64;
        if open >= max {
            return Err(Error::TooManySessions { active: open, limit: max });
        }
    }
    let spec = RunIn {
        start_url: a.url.trim().to_string(),
        device: a.device.clone(),
        record_video: a.record_video,
        timeout_ms: Some(timeout_ms),
        steps: None,
        live: Some(true),
        profile: a.profile.clone(),
        save_profile: None,
        cookie_consent: a.cookie_consent,
        proxy: a.proxy.clone(),
        proxy_sticky_key: a.proxy_sticky_key.clone(),
    }
    .check()
    .map(|spec| RunSpec { shared: a.shared.unwrap_or(false), ..spec })
    .map_err(|e| {
        // The run's field names, as this tool calls them.
        let field = if e.field == "startUrl" { "url".to_string() } else { e.field.clone() };
        invalid(&field, e.reason)
    })?;
    let created = runs::create(state, cx.account, &spec, None).await?;
    let token = created
        .run
        .connect_url
        .as_deref()
        .and_then(|u| u.split("token=").nth(1))
        .map(str::to_string)
        .ok_or_else(|| Error::internal("a live run was created without its connect token"))?;
    let hash = crate::crypto::sha256_hex(token.as_bytes());
    let lease_until = state.clock.now_ms() + state.cfg.runs.lease.as_millis() as i64;
    let id = created.run.id.to_string();
    let row = state
        .store
        .claim_live_run(&id, &hash, state.cluster.node_id(), lease_until, state.clock.now_ms())
        .await
        .map_err(Error::from)?
        .ok_or_else(|| Error::internal("a fresh live run could not be claimed"))?;
    state.job_changed(&row.id);
    let (budget, cut_by_actions) = budget(&row);
    let hold = Hold::start(state, &row.id, state.cluster.node_id());
    let mut opts = session_options(&row, budget);
    let device = device_of(&spec.device, a.orientation);
    opts.device = device.clone();
    opts.locale = a.locale.clone();
    opts.timezone = a.timezone.clone();
    opts.geolocation = geolocation;
    opts.color_scheme = a.color_scheme.map(Into::into);
    opts.dialogs = match a.dialogs.unwrap_or(Dialogs::Manual) {
        Dialogs::Manual => DialogPolicy::Manual,
        Dialogs::Accept => DialogPolicy::Accept,
        Dialogs::Dismiss => DialogPolicy::Dismiss,
    };
    let Opened { session, started, video, video_err } = session::open(state, &pool, &row, opts, budget, None)
        .await
        .map_err(|e| refused(ErrorCode::BrowserFailed, e))?;
    // A phone's foreground tab has focus: the clipboard and focus handlers work as there.
    let _ = session.set_focus_emulation(true, Duration::from_secs(5)).await;
    if let Some(n) = a.network {
        let _ = session.set_network(n.conditions(), Duration::from_secs(5)).await;
    }
    let nav = session.goto(&row.start_url, WaitUntil::Load, START_TIMEOUT).await;
    let consent = match &nav {
        Ok(_) => session.consent(Duration::from_secs(5)).await.ok().flatten(),
        Err(_) => None,
    };
    let started_at = row.started_at.unwrap_or_else(|| state.clock.now_ms());
    let live = Arc::new(Live {
        id: row.id.clone(),
        user_id: row.user_id.clone(),
        client_id: row.client_id.clone(),
        shared: row.shared,
        session: session.clone(),
        device: Mutex::new(device.clone()),
        preset: Mutex::new(spec.device.preset.clone()),
        started_at,
        expires_at: started_at + budget.as_millis() as i64,
        idle: Duration::from_millis(idle_ms),
        record_video: row.record_video,
        granted: Mutex::new(geolocation.iter().map(|_| "geolocation".to_string()).collect()),
        snapshots: Mutex::new(HashMap::new()),
        last_used: Mutex::new(Instant::now()),
        busy: AtomicUsize::new(0),
        end: CancellationToken::new(),
        finished: CancellationToken::new(),
    });
    state.cluster.sessions.live.lock().unwrap().insert(row.id.clone(), live.clone());
    drop(starting);
    state.cluster.sessions.tasks.spawn(supervise(
        state.clone(),
        live.clone(),
        row,
        hold,
        started,
        video,
        video_err,
        budget,
        cut_by_actions,
    ));
    let mut data = view(&live);
    let text;
    match nav {
        Ok(n) => {
            text = format!(
                "Session {} started on {} ({}×{}); {} loaded (HTTP {}), title {:?}. Call snapshot to see its elements.",
                live.id,
                spec.device.preset.as_deref().unwrap_or("a custom device"),
                device.width,
                device.height,
                n.final_url,
                n.status.map_or("-".into(), |s| s.to_string()),
                n.title
            );
            data["url"] = json!(n.final_url);
            data["title"] = json!(n.title);
            data["status"] = json!(n.status);
            if let Some(c) = &consent {
                data["consent"] = json!(c);
            }
        }
        Err(e) => {
            let e = Error::from(e);
            text = format!(
                "Session {} started, but its first page did not load ({}: {}); navigate elsewhere or end it.",
                live.id,
                e.code().as_str(),
                e
            );
            data["loadError"] = json!({"code": e.code(), "error": e.to_string()});
        }
    }
    Ok(Reply::data(data).with_text(text))
}

/// Hold the session until it ends for any reason, then finalise its run.
#[allow(clippy::too_many_arguments)]
async fn supervise(
    state: AppState,
    live: Arc<Live>,
    row: capture_store::RunRow,
    hold: Hold,
    started: Instant,
    video: Option<Video>,
    video_err: Option<String>,
    budget: Duration,
    cut_by_actions: bool,
) {
    let idle = async {
        loop {
            tokio::time::sleep(Duration::from_millis(250)).await;
            if live.idle() {
                return;
            }
        }
    };
    let done = |status, reason| Outcome { status, reason, error: None, finalization_error: None };
    let outcome = tokio::select! {
        _ = live.end.cancelled() => done(RunStatus::Completed, EndReason::Finished),
        _ = idle => done(RunStatus::Completed, EndReason::Idle),
        _ = tokio::time::sleep(budget) => if cut_by_actions { done(RunStatus::Stopped, EndReason::Quota) } else { done(RunStatus::Completed, EndReason::Timeout) },
        _ = hold.stop.cancelled() => done(RunStatus::Stopped, EndReason::Stopped),
        _ = live.session.ended() => Outcome {
            status: RunStatus::Failed,
            reason: EndReason::BrowserFailed,
            error: None,
            finalization_error: Some(format!(
                "the browser session ended: {}",
                live.session.end_reason().unwrap_or_default()
            )),
        },
        _ = hold.lost.cancelled() => {
            state.cluster.sessions.live.lock().unwrap().remove(&live.id);
            live.session.close().await;
            live.finished.cancel();
            return;
        }
        _ = state.shutdown.cancelled() => Outcome {
            status: RunStatus::Failed,
            reason: EndReason::Shutdown,
            error: None,
            finalization_error: Some("the service shut down during the session".into()),
        },
    };
    // No more tool calls from here on: they learn the session expired.
    state.cluster.sessions.live.lock().unwrap().remove(&live.id);
    // A dialog left open would keep the final page from being read.
    if let Ok(Some(_)) = live.session.open_dialog().await {
        let _ = live.session.handle_dialog(false, None, Duration::from_secs(5)).await;
    }
    let outcome = Outcome { finalization_error: outcome.finalization_error.or(video_err), ..outcome };
    finalize(&state, &live.session, &row, started, video, outcome, None, None).await;
    drop(hold);
    live.finished.cancel();
}

/// List this account's open automation sessions on this service node: sessionId, device, when each started and expires, how long it has been idle.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionListIn {}

/// Whether this node holds session `id` (ended or not).
pub fn held_here(state: &AppState, id: &str) -> bool {
    state.cluster.sessions.live.lock().unwrap().contains_key(id)
}

/// `session_list`'s answer from this node, with the account's sessions held by the other
/// nodes added (each asked through the internal channel); a node that cannot be reached
/// is named in `unreachable` rather than failing the list.
pub async fn with_other_nodes(state: &AppState, account: &Account, mut out: CallToolResult) -> CallToolResult {
    if out.is_error == Some(true) {
        return out;
    }
    let here = state.cluster.node_id();
    let Ok(rows) = state.store.live_runs_elsewhere(&account.user.id, here).await else { return out };
    let mut workers: Vec<String> = rows.into_iter().filter_map(|r| r.worker).collect();
    workers.sort();
    workers.dedup();
    if workers.is_empty() {
        return out;
    }
    let mut sessions: Vec<Value> =
        out.structured_content.as_ref().and_then(|v| v["sessions"].as_array().cloned()).unwrap_or_default();
    let mut unreachable = Vec::new();
    for w in workers {
        match crate::cluster::forward(state, &w, account, "session_list", &Default::default()).await {
            Ok(Some(r)) if r.is_error != Some(true) => {
                let theirs = r.structured_content.as_ref().and_then(|v| v["sessions"].as_array().cloned());
                sessions.extend(theirs.unwrap_or_default());
            }
            Ok(_) | Err(_) => unreachable.push(w),
        }
    }
    sessions.sort_by(|a, b| a["startedAt"].as_str().cmp(&b["startedAt"].as_str()));
    let mut data = json!({"sessions": sessions});
    if !unreachable.is_empty() {
        data["unreachableNodes"] = json!(unreachable);
    }
    let text = format!("{} open session(s)", data["sessions"].as_array().map_or(0, Vec::len));
    out.content = vec![rmcp::model::ContentBlock::text(text)];
    out.structured_content = Some(data);
    out
}

pub async fn session_list(cx: &Cx<'_>, _a: SessionListIn) -> Result<Reply> {
    let mut mine: Vec<Arc<Live>> = cx
        .state
        .cluster
        .sessions
        .live
        .lock()
        .unwrap()
        .values()
        .filter(|l| l.user_id == cx.account.user.id && visible(l.shared, &l.client_id, cx.account))
        .cloned()
        .collect();
    mine.sort_by_key(|l| l.started_at);
    let data: Vec<Value> = mine.iter().map(|l| view(l)).collect();
    let text = format!("{} open session(s)", data.len());
    Ok(Reply::data(json!({"sessions": data})).with_text(text))
}

/// End a browser session: the page is closed, the video encoded and stored, and the run finalised (run.completed with videoUrl, console and network error counts, the minutes charged). Returns the run, with videoUrl. Tools called with this sessionId afterwards fail with SESSION_EXPIRED.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionEndIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Before ending, save the session's cookies, localStorage and IndexedDB into this profile (id or name; a new name makes a new profile), so later captures, audits and sessions can start signed in with profile.
    #[schemars(length(min = 1, max = 100))]
    pub save_profile: Option<String>,
}

pub async fn session_end(cx: &Cx<'_>, a: SessionEndIn) -> Result<Reply> {
    let l = live(cx, &a.session_id).await?;
    let saved = match a.save_profile.as_deref().map(str::trim) {
        Some(target) => {
            let s = l.session.storage_state(Duration::from_secs(20)).await?;
            Some(crate::profiles::service::save(cx.state, &cx.account.user.id, target, &s, &l.id, "saveProfile").await?)
        }
        None => None,
    };
    l.end.cancel();
    // Encoding the video takes a while on a busy machine; the run says how it ended.
    let _ = tokio::time::timeout(Duration::from_secs(90), l.finished.cancelled()).await;
    let id = RunId::parse(&l.id).ok_or_else(|| Error::not_found(RunId::NOUN))?;
    let run = runs::get(cx.state, cx.account, &id).await?;
    let mut text = format!(
        "Session {} ended ({}, {}); video: {}",
        run.id,
        run.status,
        run.end_reason.as_deref().unwrap_or("-"),
        run.video_url.as_deref().unwrap_or("none")
    );
    let mut data = serde_json::to_value(&run).map_err(Error::internal)?;
    if let Some(p) = saved {
        text.push_str(&format!(
            "; saved {} cookies and {} origins' storage in the profile '{}' ({}): start with profile: \"{}\" to be signed in",
            p.summary.cookies,
            p.summary.origins.len(),
            p.name,
            p.id,
            p.name
        ));
        data["savedProfile"] = serde_json::to_value(&p).map_err(Error::internal)?;
    }
    Ok(Reply::data(data).with_text(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::types::device_spec;

    #[test]
    fn at_least_twenty_phones_and_tablets_with_real_metrics() {
        let all = presets();
        let handheld: Vec<&Value> = all.iter().filter(|d| d["kind"] != json!("desktop")).collect();
        assert!(handheld.len() >= 20, "{}", handheld.len());
        for d in &handheld {
            assert_eq!(d["touch"], json!(true), "{d}");
            assert!(
                d["userAgent"]
                    .as_str()
                    .is_some_and(|u| u.contains("Mobile") || u.contains("Android") || u.contains("Silk")),
                "{d}"
            );
            let (w, h) = (d["width"].as_u64().unwrap(), d["height"].as_u64().unwrap());
            assert!(w < h, "presets are portrait: {d}");
            assert!(d["deviceScaleFactor"].as_f64().unwrap() >= 1.5, "{d}");
        }
        let names: std::collections::HashSet<&str> = all.iter().filter_map(|d| d["name"].as_str()).collect();
        assert_eq!(names.len(), all.len(), "names are unique");
        assert!(all.iter().filter(|d| d["kind"] == json!("tablet")).count() >= 4);
        // Every preset is accepted by the runs' device parser too.
        for n in names {
            assert!(device_spec(Some(&DeviceIn::Preset(n.into()))).is_ok(), "{n}");
        }
    }

    #[test]
    fn orientation_turns_the_preset() {
        let spec = device_spec(Some(&DeviceIn::Preset("iphone-15".into()))).unwrap();
        let p = device_of(&spec, None);
        assert_eq!((p.width, p.height, p.landscape, p.touch), (393, 852, false, true));
        let l = device_of(&spec, Some(Orientation::Landscape));
        assert_eq!((l.width, l.height, l.landscape), (852, 393, true));
        assert_eq!(device_of(&spec, Some(Orientation::Portrait)), p);
        assert_eq!(device_json(&l, Some("iphone-15"))["orientation"], json!("landscape"));
    }
}
