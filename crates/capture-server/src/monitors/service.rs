//! Monitors, scoped to the calling account: create, list, read, change, pause and resume,
//! delete, check now, the history of checks and accepting a check as the baseline. Plain async
//! fns shared by the REST handlers, the MCP tools and the website; the scheduler's side (due
//! runs started, ended captures compared) is [`super::check`].

use capture_core::monitor::{Schedule, ScheduleIn};
use capture_core::options::ScreenshotIn;
use capture_core::time::iso;
use capture_core::{ErrorCode, FieldError, MonitorCheckId, MonitorId, Plan, ScreenshotId};
use capture_store::{MonitorCheckRow, MonitorRow};
use serde_json::Value;

use super::settings::{check_options, open_capture, schedule, seal_capture, stored_schedule};
use super::types::{
    BaselineMode, CompareMode, Monitor, MonitorCheck, MonitorCheckList, MonitorList, Region, ValidMonitor,
};
use crate::auth::Account;
use crate::error::{Error, Result};
use crate::paging::{ListQuery, Window};
use crate::state::AppState;

/// The capture options as shown: secret values hidden.
fn shown_capture(state: &AppState, stored: &str) -> Value {
    let Ok(c) = open_capture(state, stored) else { return Value::Object(Default::default()) };
    let mut v = serde_json::to_value(&c).unwrap_or_default();
    if let Some(h) = v.get_mut("headers").and_then(Value::as_object_mut) {
        for val in h.values_mut() {
            *val = Value::from("••••");
        }
    }
    if let Some(list) = v.get_mut("cookies").and_then(Value::as_array_mut) {
        for c in list {
            if let Some(o) = c.as_object_mut() {
                o.insert("value".into(), Value::from("••••"));
            }
        }
    }
    if let Some(a) = v.get_mut("httpAuth").and_then(Value::as_object_mut) {
        a.insert("password".into(), Value::from("••••"));
    }
    v
}

fn default_name(url: &str) -> String {
    let name = match url::Url::parse(url) {
        Ok(u) => format!("{}{}", u.host_str().unwrap_or(""), u.path().trim_end_matches('/')),
        Err(_) => url.to_owned(),
    };
    name.chars().take(super::types::NAME_MAX).collect()
}

/// The URL may be captured from here (the egress guard's rules, at create as at capture).
fn check_egress(state: &AppState, url: &str) -> std::result::Result<(), FieldError> {
    let u = url::Url::parse(url).map_err(|_| FieldError::new("url", "is not a URL"))?;
    crate::egress::check_url(&u, &state.egress)
        .map_err(|why| FieldError::new("url", format!("is not a page this service may capture ({why})")))
}

/// A check as shown.
pub async fn check_view(state: &AppState, c: &MonitorCheckRow, baseline: Option<&str>) -> MonitorCheck {
    let url = |k: &Option<String>| {
        let k = k.clone();
        async move {
            match k {
                Some(k) => Some(state.file_url(&k).await),
                None => None,
            }
        }
    };
    MonitorCheck {
        id: MonitorCheckId::from_stored(c.id.clone()),
        monitor_id: MonitorId::from_stored(c.monitor_id.clone()),
        status: c.status.clone(),
        diff_ratio: c.diff_ratio,
        changed_regions: c
            .regions
            .as_deref()
            .and_then(|r| serde_json::from_str::<Vec<Region>>(r).ok())
            .unwrap_or_default(),
        diff_url: url(&c.diff_key).await,
        image_url: url(&c.image_key).await,
        baseline_image_url: url(&c.baseline_key).await,
        text_diff: c.text_diff.clone(),
        screenshot_id: c.screenshot_id.clone().map(ScreenshotId::from_stored),
        error: c.error.clone(),
        is_baseline: baseline == Some(c.id.as_str()),
        created_at: iso(c.created_at),
        completed_at: c.completed_at.map(iso),
    }
}

/// A monitor as shown, with its latest check.
pub async fn view(state: &AppState, m: &MonitorRow) -> Result<Monitor> {
    let last = state.store.monitor_checks(&m.user_id, &m.id, None, 1).await?;
    Ok(shown(state, m, last.first()).await)
}

