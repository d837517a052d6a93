//! `POST /v1/screenshot/upload`: a PNG, JPEG, WebP or PDF stored as a finished job, or an
//! HTML document queued for rendering. The body is read (and past the limit drained) here,
//! the file sniffed by its bytes, thumbnails made off the async threads.

use std::time::Duration;

use axum::Extension;
use axum::extract::{Multipart, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use capture_core::{ErrorCode, FieldError, OutputFormat, ids};
use capture_store::{IdemClaim, ScreenshotDone};

use super::service::{self, Created, NewJob, sanitize_filename};
use crate::auth::Account;
use crate::blob;
use crate::error::Error;
use crate::http::{ApiError, ApiResult};
use crate::idempotency::idempotent;
use crate::state::AppState;
use capture_core::options::ScreenshotIn;

/// Detected kind of an uploaded file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UploadKind {
    Png,
    Jpeg,
    Webp,
    Pdf,
    Html,
}

fn sniff(bytes: &[u8], filename: &str, content_type: &str) -> Option<UploadKind> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Some(UploadKind::Png);
    }
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        return Some(UploadKind::Jpeg);
    }
    if bytes.len() > 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        return Some(UploadKind::Webp);
    }
    if bytes.starts_with(b"%PDF-") {
        return Some(UploadKind::Pdf);
    }
    let name = filename.to_ascii_lowercase();
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(1024)]).to_ascii_lowercase();
    let head = head.trim_start_matches('\u{feff}').trim_start();
    let htmlish = content_type.starts_with("text/html")
        || name.ends_with(".html")
        || name.ends_with(".htm")
        || head.starts_with("<!doctype html")
        || head.starts_with("<html");
    (htmlish && std::str::from_utf8(bytes).is_ok()).then_some(UploadKind::Html)
}

/// A ≤320 px wide PNG thumbnail of an uploaded image and its size. The size is read from
/// the header and checked against the pixel limit ([`capture_browser::encode::MAX_DECODE_PIXELS`],
/// 25 megapixels) before anything is decoded, and decodes share the process's budget with
/// captures, so a decompression bomb costs nothing and a burst of uploads cannot multiply
/// the peak memory.
async fn image_thumbnail(bytes: &[u8]) -> Result<(Vec<u8>, u32, u32), FieldError> {
    capture_browser::encode::thumbnail(bytes.into(), 320).await.map_err(|e| {
        if matches!(e, capture_browser::encode::DecodeRefused::TooLarge { .. }) {
            tracing::info!(error = %e, "upload refused: too many pixels");
        }
        FieldError::new("file", e.to_string())
    })
}

/// First page of a PDF as a 320 px wide PNG, via poppler's `pdftoppm` when installed.
async fn pdf_thumbnail(pdf: &[u8]) -> Option<Vec<u8>> {
    // Rendering a page is a decode too: it waits for the same budget.
    let _permit = capture_browser::encode::decode_permits().acquire_owned().await.ok()?;
    let dir = std::env::temp_dir().join(format!("capture-pdf-{}", ids::random_string(12)));
    tokio::fs::create_dir_all(&dir).await.ok()?;
    let input = dir.join("in.pdf");
    tokio::fs::write(&input, pdf).await.ok()?;
    let out = dir.join("thumb");
    let status = tokio::time::timeout(
        Duration::from_secs(20),
        tokio::process::Command::new("pdftoppm")
            .args(["-png", "-f", "1", "-l", "1", "-singlefile", "-scale-to-x", "320", "-scale-to-y", "-1"])
            .arg(&input)
            .arg(&out)
            .kill_on_drop(true)
            .status(),
    )
    .await;
    let bytes = match status {
        Ok(Ok(s)) if s.success() => tokio::fs::read(dir.join("thumb.png")).await.ok(),
        _ => None,
    };
    let _ = tokio::fs::remove_dir_all(&dir).await;
    bytes
}

#[utoipa::path(post, path = "/v1/screenshot/upload", tag = "screenshots", request_body(content_type = "multipart/form-data", description = "`file` (PNG, JPEG, WebP, PDF or HTML) plus capture options as fields for HTML"),
    params(("Idempotency-Key" = Option<String>, Header, description = "[A-Za-z0-9_-]{8,128}; replays the first response for 24 h")),
    responses((status = 201, description = "image or PDF stored as a done job", body = super::types::Job), (status = 202, description = "HTML queued for rendering", body = super::types::Job),
    (status = 400, body = crate::http::error::ErrorBody), (status = 409, body = crate::http::error::ErrorBody), (status = 413, body = crate::http::error::ErrorBody),
    (status = 422, body = crate::http::error::ErrorBody, description = "IDEMPOTENCY_KEY_REUSED"), (status = 429, body = crate::http::error::ErrorBody),
    (status = 501, body = crate::http::error::ErrorBody, description = "FEATURE_UNAVAILABLE: HTML with extract.prompt, and no language model is configured"),
    (status = 503, body = crate::http::error::ErrorBody, description = "HTML only: the whole queue is full")), security(("api_key" = [])))]
