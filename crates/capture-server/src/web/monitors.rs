//! Monitors on the website: the account's monitors a page at a time and the form to add one;
//! a monitor's page with its settings, **Check now**, **Pause**/**Resume** and **Delete**, its
//! history of checks, and one check's before/after/diff view with **Accept as baseline**.
//! Every operation is the REST API's service function (`monitors::service`), and every form
//! works without JavaScript (a page whose check is pending refreshes itself).

use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use capture_core::time::parse_iso;
use capture_core::{ErrorCode, FieldError, MonitorCheckId, MonitorId};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::base::forms::{Form, Signed, SignedForm, account, web_id};
use super::base::layout::{Chrome, Nav, WebError, WebResult, minute, origin, page, see_other, sentence};
use super::base::session::WebSession;
use crate::error::Error;
use crate::http::validated::validate;
use crate::http::{ApiError, Path};
use crate::monitors::service as monitors;
use crate::monitors::types::{BaselineIn, Monitor, MonitorCheck, MonitorIn};
use crate::paging::ListQuery;
use crate::state::AppState;

/// The list's and a monitor page's query: the cursor of an older page, the check shown, and
/// a notice after an action.
#[derive(Debug, Default, Deserialize)]
pub struct Params {
    before: Option<String>,
    check: Option<String>,
    notice: Option<String>,
}

impl Params {
    fn text(o: &Option<String>) -> &str {
        o.as_deref().map(str::trim).unwrap_or("")
    }
}

/// What an action says on the page it comes back to (`?notice=`): unknown codes say nothing.
fn notice(code: &str) -> Option<&'static str> {
    Some(match code {
        "created" => "The monitor is created. Its first check runs now and becomes the baseline.",
        "started" => "A check started. It is at the top of the history; this page refreshes until it ends.",
        "busy" => "A check of this monitor is still running: its result shows in the history when it ends.",
        "paused" => "The monitor is paused: no check runs until you resume it.",
        "resumed" => "The monitor is active again.",
        "baseline" => "This check is the baseline now: the next checks are compared with it.",
        "deleted" => "The monitor and its checks are deleted.",
        _ => return None,
    })
}

/// A query string of the non-empty pairs.
fn query_string(pairs: &[(&str, &str)]) -> String {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs.iter().filter(|(_, v)| !v.is_empty()) {
        q.append_pair(k, v);
    }
    q.finish()
}

/// `2026-05-01 14:03 UTC` of an ISO time (the text itself when it does not read).
fn when(iso: &str) -> String {
    parse_iso(iso).map_or_else(|| iso.to_string(), minute)
}

/// The create form's fields as typed (shown again after an error).
#[derive(Debug, Clone)]
struct Values {
    url: String,
    name: String,
    every: String,
    cron: String,
    timezone: String,
    /// `both`, `pixels` or `text`.
    compare: String,
    threshold: String,
    /// `auto` or `manual`.
    baseline: String,
    /// One CSS selector a line.
    ignore: String,
    /// One address a line.
    notify: String,
}

impl Default for Values {
    fn default() -> Self {
        Values {
            url: String::new(),
            name: String::new(),
            every: "1h".into(),
            cron: String::new(),
            timezone: String::new(),
            compare: "both".into(),
            threshold: "0.001".into(),
            baseline: "auto".into(),
            ignore: String::new(),
            notify: String::new(),
        }
    }
}

/// The non-blank lines of a textarea, trimmed.
fn lines(s: &str) -> Vec<String> {
    s.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect()
}

impl Values {
    fn from_form(f: &Form) -> Self {
        let raw = |k: &str| f.get(k).unwrap_or("").to_string();
        Values {
            url: f.text("url").to_string(),
            name: f.text("name").to_string(),
            every: f.text("every").to_string(),
            cron: f.text("cron").to_string(),
            timezone: f.text("timezone").to_string(),
            compare: f.text("compare").to_string(),
            threshold: f.text("threshold").to_string(),
            baseline: f.text("baseline").to_string(),
            ignore: raw("ignoreSelectors"),
            notify: raw("notifyEmails"),
        }
    }