/// A monitor as shown, given its latest check (None: it has none yet).
async fn shown(state: &AppState, m: &MonitorRow, last: Option<&MonitorCheckRow>) -> Monitor {
    let last_check = match last {
        Some(c) => Some(check_view(state, c, m.baseline_check_id.as_deref()).await),
        None => None,
    };
    Monitor {
        id: MonitorId::from_stored(m.id.clone()),
        name: m.name.clone(),
        url: m.url.clone(),
        status: m.status.clone(),
        schedule: serde_json::from_str(&m.schedule).unwrap_or(ScheduleIn { every: None, cron: None, timezone: None }),
        capture: shown_capture(state, &m.capture),
        compare: CompareMode::parse(&m.compare),
        threshold: m.threshold,
        ignore_selectors: serde_json::from_str(&m.ignore_selectors).unwrap_or_default(),
        notify: serde_json::from_str(&m.notify).unwrap_or_default(),
        baseline: BaselineMode::parse(&m.baseline_mode),
        baseline_check_id: m.baseline_check_id.clone().map(MonitorCheckId::from_stored),
        last_check,
        next_run_at: m.next_run_at.map(iso),
        failures_in_a_row: m.failures,
        created_at: iso(m.created_at),
        updated_at: iso(m.updated_at),
    }
}

/// How many monitors the account's plan allows (None: an administrator, unbounded).
fn plan_bound(state: &AppState, account: &Account) -> Option<i64> {
    if account.is_admin {
        return None;
    }
    let plan = Plan::parse(&account.user.plan).unwrap_or(Plan::Free);
    Some(state.cfg.accounts.plan_monitors.limit(plan))
}

/// Check what a monitor is made of against the service: its schedule, URL, capture options and
/// profile.
async fn checked(
    state: &AppState,
    account: &Account,
    url: &str,
    schedule_in: &ScheduleIn,
    capture: &ScreenshotIn,
    compare: CompareMode,
    ignore: &[String],
) -> Result<Schedule> {
    let s = schedule(state, schedule_in).map_err(Error::Invalid)?;
    check_egress(state, url).map_err(Error::Invalid)?;
    check_options(capture, url, compare, ignore).map_err(Error::Invalid)?;
    if let Some(p) = &capture.profile {
        crate::profiles::service::resolve(state, account, p, "capture.profile").await?;
    }
    if let Some(t) = &capture.storage {
        crate::storage::service::require(state, account, &t.destination).await?;
    }
    Ok(s)
}

/// A new monitor: checked, bounded by the plan, and due at once (its first check makes the
/// baseline) unless created paused.
pub async fn create(state: &AppState, account: &Account, v: ValidMonitor) -> Result<Monitor> {
    let url = v.url.ok_or_else(|| Error::Invalid(FieldError::new("url", "is required")))?;
    let schedule_in = v.schedule.ok_or_else(|| Error::Invalid(FieldError::new("schedule", "is required")))?;
    let capture = v.capture.unwrap_or_default();
    let compare = v.compare.unwrap_or_default();
    let ignore = v.ignore_selectors.unwrap_or_default();
    let s = checked(state, account, &url, &schedule_in, &capture, compare, &ignore).await?;
    let now = state.clock.now_ms();
    let row = MonitorRow {
        id: MonitorId::new().to_string(),
        user_id: account.user.id.clone(),
        name: v.name.unwrap_or_else(|| default_name(&url)),
        url,
        schedule: serde_json::to_string(&s.to_input()).map_err(Error::internal)?,
        capture: seal_capture(state, &capture)?,
        compare: compare.as_str().to_owned(),
        threshold: v.threshold.unwrap_or(super::types::DEFAULT_THRESHOLD),
        ignore_selectors: serde_json::to_string(&ignore).map_err(Error::internal)?,
        notify: serde_json::to_string(&v.notify.unwrap_or_default()).map_err(Error::internal)?,
        baseline_mode: v.baseline.unwrap_or_default().as_str().to_owned(),
        status: if v.paused { "paused" } else { "active" }.to_owned(),
        baseline_check_id: None,
        next_run_at: (!v.paused).then_some(now),
        failures: 0,
        created_at: now,
        updated_at: now,
    };
    let max = plan_bound(state, account);
    if !state.store.create_monitor(&row, max).await? {
        return Err(Error::Refused(
            ErrorCode::PlanLimitExceeded,
            format!(
                "your plan ({}) keeps at most {} monitors: delete one, or upgrade",
                account.user.plan,
                max.unwrap_or_default()
            ),
        ));
    }
    state.wake.queued(crate::queues::Queue::Monitor);
    view(state, &row).await
}

