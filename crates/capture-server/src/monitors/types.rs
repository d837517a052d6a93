//! The wire types of monitors (`/v1/monitors`): a page checked on a schedule, compared with
//! its baseline, and its checks. One definition behind the handlers, the OpenAPI document and
//! the MCP tools.

use capture_core::monitor::ScheduleIn;
use capture_core::options::ScreenshotIn;
use capture_core::{FieldError, MonitorCheckId, MonitorId, ScreenshotId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::http::validated::Checked;
use crate::lists::list_type;

/// What a check compares with the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CompareMode {
    /// The pixels of the capture (changed beyond anti-aliasing, ignored elements masked).
    Pixels,
    /// The page's visible text, line by line.
    Text,
    /// Either changing is a change.
    #[default]
    Both,
}

impl CompareMode {
    pub fn as_str(self) -> &'static str {
        match self {
            CompareMode::Pixels => "pixels",
            CompareMode::Text => "text",
            CompareMode::Both => "both",
        }
    }

    pub fn parse(s: &str) -> CompareMode {
        match s {
            "pixels" => CompareMode::Pixels,
            "text" => CompareMode::Text,
            _ => CompareMode::Both,
        }
    }

    pub fn pixels(self) -> bool {
        self != CompareMode::Text
    }

    pub fn text(self) -> bool {
        self != CompareMode::Pixels
    }
}

/// Whether a changed check becomes the new baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BaselineMode {
    /// A changed check becomes the baseline: each change is reported once.
    #[default]
    Auto,
    /// The baseline moves only when you accept a check (`POST /v1/monitors/{id}/baseline`).
    Manual,
}

impl BaselineMode {
    pub fn as_str(self) -> &'static str {
        match self {
            BaselineMode::Auto => "auto",
            BaselineMode::Manual => "manual",
        }
    }

    pub fn parse(s: &str) -> BaselineMode {
        if s == "manual" { BaselineMode::Manual } else { BaselineMode::Auto }
    }
}

/// Who is told of a change or of failures beyond the account's webhook endpoints.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Notify {
    /// Addresses mailed the before, after and diff pictures when a check changes, and when
    /// three checks in a row fail (at most 10; mail must be configured on the service).
    #[serde(default)]
    pub email: Vec<String>,
}

/// Most addresses a monitor mails.
pub const NOTIFY_EMAIL_MAX: usize = 10;
/// Most ignored selectors.
pub const IGNORE_SELECTORS_MAX: usize = 50;
/// Longest name.
pub const NAME_MAX: usize = 100;

/// `POST /v1/monitors`: a page to check on a schedule.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MonitorIn {
    /// What to call it (default: the page's host and path).
    #[serde(default)]
    pub name: Option<String>,
    /// The page to check.
    pub url: String,
    /// `{every: "15m"}` (s, m, h or d), or `{cron: "0 9 * * 1-5", timezone: "Europe/Berlin"}`;
    /// never more often than the service's `CAPTURE_MONITOR_MIN_INTERVAL` (5 minutes by default).
    #[schema(value_type = Object)]
    pub schedule: ScheduleIn,
    /// Capture options of each check, as `POST /v1/screenshot` takes them (without `url`).
    /// Checks capture the full page and fail on an HTTP error status unless these say otherwise.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    #[schemars(with = "Option<Value>")]
    pub capture: Option<Value>,
    /// `pixels`, `text` or `both` (default).
    #[serde(default)]
    pub compare: Option<CompareMode>,
    /// The share of the page's pixels (0 to 1) that must change for a check to be `changed`
    /// (default 0.001, a tenth of a percent).
    #[serde(default)]
    pub threshold: Option<f64>,
    /// Elements left out of the comparison (a clock, an ad slot): their pixels masked, their
    /// text dropped. CSS selectors, at most 50.
    #[serde(default)]
    pub ignore_selectors: Option<Vec<String>>,
    /// Mail on a change or repeated failures (webhook endpoints subscribed to
    /// `monitor.changed` and `monitor.failing` are always told).
    #[serde(default)]
    pub notify: Option<Notify>,
    /// `auto` (default: a changed check becomes the baseline) or `manual`.
    #[serde(default)]
    pub baseline: Option<BaselineMode>,
    /// Create it paused (default false).
    #[serde(default)]
    pub paused: Option<bool>,
}