    /// The `POST /v1/monitors` body these fields stand for: a cron expression, when given,
    /// is the schedule (with its time zone); else the interval. Empty fields are left out.
    fn body(&self) -> Map<String, Value> {
        let mut b = Map::new();
        b.insert("url".into(), json!(self.url));
        if !self.name.is_empty() {
            b.insert("name".into(), json!(self.name));
        }
        let mut schedule = Map::new();
        if !self.cron.is_empty() {
            schedule.insert("cron".into(), json!(self.cron));
        } else if !self.every.is_empty() {
            schedule.insert("every".into(), json!(self.every));
        }
        // Sent whenever typed, so a time zone without a cron expression is named in an error.
        if !self.timezone.is_empty() {
            schedule.insert("timezone".into(), json!(self.timezone));
        }
        b.insert("schedule".into(), Value::Object(schedule));
        if !self.compare.is_empty() {
            b.insert("compare".into(), json!(self.compare));
        }
        if !self.threshold.is_empty() {
            // A number when it reads as one; else the text, which the parser refuses by name.
            let t = match self.threshold.parse::<f64>() {
                Ok(t) if t.is_finite() => json!(t),
                _ => json!(self.threshold),
            };
            b.insert("threshold".into(), t);
        }
        if !self.baseline.is_empty() {
            b.insert("baseline".into(), json!(self.baseline));
        }
        let ignore = lines(&self.ignore);
        if !ignore.is_empty() {
            b.insert("ignoreSelectors".into(), json!(ignore));
        }
        let email = lines(&self.notify);
        if !email.is_empty() {
            b.insert("notify".into(), json!({ "email": email }));
        }
        b
    }
}

/// An error of the create form: the message, and the form's input it is about (if any).
struct FormError {
    message: String,
    input: Option<&'static str>,
}

impl FormError {
    /// A field the request's parser or the service refused: `Invalid schedule.every: must be
    /// at least 5m.` (the API's words, naming the field as the API does).
    fn field(e: FieldError) -> Self {
        let input = input_of(&e.field);
        FormError { message: sentence(&ApiError::validation(e).message), input }
    }
}

/// The input of the create form a field of the request comes from.
fn input_of(field: &str) -> Option<&'static str> {
    let head = field.split(['.', '[']).next().unwrap_or("");
    Some(match (head, field) {
        (_, "schedule.cron") => "cron",
        (_, "schedule.timezone") => "timezone",
        ("schedule", _) => "every",
        ("url", _) => "url",
        ("name", _) => "name",
        ("compare", _) => "compare",
        ("threshold", _) => "threshold",
        ("baseline", _) => "baseline",
        ("ignoreSelectors", _) => "ignoreSelectors",
        ("notify", _) => "notifyEmails",
        _ => return None,
    })
}

/// A `<select>`'s choice.
struct Choice {
    value: &'static str,
    label: &'static str,
    selected: bool,
}

const COMPARES: &[(&str, &str)] =
    &[("both", "Pixels and text"), ("pixels", "Pixels (the picture)"), ("text", "Text (the visible words)")];
const BASELINES: &[(&str, &str)] = &[
    ("auto", "It becomes the new baseline (each change reported once)"),
    ("manual", "The baseline stays until I accept a check"),
];

fn choices(all: &[(&'static str, &'static str)], current: &str) -> Vec<Choice> {
    all.iter().map(|(value, label)| Choice { value, label, selected: *value == current }).collect()
}

/// A row of the monitors table.
struct MonitorRow {
    href: String,
    name: String,
    url: String,
    status: String,
    /// The last check's status, or "none yet".
    last: String,
    next_iso: Option<String>,
    next: String,
    failures: i64,
}