/// Upload a file as a job.
pub async fn upload(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    headers: HeaderMap,
    req: Request,
) -> Response {
    let ct = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !ct.to_ascii_lowercase().starts_with("multipart/form-data") {
        return ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "send the upload as multipart/form-data with a 'file' part",
        )
        .into_response();
    }
    let limit = state.cfg.http.max_upload_bytes;
    // Read the body ourselves: past the limit keep draining (bounded) so the client gets
    // a clean 413 instead of a connection reset in the middle of its upload.
    let (parts, body) = req.into_parts();
    let raw = match read_draining(body, limit + 64 * 1024).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let req = Request::from_parts(parts, axum::body::Body::from(raw));
    let mut mp = match <Multipart as axum::extract::FromRequest<AppState>>::from_request(req, &state).await {
        Ok(m) => m,
        Err(e) => {
            return ApiError::new(ErrorCode::InvalidJson, format!("malformed multipart body: {e}")).into_response();
        }
    };
    let (file, fields) = match read_multipart(&mut mp, limit).await {
        Ok(x) => x,
        Err(e) => return e.into_response(),
    };
    let Some((filename, file_ct, bytes)) = file else {
        return ApiError::validation(FieldError::new("file", "is required (a PNG, JPEG, WebP, PDF or HTML file)"))
            .into_response();
    };
    let Some(kind) = sniff(&bytes, &filename, &file_ct) else {
        return ApiError::validation(FieldError::new(
            "file",
            "unsupported file type: upload a PNG, JPEG, WebP, PDF or HTML document",
        ))
        .into_response();
    };
    if bytes.is_empty() {
        return ApiError::validation(FieldError::new("file", "is empty")).into_response();
    }
    let mut hasher_input = Vec::with_capacity(bytes.len() + 256);
    for (k, v) in &fields {
        hasher_input.extend_from_slice(k.as_bytes());
        hasher_input.push(0);
        hasher_input.extend_from_slice(v.as_bytes());
        hasher_input.push(0);
    }
    hasher_input.extend_from_slice(filename.as_bytes());
    hasher_input.push(0);
    hasher_input.extend_from_slice(&bytes);
    let hash = crate::crypto::sha256_hex(&hasher_input);
    drop(hasher_input);
    let (st, acc) = (state.clone(), account.clone());
    idempotent(&state, &account, &headers, "POST /v1/screenshot/upload", hash, move |claim| async move {
        let upload = Upload { filename, kind, bytes, fields };
        Ok(match accept(&st, &acc, upload, claim.as_ref()).await? {
            Accepted::Queued(c) => (StatusCode::ACCEPTED, c.job, c.used),
            Accepted::Stored(c) => (StatusCode::CREATED, c.job, c.used),
        })
    })
    .await
}

/// A checked upload: the file, what its bytes say it is, and the form's capture options.
struct Upload {
    filename: String,
    kind: UploadKind,
    bytes: Vec<u8>,
    fields: Vec<(String, String)>,
}

/// What became of an upload.
enum Accepted {
    /// An HTML document, queued for rendering with the form's options.
    Queued(Created),
    /// An image or a PDF, stored as a finished job.
    Stored(Created),
}

