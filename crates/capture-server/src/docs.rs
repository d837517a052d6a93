//! `GET /openapi.json` (OpenAPI 3.1, generated from the handlers' annotations and the
//! schema types below) and the Swagger UI at `/docs`, served from the binary (no internet).

use axum::Router;
use serde::Serialize;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};
use utoipa_swagger_ui::SwaggerUi;

use crate::state::AppState;

/// Docs routes.
pub fn router() -> Router<AppState> {
    Router::new().merge(SwaggerUi::new("/docs").url("/openapi.json", ApiDoc::openapi()))
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Capture API", description = "Render web pages to PNG, JPEG, WebP or PDF through asynchronous jobs."),
    paths(
        crate::screenshots::create,
        crate::screenshots::upload,
        crate::screenshots::get_one,
        crate::screenshots::list,
        crate::screenshots::stream,
        crate::screenshots::share,
        crate::screenshots::unshare,
        crate::screenshots::pdf_download,
        crate::account::balance_handler,
    ),
    components(schemas(ScreenshotRequest, Job, JobList, Balance, BalanceWindow, BalanceUsage, ErrorBody, ShareLink)),
    modifiers(&BearerAuth),
    tags((name = "screenshots", description = "Capture jobs"), (name = "account", description = "Balance and usage"))
)]
/// The OpenAPI document.
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("sk_live_…").build()),
        );
    }
}

/// Body of `POST /v1/screenshot` (bounds as enforced by the service).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct ScreenshotRequest {
    /// http or https address of the page.
    #[schema(example = "https://example.com")]
    url: String,
    /// Viewport width in pixels (100–3840).
    #[schema(default = 1280, minimum = 100, maximum = 3840)]
    width: Option<u32>,
    /// Viewport height in pixels (100–2160).
    #[schema(default = 800, minimum = 100, maximum = 2160)]
    height: Option<u32>,
    /// Capture the whole scrollable page (scrolls first; output at most 16384 px tall).
    #[schema(default = false)]
    full_page: Option<bool>,
    /// png, jpeg or webp.
    #[schema(default = "png", pattern = "^(png|jpeg|webp)$")]
    format: Option<String>,
    /// Produce a PDF instead of an image.
    #[schema(default = false)]
    pdf: Option<bool>,
    /// Milliseconds to wait after load (0–30000).
    #[schema(default = 0, minimum = 0, maximum = 30000)]
    delay: Option<u32>,
    /// Send prefers-color-scheme: dark.
    #[schema(default = false)]
    dark_mode: Option<bool>,
    /// auto dismisses common consent banners; none leaves them.
    #[schema(default = "auto", pattern = "^(auto|none)$")]
    cookie_consent: Option<String>,
    /// CSS selector to wait for (best effort).
    wait_for: Option<String>,
    /// networkidle, load, domcontentloaded or none.
    #[schema(default = "networkidle", pattern = "^(networkidle|load|domcontentloaded|none)$")]
    wait_until: Option<String>,
    /// Timeout for navigation, waitFor and clickBefore (1000–60000 ms).
    #[schema(default = 10000, minimum = 1000, maximum = 60000)]
    timeout_ms: Option<u32>,
    /// Script evaluated right before capture (at most 16 KiB).
    #[schema(max_length = 16384)]
    pre_screenshot_js: Option<String>,
    /// Device pixel ratio (0.5–3).
    #[schema(default = 1.0, minimum = 0.5, maximum = 3.0)]
    device_scale_factor: Option<f64>,
    /// CSS selector clicked before waitFor and capture.
    click_before: Option<String>,
}

/// A screenshot job (one shape everywhere).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct Job {
    id: String,
    /// Same as id.
    screenshot_id: String,
    /// pending, processing, done or failed.
    status: String,
    /// The requested page (or upload://name for uploads).
    url: String,
    /// png, jpeg, webp or pdf.
    format: String,
    public_url: Option<String>,
    thumbnail_url: Option<String>,
    page_title: Option<String>,
    tags: Vec<String>,
    width: Option<u32>,
    /// Null for PDFs.
    height: Option<u32>,
    error: Option<String>,
    created_at: String,
    completed_at: Option<String>,
}

/// A page of jobs, newest first.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct JobList {
    data: Vec<Job>,
    /// Pass as `before` for the next page; null on the last page.
    next_cursor: Option<String>,
}

/// The error body of every /v1 error.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct ErrorBody {
    error: String,
    /// Stable machine code, e.g. VALIDATION_ERROR, PLAN_QUOTA_EXCEEDED.
    code: String,
    /// Equals the X-Request-ID header.
    request_id: String,
    details: Option<serde_json::Value>,
}

/// A public share link.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct ShareLink {
    share_url: String,
    screenshot_id: String,
}

/// The live monthly balance.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct Balance {
    user_id: String,
    plan: String,
    is_admin: bool,
    /// Always "actions".
    unit: String,
    window: BalanceWindow,
    usage: BalanceUsage,
}

/// The calendar month (UTC).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct BalanceWindow {
    interval: String,
    started_at: String,
    reset_at: String,
    reset_seconds: i64,
}

/// Usage in the window.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct BalanceUsage {
    used: i64,
    limit: Option<i64>,
    remaining: Option<i64>,
    unlimited: bool,
    percent_used: Option<f64>,
    /// plan-limit or admin-unlimited.
    policy: String,
}