impl MonitorRow {
    fn new(m: &Monitor) -> Self {
        MonitorRow {
            href: format!("/dashboard/monitors/{}", m.id),
            name: m.name.clone(),
            url: m.url.clone(),
            status: m.status.clone(),
            last: m.last_check.as_ref().map_or_else(|| "none yet".to_string(), |c| c.status.clone()),
            next_iso: m.next_run_at.clone(),
            next: m.next_run_at.as_deref().map_or_else(|| "—".to_string(), when),
            failures: m.failures_in_a_row,
        }
    }
}

/// `templates/web/monitors.html`: the monitors, a page at a time, and the form to add one.
#[derive(Template)]
#[template(path = "web/monitors.html")]
struct MonitorsPage<'a> {
    chrome: Chrome<'a>,
    csrf: &'a str,
    monitors: Vec<MonitorRow>,
    /// The next (older) page.
    next: Option<String>,
    /// This is not the first page.
    paged: bool,
    notice: Option<&'static str>,
    v: Values,
    compares: Vec<Choice>,
    baselines: Vec<Choice>,
    error: Option<FormError>,
    /// The service's shortest interval (`5m`).
    min_interval: String,
}

impl MonitorsPage<'_> {
    /// Is the form's error about `input`?
    fn invalid(&self, input: &str) -> bool {
        self.error.as_ref().and_then(|e| e.input) == Some(input)
    }
}

/// `GET /dashboard/monitors`
pub async fn list(State(state): State<AppState>, Signed(s): Signed, Query(p): Query<Params>) -> WebResult<Response> {
    let notice = notice(Params::text(&p.notice));
    render_list(&state, &s, Params::text(&p.before), StatusCode::OK, notice, Values::default(), None).await
}

async fn render_list(
    state: &AppState,
    s: &WebSession,
    before: &str,
    status: StatusCode,
    notice: Option<&'static str>,
    v: Values,
    error: Option<FormError>,
) -> WebResult<Response> {
    let acc = account(state, s).await?;
    let q = ListQuery { limit: None, before: (!before.is_empty()).then(|| before.to_string()) };
    let list = monitors::list(state, &acc, &q).await.map_err(|e| match e {
        Error::Invalid(_) => WebError::invalid("This page link is not valid; start from the first page."),
        e => e.into(),
    })?;
    let p = MonitorsPage {
        chrome: Chrome::signed("Monitors", s, Nav::Monitors),
        csrf: &s.csrf,
        monitors: list.data.iter().map(MonitorRow::new).collect(),
        next: list.next_cursor.map(|c| format!("/dashboard/monitors?{}", query_string(&[("before", &c)]))),
        paged: !before.is_empty(),
        notice,
        compares: choices(COMPARES, &v.compare),
        baselines: choices(BASELINES, &v.baseline),
        v,
        error,
        min_interval: capture_core::monitor::human(state.cfg.accounts.monitor_min_interval.as_millis() as u64),
    };
    Ok(page(status, &p, None))
}

/// `POST /dashboard/monitors`: check the form as `POST /v1/monitors` checks its body, create
/// the monitor and go to its page (303); a refusal gives the form again with the reason.
pub async fn create(State(state): State<AppState>, f: SignedForm) -> WebResult<Response> {
    let s = &f.session;
    let v = Values::from_form(&f.form);
    let valid = match validate::<MonitorIn>(&v.body()) {
        Ok(valid) => valid,
        Err(e) => {
            return render_list(&state, s, "", StatusCode::BAD_REQUEST, None, v, Some(FormError::field(e))).await;
        }
    };
    let acc = account(&state, s).await?;
    match monitors::create(&state, &acc, valid).await {
        Ok(m) => Ok(see_other(&format!("/dashboard/monitors/{}?notice=created", m.id), None)),
        Err(Error::Invalid(e)) => {
            render_list(&state, s, "", StatusCode::BAD_REQUEST, None, v, Some(FormError::field(e))).await
        }
        Err(e) => {
            // A plan limit (PLAN_LIMIT_EXCEEDED), a profile or bucket of the options: said
            // above the form; anything else is the error page.
            let e = ApiError::from(e);
            let status = StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::BAD_REQUEST);
            if !status.is_client_error() {
                return Err(e.into());
            }
            let error = FormError { message: sentence(&e.message), input: None };
            render_list(&state, s, "", status, None, v, Some(error)).await
        }
    }
}