/// A page of the caller's monitors, newest first.
pub async fn list(state: &AppState, account: &Account, q: &ListQuery) -> Result<MonitorList> {
    let w = Window::of(q, |id| MonitorId::parse(id).is_some())?;
    let before = w.before.as_ref().map(|(t, id)| (*t, id.as_deref().unwrap_or("")));
    let rows = state.store.list_monitors(&account.user.id, before, w.fetch()).await?;
    let page = w.page(rows, |r| (r.created_at, r.id.as_str()));
    // Each monitor's latest check, for the whole page in one query.
    let ids: Vec<&str> = page.rows.iter().map(|r| r.id.as_str()).collect();
    let latest = state.store.latest_monitor_checks(&account.user.id, &ids).await?;
    let mut data = Vec::with_capacity(page.rows.len());
    for r in &page.rows {
        data.push(shown(state, r, latest.get(&r.id)).await);
    }
    Ok(MonitorList { data, next_cursor: page.next_cursor })
}

/// One of the caller's monitors (stored form).
pub async fn find(state: &AppState, account: &Account, id: &MonitorId) -> Result<MonitorRow> {
    state.store.monitor(&account.user.id, id.as_str()).await?.ok_or_else(|| Error::not_found(MonitorId::NOUN))
}

/// One of the caller's monitors.
pub async fn get(state: &AppState, account: &Account, id: &MonitorId) -> Result<Monitor> {
    view(state, &find(state, account, id).await?).await
}

/// Change a monitor: what is given replaces what it had. A new schedule counts from now.
pub async fn update(state: &AppState, account: &Account, id: &MonitorId, v: ValidMonitor) -> Result<Monitor> {
    let mut m = find(state, account, id).await?;
    let capture = match &v.capture {
        Some(c) => c.clone(),
        None => open_capture(state, &m.capture).map_err(Error::internal)?,
    };
    let url = v.url.clone().unwrap_or_else(|| m.url.clone());
    let schedule_in = match &v.schedule {
        Some(s) => s.clone(),
        None => serde_json::from_str(&m.schedule).map_err(Error::internal)?,
    };
    let compare = v.compare.unwrap_or_else(|| CompareMode::parse(&m.compare));
    let ignore = match &v.ignore_selectors {
        Some(i) => i.clone(),
        None => serde_json::from_str(&m.ignore_selectors).unwrap_or_default(),
    };
    let s = checked(state, account, &url, &schedule_in, &capture, compare, &ignore).await?;
    let now = state.clock.now_ms();
    if v.schedule.is_some() && m.status == "active" {
        m.next_run_at = s.next_after(now);
    }
    let (capture_was, ignore_now) =
        (open_capture(state, &m.capture).ok(), serde_json::to_string(&ignore).map_err(Error::internal)?);
    // Another page, other capture options or another comparison: the old baseline no longer
    // says what "unchanged" is, so the next good check is the new baseline.
    let fresh = url != m.url
        || capture_was.and_then(|c| serde_json::to_value(c).ok()) != serde_json::to_value(&capture).ok()
        || compare.as_str() != m.compare
        || ignore_now != m.ignore_selectors;
    if fresh {
        m.baseline_check_id = None;
    }
    m.schedule = serde_json::to_string(&s.to_input()).map_err(Error::internal)?;
    m.url = url;
    m.capture = seal_capture(state, &capture)?;
    m.compare = compare.as_str().to_owned();
    m.ignore_selectors = ignore_now;
    if let Some(n) = v.name {
        m.name = n;
    }
    if let Some(t) = v.threshold {
        m.threshold = t;
    }
    if let Some(n) = v.notify {
        m.notify = serde_json::to_string(&n).map_err(Error::internal)?;
    }
    if let Some(b) = v.baseline {
        m.baseline_mode = b.as_str().to_owned();
    }
    m.updated_at = now;
    if !state.store.update_monitor(&m).await? {
        return Err(Error::not_found(MonitorId::NOUN));
    }
    view(state, &m).await
}

