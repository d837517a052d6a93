//! The wire types of website audits: the body of `POST /v1/audits` (also the `run_audit`
//! tool's input), the audit, a page of audits, the stream's events and the
//! `audit.completed` / `audit.failed` webhook events. One definition behind the handlers, the
//! OpenAPI document and the MCP tool schemas.

use capture_audit::crawl::{DEFAULT_MAX_PAGES, MAX_PAGES};
use capture_audit::report::ReportType;
use capture_core::options::{bounds, validate_url};
use capture_core::{AuditId, FieldError, JobStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::http::validated::Checked;
use crate::lists::list_type;

/// `single_page` audits the URL alone; `full_site` crawls its site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuditReportType {
    SinglePage,
    FullSite,
}

impl AuditReportType {
    /// The engine's report type.
    pub fn engine(self) -> ReportType {
        match self {
            AuditReportType::SinglePage => ReportType::SinglePage,
            AuditReportType::FullSite => ReportType::FullSite,
        }
    }

    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditReportType::SinglePage => "single_page",
            AuditReportType::FullSite => "full_site",
        }
    }

    /// The type stored as `s`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "single_page" => Some(AuditReportType::SinglePage),
            "full_site" => Some(AuditReportType::FullSite),
            _ => None,
        }
    }
}

/// What to audit: the body of `POST /v1/audits` (and the `run_audit` tool's input).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(rename = "AuditRequest")]
pub struct AuditIn {
    /// The page to audit, or where the crawl of a whole site starts (http or https).
    #[schemars(url, length(max = bounds::URL_MAX), extend("examples" = ["https://example.com"]))]
    pub url: String,
    /// `single_page` (the URL alone, 1 action) or `full_site` (a same-site crawl, 1 action
    /// per page audited; `maxPages` are reserved up front and the unused part given back).
    #[schemars(extend("default" = "single_page"))]
    pub report_type: Option<AuditReportType>,
    /// Most pages a `full_site` audit loads (a `single_page` audit loads one).
    #[schemars(range(min = 1, max = MAX_PAGES), extend("default" = DEFAULT_MAX_PAGES))]
    pub max_pages: Option<u32>,
    /// Audit as a signed-in visitor: one of your browser profiles (id or name). Every page
    /// starts from its cookies and site storage, and the crawl's requests carry its cookies.
    /// A start page that redirects to a sign-in form fails the audit `profile_expired:`.
    #[schemars(length(min = 1, max = 100))]
    pub profile: Option<String>,
    /// Leave through one of your proxies (id or name, `POST /v1/proxies`): the pages and the
    /// crawl's own requests (robots.txt, sitemaps, link checks) go through it, behind the
    /// egress guard. A start page the proxy fails fails the audit `proxy_failed: …` (free).
    #[schemars(length(min = 1, max = 100))]
    pub proxy: Option<String>,
    /// For a sticky pool: the key that picks its member (default: the URL's host).
    #[schemars(length(min = 1, max = 200))]
    pub proxy_sticky_key: Option<String>,
}

/// A validated audit request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditOptions {
    pub url: String,
    pub report_type: AuditReportType,
    /// 1 for `single_page`.
    pub max_pages: u32,
    /// The browser profile (id or name as asked; the service keeps its id).
    pub profile: Option<String>,
    /// The proxy (id or name as asked) and a sticky pool's key.
    pub proxy: Option<String>,
    pub proxy_sticky_key: Option<String>,
}

impl Checked for AuditIn {
    type Valid = AuditOptions;

    /// The URL, the report type (single_page by default) and the page cap (1 for a single
    /// page, the default cap for a whole site).
    fn check(self) -> Result<AuditOptions, FieldError> {
        let url = validate_url(&self.url)?;
        let report_type = self.report_type.unwrap_or(AuditReportType::SinglePage);
        let max_pages = capture_audit::crawl::max_pages(self.max_pages).map_err(|e| FieldError::new("maxPages", e))?;
        let max_pages = if report_type == AuditReportType::SinglePage { 1 } else { max_pages };
        let profile = match self.profile.map(|p| p.trim().to_owned()) {
            Some(p) if p.is_empty() || p.chars().count() > 100 || p.chars().any(char::is_control) => {
                return Err(FieldError::new("profile", "must be a profile's id or name (1 to 100 characters)"));
            }
            other => other,
        };
        Ok(AuditOptions {
            url,
            report_type,
            max_pages,
            profile,
            proxy: capture_core::options::proxy_ref(self.proxy)?,
            proxy_sticky_key: capture_core::options::proxy_sticky_key(self.proxy_sticky_key)?,
        })
    }
}

// The OpenAPI schema is the JSON Schema above.
impl utoipa::PartialSchema for AuditIn {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::schema::openapi::<AuditIn>()
    }
}

impl ToSchema for AuditIn {
    fn name() -> std::borrow::Cow<'static, str> {
        "AuditRequest".into()
    }
}

/// The four category scores, 0–100 (null: nothing measured it).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditScores {
    pub performance: Option<u8>,
    pub seo: Option<u8>,
    pub accessibility: Option<u8>,
    pub best_practices: Option<u8>,
}