/// A line of a unified text diff, with the class that colours it.
struct DiffLine {
    class: &'static str,
    /// The line with its end.
    text: String,
}

fn diff_lines(diff: &str) -> Vec<DiffLine> {
    diff.lines()
        .map(|l| {
            let class = if l.starts_with("+++") || l.starts_with("---") {
                "meta"
            } else if l.starts_with("@@") {
                "hunk"
            } else if l.starts_with('+') {
                "add"
            } else if l.starts_with('-') {
                "del"
            } else {
                "same"
            };
            DiffLine { class, text: format!("{l}\n") }
        })
        .collect()
}

/// A check as the page shows it.
struct CheckView {
    id: String,
    href: String,
    status: String,
    pending: bool,
    /// The monitor's baseline now.
    is_baseline: bool,
    created_iso: String,
    created: String,
    completed: Option<String>,
    /// `0.125 %`, or "—" when pixels were not compared.
    diff: String,
    regions: usize,
    error: Option<String>,
    image_url: Option<String>,
    baseline_image_url: Option<String>,
    diff_url: Option<String>,
    /// None when text was not compared; empty when it is the same.
    text_diff: Option<Vec<DiffLine>>,
    /// A done check that is not the baseline: it may be accepted as the baseline.
    acceptable: bool,
    screenshot_href: Option<String>,
}

impl CheckView {
    fn new(monitor: &MonitorId, c: &MonitorCheck) -> Self {
        CheckView {
            id: c.id.to_string(),
            href: format!("/dashboard/monitors/{monitor}?check={}", c.id),
            status: c.status.clone(),
            pending: c.status == "pending",
            is_baseline: c.is_baseline,
            created_iso: c.created_at.clone(),
            created: when(&c.created_at),
            completed: c.completed_at.as_deref().map(when),
            diff: c.diff_ratio.map_or_else(|| "—".to_string(), |r| format!("{:.3} %", r * 100.0)),
            regions: c.changed_regions.len(),
            error: c.error.clone(),
            image_url: c.image_url.clone(),
            baseline_image_url: c.baseline_image_url.clone(),
            diff_url: c.diff_url.clone(),
            text_diff: c.text_diff.as_deref().map(diff_lines),
            acceptable: matches!(c.status.as_str(), "baseline" | "unchanged" | "changed") && !c.is_baseline,
            screenshot_href: c.screenshot_id.as_ref().map(|id| format!("/dashboard/screenshots/{id}")),
        }
    }
}

/// `templates/web/monitor.html`: one monitor, its actions, the check shown and the history.
#[derive(Template)]
#[template(path = "web/monitor.html")]
struct MonitorPage<'a> {
    chrome: Chrome<'a>,
    csrf: &'a str,
    mon: &'a Monitor,
    base: String,
    check_action: String,
    pause_action: String,
    resume_action: String,
    delete_action: String,
    notice: Option<&'static str>,
    schedule: String,
    next_run: String,
    threshold: String,
    created: String,
    /// The capture options that differ from the defaults, as JSON (None when there are none).
    capture: Option<String>,
    baseline_href: Option<String>,
    /// The check opened with `?check=`.
    shown: Option<CheckView>,
    checks: Vec<CheckView>,
    next: Option<String>,
    paged: bool,
    /// The shown check (or, with none shown, the latest) is pending: the page refreshes.
    refresh: bool,
}