/// `PATCH /v1/monitors/{id}`: any of the fields of a create; the rest are kept.
#[derive(Debug, Clone, Default, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MonitorPatch {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub schedule: Option<ScheduleIn>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    #[schemars(with = "Option<Value>")]
    pub capture: Option<Value>,
    #[serde(default)]
    pub compare: Option<CompareMode>,
    #[serde(default)]
    pub threshold: Option<f64>,
    #[serde(default)]
    pub ignore_selectors: Option<Vec<String>>,
    #[serde(default)]
    pub notify: Option<Notify>,
    #[serde(default)]
    pub baseline: Option<BaselineMode>,
}

/// A checked create or update: each field given, checked on its own (the schedule against the
/// service's minimum and the capture options against the URL are checked by the service).
#[derive(Debug, Clone, Default)]
pub struct ValidMonitor {
    pub name: Option<String>,
    pub url: Option<String>,
    pub schedule: Option<ScheduleIn>,
    pub capture: Option<ScreenshotIn>,
    pub compare: Option<CompareMode>,
    pub threshold: Option<f64>,
    pub ignore_selectors: Option<Vec<String>>,
    pub notify: Option<Notify>,
    pub baseline: Option<BaselineMode>,
    pub paused: bool,
}

fn check_name(raw: &str) -> Result<String, FieldError> {
    let name = raw.trim();
    if name.is_empty() || name.chars().count() > NAME_MAX || name.chars().any(char::is_control) {
        return Err(FieldError::new("name", "must be 1 to 100 characters without control characters"));
    }
    Ok(name.to_owned())
}

fn check_threshold(t: f64) -> Result<f64, FieldError> {
    if !t.is_finite() || !(0.0..=1.0).contains(&t) {
        return Err(FieldError::new("threshold", "must be a share of the page from 0 to 1 (0.001 is 0.1 %)"));
    }
    Ok(t)
}

/// A CSS selector's shape: not blank, within 1024 characters, brackets, parentheses and quotes
/// balanced, no braces or semicolons (which would end the selector in a style sheet). The
/// browser reads it in full at the first check, which fails naming it if it still does not parse.
pub fn check_selector(field: &str, s: &str) -> Result<(), FieldError> {
    let bad = |why: &str| Err(FieldError::new(field, format!("is not a CSS selector: {why}")));
    let s = s.trim();
    if s.is_empty() {
        return bad("it is blank");
    }
    if s.len() > 1024 {
        return bad("longer than 1024 characters");
    }
    let mut stack = Vec::new();
    let mut quote: Option<char> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            match c {
                '\\' => {
                    chars.next();
                }
                c if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '\\' => {
                chars.next();
            }
            '"' | '\'' => quote = Some(c),
            '[' | '(' => stack.push(c),
            ']' if stack.pop() != Some('[') => return bad("a ] without its ["),
            ')' if stack.pop() != Some('(') => return bad("a ) without its ("),
            '{' | '}' | ';' => return bad("braces and semicolons end a selector"),
            _ => {}
        }
    }
    if quote.is_some() {
        return bad("a quote is not closed");
    }
    if !stack.is_empty() {
        return bad("a bracket or parenthesis is not closed");
    }
    if matches!(s.chars().last(), Some(',' | '>' | '+' | '~')) {
        return bad("it ends with a combinator");
    }
    Ok(())
}

fn check_ignore(list: Vec<String>) -> Result<Vec<String>, FieldError> {
    if list.len() > IGNORE_SELECTORS_MAX {
        return Err(FieldError::new("ignoreSelectors", "must list at most 50 selectors"));
    }
    for (i, s) in list.iter().enumerate() {
        check_selector(&format!("ignoreSelectors[{i}]"), s)?;
    }
    Ok(list.into_iter().map(|s| s.trim().to_owned()).collect())
}

fn check_notify(n: Notify) -> Result<Notify, FieldError> {
    if n.email.len() > NOTIFY_EMAIL_MAX {
        return Err(FieldError::new("notify.email", "must list at most 10 addresses"));
    }
    let mut email = Vec::new();
    for (i, e) in n.email.iter().enumerate() {
        let e = e.trim();
        let ok = e.len() <= 254
            && e.split_once('@').is_some_and(|(l, d)| !l.is_empty() && d.contains('.') && !d.ends_with('.'))
            && !e.chars().any(|c| c.is_whitespace() || c.is_control() || c == ',' || c == '<' || c == '>');
        if !ok {
            return Err(FieldError::new(format!("notify.email[{i}]"), "must be an e-mail address"));
        }
        if !email.iter().any(|x: &String| x.eq_ignore_ascii_case(e)) {
            email.push(e.to_owned());
        }
    }
    Ok(Notify { email })
}

