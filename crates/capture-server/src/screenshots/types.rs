//! The wire types of screenshot jobs: the capture options (the body of
//! `POST /v1/screenshot` and the `take_screenshot` tool's input), the job, a page of jobs,
//! a share link, the stream's events and the `screenshot.completed` event. Each is the one
//! definition behind the handlers, the OpenAPI document and the MCP tool schemas.

use capture_core::credentials::CredentialsSet;
use capture_core::devices::Preset;
use capture_core::metadata::PageMetadata;
use capture_core::options::{CaptureOptions, ScreenshotIn};
use capture_core::{FieldError, JobStatus, OutputFormat, ScreenshotId, StorageStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use utoipa::ToSchema;

use crate::http::validated::Checked;
use crate::lists::list_type;

// The capture request is capture-core's `ScreenshotIn` (one type for the server, the OpenAPI
// document, the MCP tool and the CLI); every channel checks it through `validate`, so a bad
// value gets the same `VALIDATION_ERROR` through REST, MCP, uploads and the playground.
impl Checked for ScreenshotIn {
    type Valid = CaptureOptions;

    fn check(self) -> Result<CaptureOptions, FieldError> {
        self.into_options(true)
    }
}

/// Form fields (all strings: an HTML upload's, the playground's) as the JSON object the
/// capture request reads, each converted by the type its schema gives it
/// ([`crate::schema::value_type`]): numbers for integer and number fields, `true`/`1`/`on` and
/// `false`/`0`/`off`/empty for booleans, JSON for array and object fields, text otherwise. A
/// value that does not convert is left as text, for the check to refuse naming its field.
/// New options need nothing here.
pub fn form_to_json(fields: &[(String, String)]) -> Map<String, Value> {
    static TYPES: std::sync::OnceLock<std::collections::HashMap<String, String>> = std::sync::OnceLock::new();
    let types = TYPES.get_or_init(|| {
        let schema = crate::schema::tool_input::<ScreenshotIn>();
        let props = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
        props.iter().filter_map(|(k, p)| Some((k.clone(), crate::schema::value_type(p)?.to_string()))).collect()
    });
    fields.iter().map(|(k, v)| (k.clone(), form_value(types.get(k).map(String::as_str), v))).collect()
}

/// One form field's text as a value of the JSON type `ty`; left as text when it does not read
/// as one.
fn form_value(ty: Option<&str>, v: &str) -> Value {
    let text = || Value::String(v.to_string());
    match ty {
        Some("integer" | "number") => v.trim().parse::<serde_json::Number>().map_or_else(|_| text(), Value::Number),
        Some("boolean") => match v.trim() {
            "true" | "1" | "on" => Value::Bool(true),
            "false" | "0" | "off" | "" => Value::Bool(false),
            _ => text(),
        },
        Some("array" | "object") => serde_json::from_str(v).unwrap_or_else(|_| text()),
        _ => text(),
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
    /// What the capture read from its page (null until it is done, and for uploads).
    pub metadata: Option<PageMetadata>,
    /// The page as text beside the job's file (`content`), from the same load: a URL per
    /// form (markdown, text, html) once the job is done.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_urls: Option<BTreeMap<String, String>>,
    /// What `extract` read: a value per field (null where nothing matched).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
    /// Where each field of data came from: the selector that matched, `model:<name>` for the
    /// language model's, null where nothing did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<BTreeMap<String, Option<String>>>,
    /// Which credentials the request gave (header and cookie names, whether httpAuth was
    /// set), never their values; null when it gave none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credentials: Option<CredentialsSet>,
    /// Answered from the file of an identical done capture (`cacheTtl`): done at once,
    /// charged nothing.
    pub cached: bool,
    /// Where the copy for the request's `storage` destination was written (`s3://bucket/key`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_url: Option<String>,
    /// Why the copy for the request's `storage` destination could not be written (after its
    /// retries); the job is done all the same, and publicUrl serves the service's copy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_error: Option<String>,
    /// The copy for the request's `storage` destination: `pending` (the job is done, the copy
    /// is queued), then `stored` (storageUrl) or `failed` (storageError); absent without
    /// `storage`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "stored")]
    #[schemars(with = "Option<String>")]
    pub storage_status: Option<StorageStatus>,
    /// The customer's proxy the page left through (`proxy`): its id and the pool member
    /// that served the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<crate::proxies::types::ProxyServed>,
}

/// A device preset of `GET /v1/devices` (the `device` option of a capture, a run's and an
/// automation session's device).
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DevicePreset {
    /// The name a request gives (`iphone-15`).
    pub name: &'static str,
    /// phone, tablet or desktop.
    pub kind: &'static str,
    /// Viewport in CSS pixels, portrait.
    pub width: u32,
    pub height: u32,
    pub device_scale_factor: f64,
    pub mobile: bool,
    pub touch: bool,
    /// Null: the browser's own.
    pub user_agent: Option<&'static str>,
}

list_type! {
    /// Every device preset.
    pub type DeviceList = Collection<DevicePreset>;
    schemas: both;
}

impl DeviceList {
    /// The catalogue of `capture_core::devices`.
    pub fn all() -> DeviceList {
        DeviceList { data: capture_core::devices::DEVICE_PRESETS.iter().map(DevicePreset::from).collect() }
    }
}

impl From<&'static Preset> for DevicePreset {
    fn from(p: &'static Preset) -> DevicePreset {
        let d = &p.device;
        DevicePreset {
            name: p.name,
            kind: d.kind(),
            width: d.width,
            height: d.height,
            device_scale_factor: d.device_scale_factor,
            mobile: d.mobile,
            touch: d.touch,
            user_agent: d.user_agent.as_deref(),
        }
    }
}

list_type! {
    /// A page of jobs, newest first.
    pub type JobList = ListResponse<Job>;
    cursor
    /// Pass as `before` for the next page; null on the last page.
    ;
    schemas: both;
}

/// Most requests in one bulk request.
pub const BULK_MAX: usize = 500;

/// `POST /v1/screenshots/bulk`: many captures in one call, all accepted or none.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BulkIn {
    /// Options every request gets (any capture option but url); a request's own win.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub defaults: Option<Map<String, Value>>,
    /// 1 to 500 capture requests, each as the body of POST /v1/screenshot (its url and
    /// any options). The jobs come back in this order.
    #[schema(value_type = Vec<Object>)]
    pub requests: Vec<Map<String, Value>>,
}