/// `GET /dashboard/monitors/{id}?check=&before=&notice=`
pub async fn show(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(p): Query<Params>,
    Signed(s): Signed,
) -> WebResult<Response> {
    let acc = account(&state, &s).await?;
    let id: MonitorId = web_id(&id)?;
    let m = monitors::get(&state, &acc, &id).await?;
    let shown = match Params::text(&p.check) {
        "" => None,
        raw => {
            let check_id: MonitorCheckId = web_id(raw)?;
            Some(CheckView::new(&id, &monitors::check(&state, &acc, &id, &check_id).await?))
        }
    };
    let before = Params::text(&p.before);
    let q = ListQuery { limit: None, before: (!before.is_empty()).then(|| before.to_string()) };
    let history = monitors::checks(&state, &acc, &id, &q).await.map_err(|e| match e {
        Error::Invalid(_) => WebError::invalid("This page link is not valid; start from the first page."),
        e => e.into(),
    })?;
    let base = format!("/dashboard/monitors/{id}");
    let next = history
        .next_cursor
        .map(|c| format!("{base}?{}", query_string(&[("check", Params::text(&p.check)), ("before", &c)])));
    let refresh = match &shown {
        Some(c) => c.pending,
        None => m.last_check.as_ref().is_some_and(|c| c.status == "pending"),
    };
    let schedule = match (&m.schedule.every, &m.schedule.cron) {
        (Some(every), _) => format!("every {every}"),
        (None, Some(cron)) => format!("cron {cron} in {}", m.schedule.timezone.as_deref().unwrap_or("UTC")),
        (None, None) => "—".to_string(),
    };
    let capture = match &m.capture {
        Value::Object(o) if !o.is_empty() => serde_json::to_string_pretty(&m.capture).ok(),
        _ => None,
    };
    let view = MonitorPage {
        chrome: Chrome::signed(&m.name, &s, Nav::Monitors),
        csrf: &s.csrf,
        mon: &m,
        notice: notice(Params::text(&p.notice)),
        schedule,
        next_run: match &m.next_run_at {
            Some(t) => when(t),
            None if m.status == "paused" => "none while paused".to_string(),
            None => "—".to_string(),
        },
        threshold: format!("{} ({:.3} % of the page's pixels)", m.threshold, m.threshold * 100.0),
        created: when(&m.created_at),
        capture,
        baseline_href: m.baseline_check_id.as_ref().map(|c| format!("{base}?check={c}")),
        shown,
        checks: history.data.iter().map(|c| CheckView::new(&id, c)).collect(),
        next,
        paged: !before.is_empty(),
        refresh,
        check_action: format!("{base}/check"),
        pause_action: format!("{base}/pause"),
        resume_action: format!("{base}/resume"),
        delete_action: format!("{base}/delete"),
        base,
    };
    Ok(page(StatusCode::OK, &view, origin(&state.base_url).as_deref()))
}

/// `POST /dashboard/monitors/{id}/check`: check now; back to the monitor's page, whose
/// history shows the check (or says one is still running).
pub async fn check_now(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    let acc = account(&state, &f.session).await?;
    let id: MonitorId = web_id(&id)?;
    let notice = match monitors::check_now(&state, &acc, &id).await {
        Ok(_) => "started",
        Err(Error::Refused(ErrorCode::ConcurrencyLimit, _)) => "busy",
        Err(e) => return Err(e.into()),
    };
    Ok(see_other(&format!("/dashboard/monitors/{id}?notice={notice}"), None))
}

/// `POST /dashboard/monitors/{id}/pause`
pub async fn pause(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    set_paused(state, id, f, true).await
}

/// `POST /dashboard/monitors/{id}/resume`
pub async fn resume(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    set_paused(state, id, f, false).await
}

async fn set_paused(state: AppState, id: String, f: SignedForm, paused: bool) -> WebResult<Response> {
    let acc = account(&state, &f.session).await?;
    let id: MonitorId = web_id(&id)?;
    monitors::set_paused(&state, &acc, &id, paused).await?;
    let notice = if paused { "paused" } else { "resumed" };
    Ok(see_other(&format!("/dashboard/monitors/{id}?notice={notice}"), None))
}