/// A monitor's capture options as the request gives them: `POST /v1/screenshot`'s, without
/// `url` (the monitor's), a cache (a check always captures) or a video.
fn check_capture(v: Value) -> Result<ScreenshotIn, FieldError> {
    let Value::Object(map) = v else {
        return Err(FieldError::new("capture", "must be an object of capture options"));
    };
    let c: ScreenshotIn = crate::http::validated::shape(&map).map_err(|e| {
        let field = if e.field.is_empty() { "capture".to_string() } else { format!("capture.{}", e.field) };
        FieldError::new(field, e.reason)
    })?;
    for (given, field, why) in [
        (c.url.is_some(), "capture.url", "give the page as the monitor's url"),
        (c.cache_ttl.is_some(), "capture.cacheTtl", "a check always captures the page afresh"),
        (c.cache_key.is_some(), "capture.cacheKey", "a check always captures the page afresh"),
        (c.scroll.is_some(), "capture.scroll", "a monitor compares pictures or text, not videos"),
        (c.pdf == Some(true), "capture.pdf", "a monitor compares pictures or text, not PDFs"),
        (c.from.is_some_and(|f| f > 0), "capture.from", "a check reads the page from its start"),
    ] {
        if given {
            return Err(FieldError::new(field, why));
        }
    }
    Ok(c)
}

impl Checked for MonitorIn {
    type Valid = ValidMonitor;

    fn check(self) -> Result<ValidMonitor, FieldError> {
        Ok(ValidMonitor {
            name: self.name.as_deref().map(check_name).transpose()?,
            url: Some(capture_core::options::validate_url(&self.url).map_err(|e| FieldError::new("url", e.reason))?),
            schedule: Some(self.schedule),
            capture: Some(self.capture.map(check_capture).transpose()?.unwrap_or_default()),
            compare: Some(self.compare.unwrap_or_default()),
            threshold: Some(check_threshold(self.threshold.unwrap_or(DEFAULT_THRESHOLD))?),
            ignore_selectors: Some(check_ignore(self.ignore_selectors.unwrap_or_default())?),
            notify: Some(check_notify(self.notify.unwrap_or_default())?),
            baseline: Some(self.baseline.unwrap_or_default()),
            paused: self.paused.unwrap_or(false),
        })
    }
}

impl Checked for MonitorPatch {
    type Valid = ValidMonitor;

    fn check(self) -> Result<ValidMonitor, FieldError> {
        Ok(ValidMonitor {
            name: self.name.as_deref().map(check_name).transpose()?,
            url: self
                .url
                .map(|u| capture_core::options::validate_url(&u).map_err(|e| FieldError::new("url", e.reason)))
                .transpose()?,
            schedule: self.schedule,
            capture: self.capture.map(check_capture).transpose()?,
            compare: self.compare,
            threshold: self.threshold.map(check_threshold).transpose()?,
            ignore_selectors: self.ignore_selectors.map(check_ignore).transpose()?,
            notify: self.notify.map(check_notify).transpose()?,
            baseline: self.baseline,
            paused: false,
        })
    }
}

/// The share of changed pixels above which a check is `changed`, unless the monitor says.
pub const DEFAULT_THRESHOLD: f64 = 0.001;

/// `POST /v1/monitors/{id}/baseline`: accept a check as the new baseline.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BaselineIn {
    /// A done check of this monitor (`chk_…`), not a failed one.
    pub check_id: String,
}

impl Checked for BaselineIn {
    type Valid = MonitorCheckId;

    fn check(self) -> Result<MonitorCheckId, FieldError> {
        MonitorCheckId::parse(self.check_id.trim())
            .ok_or_else(|| FieldError::new("checkId", "must be a check's id (chk_…)"))
    }
}

/// A box of the page, in the capture's pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, JsonSchema)]
pub struct Region {
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
}

/// A check of a monitor: a capture, then its comparison with the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonitorCheck {
    pub id: MonitorCheckId,
    pub monitor_id: MonitorId,
    /// `pending` (capturing), `baseline` (the first good check), `unchanged`, `changed`, or
    /// `failed` (the capture failed, was blocked, cut short or refused: never compared, never
    /// the baseline).
    pub status: String,
    /// The share of the page's pixels that changed (null unless pixels were compared).
    pub diff_ratio: Option<f64>,
    /// Where the pixels changed, top to bottom.
    pub changed_regions: Vec<Region>,
    /// The capture with its changed regions highlighted over a dimmed copy (a changed check).
    pub diff_url: Option<String>,
    /// The capture of this check.
    pub image_url: Option<String>,
    /// The capture of the baseline it was compared with.
    pub baseline_image_url: Option<String>,
    /// A unified diff of the page's visible text (empty when the text is the same; null when
    /// text was not compared).
    pub text_diff: Option<String>,
    /// The capture job (`GET /v1/screenshot/{id}`).
    pub screenshot_id: Option<ScreenshotId>,
    /// Why it failed.
    pub error: Option<String>,
    /// Whether it is the monitor's baseline now.
    pub is_baseline: bool,
    pub created_at: String,
    pub completed_at: Option<String>,
}