/// A website audit: one shape everywhere (responses, stream events, MCP tools).
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Audit {
    pub id: AuditId,
    /// pending → processing → done or failed.
    pub status: JobStatus,
    /// The URL asked for.
    pub url: String,
    pub report_type: AuditReportType,
    /// Most pages this audit loads (and the actions reserved for it).
    pub max_pages: u32,
    /// Pages audited so far (all of them once done).
    pub pages_audited: u32,
    /// Pages audited plus pages waiting, as last reported (while running).
    pub pages_total: u32,
    /// Category scores once done.
    pub scores: Option<AuditScores>,
    /// The public report page (no credential needed; anyone with the link can read it).
    pub report_url: String,
    /// The same report as a PDF.
    pub pdf_url: String,
    /// Actions kept: the pages audited once done, 0 when failed, the reservation before.
    pub actions: u32,
    pub error: Option<String>,
    pub created_at: String,
    pub completed_at: Option<String>,
    /// The whole report (`GET /v1/audits/{id}` of a finished audit; see docs/audits.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    #[schemars(with = "Option<Value>")]
    pub report: Option<Value>,
}

list_type! {
    /// A page of audits, newest first.
    pub type AuditList = ListResponse<Audit>;
    cursor
    /// Pass as `before` for the next page; null on the last page.
    ;
    schemas: both;
}

/// The input of the `get_audit` tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct GetAuditArgs {
    /// The audit id (aud_…).
    pub id: String,
    /// Include the whole report (pages, findings with evidence) when done; without it, the
    /// scores and the most important issues.
    #[serde(default)]
    pub include_report: bool,
}

/// Events of `GET /v1/audits/{id}/stream`: each is the data of the event named in
/// [`StreamEvent::name`].
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum StreamEvent {
    /// `status`: the audit's state changed.
    Status { status: JobStatus },
    /// `progress`: a page was audited.
    #[serde(rename_all = "camelCase")]
    Progress { pages_done: i64, pages_total: i64 },
    /// `done`: the audit (without the report; fetch it with `GET /v1/audits/{id}`).
    #[serde(rename_all = "camelCase")]
    Done { status: JobStatus, audit_id: AuditId, report_url: String, audit: Box<Audit> },
    /// `failed`: why.
    #[serde(rename_all = "camelCase")]
    Failed { status: JobStatus, audit_id: AuditId, error: Option<String> },
    /// `timeout`: the stream's time is up; the audit goes on.
    #[serde(rename_all = "camelCase")]
    Timeout { status: &'static str, audit_id: AuditId },
}

impl StreamEvent {
    /// The SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            StreamEvent::Status { .. } => "status",
            StreamEvent::Progress { .. } => "progress",
            StreamEvent::Done { .. } => "done",
            StreamEvent::Failed { .. } => "failed",
            StreamEvent::Timeout { .. } => "timeout",
        }
    }
}

/// The data of the `audit.completed` webhook event.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditCompleted {
    pub audit_id: AuditId,
    pub url: String,
    pub report_type: AuditReportType,
    pub pages_audited: u32,
    pub scores: AuditScores,
    /// Findings by severity over the whole report.
    pub critical: u32,
    pub warning: u32,
    pub info: u32,
    pub report_url: String,
    pub pdf_url: String,
}

/// The data of the `audit.failed` webhook event.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditFailed {
    pub audit_id: AuditId,
    pub url: String,
    pub report_type: AuditReportType,
    pub error: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: Value) -> Result<AuditOptions, FieldError> {
        crate::http::validated::validate::<AuditIn>(v.as_object().unwrap())
    }

    #[test]
    fn requests_are_validated_naming_the_field() {
        let ok = parse(serde_json::json!({"url": "https://example.com"})).unwrap();
        assert_eq!((ok.report_type, ok.max_pages), (AuditReportType::SinglePage, 1));
        let full = parse(serde_json::json!({"url": "https://example.com", "reportType": "full_site"})).unwrap();
        assert_eq!(full.max_pages, DEFAULT_MAX_PAGES);
        let capped =
            parse(serde_json::json!({"url": "https://example.com", "reportType": "full_site", "maxPages": 50}))
                .unwrap();
        assert_eq!(capped.max_pages, 50);
        for (body, field) in [
            (serde_json::json!({}), "url"),
            (serde_json::json!({"url": "ftp://example.com"}), "url"),
            (serde_json::json!({"url": 3}), "url"),
            (serde_json::json!({"url": "https://example.com", "reportType": "site"}), "reportType"),
            (serde_json::json!({"url": "https://example.com", "maxPages": 51}), "maxPages"),
            (serde_json::json!({"url": "https://example.com", "maxPages": 0}), "maxPages"),
            (serde_json::json!({"url": "https://example.com", "maxPages": "3"}), "maxPages"),
            (serde_json::json!({"url": "https://example.com", "depth": 3}), "depth"),
        ] {
            assert_eq!(parse(body.clone()).unwrap_err().field, field, "{body}");
        }
    }

    #[test]
    fn the_schema_states_the_validators_bounds() {
        let schema = crate::schema::tool_input::<AuditIn>();
        assert_eq!(schema["properties"]["maxPages"]["maximum"], MAX_PAGES);
        assert_eq!(schema["properties"]["maxPages"]["default"], DEFAULT_MAX_PAGES);
        assert_eq!(schema["required"], serde_json::json!(["url"]));
    }
}
