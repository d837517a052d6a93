//! Nodes of one deployment talking to each other: a live automation session lives in the
//! memory of the node that started it, and any node forwards a tool call for it to that node
//! over an authenticated internal channel, so a client behind a balancer without stickiness
//! sees no difference.
//!
//! - **Where a node is.** Every node serving the API records its id and internal address
//!   (`CAPTURE_INTERNAL_URL`, or `http://<its bound address>` when that is a concrete
//!   address) in `cluster_nodes`, refreshed every [`REFRESH`]; a session's run row names its
//!   node (`runs.worker`).
//! - **Who may call.** `POST /internal/v1/automation/call` (`automation::remote`) answers
//!   only requests signed with
//!   the cluster key: `CAPTURE_CLUSTER_SECRET`, or a key derived from the master key every
//!   node of a deployment shares. The signature is HMAC-SHA256 over
//!   `<unix seconds>.<nonce>.<body>` in `X-Capture-Cluster: t=<unix seconds>,n=<nonce>,s=<hex>`,
//!   accepted within [`SKEW`] and once: a node remembers the nonces it accepted for as long as
//!   their time could pass, so a call recorded on the internal network cannot be replayed.
//!   Captured pages never reach it: the egress guard refuses the service's own listeners.
//! - **What runs there.** The tool, as the account named in the body, exactly as if the
//!   call had arrived there; its result comes back whole.

use std::time::Duration;

use axum::http::HeaderMap;
use rmcp::model::{CallToolResult, JsonObject};
use serde::{Deserialize, Serialize};

use crate::crypto::{ct_eq, hmac_sha256_hex};
use crate::state::AppState;

pub mod node;

pub use node::Cluster;
use node::SKEW;

/// How often a node refreshes its row in `cluster_nodes`.
pub const REFRESH: Duration = Duration::from_secs(10);
/// The header that carries the signature.
const HEADER: &str = "x-capture-cluster";

/// The cluster key: `CAPTURE_CLUSTER_SECRET`, else derived from the master key.
fn key(state: &AppState) -> Vec<u8> {
    match &state.cfg.cluster.secret {
        Some(s) => s.as_bytes().to_vec(),
        None => state.master.keyed_hash(b"capture cluster channel v1").into_bytes(),
    }
}

/// The signature header for `body` at `t` (unix seconds) with `nonce`.
fn signature(key: &[u8], t: i64, nonce: &str, body: &[u8]) -> String {
    let mut signed = format!("{t}.{nonce}.").into_bytes();
    signed.extend_from_slice(body);
    format!("t={t},n={nonce},s={}", hmac_sha256_hex(key, &signed))
}

/// A new signature header for `body` at `t`.
fn sign(key: &[u8], t: i64, body: &[u8]) -> String {
    signature(key, t, &capture_core::ids::random_string(22), body)
}

/// Whether `header` signs `body` with `key` within the allowed skew of `now` (unix seconds):
/// its time and nonce when it does.
fn verify<'h>(key: &[u8], header: &'h str, body: &[u8], now: i64) -> Option<(i64, &'h str)> {
    let (mut t, mut n, mut s) = (None, None, None);
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = v.parse::<i64>().ok(),
            Some(("n", v)) => n = Some(v),
            Some(("s", v)) => s = Some(v),
            _ => {}
        }
    }
    let (Some(t), Some(n), Some(s)) = (t, n, s) else { return None };
    if (now - t).abs() > SKEW || n.is_empty() || n.len() > 64 {
        return None;
    }
    let want = signature(key, t, n, body);
    let want = want.rsplit_once("s=").map_or("", |(_, v)| v);
    ct_eq(want.as_bytes(), s.to_ascii_lowercase().as_bytes()).then_some((t, n))
}

/// This node's internal address (`CAPTURE_INTERNAL_URL`, or its concrete bound address).
pub fn internal_url(state: &AppState) -> Option<String> {
    state.cluster.internal_url.get().cloned()
}

/// Keep this node's row in `cluster_nodes` fresh until `stop`.
pub async fn advertise(state: AppState, url: String, stop: tokio_util::sync::CancellationToken) {
    let node = state.cluster.node_id();
    loop {
        if let Err(e) = state.store.advertise_node(node, &url, state.browser.pool.is_some(), state.clock.now_ms()).await
        {
            tracing::warn!(error = %e, "recording this node's internal address failed");
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(REFRESH) => {}
        }
    }
}

/// A forwarded tool call: whose, which tool, its arguments.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForwardedCall {
    pub user_id: String,
    /// The OAuth client the call came through (sessions are that client's unless shared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    pub tool: String,
    pub args: JsonObject,
}

/// Why a call could not be forwarded.
#[derive(Debug)]
pub struct Unreachable(pub String);

