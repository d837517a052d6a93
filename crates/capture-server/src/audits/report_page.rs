//! `GET /r/{token}`: the public report page of an audit (the engine's self-contained HTML
//! report, readable on a phone), and `GET /r/{token}.pdf`: the same page printed by the
//! service's own Chromium — by the worker when the audit finishes (so any node serves it),
//! or on first request by a node with a browser if that failed — and kept with the audit.

use std::time::Duration;

use crate::http::Path;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use capture_audit::report::{HtmlOptions, Report, render_html};
use capture_browser::BrowserPool;
use capture_browser::session::{PdfSpec, SessionOptions};
use capture_core::JobStatus;
use capture_store::AuditRow;

use super::service::{by_token, pdf_url};
use crate::error::{Error, Result};
use crate::http::ApiError;
use crate::state::AppState;

/// How long rendering a report's PDF may take.
const PDF_TIMEOUT: Duration = Duration::from_secs(60);

/// `/r/{token}` and `/r/{token}.pdf` (one route: a path parameter cannot end in a suffix).
pub async fn report_page(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    let pdf = token.ends_with(".pdf");
    let token = if pdf { token.trim_end_matches(".pdf").to_string() } else { token };
    let row = match by_token(&state, &token).await {
        Ok(Some(row)) => row,
        Ok(None) => {
            return page(
                &state,
                StatusCode::NOT_FOUND,
                simple_page("Report not found", "There is no report at this address."),
            );
        }
        Err(e) => return ApiError::from(e).into_response(),
    };
    let status = row.status;
    match status {
        JobStatus::Done => {}
        JobStatus::Failed => {
            let why = row.error.clone().unwrap_or_else(|| "the audit failed".into());
            let body = format!("The audit of {} failed: {}.", row.url, why);
            return page(&state, StatusCode::NOT_FOUND, simple_page("Audit failed", &body));
        }
        _ => {
            let body = format!(
                "The audit of {} is still running ({} pages audited so far). Reload this page in a moment.",
                row.url, row.pages_audited
            );
            let mut r = page(&state, StatusCode::ACCEPTED, simple_page("Audit in progress", &body));
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            return r;
        }
    }
    let report = match report_of(&row) {
        Ok(r) => r,
        Err(e) => return ApiError::from(e).into_response(),
    };
    if pdf {
        return match pdf_of(&state, &row, &report).await {
            Ok(bytes) => {
                let mut r = (StatusCode::OK, bytes).into_response();
                let h = r.headers_mut();
                h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/pdf"));
                let host = url::Url::parse(&row.url).ok().and_then(|u| u.host_str().map(str::to_string));
                let name = crate::screenshots::service::sanitize_filename(&host.unwrap_or_else(|| "site".into()));
                if let Ok(v) = HeaderValue::from_str(&format!("inline; filename=\"audit-{name}.pdf\"")) {
                    h.insert(header::CONTENT_DISPOSITION, v);
                }
                h.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
                r
            }
            Err(e) => ApiError::from(e).into_response(),
        };
    }
    let opts = HtmlOptions { brand: None, pdf_url: Some(pdf_url(&state, &token)) };
    match render_html(&report, &opts) {
        Ok(doc) => page(&state, StatusCode::OK, doc),
        Err(e) => ApiError::internal(e).into_response(),
    }
}

/// The stored report of a finished audit.
fn report_of(row: &AuditRow) -> Result<Report> {
    let text =
        row.report.as_deref().ok_or_else(|| Error::internal(format!("audit {} is done without a report", row.id)))?;
    serde_json::from_str(text)
        .map_err(|e| Error::internal(format!("audit {}: the stored report does not parse: {e}", row.id)))
}

