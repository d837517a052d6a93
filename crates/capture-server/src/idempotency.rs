//! `Idempotency-Key` for every create: replay the stored response of a repeated request,
//! refuse a concurrent duplicate (409) or the same key with another body (422), and store
//! the first success for 24 hours. A create handler hashes its request and hands its
//! operation to [`idempotent`].
//!
//! The operation runs in a task of its own, so a client that disconnects right after
//! sending does not cancel it half-way: the work finishes and its response is stored (the
//! creates store it in the very transaction that makes the change, given the
//! [`IdemClaim`]), ready to be replayed when the client retries with the same key. A key
//! whose request never finished (its process died) is held only for
//! [`IDEMPOTENCY_LEASE_MS`]; after that a retry takes it over.

use axum::Json;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use capture_core::{ErrorCode, ids};
use capture_store::{IdemBegin, IdemClaim};
use serde::Serialize;
use serde_json::Value;

use crate::auth::{Account, UsageAfter};
use crate::http::{ApiError, ApiResult};
use crate::state::AppState;

/// How long a request owns its Idempotency-Key before a retry may take over a key whose
/// request never finished.
pub const IDEMPOTENCY_LEASE_MS: i64 = 60_000;
/// How long a stored response is replayed.
const TTL_MS: i64 = 24 * 3600 * 1000;

/// 409: another request with this key is still running.
fn in_flight() -> ApiError {
    crate::error::Error::IdempotencyInFlight.into()
}

/// Run `f` under the Idempotency-Key of `headers` (if any): replay a stored response,
/// refuse a concurrent duplicate or a different body, run and store the first request.
/// `f` gets the key it owns (None without a key), answers the status, the body and the
/// caller's usage after the operation, and runs to the end even if the client goes away.
pub async fn idempotent<T, F, Fut>(
    state: &AppState,
    account: &Account,
    headers: &HeaderMap,
    route: &str,
    request_hash: String,
    f: F,
) -> Response
where
    T: Serialize + Send + 'static,
    F: FnOnce(Option<IdemClaim>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ApiResult<(StatusCode, T, i64)>> + Send + 'static,
{
    // The body as a value: stored for replays, and sent with the same (sorted) keys.
    let run = move |claim: Option<IdemClaim>| async move {
        let (status, body, used) = f(claim).await?;
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
        return respond(tokio::spawn(tracing::Instrument::in_current_span(run(None))).await);
    };
    // Claiming the key and running the work happen in one task of their own: a client that
    // hangs up while the claim is being written cannot leave a claimed key with no work
    // behind it (the handler's future is dropped on disconnect, this task is not).
    let (st, user_id, route) = (state.clone(), account.user.id.clone(), route.to_string());
    // Stored keyed: a body may carry credentials (a capture's httpAuth), and a plain digest
    // of a body whose other fields are known could be checked against guessed passwords.
    let request_hash = state.master.keyed_hash(request_hash.as_bytes());
    let task = tokio::spawn(tracing::Instrument::in_current_span(async move {
        let begin = st
            .store
            .idem_begin(&user_id, &route, &key, &request_hash, st.clock.now_ms(), TTL_MS, IDEMPOTENCY_LEASE_MS)
            .await;
        match begin {
            Err(e) => ApiError::from(e).into_response(),
            Ok(IdemBegin::InFlight) => in_flight().into_response(),
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
            Ok(IdemBegin::Owned(claim)) => {
                let result = run(Some(claim.clone())).await;
                // A create has already stored its response with its change (then this is a
                // no-op); anything else is stored here. A failure releases the key.
                let settled = match &result {
                    Ok((status, body, _)) => {
                        st.store.idem_complete(&claim, status.as_u16(), &body.to_string()).await.map(|_| ())
                    }
                    Err(_) => st.store.idem_abort(&claim).await,
                };
                if let Err(e) = settled {
                    tracing::error!(error = %e, "settling an idempotency key failed; its lease will expire");
                }
                respond(Ok(result))
            }
        }
    }));
    match task.await {
        Ok(r) => r,
        Err(e) => ApiError::internal(format!("the request's task failed: {e}")).into_response(),
    }
}

fn respond(joined: Result<ApiResult<(StatusCode, Value, i64)>, tokio::task::JoinError>) -> Response {
    match joined {
        Ok(Ok((status, body, used))) => {
            let mut r = (status, Json(body)).into_response();
            r.extensions_mut().insert(UsageAfter(used));
            r
        }
        Ok(Err(e)) => e.into_response(),
        Err(e) => ApiError::internal(format!("the request's task failed: {e}")).into_response(),
    }
}