impl Checked for BulkIn {
    type Valid = Vec<CaptureOptions>;
    /// Each request merged over the defaults and checked like POST /v1/screenshot; the first
    /// bad one refuses the batch, its field named `requests[i].<field>` (or
    /// `defaults.<field>` when the value came from there).
    fn check(self) -> Result<Vec<CaptureOptions>, FieldError> {
        if self.requests.is_empty() || self.requests.len() > BULK_MAX {
            return Err(FieldError::new("requests", "must hold 1 to 500 requests"));
        }
        let defaults = self.defaults.unwrap_or_default();
        if defaults.contains_key("url") {
            return Err(FieldError::new("defaults.url", "is not a default: each request names its own url"));
        }
        let mut out = Vec::with_capacity(self.requests.len());
        for (i, request) in self.requests.into_iter().enumerate() {
            let mut merged = defaults.clone();
            let own: Vec<String> = request.keys().cloned().collect();
            merged.extend(request);
            match crate::http::validated::validate::<ScreenshotIn>(&merged) {
                Ok(o) => out.push(o),
                Err(e) => {
                    let top = e.field.split(['.', '[']).next().unwrap_or_default();
                    let from_defaults = defaults.contains_key(top) && !own.iter().any(|k| k == top);
                    let at = if from_defaults { "defaults".to_string() } else { format!("requests[{i}]") };
                    return Err(FieldError::new(format!("{at}.{}", e.field), e.reason));
                }
            }
        }
        Ok(out)
    }
}

/// A bulk request accepted: its jobs, in the request's order.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchCreated {
    /// The batch (`bat_…`): `GET /v1/screenshots?batch=` lists its jobs; `batch.completed`
    /// is sent when the last one ends.
    pub batch_id: String,
    pub data: Vec<Job>,
}

/// The query of `GET /v1/screenshots`: a page of jobs, newest first, or one batch's jobs.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ScreenshotQuery {
    /// How many to return (1-100, default 20).
    #[schemars(with = "Option<u32>", range(min = 1, max = 100))]
    pub limit: Option<String>,
    /// A nextCursor value, or an ISO 8601 time: list jobs created before it.
    pub before: Option<String>,
    /// A batch id (bat_…): that bulk request's jobs in its order, all in one page.
    pub batch: Option<String>,
}

