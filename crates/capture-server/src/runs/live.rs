//! `GET /v1/runs/{id}/devtools?token=…`: a live run's DevTools endpoint. A client
//! (`puppeteer.connect({browserWSEndpoint})`, Playwright's `chromium.connectOverCDP`)
//! connects with the `connectUrl` of the create answer; the single-use token is spent, the
//! run starts on **this node** — the one that received the connection, which must have the
//! worker role (a browser pool) — in a fresh context of its pool, and the DevTools protocol
//! is relayed to it through `capture_browser::relay` (no other context or target, no
//! `Browser.close`/`crash`, no downloads, no `file:` URLs; the egress guard sees every
//! request). The session ends when the client disconnects, on `stop`, or at `timeoutMs`,
//! and is then finalised like a scripted run (video, counts, `run.completed`).
//!
//! Why this node: the session's page lives in this process's Chromium, reached over a pipe
//! that has no network address, so the node that holds the run must be the one the client's
//! socket reaches. Claiming at connect time (not at create) makes that automatic behind any
//! load balancer: a node without a browser passes the connection on to a node with one (an
//! internal address from `cluster_nodes`), which spends the token and holds the run, and
//! relays the frames both ways; with no such node it answers 503 and leaves the token unspent.

use std::collections::HashMap;
use std::time::Duration;

use crate::http::Path;
use crate::http::Query;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use capture_browser::relay::{RelayEnd, RelayOptions};
use capture_browser::{BrowserPool, WaitUntil};
use capture_core::{EndReason, ErrorCode, RunId, RunStatus};
use capture_store::RunRow;
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::Role;

use crate::error::Error;
use crate::http::ApiError;
use crate::runs::session::{self, Hold, Opened, Outcome, budget, finalize, session_options};
use crate::state::AppState;

/// How long the start page of a live session may take to load before the client gets it anyway.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// On shutdown (after `AppState::shutdown` ended every live session): wait up to `limit`
/// for the ones this node drives (its cluster's `live_runs`) to be finalised (video, event)
/// before the browser pool stops.
pub async fn drain(state: &AppState, limit: Duration) {
    let runs = &state.cluster.live_runs;
    runs.close();
    if tokio::time::timeout(limit, runs.wait()).await.is_err() {
        tracing::warn!("live sessions still finalising at shutdown; the sweep of another node ends them");
    }
}

fn refuse(code: ErrorCode, msg: &str) -> Response {
    ApiError::from(Error::Refused(code, msg.to_string())).into_response()
}

#[utoipa::path(get, path = "/v1/runs/{id}/devtools", tag = "runs",
    params(("id" = String, Path), ("token" = String, Query, description = "the single-use token of the run's connectUrl")),
    responses((status = 101, description = "WebSocket: the DevTools protocol of a browser whose only context is the run's"),
    (status = 400, body = crate::http::error::ErrorBody, description = "not a WebSocket handshake"),
    (status = 401, body = crate::http::error::ErrorBody, description = "the token is missing, wrong, used or expired"),
    (status = 503, body = crate::http::error::ErrorBody, description = "this node has no browser (worker role)")))]
