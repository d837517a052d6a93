//! The wire types of screenshot jobs: the capture options (the body of
//! `POST /v1/screenshot` and the `take_screenshot` tool's input), the job, a page of jobs,
//! a share link, the stream's events and the `screenshot.completed` event. Each is the one
//! definition behind the handlers, the OpenAPI document and the MCP tool schemas.

use capture_core::options::{CaptureOptions, CookieConsent, ImageFormat, WaitUntil, bounds, defaults};
use capture_core::{FieldError, JobStatus, OutputFormat, ScreenshotId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

// Every channel parses these with `ScreenshotIn::parse`, so a bad value gets the same
// `VALIDATION_ERROR` through REST, MCP and uploads.
/// What to capture and how: the body of `POST /v1/screenshot` (also the fields of an HTML
/// upload, and the `take_screenshot` tool's input).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ScreenshotRequest", deny_unknown_fields)]
pub struct ScreenshotIn {
    /// The page to capture (http or https).
    #[schemars(url, length(max = bounds::URL_MAX), extend("examples" = ["https://example.com"]))]
    pub url: String,
    /// Viewport width in CSS pixels.
    #[schemars(range(min = bounds::WIDTH.0, max = bounds::WIDTH.1), extend("default" = defaults::WIDTH))]
    pub width: Option<u32>,
    /// Viewport height in CSS pixels.
    #[schemars(range(min = bounds::HEIGHT.0, max = bounds::HEIGHT.1), extend("default" = defaults::HEIGHT))]
    pub height: Option<u32>,
    /// Capture the whole scrollable page (scrolls first so lazy content loads), up to the
    /// service's full-page height.
    #[schemars(extend("default" = false))]
    pub full_page: Option<bool>,
    /// Image format.
    #[schemars(extend("default" = defaults::FORMAT))]
    pub format: Option<ImageFormat>,
    /// Produce a PDF instead of an image (the result is a link).
    #[schemars(extend("default" = false))]
    pub pdf: Option<bool>,
    /// Milliseconds to wait after the page loads.
    #[schemars(range(max = bounds::DELAY_MAX), extend("default" = defaults::DELAY))]
    pub delay: Option<u64>,
    /// Send prefers-color-scheme: dark.
    #[schemars(extend("default" = false))]
    pub dark_mode: Option<bool>,
    /// auto dismisses common cookie banners; none leaves them.
    #[schemars(extend("default" = CookieConsent::Auto))]
    pub cookie_consent: Option<CookieConsent>,
    /// CSS selector to wait for before capturing (best effort).
    #[schemars(length(max = bounds::SELECTOR_MAX))]
    pub wait_for: Option<String>,
    /// When navigation counts as finished.
    #[schemars(extend("default" = defaults::WAIT_UNTIL))]
    pub wait_until: Option<WaitUntil>,
    /// Timeout for navigation, waitFor and clickBefore, in milliseconds.
    #[schemars(range(min = bounds::TIMEOUT.0, max = bounds::TIMEOUT.1), extend("default" = defaults::TIMEOUT_MS))]
    pub timeout_ms: Option<u64>,
    /// JavaScript evaluated in the page right before the capture (its length in bytes).
    #[schemars(length(max = bounds::JS_MAX))]
    pub pre_screenshot_js: Option<String>,
    /// Device pixel ratio (2 for retina-sharp images).
    #[schemars(range(min = bounds::DSF.0, max = bounds::DSF.1), extend("default" = defaults::DEVICE_SCALE_FACTOR))]
    pub device_scale_factor: Option<f64>,
    /// CSS selector to click before waiting and capturing.
    #[schemars(length(max = bounds::SELECTOR_MAX))]
    pub click_before: Option<String>,
}

impl ScreenshotIn {
    /// Validate a request's JSON object into capture options (the messages are the
    /// contract's). `require_url` is false for an uploaded HTML document.
    /// A field the contract does not know is refused by name (a typo such as `fullpage`
    /// would otherwise be dropped without a word).
    pub fn parse(body: &Map<String, Value>, require_url: bool) -> Result<CaptureOptions, FieldError> {
        crate::http::json::only_known_fields(body, CaptureOptions::field_names())?;
        CaptureOptions::from_json(body, require_url)
    }
}

// The OpenAPI schema is the JSON Schema above (one derive, one set of bounds).
impl utoipa::PartialSchema for ScreenshotIn {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::schema::openapi::<ScreenshotIn>()
    }
}

impl ToSchema for ScreenshotIn {
    fn name() -> std::borrow::Cow<'static, str> {
        "ScreenshotRequest".into()
    }
}

/// A screenshot job: one shape everywhere (responses, stream events, MCP tools).
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    pub id: ScreenshotId,
    /// Same as id.
    pub screenshot_id: ScreenshotId,
    pub status: JobStatus,
    /// The requested page (or upload://name for uploads).
    pub url: String,
    pub format: OutputFormat,
    pub public_url: Option<String>,
    pub thumbnail_url: Option<String>,
    pub page_title: Option<String>,
    pub tags: Vec<String>,
    pub width: Option<i64>,
    /// Null for PDFs.
    pub height: Option<i64>,
    pub error: Option<String>,
    pub created_at: String,
    pub completed_at: Option<String>,
}

