//! `Idempotency-Key` for every create: replay the stored response of a repeated request,
//! refuse a concurrent duplicate (409) or the same key with another body (422), and store
//! the first success for 24 hours. A create handler hashes its request and hands its
//! operation to [`idempotent`].

use axum::Json;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use capture_core::time::now_ms;
use capture_core::{ErrorCode, ids};
use capture_store::IdemBegin;
use serde::Serialize;
use serde_json::Value;

use crate::auth::{Account, UsageAfter};
use crate::http::{ApiError, ApiResult};
use crate::state::AppState;

/// Run `f` under the Idempotency-Key of `headers` (if any): replay a stored response,
/// refuse a concurrent duplicate or a different body, store the first success.
///
/// `f` answers the status, the body and the caller's usage after the operation.
pub async fn idempotent<T, F, Fut>(
    state: &AppState,
    account: &Account,
    headers: &HeaderMap,
    route: &str,
    request_hash: String,
    f: F,
) -> Response
where
    T: Serialize,
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ApiResult<(StatusCode, T, i64)>>,
{
    // The body as a value: stored for replays, and sent with the same (sorted) keys.
    let run = || async {
        let (status, body, used) = f().await?;
        let body = serde_json::to_value(&body).map_err(ApiError::internal)?;
        Ok::<_, ApiError>((status, body, used))
    };
    let key = match headers.get("idempotency-key") {
        None => None,
        Some(v) => match v.to_str().ok().filter(|k| ids::is_token(k, 8, 128)) {
            Some(k) => Some(k.to_string()),
            None => {
                return ApiError::new(
                    ErrorCode::InvalidIdempotencyKey,
                    "Idempotency-Key must match [A-Za-z0-9_-]{8,128}",
                )
                .into_response();
            }
        },
    };
    let Some(key) = key else {
        return match run().await {
            Ok((status, body, used)) => with_usage((status, Json(body)).into_response(), used),
            Err(e) => e.into_response(),
        };
    };
    const TTL_MS: i64 = 24 * 3600 * 1000;
    let begin = state.store.idem_begin(&account.user.id, route, &key, &request_hash, now_ms(), TTL_MS).await;
    match begin {
        Err(e) => ApiError::from(e).into_response(),
        Ok(IdemBegin::InFlight) => ApiError::new(
            ErrorCode::IdempotencyInFlight,
            "a request with this Idempotency-Key is still in progress; retry shortly",
        )
        .header(header::RETRY_AFTER, "1")
        .into_response(),
        Ok(IdemBegin::Mismatch) => ApiError::new(
            ErrorCode::IdempotencyKeyReused,
            "this Idempotency-Key was used with a different request body",
        )
        .into_response(),
        Ok(IdemBegin::Replay(status, body)) => {
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let mut r = (crate::http::error::status(status), Json(v)).into_response();
            r.headers_mut().insert("idempotency-replayed", HeaderValue::from_static("true"));
            r
        }
        Ok(IdemBegin::Owned) => match run().await {
            Ok((status, body, used)) => {
                if let Err(e) =
                    state.store.idem_complete(&account.user.id, route, &key, status.as_u16(), &body.to_string()).await
                {
                    tracing::error!(error = %e, "storing idempotent response failed");
                }
                with_usage((status, Json(body)).into_response(), used)
            }
            Err(e) => {
                if let Err(err) = state.store.idem_abort(&account.user.id, route, &key).await {
                    tracing::error!(error = %err, "releasing idempotency key failed");
                }
                e.into_response()
            }
        },
    }
}

fn with_usage(mut r: Response, used: i64) -> Response {
    r.extensions_mut().insert(UsageAfter(used));
    r
}
