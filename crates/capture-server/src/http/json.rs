//! JSON in and out: the body extractor, whose rejections are the API's own error bodies
//! (so malformed JSON still gets `{error, code, requestId}`), and the response type.

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use capture_core::ErrorCode;
use serde::Serialize;
use serde_json::{Map, Value};

use super::error::ApiError;

/// A JSON object body: 415 without a JSON content type, 413 past the limit, 400 when
/// it is not valid JSON or not an object.
pub struct JsonObject(pub Map<String, Value>, pub Bytes);

impl<S: Send + Sync> FromRequest<S> for JsonObject {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, ApiError> {
        let ct =
            req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
        let essence = ct.split(';').next().unwrap_or("").trim().to_string();
        if !(essence == "application/json" || essence.ends_with("+json")) {
            return Err(ApiError::new(
                ErrorCode::UnsupportedMediaType,
                "send the body as JSON with Content-Type: application/json",
            ));
        }
        let limit = req.extensions().get::<JsonLimit>().map_or(JSON_LIMIT, |l| l.0);
        let bytes = read_body(req.into_body(), limit).await?;
        let v: Value = serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("malformed JSON: {e}")))?;
        match v {
            Value::Object(m) => Ok(JsonObject(m, bytes)),
            _ => Err(ApiError::new(ErrorCode::InvalidJson, "the body must be a JSON object")),
        }
    }
}

/// Refuse the first field of `body` that is not one of `known` (by name, so a typo surfaces
/// instead of being ignored): `VALIDATION_ERROR` with `{field, reason}`.
pub fn only_known_fields(body: &Map<String, Value>, known: &[&str]) -> Result<(), capture_core::FieldError> {
    match body.keys().find(|k| !known.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => {
            let mut names: Vec<&str> = known.to_vec();
            names.sort_unstable();
            let field: String = k.chars().take(100).collect();
            Err(capture_core::FieldError::new(field, format!("is not a known field (known: {})", names.join(", "))))
        }
    }
}

/// Largest JSON body accepted (preScreenshotJs is ≤ 16 KiB, so this is generous).
pub const JSON_LIMIT: usize = 256 * 1024;

/// Another limit for the JSON bodies of one route whose documented bound is larger (a
/// profile's imported state): `post(handler).layer(Extension(JsonLimit(n)))`.
#[derive(Debug, Clone, Copy)]
pub struct JsonLimit(pub usize);

/// Read a body up to `limit` bytes, 413 beyond.
pub async fn read_body(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        let too_large = std::error::Error::source(&e).is_some_and(|s| s.to_string().contains("length limit"))
            || e.to_string().contains("length limit");
        if too_large {
            ApiError::new(ErrorCode::PayloadTooLarge, format!("the body is larger than {limit} bytes"))
        } else {
            ApiError::new(ErrorCode::InvalidJson, "could not read the request body")
        }
    })
}

/// A typed JSON response. Its object keys come out in alphabetical order, as every
/// response of the API has since the first release (they were built as `serde_json` maps),
/// so a typed response is byte-for-byte what clients and stored idempotent replays know.
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        match serde_json::to_value(&self.0) {
            Ok(v) => axum::Json(v).into_response(),
            Err(e) => ApiError::internal(e).into_response(),
        }
    }
}
