//! What the page did: its console and network logs, dialogs, performance figures, and
//! waiting for a request.

use std::time::Duration;

use capture_core::ErrorCode;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;
use serde_json::json;

use crate::automation::sessions::live;
use crate::automation::timeout;
use crate::error::Result;
use crate::tool::{Cx, Reply, invalid, refused};

/// The session's console messages and uncaught exceptions (level, text, url, line), oldest first: the last ones (limit, default 100) that fit in maxChars (default 8000, at most 20000), or from an entry on (from, a previous answer's nextFrom or earlierFrom) to read the rest. The counts of console errors cover the whole session.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConsoleLogsIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Only errors (console.error, console.assert, uncaught exceptions).
    pub errors_only: Option<bool>,
    /// Most entries (default 100, at most 2000).
    #[schemars(range(min = 1, max = 2000))]
    pub limit: Option<usize>,
    /// Start at this entry (0 is the oldest) instead of showing the last ones.
    pub from: Option<usize>,
    /// Most characters of entries in the answer (default 8000, 200–20000).
    #[schemars(range(min = 200, max = 20000))]
    pub max_chars: Option<usize>,
}

/// Most characters of log entries one answer carries (`maxChars`), and the default.
const LOG_CHARS: usize = 20_000;
const LOG_DEFAULT: usize = 8_000;

/// Which of `all` an answer shows: from entry `from` on (at most `n`), or else the last `n`,
/// as many as fit in `max` characters of JSON. `(first, end)` indexes into `all`.
pub(crate) fn window<T: Serialize>(all: &[T], from: Option<usize>, n: usize, max: usize) -> (usize, usize) {
    let size = |t: &T| serde_json::to_string(t).map_or(0, |s| s.len() + 1);
    match from {
        Some(from) => {
            let first = from.min(all.len());
            let (mut end, mut used) = (first, 0);
            while end < all.len() && end - first < n && (end == first || used + size(&all[end]) <= max) {
                used += size(&all[end]);
                end += 1;
            }
            (first, end)
        }
        None => {
            let end = all.len();
            let (mut first, mut used) = (end, 0);
            while first > 0 && end - first < n && (first == end || used + size(&all[first - 1]) <= max) {
                used += size(&all[first - 1]);
                first -= 1;
            }
            (first, end)
        }
    }
}

/// Where the window of as many entries before `first..end` starts.
fn earlier_from(first: usize, end: usize) -> usize {
    first.saturating_sub(end - first)
}

/// Where an answer's window sits among `total` entries, for reading on.
fn window_json(first: usize, end: usize, total: usize) -> Value {
    json!({
        "from": first, "to": end, "total": total,
        "earlierFrom": (first > 0).then(|| earlier_from(first, end)),
        "nextFrom": (end < total).then_some(end),
    })
}

/// The note that says what a window left out.
fn window_note(first: usize, end: usize, total: usize) -> String {
    if first == 0 && end == total {
        return String::new();
    }
    let mut note = format!("\n[entries {first}–{end} of {total}");
    if first > 0 {
        note.push_str(&format!("; earlier ones with from={}", earlier_from(first, end)));
    }
    if end < total {
        note.push_str(&format!("; later ones with from={end}"));
    }
    note.push(']');
    note
}

pub(crate) fn limit_of(l: Option<usize>) -> Result<usize> {
    let l = l.unwrap_or(100);
    if !(1..=2000).contains(&l) {
        return Err(invalid("limit", "must be from 1 to 2000"));
    }
    Ok(l)
}

pub async fn console_logs(cx: &Cx<'_>, a: ConsoleLogsIn) -> Result<Reply> {
    let n = limit_of(a.limit)?;
    let max = super::max_chars(a.max_chars, LOG_DEFAULT, LOG_CHARS)?;
    let l = live(cx, &a.session_id).await?;
    let all = l.session.console().await?;
    let counts = l.session.counts().await?;
    let picked: Vec<_> = all.into_iter().filter(|c| !a.errors_only.unwrap_or(false) || c.is_error()).collect();
    let (first, end) = window(&picked, a.from, n, max);
    let shown = &picked[first..end];
    let text = shown.iter().map(|c| format!("[{}] {}", c.level, c.text)).collect::<Vec<_>>().join("\n");
    let data = json!({"entries": shown, "consoleErrorCount": counts.console_errors, "window": window_json(first, end, picked.len())});
    let text =
        if text.is_empty() { "No console messages.".into() } else { text + &window_note(first, end, picked.len()) };
    Ok(Reply::data(data).with_text(text))
}

