//! `GET /s/{token}`: the public share page of a capture (`templates/screenshots/share.html`).

use askama::Template;
use axum::extract::{Path, State};
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
                og_image: if job.format == OutputFormat::Pdf { thumb } else { public_url.clone() },
                public_url,
                share_url: share_url(&state, &token),
                job: Some(job),
            }
        }
        Ok(None) => SharePage {
            title: "Not found".into(),
            job: None,
            public_url: String::new(),
            og_image: String::new(),
            share_url: String::new(),
        },
        Err(e) => return ApiError::internal(e).into_response(),
    };
    let status = if page.job.is_some() { StatusCode::OK } else { StatusCode::NOT_FOUND };
    let doc = match page.render() {
        Ok(doc) => doc,
        Err(e) => return ApiError::internal(e).into_response(),
    };
    let mut r = (status, Html(doc)).into_response();
    if status == StatusCode::OK {
        r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    r
}