/// A monitor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Monitor {
    pub id: MonitorId,
    pub name: String,
    pub url: String,
    /// `active` or `paused`.
    pub status: String,
    #[schema(value_type = Object)]
    #[schemars(with = "Value")]
    pub schedule: ScheduleIn,
    /// The capture options of each check (secret values shown as `••••`).
    #[schema(value_type = Object)]
    #[schemars(with = "Value")]
    pub capture: Value,
    pub compare: CompareMode,
    pub threshold: f64,
    pub ignore_selectors: Vec<String>,
    pub notify: Notify,
    pub baseline: BaselineMode,
    /// The check changes are measured against.
    pub baseline_check_id: Option<MonitorCheckId>,
    /// The latest check.
    pub last_check: Option<MonitorCheck>,
    /// When the next check is due (null while paused).
    pub next_run_at: Option<String>,
    /// Failed checks in a row (three fire `monitor.failing`).
    pub failures_in_a_row: i64,
    pub created_at: String,
    pub updated_at: String,
}

list_type! {
    /// A page of monitors, newest first.
    pub type MonitorList = ListResponse<Monitor>;
    cursor
    /// Pass as `before` for the next page; null on the last page.
    ;
    schemas: both;
}

list_type! {
    /// A page of a monitor's checks, newest first.
    pub type MonitorCheckList = ListResponse<MonitorCheck>;
    cursor
    /// Pass as `before` for the next page; null on the last page.
    ;
    schemas: both;
}

/// The data of the `monitor.changed` webhook event.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonitorChanged {
    pub monitor_id: MonitorId,
    pub name: String,
    pub url: String,
    pub check_id: MonitorCheckId,
    pub screenshot_id: Option<ScreenshotId>,
    pub diff_ratio: Option<f64>,
    pub changed_regions: Vec<Region>,
    pub diff_url: Option<String>,
    pub image_url: Option<String>,
    pub baseline_image_url: Option<String>,
    /// The text's unified diff (cut at 20,000 characters).
    pub text_diff: Option<String>,
}

/// The data of the `monitor.failing` webhook event (sent at the third failure in a row, once
/// until a check succeeds again).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonitorFailing {
    pub monitor_id: MonitorId,
    pub name: String,
    pub url: String,
    pub check_id: MonitorCheckId,
    pub error: Option<String>,
    /// Failed checks in a row.
    #[serde(default)]
    pub failures: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_are_read_for_their_shape() {
        for ok in [".clock", "#ad-slot > div", "a[href^='https://x']", "li:nth-child(2n+1)", "div:has(> .x)"] {
            assert_eq!(check_selector("s", ok), Ok(()), "{ok}");
        }
        for bad in ["", "  ", "div[", "a)", "p { color: red }", "a;b", "a[title='x]", ".x >", ".x,"] {
            assert_eq!(check_selector("s", bad).unwrap_err().field, "s", "{bad}");
        }
    }

    #[test]
    fn capture_options_name_their_field() {
        let e = check_capture(serde_json::json!({"fullPage": "yes"})).unwrap_err();
        assert_eq!(e.field, "capture.fullPage");
        let e = check_capture(serde_json::json!({"colour": 1})).unwrap_err();
        assert_eq!(e.field, "capture.colour");
        let e = check_capture(serde_json::json!({"url": "https://x.com"})).unwrap_err();
        assert_eq!(e.field, "capture.url");
        let e = check_capture(serde_json::json!({"pdf": true})).unwrap_err();
        assert_eq!(e.field, "capture.pdf");
        assert!(check_capture(serde_json::json!({"width": 800, "blockAds": true})).is_ok());
    }

    #[test]
    fn notify_addresses_are_checked_and_kept_once() {
        let n = check_notify(Notify { email: vec!["a@x.com".into(), "A@x.com".into(), " b@y.org ".into()] }).unwrap();
        assert_eq!(n.email, vec!["a@x.com".to_string(), "b@y.org".to_string()]);
        assert_eq!(check_notify(Notify { email: vec!["nope".into()] }).unwrap_err().field, "notify.email[0]");
    }
}