/// Connect a DevTools client to a live run.
pub async fn devtools(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    mut req: Request,
) -> Response {
    let is_ws = req
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let key = req.headers().get("sec-websocket-key").cloned();
    let (Some(key), true) = (key, is_ws) else {
        return refuse(
            ErrorCode::ValidationError,
            "connect with a DevTools (WebSocket) client to the run's connectUrl",
        );
    };
    let Some(token) = q.get("token").filter(|t| !t.is_empty()) else {
        return refuse(ErrorCode::Unauthorized, "the connect token is missing (use the run's connectUrl)");
    };
    let Some(id) = RunId::parse(&id) else {
        return ApiError::from(Error::not_found(RunId::NOUN)).into_response();
    };
    let Some(on_upgrade) = req.extensions_mut().remove::<hyper::upgrade::OnUpgrade>() else {
        return refuse(ErrorCode::ValidationError, "this connection cannot be upgraded to a WebSocket");
    };
    let Some(pool) = state.browser.pool.clone() else {
        // No browser here: pass the connection on to a node that has one.
        return pass_on(&state, &id, token, key.as_bytes(), on_upgrade).await;
    };
    let hash = crate::crypto::sha256_hex(token.as_bytes());
    let lease_until = state.clock.now_ms() + state.cfg.runs.lease.as_millis() as i64;
    let row = match state
        .store
        .claim_live_run(id.as_str(), &hash, state.cluster.node_id(), lease_until, state.clock.now_ms())
        .await
    {
        Ok(Some(r)) => r,
        Ok(None) => {
            return refuse(ErrorCode::Unauthorized, "this connect token is wrong, already used, or expired");
        }
        Err(e) => return ApiError::from(e).into_response(),
    };
    state.job_changed(&row.id);
    let runs = state.cluster.live_runs.clone();
    runs.spawn(serve(state, pool, row, on_upgrade));
    switching_protocols(key.as_bytes())
}

/// A live connection reaching a node without a browser: connect to a node with one (its
/// internal address, from `cluster_nodes`) with the client's own token, which that node spends
/// and checks, then relay the frames both ways until either side closes. The upstream's
/// refusal (a wrong token, no browser there either) is the client's answer.
async fn pass_on(
    state: &AppState,
    id: &RunId,
    token: &str,
    key: &[u8],
    on_upgrade: hyper::upgrade::OnUpgrade,
) -> Response {
    let none = || {
        refuse(
            ErrorCode::ServiceUnavailable,
            "no node with a browser is available for live sessions now (the worker role); retry shortly",
        )
    };
    let fresh = state.clock.now_ms() - 3 * crate::cluster::REFRESH.as_millis() as i64;
    let Ok(Some((_, internal))) = state.store.browser_node(fresh).await else { return none() };
    let Some(rest) = internal.strip_prefix("http://") else { return none() };
    let q: String = url::form_urlencoded::Serializer::new(String::new()).append_pair("token", token).finish();
    let upstream_url = format!("ws://{}/v1/runs/{id}/devtools?{q}", rest.trim_end_matches('/'));
    let connect = tokio_tungstenite::connect_async(upstream_url.as_str());
    let upstream = match tokio::time::timeout(Duration::from_secs(10), connect).await {
        Ok(Ok((ws, _))) => ws,
        // The node with the browser refused it: its answer is the client's.
        Ok(Err(tokio_tungstenite::tungstenite::Error::Http(r))) => return upstream_refusal(*r),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, node = %internal, "passing a live connection on failed");
            return none();
        }
        Err(_) => return none(),
    };
    state.cluster.live_runs.spawn(splice(on_upgrade, upstream));
    switching_protocols(key)
}

