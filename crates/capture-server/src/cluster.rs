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
//!   node of a deployment shares. The signature is HMAC-SHA256 over `<unix seconds>.<body>`
//!   in `X-Capture-Cluster: t=<unix seconds>,s=<hex>`, accepted within [`SKEW`]. Captured
//!   pages never reach it: the egress guard refuses the service's own listeners.
//! - **What runs there.** The tool, as the account named in the body, exactly as if the
//!   call had arrived there; its result comes back whole.

use std::time::Duration;

use axum::http::HeaderMap;
use capture_core::time::now_ms;
use rmcp::model::{CallToolResult, JsonObject};
use serde::{Deserialize, Serialize};

use crate::crypto::{ct_eq, hmac_sha256_hex};
use crate::state::AppState;

/// How often a node refreshes its row in `cluster_nodes`.
pub const REFRESH: Duration = Duration::from_secs(10);
/// How far a signed request's time may be from ours.
const SKEW: i64 = 60;
/// The header that carries the signature.
const HEADER: &str = "x-capture-cluster";
/// Longest a forwarded tool call may take (tools that wait are bounded below this).
const CALL_TIMEOUT: Duration = Duration::from_secs(150);

/// The cluster key: `CAPTURE_CLUSTER_SECRET`, else derived from the master key.
fn key(state: &AppState) -> Vec<u8> {
    match &state.cfg.cluster_secret {
        Some(s) => s.as_bytes().to_vec(),
        None => state.master.keyed_hash(b"capture cluster channel v1").into_bytes(),
    }
}

/// The signature header for `body` at `t` (unix seconds).
fn signature(key: &[u8], t: i64, body: &[u8]) -> String {
    let mut signed = format!("{t}.").into_bytes();
    signed.extend_from_slice(body);
    format!("t={t},s={}", hmac_sha256_hex(key, &signed))
}

/// Whether `header` signs `body` with `key` within the allowed skew of `now` (unix seconds).
fn verify(key: &[u8], header: &str, body: &[u8], now: i64) -> bool {
    let mut t = None;
    let mut s = None;
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = v.parse::<i64>().ok(),
            Some(("s", v)) => s = Some(v),
            _ => {}
        }
    }
    let (Some(t), Some(s)) = (t, s) else { return false };
    if (now - t).abs() > SKEW {
        return false;
    }
    let want = signature(key, t, body);
    let want = want.rsplit_once("s=").map_or("", |(_, v)| v);
    ct_eq(want.as_bytes(), s.to_ascii_lowercase().as_bytes())
}

/// This node's internal address (`CAPTURE_INTERNAL_URL`, or its concrete bound address).
pub fn internal_url(state: &AppState) -> Option<String> {
    state.internal_url.get().cloned()
}

/// Keep this node's row in `cluster_nodes` fresh until `stop`.
pub async fn advertise(state: AppState, url: String, stop: tokio_util::sync::CancellationToken) {
    let node = crate::runs::session::node_id();
    loop {
        if let Err(e) = state.store.advertise_node(node, &url, state.browser.is_some(), now_ms()).await {
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
    pub tool: String,
    pub args: JsonObject,
}

/// Why a call could not be forwarded.
#[derive(Debug)]
pub struct Unreachable(pub String);

/// Run `tool` for `user_id` on the node `worker` (a run row's `worker`), through its internal
/// address. `Ok(None)` when that node never advertised one.
pub async fn forward(
    state: &AppState,
    worker: &str,
    user_id: &str,
    tool: &str,
    args: &JsonObject,
) -> Result<Option<CallToolResult>, Unreachable> {
    let Some(url) = state.store.node_url(worker).await.map_err(|e| Unreachable(e.to_string()))? else {
        return Ok(None);
    };
    let body = serde_json::to_vec(&ForwardedCall { user_id: user_id.into(), tool: tool.into(), args: args.clone() })
        .map_err(|e| Unreachable(e.to_string()))?;
    let sig = signature(&key(state), now_ms() / 1000, &body);
    let client = internal_client();
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

/// One client for the internal channel: no proxies, no redirects, bounded.
fn internal_client() -> &'static reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .timeout(CALL_TIMEOUT)
            .user_agent("Capture-Cluster/1")
            .build()
            .expect("the internal HTTP client builds")
    })
}

/// Whether a request to an internal route carries a valid signature of `body` (see the
/// module's notes).
pub fn verified(state: &AppState, headers: &HeaderMap, body: &[u8]) -> bool {
    let signed = headers.get(HEADER).and_then(|v| v.to_str().ok()).unwrap_or("");
    verify(&key(state), signed, body, now_ms() / 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_fresh_call_signed_with_the_key_passes() {
        let (key, body) = (b"k".as_slice(), br#"{"tool":"get_url"}"#.as_slice());
        let h = signature(key, 1000, body);
        assert!(verify(key, &h, body, 1000));
        assert!(verify(key, &h, body, 1000 + SKEW));
        assert!(!verify(key, &h, body, 1000 + SKEW + 1), "too old");
        assert!(!verify(b"other", &h, body, 1000), "another key");
        assert!(!verify(key, &h, br#"{"tool":"navigate"}"#, 1000), "another body");
        assert!(!verify(key, "t=1000", body, 1000));
        assert!(!verify(key, "", body, 1000));
    }
}
