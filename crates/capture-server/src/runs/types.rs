//! The wire types of browser session runs: the request (`POST /v1/runs`, the `start_run`
//! tool), the steps, the device presets, the run as shown, a page of runs, the stream's
//! events and the `run.completed`/`run.failed` event data. One definition behind the
//! handlers, the OpenAPI document and the MCP tool schemas.

use capture_core::{FieldError, RunId, RunKind, RunStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::bounds;
use super::bounds::{http_url, text, within};
pub use super::devices::{CustomDevice, DeviceIn, DeviceSpec, Viewport, device_spec};
use crate::http::validated::Checked;
use crate::lists::list_type;

/// A run: `startUrl`, a device, `recordVideo`, `timeoutMs`, and either `steps` (a
/// scripted run) or `live: true` (a session a DevTools client connects to).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(rename = "RunRequest")]
pub struct RunIn {
    /// The page the session opens first (http or https).
    #[schemars(url, length(max = bounds::URL_MAX), extend("examples" = ["https://example.com"]))]
    pub start_url: String,
    /// A preset name (`desktop-1280`, `desktop-1920`, `iphone-15`, `pixel-8`, `ipad`, and 22 more
    /// phones and tablets: the MCP tool `list_devices`, docs/automation.md) or
    /// `{viewport: {width, height}, deviceScaleFactor, touch, mobile, userAgent}`.
    pub device: Option<DeviceIn>,
    /// Record the session as an MP4 (`videoUrl`).
    #[schemars(extend("default" = true))]
    pub record_video: Option<bool>,
    /// The run's whole time; a live session ends when it passes. Costs 1 action per
    /// started minute, reserved up front and settled at the end.
    #[schemars(range(min = bounds::TIMEOUT.0, max = bounds::TIMEOUT.1))]
    pub timeout_ms: Option<u64>,
    /// The steps of a scripted run, in order (at most 100).
    #[schemars(length(max = bounds::STEPS_MAX))]
    pub steps: Option<Vec<Step>>,
    /// A live session: the answer carries `connectUrl` for puppeteer / Playwright.
    #[schemars(extend("default" = false))]
    pub live: Option<bool>,
    /// Start from one of your browser profiles (id or name): its cookies and site storage
    /// are in place before the first page loads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub profile: Option<String>,
    /// When the run ends, save its cookies and site storage into this profile (id or name;
    /// a new name makes a new profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub save_profile: Option<String>,
    /// What every page of the run does with a cookie-consent pop-up, as a capture's
    /// `cookieConsent` (default `auto`: refused where a rule knows how, else hidden; `none`
    /// leaves the banner for steps that click it themselves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookie_consent: Option<capture_core::options::CookieConsent>,
    /// Leave through one of your proxies (`POST /v1/proxies`), by id or name: every
    /// connection of the run goes through it, behind the egress guard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100))]
    pub proxy: Option<String>,
    /// For a sticky pool: the key that picks its member (default: the start URL's host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 200))]
    pub proxy_sticky_key: Option<String>,
}

/// One step of a scripted run, named by `action`; each has its own `timeoutMs`
/// (100–60000, default 10000).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "camelCase", rename_all_fields = "camelCase", deny_unknown_fields)]
pub enum Step {
    /// Load a URL and wait for its load event.
    Goto {
        url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// Click the first element matching a CSS selector (waits for it).
    Click {
        selector: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// Focus an element and type text into it, key by key.
    Type {
        selector: String,
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// Press a key or chord (`Enter`, `Tab`, `Control+a`).
    Press {
        key: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// Choose an option of a `<select>` by value (or label).
    Select {
        selector: String,
        value: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// Move the mouse over an element.
    Hover {
        selector: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// Scroll by `y` CSS pixels, or bring `selector` into view.
    Scroll {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        y: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selector: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// Wait until an element exists, the page shows a text, or the URL matches (one of them).
    WaitFor {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selector: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// Wait `ms` milliseconds (at most 60000).
    Wait { ms: u64 },
    /// A PNG of the viewport (or the whole page), stored like a screenshot job's file.
    Screenshot {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        full_page: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// Evaluate a JavaScript expression (promises are awaited); its value is the result.
    Evaluate {
        expression: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// The page's (or an element's) visible text contains `text`.
    AssertText {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selector: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// The URL equals `url` (absolute) or contains it.
    AssertUrl {
        url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
}

impl Step {
    /// The action's name as requested.
    pub fn action(&self) -> &'static str {
        match self {
            Step::Goto { .. } => "goto",
            Step::Click { .. } => "click",
            Step::Type { .. } => "type",
            Step::Press { .. } => "press",
            Step::Select { .. } => "select",
            Step::Hover { .. } => "hover",
            Step::Scroll { .. } => "scroll",
            Step::WaitFor { .. } => "waitFor",
            Step::Wait { .. } => "wait",
            Step::Screenshot { .. } => "screenshot",
            Step::Evaluate { .. } => "evaluate",
            Step::AssertText { .. } => "assertText",
            Step::AssertUrl { .. } => "assertUrl",
        }
    }

    /// The step's own timeout.
    pub fn timeout_ms(&self) -> u64 {
        let t = match self {
            Step::Goto { timeout_ms, .. }
            | Step::Click { timeout_ms, .. }
            | Step::Type { timeout_ms, .. }
            | Step::Press { timeout_ms, .. }
            | Step::Select { timeout_ms, .. }
            | Step::Hover { timeout_ms, .. }
            | Step::Scroll { timeout_ms, .. }
            | Step::WaitFor { timeout_ms, .. }
            | Step::Screenshot { timeout_ms, .. }
            | Step::Evaluate { timeout_ms, .. }
            | Step::AssertText { timeout_ms, .. }
            | Step::AssertUrl { timeout_ms, .. } => *timeout_ms,
            Step::Wait { ms } => Some(*ms + 1_000),
        };
        t.unwrap_or(bounds::STEP_TIMEOUT_DEFAULT)
    }

    /// What the step acts on, for messages (`click '#go'`).
    pub fn describe(&self) -> String {
        match self {
            Step::Goto { url, .. } => format!("goto {url}"),
            Step::Click { selector, .. } => format!("click '{selector}'"),
            Step::Type { selector, .. } => format!("type into '{selector}'"),
            Step::Press { key, .. } => format!("press {key}"),
            Step::Select { selector, value, .. } => format!("select '{value}' in '{selector}'"),
            Step::Hover { selector, .. } => format!("hover '{selector}'"),
            Step::Scroll { selector: Some(s), .. } => format!("scroll to '{s}'"),
            Step::Scroll { y, .. } => format!("scroll by {}", y.unwrap_or(0.0)),
            Step::WaitFor { selector: Some(s), .. } => format!("waitFor selector '{s}'"),
            Step::WaitFor { text: Some(t), .. } => format!("waitFor text '{t}'"),
            Step::WaitFor { url, .. } => format!("waitFor url '{}'", url.as_deref().unwrap_or("")),
            Step::Wait { ms } => format!("wait {ms} ms"),
            Step::Screenshot { .. } => "screenshot".into(),
            Step::Evaluate { .. } => "evaluate".into(),
            Step::AssertText { text, .. } => format!("assertText '{text}'"),
            Step::AssertUrl { url, .. } => format!("assertUrl '{url}'"),
        }
    }
}

/// A request checked and completed with its defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    pub live: bool,
    pub start_url: String,
    pub device: DeviceSpec,
    pub record_video: bool,
    pub timeout_ms: u64,
    pub steps: Vec<Step>,
    /// An automation session open to every OAuth client of the account, not only the one
    /// that started it (REST runs: false).
    pub shared: bool,
    /// The profile it starts from (id or name as asked; its id once found).
    pub profile: Option<String>,
    /// The profile its state is saved into at the end (id or name).
    pub save_profile: Option<String>,
    pub cookie_consent: capture_core::options::CookieConsent,
    /// The proxy (id or name as asked) and a sticky pool's key.
    pub proxy: Option<String>,
    pub proxy_sticky_key: Option<String>,
}

// A request body becomes a [`RunSpec`] through `crate::http::validated::validate`:
// `VALIDATION_ERROR`s name the field by its path (`steps[2].selector`).
impl Checked for RunIn {
    type Valid = RunSpec;

    /// The checks beyond the shape.
    fn check(self) -> Result<RunSpec, FieldError> {
        http_url("startUrl", &self.start_url)?;
        let live = self.live.unwrap_or(false);
        let steps = self.steps.unwrap_or_default();
        if live && !steps.is_empty() {
            return Err(FieldError::new("steps", "a live session takes no steps (its client drives it)"));
        }
        if !live && steps.is_empty() {
            return Err(FieldError::new("steps", "a scripted run needs at least one step (or set live: true)"));
        }
        if steps.len() > bounds::STEPS_MAX {
            return Err(FieldError::new("steps", format!("at most {} steps", bounds::STEPS_MAX)));
        }
        let timeout_ms = self.timeout_ms.unwrap_or(if live { bounds::LIVE_TIMEOUT } else { bounds::SCRIPTED_TIMEOUT });
        within("timeoutMs", timeout_ms, bounds::TIMEOUT)?;
        for (i, step) in steps.iter().enumerate() {
            check_step(i, step)?;
        }
        let device = device_spec(self.device.as_ref())?;
        Ok(RunSpec {
            live,
            start_url: self.start_url,
            device,
            record_video: self.record_video.unwrap_or(true),
            timeout_ms,
            steps,
            shared: false,
            profile: profile_ref("profile", self.profile)?,
            save_profile: profile_ref("saveProfile", self.save_profile)?,
            cookie_consent: self.cookie_consent.unwrap_or_default(),
            proxy: capture_core::options::proxy_ref(self.proxy)?,
            proxy_sticky_key: capture_core::options::proxy_sticky_key(self.proxy_sticky_key)?,
        })
    }
}

/// A profile named by id or name: trimmed, 1 to 100 characters.
fn profile_ref(field: &str, v: Option<String>) -> Result<Option<String>, FieldError> {
    match v.map(|p| p.trim().to_owned()) {
        Some(p) if p.is_empty() || p.chars().count() > 100 || p.chars().any(char::is_control) => {
            Err(FieldError::new(field, "must be a profile's id or name (1 to 100 characters)"))
        }
        other => Ok(other),
    }
}

fn check_step(i: usize, step: &Step) -> Result<(), FieldError> {
    let f = |name: &str| format!("steps[{i}].{name}");
    if !matches!(step, Step::Wait { .. }) {
        within(&f("timeoutMs"), step.timeout_ms(), bounds::STEP_TIMEOUT)?;
    }
    match step {
        Step::Goto { url, .. } => http_url(&f("url"), url),
        Step::Click { selector, .. } | Step::Hover { selector, .. } => {
            text(&f("selector"), selector, bounds::SELECTOR_MAX, false)
        }
        Step::Type { selector, text: t, .. } => {
            text(&f("selector"), selector, bounds::SELECTOR_MAX, false)?;
            text(&f("text"), t, bounds::TEXT_MAX, true)
        }
        Step::Press { key, .. } => text(&f("key"), key, bounds::KEY_MAX, false),
        Step::Select { selector, value, .. } => {
            text(&f("selector"), selector, bounds::SELECTOR_MAX, false)?;
            text(&f("value"), value, bounds::TEXT_MAX, true)
        }
        Step::Scroll { y, selector, .. } => match (y, selector) {
            (None, None) | (Some(_), Some(_)) => Err(FieldError::new(f("y"), "give either y or selector")),
            (Some(y), None) if !y.is_finite() || y.abs() > 1_000_000.0 => {
                Err(FieldError::new(f("y"), "must be a number of pixels within ±1000000"))
            }
            (None, Some(s)) => text(&f("selector"), s, bounds::SELECTOR_MAX, false),
            _ => Ok(()),
        },
        Step::WaitFor { selector, text: t, url, .. } => {
            match [selector.is_some(), t.is_some(), url.is_some()].iter().filter(|x| **x).count() {
                1 => {}
                _ => return Err(FieldError::new(f("selector"), "give exactly one of selector, text or url")),
            }
            let s = selector.as_deref().or(t.as_deref()).or(url.as_deref()).unwrap_or("");
            text(&f("selector"), s, bounds::TEXT_MAX, false)
        }
        Step::Wait { ms } => within(&f("ms"), *ms, (0, bounds::WAIT_MAX)),
        Step::Screenshot { .. } => Ok(()),
        Step::Evaluate { expression, .. } => text(&f("expression"), expression, bounds::EXPRESSION_MAX, false),
        Step::AssertText { text: t, selector, .. } => {
            text(&f("text"), t, bounds::TEXT_MAX, false)?;
            match selector {
                Some(s) => text(&f("selector"), s, bounds::SELECTOR_MAX, false),
                None => Ok(()),
            }
        }
        Step::AssertUrl { url, .. } => text(&f("url"), url, bounds::URL_MAX, false),
    }
}

impl utoipa::PartialSchema for RunIn {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::schema::openapi::<RunIn>()
    }
}

impl utoipa::ToSchema for RunIn {
    fn name() -> std::borrow::Cow<'static, str> {
        "RunRequest".into()
    }
}

/// One step's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepResult {
    pub index: usize,
    pub action: String,
    pub ok: bool,
    pub duration_ms: u64,
    /// Why it failed, naming the step (`step 3 (click '#go'): …`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
    /// `evaluate`: the value; `screenshot`: `{url, width, height}`; `goto`: `{status, url}`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub result: Option<Value>,
}

/// A run: one shape everywhere (responses, stream events, MCP tools).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    pub id: RunId,
    /// `pending`, `running`, `completed`, `failed` or `stopped`.
    #[schemars(with = "String")]
    pub status: RunStatus,
    /// `scripted` or `live`.
    #[schemars(with = "String")]
    pub kind: RunKind,
    pub start_url: String,
    pub device: DeviceSpec,
    pub record_video: bool,
    pub timeout_ms: i64,
    pub steps: Vec<Step>,
    pub step_results: Vec<StepResult>,
    /// Live sessions, in the create response only: the DevTools endpoint for
    /// `puppeteer.connect({browserWSEndpoint})` / `chromium.connectOverCDP` (single use).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_url: Option<String>,
    /// When the connect token expires (live sessions waiting for their client).
    pub connect_expires_at: Option<String>,
    pub final_url: Option<String>,
    pub page_title: Option<String>,
    pub video_url: Option<String>,
    pub console_error_count: i64,
    pub network_error_count: i64,
    /// Console errors and uncaught exceptions (`{level, text, url, line}`).
    pub console_errors: Vec<Value>,
    /// Failed requests (`{url, method, status, failure, resourceType}`).
    pub network_errors: Vec<Value>,
    /// Why the run failed on its own account (a step naming itself, the page).
    pub error: Option<String>,
    /// Why finishing the run failed (the encoder, the browser, storage, a lost worker).
    pub finalization_error: Option<String>,
    /// `finished`, `step_failed`, `stopped`, `timeout`, `disconnected`, `quota`, `not_connected`, `worker_lost`, `browser_failed`, `shutdown`, `client_too_slow` (a live client closed for not reading its socket), `idle` (an MCP automation session).
    pub end_reason: Option<String>,
    pub stop_requested: bool,
    /// Actions reserved at the start (1 per started minute of `timeoutMs`, or what was left).
    pub actions_reserved: i64,
    /// Actions the run cost, once ended (1 per started minute it ran).
    pub actions_charged: i64,
    pub created_at: String,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    /// From start to end (or to now while it runs).
    pub duration_ms: Option<i64>,
    /// What its pages do with a cookie-consent pop-up (`auto`, `reject`, `accept`, `hide`, `none`).
    pub cookie_consent: String,
    /// The browser profile it started from (its id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The profile its state is saved into when it ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub save_profile: Option<String>,
    /// The customer's proxy it leaves through, and the pool member that serves it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<crate::proxies::types::ProxyServed>,
}

impl utoipa::PartialSchema for Run {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::schema::openapi::<Run>()
    }
}

impl utoipa::ToSchema for Run {
    fn name() -> std::borrow::Cow<'static, str> {
        "Run".into()
    }
}

list_type! {
    /// A page of runs, newest first.
    pub type RunList = ListResponse<Run>;
    cursor
    /// Pass as `before` for the next page; null on the last page.
    ;
    schemas: json;
}

/// The input of the `get_run` and `stop_run` tools.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RunArgs {
    /// The run id (run_…).
    pub id: String,
}

/// The data of `run.completed` and `run.failed`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEnded {
    pub run_id: RunId,
    pub status: RunStatus,
    pub final_url: Option<String>,
    pub page_title: Option<String>,
    /// The service's lasting `/files` URL of the MP4 (null without a video).
    pub video_url: Option<String>,
    pub console_error_count: i64,
    pub network_error_count: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finalization_error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<RunSpec, FieldError> {
        crate::http::validated::validate::<RunIn>(v.as_object().unwrap())
    }

    #[test]
    fn every_step_kind_parses_and_bad_ones_name_their_field() {
        let steps = json!([
            {"action": "goto", "url": "http://a.test/x", "timeoutMs": 5000},
            {"action": "click", "selector": "#go"},
            {"action": "type", "selector": "#name", "text": "Ada"},
            {"action": "press", "key": "Enter"},
            {"action": "select", "selector": "#plan", "value": "pro"},
            {"action": "hover", "selector": "#menu"},
            {"action": "scroll", "y": 400},
            {"action": "scroll", "selector": "#footer"},
            {"action": "waitFor", "text": "Done"},
            {"action": "wait", "ms": 100},
            {"action": "screenshot", "fullPage": true},
            {"action": "evaluate", "expression": "6*7"},
            {"action": "assertText", "text": "Done", "selector": "h1"},
            {"action": "assertUrl", "url": "/done"}
        ]);
        let spec = parse(json!({"startUrl": "http://a.test/", "steps": steps, "device": "iphone-15"})).unwrap();
        assert_eq!(spec.steps.len(), 14);
        assert_eq!(
            spec.steps[8],
            Step::WaitFor { selector: None, text: Some("Done".into()), url: None, timeout_ms: None }
        );
        assert_eq!((spec.device.width, spec.device.touch, spec.timeout_ms), (393, true, 60_000));
        assert!(spec.record_video);
        let bad = |v: Value, field: &str| {
            let e = parse(v).unwrap_err();
            assert_eq!(e.field, field, "{e:?}");
        };
        bad(json!({"startUrl": "file:///etc/passwd", "live": true}), "startUrl");
        bad(
            json!({"startUrl": "http://a.test/", "steps": [{"action": "click", "selector": "#a", "timeoutMs": 60001}]}),
            "steps[0].timeoutMs",
        );
        bad(json!({"startUrl": "http://a.test/", "steps": [{"action": "fly"}]}), "steps[0].action");
        bad(json!({"startUrl": "http://a.test/", "timeoutMs": "soon", "live": true}), "timeoutMs");
        bad(json!({"startUrl": "http://a.test/", "live": true, "colour": "red"}), "colour");
        bad(json!({"startUrl": "http://a.test/", "steps": [{"action": "waitFor"}]}), "steps[0].selector");
        bad(json!({"startUrl": "http://a.test/", "live": true, "steps": [{"action": "wait", "ms": 1}]}), "steps");
        bad(json!({"startUrl": "http://a.test/"}), "steps");
        bad(json!({"startUrl": "http://a.test/", "live": true, "timeoutMs": 1_800_001}), "timeoutMs");
        bad(json!({"startUrl": "http://a.test/", "live": true, "device": "nokia-3310"}), "device");
        bad(
            json!({"startUrl": "http://a.test/", "live": true, "device": {"viewport": {"width": 50, "height": 800}}}),
            "device.viewport.width",
        );
        bad(json!({"live": true}), "startUrl");
        let custom = parse(json!({"startUrl": "http://a.test/", "live": true,
            "device": {"viewport": {"width": 500, "height": 900}, "deviceScaleFactor": 2, "touch": true, "userAgent": "Bot/1"}}))
        .unwrap();
        assert_eq!(
            custom.device,
            DeviceSpec {
                preset: None,
                width: 500,
                height: 900,
                device_scale_factor: 2.0,
                mobile: true,
                touch: true,
                user_agent: Some("Bot/1".into())
            }
        );
        assert_eq!(custom.timeout_ms, 300_000);
    }
}
