//! Dialogs, waits and scripts on a session's page.

use capture_core::ErrorCode;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{after, eval};
use crate::automation::sessions::live;
use crate::automation::timeout;
use crate::error::Result;
use crate::tool::{Cx, Reply, invalid, refused};
use capture_browser::session::WaitFor;
use std::time::Duration;

/// Accept or dismiss the JavaScript dialog (alert, confirm, prompt, beforeunload) the page opened; promptText answers a prompt. While a dialog is open other tools fail with DIALOG_OPEN. Returns the dialog's kind and message.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DialogIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Accept (OK, default) or dismiss (Cancel).
    pub accept: Option<bool>,
    /// The answer to a prompt.
    #[schemars(length(max = 10_000))]
    pub prompt_text: Option<String>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn handle_dialog(cx: &Cx<'_>, a: DialogIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    if l.session.open_dialog().await?.is_none() {
        return Err(refused(ErrorCode::NoDialog, "no dialog is open"));
    }
    let accept = a.accept.unwrap_or(true);
    let d = l.session.handle_dialog(accept, a.prompt_text.clone(), t).await?;
    let text = format!("{} the {} {:?}", if accept { "accepted" } else { "dismissed" }, d.kind, d.message);
    Ok(Reply::data(json!({"kind": d.kind, "message": d.message, "accepted": accept})).with_text(text))
}

/// Wait until an element matching selector exists, the page shows text, the URL equals (absolute) or contains url, or the network has been idle for 500 ms (networkIdle: true) — give exactly one. Fails with TIMEOUT after timeoutMs.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitForIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// A CSS selector.
    pub selector: Option<String>,
    /// Text the page shows.
    #[schemars(length(max = 10_000))]
    pub text: Option<String>,
    /// An absolute URL, or a part of one.
    #[schemars(length(max = 4096))]
    pub url: Option<String>,
    /// No request in flight for 500 ms.
    pub network_idle: Option<bool>,
    /// Most time in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn wait_for(cx: &Cx<'_>, a: WaitForIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let mut what = Vec::new();
    if let Some(s) = &a.selector {
        what.push(WaitFor::Selector(s.clone()));
    }
    if let Some(s) = &a.text {
        what.push(WaitFor::Text(s.clone()));
    }
    if let Some(s) = &a.url {
        what.push(WaitFor::Url(s.clone()));
    }
    if a.network_idle == Some(true) {
        what.push(WaitFor::NetworkIdle);
    }
    if what.len() != 1 {
        return Err(invalid("selector", "give exactly one of selector, text, url or networkIdle: true"));
    }
    let w = what.remove(0);
    if let WaitFor::Selector(s) | WaitFor::Text(s) | WaitFor::Url(s) = &w
        && (s.is_empty() || s.len() > 10_000)
    {
        return Err(invalid("selector", "must be 1 to 10000 characters"));
    }
    let l = live(cx, &a.session_id).await?;
    let started = std::time::Instant::now();
    l.session.wait_for(w.clone(), t).await?;
    let waited = started.elapsed().as_millis() as u64;
    let mut r = after(&l, format!("{w:?} after {waited} ms")).await?;
    r.data["waitedMs"] = json!(waited);
    Ok(r)
}

/// Evaluate a JavaScript expression in the page and return its value as JSON (promises are awaited; for await inside, wrap in an async function: (async () => { … })()). A thrown exception is an ACTION_FAILED error with its message.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EvaluateIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// The expression, e.g. document.querySelectorAll('li').length.
    #[schemars(length(min = 1, max = 16_384))]
    pub expression: String,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn evaluate(cx: &Cx<'_>, a: EvaluateIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.expression.trim().is_empty() || a.expression.len() > 16 * 1024 {
        return Err(invalid("expression", "must be 1 to 16384 characters"));
    }
    let l = live(cx, &a.session_id).await?;
    let v = eval(&l.session, &a.expression, t).await?;
    Ok(Reply::data(json!({"value": v})))
}

/// Wait a fixed time (ms, at most 60000) while the page runs: animations, timers, debounced searches. Prefer wait_for when there is something to wait for.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Milliseconds, 1–60000.
    #[schemars(range(min = 1, max = 60_000))]
    pub ms: u64,
}

pub async fn wait(cx: &Cx<'_>, a: WaitIn) -> Result<Reply> {
    if !(1..=60_000).contains(&a.ms) {
        return Err(invalid("ms", "must be from 1 to 60000"));
    }
    let l = live(cx, &a.session_id).await?;
    l.session.wait(Duration::from_millis(a.ms)).await?;
    after(&l, format!("waited {} ms", a.ms)).await
}
