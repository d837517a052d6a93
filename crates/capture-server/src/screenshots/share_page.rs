//! `GET /s/{token}`: the public share page of a capture (`templates/screenshots/share.html`).

use crate::http::Path;
use askama::Template;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use capture_core::{JobStatus, OutputFormat, ids};

use super::service::{share_url, view};
use super::types::Job;
use crate::http::ApiError;
use crate::state::AppState;

/// The share page: the capture with its Open Graph tags, or "Not found" (`job` is `None`).
#[derive(Template)]
#[template(path = "screenshots/share.html")]
struct SharePage {
    title: String,
    job: Option<Job>,
    public_url: String,
    og_image: String,
    share_url: String,
    style: &'static str,
}

/// The page's only style, inline; the CSP allows exactly it by its hash.
const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2rem auto;padding:0 1rem}img,video{max-width:100%;border:1px solid #ddd}";

/// The share page's Content-Security-Policy: nothing runs, nothing is fetched but the
/// capture's own image from `img_origins`, its one inline style by hash, no framing.
fn csp(img_origins: &[String]) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(STYLE.as_bytes()));
    let mut img = String::from("'self'");
    for o in img_origins {
        if !img.split(' ').any(|x| x == o) {
            img.push(' ');
            img.push_str(o);
        }
    }
    format!(
        "default-src 'none'; img-src {img}; media-src {img}; style-src 'sha256-{hash}'; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'"
    )
}

/// `GET /s/{token}`: the public share page (no credential), with Open Graph tags.
pub async fn share_page(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    let row = if ids::is_token(&token, 16, 64) { state.store.screenshot_by_share(&token).await } else { Ok(None) };
    let page = match row {
        Ok(Some(row)) => {
            let job = view(&state, &row).await;
            let public_url = job.public_url.clone().unwrap_or_default();
            let thumb = job.thumbnail_url.clone().unwrap_or_default();
            SharePage {
                title: row.page_title.clone().filter(|t| !t.is_empty()).unwrap_or_else(|| row.url.clone()),
                // A PDF, a video or the page as text shows its first page, poster or preview.
                og_image: if !matches!(
                    job.format,
                    OutputFormat::Png | OutputFormat::Jpeg | OutputFormat::Webp | OutputFormat::Gif
                ) {
                    thumb
                } else {
                    public_url.clone()
                },
                public_url,
                share_url: share_url(&state, &token),
                job: Some(job),
                style: STYLE,
            }
        }
        Ok(None) => SharePage {
            title: "Not found".into(),
            job: None,
            public_url: String::new(),
            og_image: String::new(),
            share_url: String::new(),
            style: STYLE,
        },
        Err(e) => return ApiError::internal(e).into_response(),
    };
    let status = if page.job.is_some() { StatusCode::OK } else { StatusCode::NOT_FOUND };
    let doc = match page.render() {
        Ok(doc) => doc,
        Err(e) => return ApiError::internal(e).into_response(),
    };
    let origins: Vec<String> = page
        .job
        .iter()
        .flat_map(|j| [j.public_url.as_deref(), j.thumbnail_url.as_deref()])
        .flatten()
        .filter_map(crate::html::origin)
        .collect();
    let mut r = (status, Html(doc)).into_response();
    let h = r.headers_mut();
    if status == StatusCode::OK {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    if let Ok(v) = HeaderValue::from_str(&csp(&origins)) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    r
}
