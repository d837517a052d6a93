//! The wire types of screenshot jobs, as the OpenAPI document describes them.

use serde::Serialize;
use utoipa::ToSchema;

// Body of `POST /v1/screenshot` (bounds as enforced by the service).
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

/// A public share link.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct ShareLink {
    share_url: String,
    screenshot_id: String,
}