/// Pause (never runs) or resume (due at its next time from now) a monitor.
pub async fn set_paused(state: &AppState, account: &Account, id: &MonitorId, paused: bool) -> Result<Monitor> {
    let mut m = find(state, account, id).await?;
    let now = state.clock.now_ms();
    match (paused, m.status.as_str()) {
        (true, "paused") | (false, "active") => {}
        (true, _) => {
            m.status = "paused".into();
            m.next_run_at = None;
        }
        (false, _) => {
            m.status = "active".into();
            m.next_run_at = match stored_schedule(&m) {
                // Never checked yet: at once; else at its next time.
                Some(s) if m.baseline_check_id.is_some() => s.next_after(now),
                _ => Some(now),
            };
        }
    }
    m.updated_at = now;
    if !state.store.update_monitor(&m).await? {
        return Err(Error::not_found(MonitorId::NOUN));
    }
    state.wake.queued(crate::queues::Queue::Monitor);
    view(state, &m).await
}

/// Delete a monitor and its checks: it never runs again.
pub async fn delete(state: &AppState, account: &Account, id: &MonitorId) -> Result<()> {
    match state.store.delete_monitor(&account.user.id, id.as_str()).await? {
        true => Ok(()),
        false => Err(Error::not_found(MonitorId::NOUN)),
    }
}

/// Check a monitor now (paused or not), outside its schedule: the check as started (pending,
/// or failed at once when its capture was refused).
pub async fn check_now(state: &AppState, account: &Account, id: &MonitorId) -> Result<MonitorCheck> {
    let m = find(state, account, id).await?;
    if state.store.monitor_check_pending(&m.id).await? {
        return Err(Error::Refused(
            ErrorCode::ConcurrencyLimit,
            "a check of this monitor is still running; its result is in GET /v1/monitors/{id}/checks".into(),
        ));
    }
    let c = super::check::start(state, &m).await?;
    Ok(check_view(state, &c, m.baseline_check_id.as_deref()).await)
}

/// A page of a monitor's checks, newest first.
pub async fn checks(state: &AppState, account: &Account, id: &MonitorId, q: &ListQuery) -> Result<MonitorCheckList> {
    let m = find(state, account, id).await?;
    let w = Window::of(q, |id| MonitorCheckId::parse(id).is_some())?;
    let before = w.before.as_ref().map(|(t, id)| (*t, id.as_deref().unwrap_or("")));
    let rows = state.store.monitor_checks(&account.user.id, &m.id, before, w.fetch()).await?;
    let page = w.page(rows, |r| (r.created_at, r.id.as_str()));
    let mut data = Vec::with_capacity(page.rows.len());
    for r in &page.rows {
        data.push(check_view(state, r, m.baseline_check_id.as_deref()).await);
    }
    Ok(MonitorCheckList { data, next_cursor: page.next_cursor })
}

/// One check of one of the caller's monitors.
pub async fn check(
    state: &AppState,
    account: &Account,
    id: &MonitorId,
    check_id: &MonitorCheckId,
) -> Result<MonitorCheck> {
    let m = find(state, account, id).await?;
    match state.store.monitor_check(&account.user.id, check_id.as_str()).await? {
        Some(c) if c.monitor_id == m.id => Ok(check_view(state, &c, m.baseline_check_id.as_deref()).await),
        _ => Err(Error::not_found(MonitorCheckId::NOUN)),
    }
}

/// Accept a check as the monitor's baseline: the next checks are compared with it.
pub async fn accept_baseline(
    state: &AppState,
    account: &Account,
    id: &MonitorId,
    check_id: &MonitorCheckId,
) -> Result<Monitor> {
    let m = find(state, account, id).await?;
    let c = state.store.monitor_check(&account.user.id, check_id.as_str()).await?;
    match c {
        Some(c) if c.monitor_id == m.id => {
            if !matches!(c.status.as_str(), "baseline" | "unchanged" | "changed") {
                return Err(Error::Invalid(FieldError::new(
                    "checkId",
                    format!("the check is {}: only a done check can be the baseline", c.status),
                )));
            }
        }
        _ => return Err(Error::Invalid(FieldError::new("checkId", "is not a check of this monitor"))),
    }
    if !state.store.set_monitor_baseline(&account.user.id, &m.id, check_id.as_str(), state.clock.now_ms()).await? {
        return Err(Error::not_found(MonitorId::NOUN));
    }
    get(state, account, id).await
}