/// Store the upload and create its job (one action either way).
async fn accept(state: &AppState, account: &Account, u: Upload, idem: Option<&IdemClaim>) -> Result<Accepted, Error> {
    let label = format!("upload://{}", sanitize_filename(&u.filename));
    if u.kind == UploadKind::Html {
        let form = crate::screenshots::types::form_to_json(&u.fields);
        let opts = crate::http::validated::shape::<ScreenshotIn>(&form)?.into_options(false)?;
        if opts.url.is_some() {
            return Err(FieldError::new("url", "must not be sent with an HTML upload").into());
        }
        let name = blob::new_name("html");
        state.blobs.put(&name, u.bytes, "text/html").await.map_err(Error::internal)?;
        let new = NewJob::Capture { opts: &opts, label: Some(label), html_blob: Some(name) };
        return Ok(Accepted::Queued(service::create(state, account, new, idem).await?));
    }
    let (format, width, height, thumb) = match u.kind {
        UploadKind::Pdf => (OutputFormat::Pdf, None, None, pdf_thumbnail(&u.bytes).await),
        _ => {
            let (thumb, w, h) = image_thumbnail(&u.bytes).await?;
            let f = match u.kind {
                UploadKind::Png => OutputFormat::Png,
                UploadKind::Jpeg => OutputFormat::Jpeg,
                _ => OutputFormat::Webp,
            };
            (f, Some(i64::from(w)), Some(i64::from(h)), Some(thumb))
        }
    };
    let name = blob::new_name(format.as_str());
    state.blobs.put(&name, u.bytes, blob::content_type(&name)).await.map_err(Error::internal)?;
    let thumb_key = match thumb {
        Some(t) => {
            let n = blob::new_name("png");
            state.blobs.put(&n, t, "image/png").await.map_err(Error::internal)?;
            Some(n)
        }
        None => None,
    };
    let done = ScreenshotDone {
        result_key: name,
        thumb_key,
        page_title: Some(u.filename),
        tags: vec!["upload".into()],
        width,
        height,
        metadata: None,
        storage_url: None,
        storage_error: None,
    };
    Ok(Accepted::Stored(service::create(state, account, NewJob::Stored { label, format, done }, idem).await?))
}

type UploadedFile = (String, String, Vec<u8>);

/// Read at most `limit` bytes of `body`. A larger body is drained and discarded (up to
/// 8 × the limit or 30 s) before answering 413, so the client can read the answer.
async fn read_draining(body: axum::body::Body, limit: usize) -> ApiResult<bytes::Bytes> {
    use futures_util::StreamExt;
    let mut stream = body.into_data_stream();
    let mut buf = bytes::BytesMut::new();
    let mut total = 0usize;
    let too_large = || ApiError::new(ErrorCode::PayloadTooLarge, format!("the upload is larger than {limit} bytes"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let next = tokio::time::timeout_at(deadline, stream.next()).await;
        match next {
            Err(_) if total > limit => return Err(too_large()),
            Err(_) => return Err(ApiError::new(ErrorCode::InvalidJson, "the upload took too long")),
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(ApiError::new(ErrorCode::InvalidJson, format!("could not read the upload: {e}")));
            }
            Ok(Some(Ok(chunk))) => {
                total += chunk.len();
                if total <= limit {
                    buf.extend_from_slice(&chunk);
                } else if total > limit * 8 {
                    return Err(too_large());
                }
            }
        }
    }
    if total > limit {
        return Err(too_large());
    }
    Ok(buf.freeze())
}

async fn read_multipart(mp: &mut Multipart, limit: usize) -> ApiResult<(Option<UploadedFile>, Vec<(String, String)>)> {
    let too_large = || ApiError::new(ErrorCode::PayloadTooLarge, format!("the upload is larger than {limit} bytes"));
    let mut file = None;
    let mut fields = Vec::new();
    loop {
        let field = match mp.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => return Err(too_large()),
            Err(e) => return Err(ApiError::new(ErrorCode::InvalidJson, format!("malformed multipart body: {e}"))),
        };
        let name = field.name().unwrap_or("").to_string();
        if name == "file" {
            let filename = field.file_name().unwrap_or("upload").to_string();
            if filename.len() > capture_core::limits::FILENAME_MAX {
                return Err(FieldError::new(
                    "filename",
                    format!("must be at most {} bytes", capture_core::limits::FILENAME_MAX),
                )
                .into());
            }
            let ct = field.content_type().unwrap_or("").to_ascii_lowercase();
            let mut buf = Vec::new();
            let mut field = field;
            loop {
                match field.chunk().await {
                    Ok(Some(c)) => {
                        if buf.len() + c.len() > limit {
                            return Err(too_large());
                        }
                        buf.extend_from_slice(&c);
                    }
                    Ok(None) => break,
                    Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => return Err(too_large()),
                    Err(e) => {
                        return Err(ApiError::new(ErrorCode::InvalidJson, format!("malformed multipart body: {e}")));
                    }
                }
            }
            file = Some((filename, ct, buf));
        } else if ScreenshotIn::field_names().contains(&name.as_str()) {
            let v = field
                .text()
                .await
                .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("malformed multipart field: {e}")))?;
            if v.len() > 32 * 1024 {
                return Err(FieldError::new(name, "is too long").into());
            }
            fields.push((name, v));
        } else {
            return Err(FieldError::new(name, "is not a known field (file or a capture option)").into());
        }
    }
    Ok((file, fields))
}
