//! The front page for signed-out visitors: what the service does, a live example, and the
//! way to sign up or in. The example is a capture of the service's own API reference,
//! rendered by this node's browser pool when it starts (nodes with the api and worker
//! roles); until it is ready, or on a node without a browser, the page goes without it.
//!
//! The egress policy never lets the browser load this service's own listener (so a tenant
//! cannot make it call the service from inside), so the reference is not loaded from
//! `/docs`: the same OpenAPI document `/docs` shows is rendered here as one self-contained
//! HTML page (`templates/web/reference.html`) and the browser captures that document.

use std::sync::Arc;
use std::time::Duration;

use askama::Template;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use capture_browser::{BrowserPool, CaptureOptions, CaptureRequest, PageSource, WaitUntil};
use tokio_util::sync::CancellationToken;

use super::base::layout::{Chrome, minute};
use crate::state::{AppState, Example};

/// Attempts at the example before giving up (the browser may still be starting).
const ATTEMPTS: u32 = 5;

/// Capture `{base_url}/docs` once with `pool` and keep it for the front page. Runs at
/// start-up beside the workers; retries a few times, then logs and gives up.
pub async fn render_example(state: AppState, pool: Arc<BrowserPool>, stop: CancellationToken) {
    let url = format!("{}/openapi.json", state.base_url);
    let html = match reference_html() {
        Ok(h) => h,
        Err(e) => {
            tracing::error!(error = %e, "front page: rendering the API reference failed");
            return;
        }
    };
    for attempt in 1..=ATTEMPTS {
        let options = CaptureOptions {
            width: 1280,
            height: 800,
            cookie_consent: capture_core::options::CookieConsent::None,
            wait_until: WaitUntil::Networkidle,
            timeout_ms: 15_000,
            ..CaptureOptions::default()
        };
        let req = CaptureRequest {
            source: PageSource::Html(html.clone()),
            options,
            deadline: Duration::from_secs(60),
            proxy: None,
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
                    captured_at: state.clock.now_ms(),
                };
                tracing::info!(bytes = ex.png.len(), "front page: the example capture of the API reference is ready");
                let _ = state.front_example.set(ex);
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
pub async fn example_png(State(state): State<AppState>) -> Response {
    match state.front_example.get() {
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
            example: state.front_example.get().map(|e| ExampleView {
                width: e.width,
                height: e.height,
                url: e.url.clone(),
                captured: minute(e.captured_at),
            }),
            mcp_url: format!("{}/mcp", state.base_url),
        }
    }
}

/// `templates/web/reference.html`: the API reference as one page, the example's source.
#[derive(Template)]
#[template(path = "web/reference.html")]
struct Reference {
    title: String,
    description: String,
    version: String,
    count: usize,
    groups: Vec<Group>,
}

/// The operations of one tag.
struct Group {
    name: String,
    description: String,
    ops: Vec<Op>,
}

struct Op {
    method: String,
    class: String,
    path: String,
    summary: String,
}

/// The OpenAPI document (the one `/openapi.json` serves and `/docs` shows) as one HTML page.
pub fn reference_html() -> Result<String, askama::Error> {
    let doc = serde_json::to_value(crate::docs::openapi()).unwrap_or_default();
    let text = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
    let mut groups: Vec<Group> = doc["tags"]
        .as_array()
        .map(|tags| {
            tags.iter()
                .map(|t| Group { name: text(&t["name"]), description: text(&t["description"]), ops: vec![] })
                .collect()
        })
        .unwrap_or_default();
    let mut count = 0;
    if let Some(paths) = doc["paths"].as_object() {
        for (path, item) in paths {
            for method in ["get", "post", "put", "patch", "delete"] {
                let op = &item[method];
                if !op.is_object() {
                    continue;
                }
                let tag = op["tags"][0].as_str().unwrap_or("other").to_string();
                let summary = op["summary"].as_str().or(op["description"].as_str()).unwrap_or("");
                let summary = summary.lines().next().unwrap_or("").to_string();
                let group = match groups.iter().position(|g| g.name == tag) {
                    Some(i) => &mut groups[i],
                    None => {
                        groups.push(Group { name: tag.clone(), description: String::new(), ops: vec![] });
                        groups.last_mut().expect("just pushed")
                    }
                };
                group.ops.push(Op {
                    method: method.to_uppercase(),
                    class: method.to_string(),
                    path: path.clone(),
                    summary,
                });
                count += 1;
            }
        }
    }
    groups.retain(|g| !g.ops.is_empty());
    Reference {
        title: text(&doc["info"]["title"]),
        description: text(&doc["info"]["description"]),
        version: text(&doc["info"]["version"]),
        count,
        groups,
    }
    .render()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_reference_lists_every_documented_operation() {
        let html = super::reference_html().unwrap();
        assert!(html.contains("<h1>Capture API</h1>"), "{html}");
        assert!(html.contains("<span class=\"m post\">POST</span><code>/v1/screenshot</code>"), "{html}");
        assert!(html.contains("<h2>screenshots</h2>") && html.contains("<h2>webhooks</h2>"));
        assert!(!html.contains("<script"), "a self-contained page");
    }
}