/// The session's requests (url, method, resourceType, status, failure, transferBytes), oldest first: the last ones (limit, default 100) that fit in maxChars (default 8000, at most 20000), or from an entry on (from) to read the rest; failedOnly keeps network failures and HTTP statuses ≥ 400 (the egress guard's refusals among them).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkLogsIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Only failed requests.
    pub failed_only: Option<bool>,
    /// Most entries (default 100, at most 2000).
    #[schemars(range(min = 1, max = 2000))]
    pub limit: Option<usize>,
    /// Start at this entry (0 is the oldest) instead of showing the last ones.
    pub from: Option<usize>,
    /// Most characters of entries in the answer (default 8000, 200–20000).
    #[schemars(range(min = 200, max = 20000))]
    pub max_chars: Option<usize>,
}

pub async fn network_logs(cx: &Cx<'_>, a: NetworkLogsIn) -> Result<Reply> {
    let n = limit_of(a.limit)?;
    let max = super::max_chars(a.max_chars, LOG_DEFAULT, LOG_CHARS)?;
    let l = live(cx, &a.session_id).await?;
    let all = l.session.network().await?;
    let counts = l.session.counts().await?;
    let picked: Vec<_> = all.into_iter().filter(|r| !a.failed_only.unwrap_or(false) || r.failed()).collect();
    let (first, end) = window(&picked, a.from, n, max);
    let shown = &picked[first..end];
    let text = shown
        .iter()
        .map(|r| {
            let outcome =
                r.status.map_or_else(|| r.failure.clone().unwrap_or_else(|| "pending".into()), |s| s.to_string());
            format!("{} {} → {}", r.method, r.url, outcome)
        })
        .collect::<Vec<_>>()
        .join("\n");
    let data = json!({"requests": shown, "requestCount": counts.requests, "failedCount": counts.failed_requests,
        "window": window_json(first, end, picked.len())});
    let text = if text.is_empty() { "No requests.".into() } else { text + &window_note(first, end, picked.len()) };
    Ok(Reply::data(data).with_text(text))
}

/// The JavaScript dialogs the page opened so far (kind, message, default prompt), oldest first, and the one open now if any.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetDialogsIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
}

pub async fn get_dialogs(cx: &Cx<'_>, a: GetDialogsIn) -> Result<Reply> {
    let l = live(cx, &a.session_id).await?;
    let all = l.session.dialogs().await?;
    let open = l.session.open_dialog().await?;
    Ok(Reply::data(json!({"dialogs": all, "open": open})))
}

page_input! {
    /// The page's performance: DevTools metrics (JS heap, DOM nodes, layouts, script and task durations) and the navigation timing (time to first byte, DOMContentLoaded, load, in ms).
    PerformanceIn
}

pub async fn get_performance(cx: &Cx<'_>, a: PerformanceIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    let metrics: serde_json::Map<String, Value> =
        l.session.performance_metrics(t).await?.into_iter().map(|m| (m.name, Value::Number(m.value))).collect();
    let timing = l
        .session
        .evaluate(
            "(() => { const n = performance.getEntriesByType('navigation')[0]; if (!n) return null; \
             return {ttfbMs: Math.round(n.responseStart), domContentLoadedMs: Math.round(n.domContentLoadedEventEnd), \
             loadMs: Math.round(n.loadEventEnd), transferBytes: n.transferSize}; })()",
            false,
            t,
        )
        .await?;
    Ok(Reply::data(json!({"metrics": metrics, "navigation": timing})))
}

/// Wait until the page has made a request whose URL contains url (and, unless done is false, it has finished or failed): an XHR or fetch a tap started, an image. Returns the request (status, failure, resourceType). Fails with TIMEOUT after timeoutMs.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitForRequestIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// A part of the request's URL.
    #[schemars(length(min = 1, max = 4096))]
    pub url: String,
    /// Wait for its response or failure too (default true).
    pub done: Option<bool>,
    /// Only requests made after this call (default true).
    pub new_only: Option<bool>,
    /// Most time in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn wait_for_request(cx: &Cx<'_>, a: WaitForRequestIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.url.is_empty() || a.url.len() > 4096 {
        return Err(invalid("url", "must be 1 to 4096 characters"));
    }
    let l = live(cx, &a.session_id).await?;
    let skip = if a.new_only.unwrap_or(true) { l.session.network().await?.len() } else { 0 };
    let want_done = a.done.unwrap_or(true);
    let until = tokio::time::Instant::now() + t;
    loop {
        let log = l.session.network().await?;
        let hit = log
            .into_iter()
            .skip(skip)
            .find(|r| r.url.contains(a.url.as_str()) && (!want_done || r.status.is_some() || r.failure.is_some()));
        if let Some(r) = hit {
            let text = format!(
                "{} {} → {}",
                r.method,
                r.url,
                r.status.map_or_else(|| r.failure.clone().unwrap_or_default(), |s| s.to_string())
            );
            return Ok(Reply::data(json!({"request": r})).with_text(text));
        }
        if tokio::time::Instant::now() >= until {
            return Err(refused(
                ErrorCode::Timeout,
                format!("no request to a URL containing '{}' within {} ms", a.url, t.as_millis()),
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