/// A page of jobs, newest first.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobList {
    pub data: Vec<Job>,
    /// Pass as `before` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// The body of `POST /v1/screenshot` as the capture options' own validator reads it (with
/// its list of known fields), so the create runs through the same idempotent extractor as
/// every other.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct CaptureBody(pub Map<String, Value>);

impl crate::http::validated::Checked for CaptureBody {
    type Valid = CaptureOptions;

    fn check(self) -> Result<CaptureOptions, FieldError> {
        ScreenshotIn::parse(&self.0, true)
    }
}

/// A public share link.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShareLink {
    pub share_url: String,
    pub screenshot_id: ScreenshotId,
}

/// The input of the `get_screenshot` tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct GetScreenshotArgs {
    /// The job id (scr_…).
    pub id: String,
    /// Return the finished image as image content too.
    #[serde(default)]
    pub include_image: bool,
}

/// The input of tools that name one screenshot.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ShareScreenshotArgs {
    /// The job id (scr_…) to share.
    pub id: String,
}

/// Events of `GET /v1/screenshot/{id}/stream`: each is the data of the event named in
/// [`StreamEvent::name`].
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum StreamEvent {
    /// `status`: the job's state changed.
    Status { status: JobStatus },
    /// `done`: the result, with the whole job.
    #[serde(rename_all = "camelCase")]
    Done {
        status: JobStatus,
        screenshot_id: ScreenshotId,
        public_url: Option<String>,
        thumbnail_url: Option<String>,
        job: Job,
    },
    /// `failed`: why.
    #[serde(rename_all = "camelCase")]
    Failed { status: JobStatus, screenshot_id: ScreenshotId, error: Option<String> },
    /// `timeout`: the stream's time is up; the job goes on.
    #[serde(rename_all = "camelCase")]
    Timeout { status: &'static str, screenshot_id: ScreenshotId },
}

impl StreamEvent {
    /// The SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            StreamEvent::Status { .. } => "status",
            StreamEvent::Done { .. } => "done",
            StreamEvent::Failed { .. } => "failed",
            StreamEvent::Timeout { .. } => "timeout",
        }
    }
}

/// The data of the `screenshot.completed` webhook event.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScreenshotCompleted {
    pub screenshot_id: ScreenshotId,
    pub url: String,
    /// The service's lasting `/files` URL (a retry hours later must not deliver an
    /// expired presigned link).
    pub public_url: String,
    pub format: OutputFormat,
    pub width: Option<i64>,
    pub height: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The published schema and the validator agree: the same fields, and every bound and
    /// default in the schema is the one the validator applies.
    #[test]
    fn the_options_schema_is_the_validators_contract() {
        let schema = crate::schema::tool_input::<ScreenshotIn>();
        let props = schema["properties"].as_object().unwrap();
        let mut names: Vec<&str> = props.keys().map(String::as_str).collect();
        let mut known = CaptureOptions::field_names().to_vec();
        names.sort();
        known.sort();
        assert_eq!(names, known);
        assert_eq!(schema["required"], serde_json::json!(["url"]));
        // Every bound accepts its edge and refuses one step past it.
        for (name, p) in props {
            let check = |v: Value, ok: bool| {
                let mut m = Map::new();
                m.insert("url".into(), "https://example.com".into());
                m.insert(name.clone(), v.clone());
                let r = ScreenshotIn::parse(&m, true);
                assert_eq!(r.is_ok(), ok, "{name} = {v}: {r:?}");
            };
            if let Some(max) = p.get("maximum").and_then(Value::as_f64) {
                check(serde_json::json!(max), true);
                check(serde_json::json!(max + 1.0), false);
            }
            if let Some(min) = p.get("minimum").and_then(Value::as_f64).filter(|m| *m > 0.0) {
                check(serde_json::json!(min), true);
                check(serde_json::json!(min - if min < 1.0 { 0.1 } else { 1.0 }), false);
            }
            if let Some(max) = p.get("maxLength").and_then(Value::as_u64).filter(|_| name != "url") {
                check(Value::String("x".repeat(max as usize)), true);
                check(Value::String("x".repeat(max as usize + 1)), false);
            }
        }
        // The defaults the schema states are the ones a bare request gets.
        let mut bare = Map::new();
        bare.insert("url".into(), "https://example.com".into());
        let opts = ScreenshotIn::parse(&bare, true).unwrap();
        let stated = |k: &str| props[k]["default"].clone();
        assert_eq!(stated("width"), serde_json::json!(opts.width));
        assert_eq!(stated("height"), serde_json::json!(opts.height));
        assert_eq!(stated("timeoutMs"), serde_json::json!(opts.timeout_ms));
        assert_eq!(stated("delay"), serde_json::json!(opts.delay));
        assert_eq!(stated("deviceScaleFactor"), serde_json::json!(opts.device_scale_factor));
        assert_eq!(stated("format"), serde_json::json!(opts.format));
        assert_eq!(stated("waitUntil"), serde_json::json!(opts.wait_until));
        assert_eq!(stated("cookieConsent") == "auto", opts.cookie_consent);
    }
}
