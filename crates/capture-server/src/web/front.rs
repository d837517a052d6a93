//! The front page for signed-out visitors: what the service does, a live example, and the
//! way to sign up or in. The example is a capture of the service's own API reference
//! (`/docs`), rendered by this node's browser pool when it starts (nodes with the api and
//! worker roles); until it is ready, or on a node without a browser, the page goes
//! without it.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use askama::Template;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use capture_browser::{BrowserPool, CaptureRequest, ImageFormat, PageSource, WaitUntil};
use capture_core::time::now_ms;
use tokio_util::sync::CancellationToken;

use super::base::layout::{Chrome, minute};
use crate::state::AppState;

/// The example capture, once made.
static EXAMPLE: OnceLock<Example> = OnceLock::new();

/// Attempts at the example before giving up (the browser may still be starting).
const ATTEMPTS: u32 = 5;

struct Example {
    png: Vec<u8>,
    width: u32,
    height: u32,
    url: String,
    captured_at: i64,
}

/// Capture `{base_url}/docs` once with `pool` and keep it for the front page. Runs at
/// start-up beside the workers; retries a few times, then logs and gives up.
pub async fn render_example(state: AppState, pool: Arc<BrowserPool>, stop: CancellationToken) {
    let url = format!("{}/docs", state.base_url);
    for attempt in 1..=ATTEMPTS {
        let req = CaptureRequest {
            source: PageSource::Url(url.clone()),
            width: 1280,
            height: 800,
            full_page: false,
            format: ImageFormat::Png,
            pdf: false,
            delay_ms: 500,
            dark_mode: false,
            cookie_consent_auto: false,
            wait_for: None,
            wait_until: WaitUntil::NetworkIdle,
            timeout_ms: 15_000,
            pre_screenshot_js: None,
            device_scale_factor: 1.0,
            click_before: None,
            deadline: Duration::from_secs(60),
        };
        let r = tokio::select! {
            r = pool.capture(req) => r,
            _ = stop.cancelled() => return,
        };
        match r {
            Ok(out) => {
                let ex = Example {
                    width: out.width.unwrap_or(1280),
                    height: out.height.unwrap_or(800),
                    png: out.bytes,
                    url,
                    captured_at: now_ms(),
                };
                tracing::info!(bytes = ex.png.len(), "front page: the example capture of the API reference is ready");
                let _ = EXAMPLE.set(ex);
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, attempt, "front page: capturing the API reference failed");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(2 * attempt as u64)) => {}
                    _ = stop.cancelled() => return,
                }
            }
        }
    }
}

/// `GET /assets/example.png`: the example capture (404 until it is made).
pub async fn example_png() -> Response {
    match EXAMPLE.get() {
        Some(ex) => {
            let mut r = ex.png.clone().into_response();
            let h = r.headers_mut();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static("image/png"));
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300"));
            h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
            r
        }
        None => (StatusCode::NOT_FOUND, [(header::CACHE_CONTROL, "no-store")], "no example yet").into_response(),
    }
}

/// The example as the front page shows it.
pub struct ExampleView {
    pub width: u32,
    pub height: u32,
    pub url: String,
    pub captured: String,
}

/// `templates/web/home.html`
#[derive(Template)]
#[template(path = "web/home.html")]
pub struct FrontPage<'a> {
    pub chrome: Chrome<'a>,
    pub example: Option<ExampleView>,
    pub mcp_url: String,
}

impl<'a> FrontPage<'a> {
    pub fn new(state: &AppState) -> Self {
        FrontPage {
            chrome: Chrome::public("Web pages to images and PDFs"),
            example: EXAMPLE.get().map(|e| ExampleView {
                width: e.width,
                height: e.height,
                url: e.url.clone(),
                captured: minute(e.captured_at),
            }),
            mcp_url: format!("{}/mcp", state.base_url),
        }
    }
}