/// Another node's refusal of a WebSocket relayed to it, passed on as the client's answer.
pub(crate) fn upstream_refusal(r: tokio_tungstenite::tungstenite::http::Response<Option<Vec<u8>>>) -> Response {
    let status = StatusCode::from_u16(r.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut resp = Response::new(Body::from(r.into_body().unwrap_or_default()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// Relay a client's WebSocket (once upgraded) and another node's, frames both ways, until
/// either side leaves (which ends both).
pub(crate) async fn splice(
    on_upgrade: hyper::upgrade::OnUpgrade,
    upstream: WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
) {
    use futures_util::{SinkExt, StreamExt};
    let Ok(upgraded) = on_upgrade.await else { return };
    let client = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
    let (mut client_tx, mut client_rx) = client.split();
    let (mut up_tx, mut up_rx) = upstream.split();
    let to_upstream = async {
        while let Some(Ok(m)) = client_rx.next().await {
            let close = m.is_close();
            if up_tx.send(m).await.is_err() || close {
                break;
            }
        }
        let _ = up_tx.close().await;
    };
    let to_client = async {
        while let Some(Ok(m)) = up_rx.next().await {
            let close = m.is_close();
            if client_tx.send(m).await.is_err() || close {
                break;
            }
        }
        let _ = client_tx.close().await;
    };
    tokio::select! {
        _ = to_upstream => {}
        _ = to_client => {}
    }
}

/// The `101` that completes the client's WebSocket handshake (`key`: its
/// `Sec-WebSocket-Key`).
pub(crate) fn switching_protocols(key: &[u8]) -> Response {
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key);
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    if let Ok(v) = HeaderValue::from_str(&accept) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    resp
}

/// Drive a live run held by this node: open its session, record, load the start page,
/// relay the client until it leaves (or stop, or the timeout), finalise.
async fn serve(state: AppState, pool: std::sync::Arc<BrowserPool>, row: RunRow, on_upgrade: hyper::upgrade::OnUpgrade) {
    let (budget, cut_by_actions) = budget(&row);
    let hold = Hold::start(&state, &row.id, state.cluster.node_id());
    let Ok(Opened { session, started, video, video_err }) =
        session::open(&state, &pool, &row, session_options(&row, budget), budget, None).await
    else {
        return;
    };
    if let Err(e) = session.goto(&row.start_url, WaitUntil::Load, START_TIMEOUT).await {
        // The client gets the session anyway and may navigate elsewhere.
        tracing::info!(run = %row.id, error = %e, "a live session's start page did not load");
    }
    let outcome = match on_upgrade.await {
        Err(e) => Outcome {
            status: RunStatus::Failed,
            reason: EndReason::Disconnected,
            error: None,
            finalization_error: Some(format!("the client's connection failed: {e}")),
        },
        Ok(upgraded) => {
            let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
            // Dropped when another branch wins: the socket is then closed normally.
            let relay = capture_browser::relay::serve_socket(&session, ws, RelayOptions::default());
            tokio::select! {
                end = relay => match end {
                    RelayEnd::ClientClosed => Outcome { status: RunStatus::Completed, reason: EndReason::Disconnected, error: None, finalization_error: None },
                    end @ RelayEnd::ClientTooSlow { .. } => Outcome {
                        status: RunStatus::Failed,
                        reason: EndReason::ClientTooSlow,
                        error: None,
                        finalization_error: Some(format!(
                            "the client was closed (WebSocket code {}): {}",
                            capture_browser::relay::CLOSE_TOO_SLOW,
                            end.close_reason().unwrap_or_default()
                        )),
                    },
                    RelayEnd::SessionEnded(why) => Outcome {
                        status: RunStatus::Failed,
                        reason: EndReason::BrowserFailed,
                        error: None,
                        finalization_error: Some(format!("the browser session ended: {why}")),
                    },
                    RelayEnd::BrowserGone => Outcome {
                        status: RunStatus::Failed,
                        reason: EndReason::BrowserFailed,
                        error: None,
                        finalization_error: Some("the browser went away during the session".into()),
                    },
                },
                _ = tokio::time::sleep(budget) => if cut_by_actions {
                    Outcome { status: RunStatus::Stopped, reason: EndReason::Quota, error: None, finalization_error: None }
                } else {
                    Outcome { status: RunStatus::Completed, reason: EndReason::Timeout, error: None, finalization_error: None }
                },
                _ = hold.stop.cancelled() => Outcome { status: RunStatus::Stopped, reason: EndReason::Stopped, error: None, finalization_error: None },
                _ = hold.lost.cancelled() => {
                    session.close().await;
                    return;
                }
                _ = state.shutdown.cancelled() => Outcome {
                    status: RunStatus::Failed,
                    reason: EndReason::Shutdown,
                    error: None,
                    finalization_error: Some("the service shut down during the session".into()),
                },
            }
        }
    };
    let outcome = Outcome { finalization_error: outcome.finalization_error.or(video_err), ..outcome };
    finalize(&state, &session, &row, started, video, outcome, None, None).await;
    drop(hold);
}