/// The report's PDF: the one rendered when the audit finished, or rendered now by this
/// node's browser pool (when that failed) and kept.
async fn pdf_of(state: &AppState, row: &AuditRow, report: &Report) -> Result<Vec<u8>> {
    if let Some(key) = &row.pdf_key
        && let Some(bytes) = state.blobs.get(key).await.map_err(Error::internal)?
    {
        return Ok(bytes);
    }
    let Some(pool) = state.browser.pool.clone() else {
        return Err(Error::not_found("PDF (it is being made; retry in a moment)"));
    };
    let bytes = render_pdf(state, &pool, report).await?;
    store_pdf(state, &row.id, bytes.clone()).await;
    Ok(bytes)
}

/// Print the report's page to an A4 PDF in a fresh context of `pool`, the screenshots inlined
/// (the service's own address is out of the browser's reach).
pub(crate) async fn render_pdf(state: &AppState, pool: &BrowserPool, report: &Report) -> Result<Vec<u8>> {
    let mut inlined = report.clone();
    for p in &mut inlined.pages {
        for shot in [&mut p.screenshots.desktop_url, &mut p.screenshots.mobile_url] {
            if let Some(url) = shot.as_ref()
                && let Some(name) = url.rsplit_once("/files/").map(|(_, n)| n.to_string())
            {
                let bytes = state.blobs.get(&name).await.map_err(Error::internal)?;
                *shot = bytes.map(|b| {
                    let data = base64::engine::general_purpose::STANDARD.encode(b);
                    format!("data:{};base64,{data}", crate::blob::content_type(&name))
                });
            }
        }
    }
    let html = render_html(&inlined, &HtmlOptions::default()).map_err(Error::internal)?;
    let session = pool
        .open_session(SessionOptions { deadline: PDF_TIMEOUT, ..SessionOptions::default() })
        .await
        .map_err(Error::internal)?;
    let rendered = async {
        let frame = session.frame_tree(PDF_TIMEOUT).await?.frame.id;
        session.set_document_content(&frame, &html, PDF_TIMEOUT).await?;
        session
            .evaluate(
                "Promise.all(Array.from(document.images).map((i) => i.decode().catch(() => null))).then(() => true)",
                true,
                PDF_TIMEOUT,
            )
            .await?;
        session.pdf(PdfSpec::default(), PDF_TIMEOUT).await
    }
    .await;
    session.close().await;
    rendered.map_err(Error::internal)
}

/// Keep a rendered PDF with its audit (best effort: it can be rendered again).
pub(crate) async fn store_pdf(state: &AppState, audit_id: &str, bytes: Vec<u8>) {
    let key = crate::blob::new_name("pdf");
    match state.blobs.put(&key, bytes, "application/pdf").await {
        Ok(()) => {
            if let Err(e) = state.store.set_audit_pdf(audit_id, &key).await {
                tracing::warn!(audit = %audit_id, error = %e, "remembering a report's PDF failed");
            }
        }
        Err(e) => tracing::warn!(audit = %audit_id, error = %e, "storing a report's PDF failed"),
    }
}

/// A public report response: never cached by others, never framed, no scripts at all;
/// styles inline and images only from this service (the screenshots).
fn page(state: &AppState, status: StatusCode, doc: String) -> Response {
    let mut r = (status, doc).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert("x-robots-tag", HeaderValue::from_static("noindex, nofollow"));
    let img = crate::html::origin(&state.base_url).map(|o| format!(" {o}")).unwrap_or_default();
    let csp = format!(
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:{img}; form-action 'none'; \
         frame-ancestors 'none'; base-uri 'none'"
    );
    if let Ok(v) = HeaderValue::from_str(&csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    r
}

/// `templates/public/report_notice.html`: a one-paragraph page (not found, failed, in
/// progress); the text is escaped by the template.
#[derive(askama::Template)]
#[template(path = "public/report_notice.html")]
struct Notice<'a> {
    title: &'a str,
    text: &'a str,
}

fn simple_page(title: &str, text: &str) -> String {
    askama::Template::render(&Notice { title, text }).unwrap_or_else(|e| {
        tracing::error!(error = %e, "rendering a report notice failed");
        String::new()
    })
}
