//! Stored files: `GET /files/{name}` (public, by unguessable name) and a PDF job's
//! download as an attachment.

use crate::http::Path;
use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use capture_core::ScreenshotId;
use std::sync::Arc;

use super::service::{self, PdfFile};
use crate::auth::Account;
use crate::blob::{self, BlobStore};
use crate::http::{ApiError, ApiResult, Id};
use crate::state::AppState;

#[utoipa::path(get, path = "/api/pdf/download/{id}", tag = "screenshots", params(("id" = String, Path)), responses((status = 200, content_type = "application/pdf", description = "the PDF as an attachment"), (status = 404, body = crate::http::error::ErrorBody)), security(("api_key" = [])))]
/// Download a PDF job's file.
pub async fn pdf_download(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Id(id): Id<ScreenshotId>,
) -> ApiResult<Response> {
    Ok(pdf_response(service::pdf(&state, &account, &id).await?))
}

/// A PDF as a private attachment (the API's download and the website's).
pub fn pdf_response(file: PdfFile) -> Response {
    let mut resp = (StatusCode::OK, file.bytes).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/pdf"));
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{}\"", file.filename)) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
    resp
}

/// `GET /files/{name}`: a stored file, by its unguessable name, streamed from the blob store
/// (local folder or S3; in presigned mode too, so older links keep working).
pub async fn serve_file(State(blobs): State<Arc<dyn BlobStore>>, Path(name): Path<String>) -> Response {
    let page_html = name.ends_with(&format!(".{}", blob::PAGE_HTML_EXT));
    if (name.ends_with(".html") && !page_html) || name.starts_with("inbox-") {
        // Uploaded documents are inputs, never served (they would run on our origin); inbox
        // attachments are private mail, served only to their owner by
        // `/v1/inbox/messages/{id}/attachments/{index}`.
        return ApiError::not_found("file").into_response();
    }
    match blobs.open(&name).await {
        Ok(Some(file)) => {
            let mut r = (StatusCode::OK, axum::body::Body::from_stream(file.body)).into_response();
            let h = r.headers_mut();
            blob::serve_headers(&name, h);
            h.insert(header::CONTENT_LENGTH, HeaderValue::from(file.len));
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable"));
            r
        }
        Ok(None) => ApiError::not_found("file").into_response(),
        Err(e) => ApiError::internal(e).into_response(),
    }
}