impl utoipa::IntoParams for ScreenshotQuery {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        crate::schema::query_params::<ScreenshotQuery>()
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
    /// What the capture read from its page.
    pub metadata: Option<PageMetadata>,
    /// The page as text beside the file (`content`), by form.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_urls: Option<BTreeMap<String, String>>,
    /// What `extract` read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<BTreeMap<String, Option<String>>>,
    /// The copy in the request's `storage` destination.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_url: Option<String>,
    /// Why that copy could not be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_error: Option<String>,
    /// `pending` when the job has a copy to write to the customer's bucket: it is queued, and
    /// `screenshot.stored` follows when it ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_status: Option<StorageStatus>,
}

/// The data of the `screenshot.stored` webhook event: a done job's copy to its `storage`
/// destination ended, written or given up.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScreenshotStored {
    pub screenshot_id: ScreenshotId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_values_convert_by_their_schema_type() {
        use serde_json::json;
        assert_eq!(form_value(Some("integer"), " 5000 "), json!(5000));
        assert_eq!(form_value(Some("number"), "1.5"), json!(1.5));
        assert_eq!(form_value(Some("integer"), "soon"), json!("soon"));
        assert_eq!(form_value(Some("boolean"), "on"), json!(true));
        assert_eq!(form_value(Some("boolean"), ""), json!(false));
        assert_eq!(form_value(Some("boolean"), "maybe"), json!("maybe"));
        assert_eq!(form_value(Some("array"), r##"[".ad", "#cookie"]"##), json!([".ad", "#cookie"]));
        assert_eq!(form_value(Some("object"), r#"{"x-a": "1"}"#), json!({"x-a": "1"}));
        assert_eq!(form_value(Some("array"), "[.ad"), json!("[.ad"), "not JSON: left as text for the check");
        assert_eq!(form_value(Some("string"), "42"), json!("42"));
        assert_eq!(form_value(None, "x"), json!("x"));
        let m = form_to_json(&[("timeoutMs".into(), "5000".into()), ("waitFor".into(), "body".into())]);
        assert_eq!(Value::Object(m), json!({"timeoutMs": 5000, "waitFor": "body"}));
    }

    /// The published schema and the validator agree: the same fields, and every bound and
    /// default in the schema is the one the validator applies.
    #[test]
    fn the_options_schema_is_the_validators_contract() {
        let schema = crate::schema::tool_input::<ScreenshotIn>();
        let props = schema["properties"].as_object().unwrap();
        let mut names: Vec<&str> = props.keys().map(String::as_str).collect();
        let mut known = ScreenshotIn::field_names().to_vec();
        names.sort();
        known.sort();
        assert_eq!(names, known);
        assert_eq!(schema["required"], serde_json::json!(["url"]));
        // Every bound accepts its edge and refuses one step past it.
        for (name, p) in props {
            let check = |v: Value, ok: bool| {
                let mut m = Map::new();
                m.insert("url".into(), "https://example.com".into());
                // An option that applies to some formats only is checked with one of them.
                if name == "quality" {
                    m.insert("format".into(), "jpeg".into());
                }
                if name == "maxChars" || name == "from" {
                    m.insert("format".into(), "text".into());
                }
                if name == "proxyStickyKey" {
                    m.insert("proxy".into(), "office".into());
                }
                m.insert(name.clone(), v.clone());
                let r = crate::http::validated::validate::<ScreenshotIn>(&m);
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
        let opts = crate::http::validated::validate::<ScreenshotIn>(&bare).unwrap();
        let stated = |k: &str| props[k]["default"].clone();
        assert_eq!(stated("width"), serde_json::json!(opts.width));
        assert_eq!(stated("height"), serde_json::json!(opts.height));
        assert_eq!(stated("timeoutMs"), serde_json::json!(opts.timeout_ms));
        assert_eq!(stated("delay"), serde_json::json!(opts.delay));
        assert_eq!(stated("deviceScaleFactor"), serde_json::json!(opts.device_scale_factor));
        assert_eq!(stated("format"), serde_json::json!(opts.format));
        assert_eq!(stated("waitUntil"), serde_json::json!(opts.wait_until));
        assert_eq!(stated("cookieConsent"), serde_json::json!(opts.cookie_consent.as_str()));
    }
}