/// Run `tool` for `account` on the node `worker` (a run row's `worker`), through its
/// internal address. `Ok(None)` when that node never advertised one.
pub async fn forward(
    state: &AppState,
    worker: &str,
    account: &crate::auth::Account,
    tool: &str,
    args: &JsonObject,
) -> Result<Option<CallToolResult>, Unreachable> {
    let Some(url) = state.store.node_url(worker).await.map_err(|e| Unreachable(e.to_string()))? else {
        return Ok(None);
    };
    let call = ForwardedCall {
        user_id: account.user.id.clone(),
        client_id: account.client_id.clone(),
        tool: tool.into(),
        args: args.clone(),
    };
    let body = serde_json::to_vec(&call).map_err(|e| Unreachable(e.to_string()))?;
    let sig = sign(&key(state), capture_core::time::now_ms() / 1000, &body);
    let client = &state.cluster.client;
    let r = client
        .post(format!("{}/internal/v1/automation/call", url.trim_end_matches('/')))
        .header(HEADER, sig)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| Unreachable(format!("the node holding the session did not answer: {e}")))?;
    if !r.status().is_success() {
        return Err(Unreachable(format!("the node holding the session answered {}", r.status())));
    }
    let out: CallToolResult =
        r.json().await.map_err(|e| Unreachable(format!("the node holding the session answered garbage: {e}")))?;
    Ok(Some(out))
}

/// Post a signed JSON body to `path` on a node with a browser (seen lately), for work this
/// node cannot do without one: its status and body, `Ok(None)` when no such node is up.
pub async fn to_browser_node(state: &AppState, path: &str, body: &[u8]) -> Result<Option<(u16, Vec<u8>)>, Unreachable> {
    let fresh = state.clock.now_ms() - 3 * REFRESH.as_millis() as i64;
    let Some((_, url)) = state.store.browser_node(fresh).await.map_err(|e| Unreachable(e.to_string()))? else {
        return Ok(None);
    };
    let sig = sign(&key(state), capture_core::time::now_ms() / 1000, body);
    let r = state
        .cluster
        .client
        .post(format!("{}{path}", url.trim_end_matches('/')))
        .header(HEADER, sig)
        .header("content-type", "application/json")
        .body(body.to_vec())
        .send()
        .await
        .map_err(|e| Unreachable(format!("the node with a browser did not answer: {e}")))?;
    let status = r.status().as_u16();
    let bytes = r.bytes().await.map_err(|e| Unreachable(format!("the node with a browser broke off: {e}")))?;
    Ok(Some((status, bytes.to_vec())))
}

/// Whether a request to an internal route carries a valid signature of `body`, not seen
/// before (see the module's notes).
pub fn verified(state: &AppState, headers: &HeaderMap, body: &[u8]) -> bool {
    let signed = headers.get(HEADER).and_then(|v| v.to_str().ok()).unwrap_or("");
    let now = capture_core::time::now_ms() / 1000;
    verify(&key(state), signed, body, now).is_some_and(|(t, nonce)| state.cluster.nonces.first_use(nonce, t, now))
}

/// An internal call this node accepts: its body (`T`), signed by this deployment and not seen
/// before, and the account it runs as (`user_id`, through OAuth client `client_id`); else the
/// answer refusing it (401 unsigned, 400 unreadable, 404 no such account).
pub async fn accept<T: serde::de::DeserializeOwned>(
    state: &AppState,
    headers: &HeaderMap,
    body: &[u8],
    who: fn(&T) -> (&str, Option<&str>),
) -> Result<(T, crate::auth::Account), axum::response::Response> {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let refuse = |status: StatusCode, error: &str, code: &str| {
        (status, axum::Json(serde_json::json!({"error": error, "code": code}))).into_response()
    };
    if !verified(state, headers, body) {
        return Err(refuse(StatusCode::UNAUTHORIZED, "not a signed call of this deployment", "UNAUTHORIZED"));
    }
    let Ok(call) = serde_json::from_slice::<T>(body) else {
        return Err(refuse(StatusCode::BAD_REQUEST, "unreadable call", "INVALID_JSON"));
    };
    let (user_id, client_id) = who(&call);
    let user = match state.store.user_by_id(user_id).await {
        Ok(Some(u)) => u,
        Ok(None) => return Err(refuse(StatusCode::NOT_FOUND, "no such account", "NOT_FOUND")),
        Err(e) => return Err(crate::http::ApiError::internal(e).into_response()),
    };
    let client_id = client_id.map(str::to_owned);
    match crate::auth::account_of_user(state, &user).await {
        Ok(a) => Ok((call, crate::auth::Account { client_id, ..a })),
        Err(e) => Err(crate::http::ApiError::internal(e).into_response()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_fresh_call_signed_with_the_key_passes() {
        let (key, body) = (b"k".as_slice(), br#"{"tool":"get_url"}"#.as_slice());
        let h = signature(key, 1000, "n1", body);
        assert_eq!(verify(key, &h, body, 1000), Some((1000, "n1")));
        assert_eq!(verify(key, &h, body, 1000 + SKEW), Some((1000, "n1")));
        assert_eq!(verify(key, &h, body, 1000 + SKEW + 1), None, "too old");
        assert_eq!(verify(b"other", &h, body, 1000), None, "another key");
        assert_eq!(verify(key, &h, br#"{"tool":"navigate"}"#, 1000), None, "another body");
        let other_nonce = h.replace("n=n1", "n=n2");
        assert_eq!(verify(key, &other_nonce, body, 1000), None, "the nonce is signed");
        let no_nonce = format!("t=1000,s={}", h.rsplit_once("s=").unwrap().1);
        assert_eq!(verify(key, &no_nonce, body, 1000), None);
        assert_eq!(verify(key, "t=1000", body, 1000), None);
        assert_eq!(verify(key, "", body, 1000), None);
        assert_ne!(sign(key, 1000, body), sign(key, 1000, body), "each call its own nonce");
    }
}
