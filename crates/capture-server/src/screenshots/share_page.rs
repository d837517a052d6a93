//! `GET /s/{token}`: the public share page of a capture.

use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use capture_core::ids;

use super::service::{share_url, view};
use crate::html::esc;
use crate::http::ApiError;
use crate::state::AppState;

/// `GET /s/{token}`: the public share page (no credential), with Open Graph tags.
pub async fn share_page(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    let row = if ids::is_token(&token, 16, 64) { state.store.screenshot_by_share(&token).await } else { Ok(None) };
    let row = match row {
        Ok(Some(r)) => r,
        Ok(None) => {
            return (
                StatusCode::NOT_FOUND,
                axum::response::Html(page(
                    "Not found",
                    "<h1>Not found</h1><p>This share link does not exist or was revoked.</p>",
                    "",
                )),
            )
                .into_response();
        }
        Err(e) => return ApiError::internal(e).into_response(),
    };
    let job = view(&state, &row).await;
    let title = row.page_title.clone().filter(|t| !t.is_empty()).unwrap_or_else(|| row.url.clone());
    let public = job.public_url.as_deref().unwrap_or("");
    let thumb = job.thumbnail_url.as_deref().unwrap_or("");
    let og_image = if row.format == "pdf" { thumb } else { public };
    let share_url = share_url(&state, &token);
    let meta = format!(
        "<meta property=\"og:type\" content=\"website\">\n<meta property=\"og:title\" content=\"{t}\">\n\
         <meta property=\"og:description\" content=\"Capture of {u}\">\n<meta property=\"og:url\" content=\"{s}\">\n\
         <meta property=\"og:image\" content=\"{i}\">\n<meta name=\"twitter:card\" content=\"summary_large_image\">\n\
         <meta name=\"twitter:image\" content=\"{i}\">",
        t = esc(&title),
        u = esc(&row.url),
        s = esc(&share_url),
        i = esc(og_image)
    );
    let body = match (row.status.as_str(), row.format.as_str()) {
        ("done", "pdf") => format!(
            "<h1>{t}</h1><p>Capture of <code>{u}</code></p><p><a href=\"{p}\">Open the PDF</a></p>{img}",
            t = esc(&title),
            u = esc(&row.url),
            p = esc(public),
            img = if thumb.is_empty() {
                String::new()
            } else {
                format!("<img src=\"{}\" alt=\"First page of the PDF\">", esc(thumb))
            }
        ),
        ("done", _) => format!(
            "<h1>{t}</h1><p>Capture of <code>{u}</code></p><img src=\"{p}\" alt=\"Capture of {u}\">",
            t = esc(&title),
            u = esc(&row.url),
            p = esc(public)
        ),
        (s, _) => format!("<h1>{}</h1><p>This capture is {}.</p>", esc(&title), esc(s)),
    };
    let mut r = axum::response::Html(page(&title, &body, &meta)).into_response();
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn page(title: &str, body: &str, meta: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
         <title>{} · Capture</title>{meta}<style>body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2rem auto;padding:0 1rem}}\
         img{{max-width:100%;border:1px solid #ddd}}</style></head><body>{body}</body></html>",
        esc(title)
    )
}