/// `POST /dashboard/monitors/{id}/delete`: the monitor and its checks; back to the list.
pub async fn delete(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    let acc = account(&state, &f.session).await?;
    let id: MonitorId = web_id(&id)?;
    monitors::delete(&state, &acc, &id).await?;
    Ok(see_other("/dashboard/monitors?notice=deleted", None))
}

/// `POST /dashboard/monitors/{id}/baseline` (`checkId`): accept a done check as the baseline;
/// back to that check's view.
pub async fn baseline(State(state): State<AppState>, Path(id): Path<String>, f: SignedForm) -> WebResult<Response> {
    let acc = account(&state, &f.session).await?;
    let id: MonitorId = web_id(&id)?;
    let mut body = Map::new();
    body.insert("checkId".into(), json!(f.form.text("checkId")));
    let check_id =
        validate::<BaselineIn>(&body).map_err(|e| WebError::invalid(sentence(&ApiError::validation(e).message)))?;
    monitors::accept_baseline(&state, &acc, &id, &check_id).await?;
    Ok(see_other(
        &format!("/dashboard/monitors/{id}?{}", query_string(&[("check", check_id.as_str()), ("notice", "baseline")])),
        None,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_becomes_the_api_body() {
        let form = Form(vec![
            ("url".into(), " https://example.com/ ".into()),
            ("name".into(), String::new()),
            ("every".into(), "1h".into()),
            ("cron".into(), String::new()),
            ("timezone".into(), String::new()),
            ("compare".into(), "text".into()),
            ("threshold".into(), "0.01".into()),
            ("baseline".into(), "manual".into()),
            ("ignoreSelectors".into(), ".clock\r\n\r\n  #ad > div \r\n".into()),
            ("notifyEmails".into(), "a@example.com\nb@example.org".into()),
        ]);
        let body = Value::Object(Values::from_form(&form).body());
        assert_eq!(
            body,
            json!({
                "url": "https://example.com/",
                "schedule": {"every": "1h"},
                "compare": "text",
                "threshold": 0.01,
                "baseline": "manual",
                "ignoreSelectors": [".clock", "#ad > div"],
                "notify": {"email": ["a@example.com", "b@example.org"]},
            })
        );
        // A cron expression, when given, is the schedule.
        let form = Form(vec![
            ("url".into(), "https://example.com/".into()),
            ("every".into(), "1h".into()),
            ("cron".into(), "0 9 * * 1-5".into()),
            ("timezone".into(), "Europe/Berlin".into()),
        ]);
        let body = Values::from_form(&form).body();
        assert_eq!(body["schedule"], json!({"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"}));
        assert!(validate::<MonitorIn>(&body).is_ok());
    }

    #[test]
    fn errors_name_the_input_they_are_about() {
        assert_eq!(input_of("schedule.every"), Some("every"));
        assert_eq!(input_of("schedule"), Some("every"));
        assert_eq!(input_of("schedule.cron"), Some("cron"));
        assert_eq!(input_of("schedule.timezone"), Some("timezone"));
        assert_eq!(input_of("ignoreSelectors[2]"), Some("ignoreSelectors"));
        assert_eq!(input_of("notify.email[0]"), Some("notifyEmails"));
        assert_eq!(input_of("capture.width"), None);
        let v = Values { url: "https://example.com/".into(), threshold: "lots".into(), ..Values::default() };
        let e = FormError::field(validate::<MonitorIn>(&v.body()).unwrap_err());
        assert_eq!((e.input, e.message.as_str()), (Some("threshold"), "Invalid threshold: must be a number."));
    }

    #[test]
    fn text_diff_lines_are_classed() {
        let d = diff_lines("--- before\n+++ after\n@@ -1,2 +1,2 @@\n same\n-old\n+new\n");
        let classes: Vec<&str> = d.iter().map(|l| l.class).collect();
        assert_eq!(classes, ["meta", "meta", "hunk", "same", "del", "add"]);
        assert_eq!(d[5].text, "+new\n");
    }
}
