//! What the page did: its console and network logs, dialogs, performance figures, and
//! waiting for a request.

use super::*;

/// The session's console messages and uncaught exceptions so far (level, text, url, line), oldest first; the counts of console errors cover the whole session.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConsoleLogsIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Only errors (console.error, console.assert, uncaught exceptions).
    pub errors_only: Option<bool>,
    /// The last this many entries (default 100, at most 2000).
    #[schemars(range(min = 1, max = 2000))]
    pub limit: Option<usize>,
}

pub(crate) fn limit_of(l: Option<usize>) -> AutoResult<usize> {
    let l = l.unwrap_or(100);
    if !(1..=2000).contains(&l) {
        return Err(AutoError::invalid("limit", "must be from 1 to 2000"));
    }
    Ok(l)
}

pub(crate) fn last<T>(v: Vec<T>, n: usize) -> Vec<T> {
    let skip = v.len().saturating_sub(n);
    v.into_iter().skip(skip).collect()
}

pub async fn console_logs(cx: Cx, a: ConsoleLogsIn) -> AutoResult<Reply> {
    let n = limit_of(a.limit)?;
    let l = live(&cx, &a.session_id).await?;
    let all = l.session.console().await?;
    let counts = l.session.counts().await?;
    let picked: Vec<_> = all.into_iter().filter(|c| !a.errors_only.unwrap_or(false) || c.is_error()).collect();
    let picked = last(picked, n);
    let text = picked.iter().map(|c| format!("[{}] {}", c.level, c.text)).collect::<Vec<_>>().join("\n");
    let data = json!({"entries": picked, "consoleErrorCount": counts.console_errors});
    Ok(Reply::data(data).with_text(if text.is_empty() { "No console messages.".into() } else { text }))
}

/// The session's requests so far (url, method, resourceType, status, failure, transferBytes), oldest first; failedOnly keeps network failures and HTTP statuses ≥ 400 (the egress guard's refusals among them).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkLogsIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Only failed requests.
    pub failed_only: Option<bool>,
    /// The last this many entries (default 100, at most 2000).
    #[schemars(range(min = 1, max = 2000))]
    pub limit: Option<usize>,
}

pub async fn network_logs(cx: Cx, a: NetworkLogsIn) -> AutoResult<Reply> {
    let n = limit_of(a.limit)?;
    let l = live(&cx, &a.session_id).await?;
    let all = l.session.network().await?;
    let counts = l.session.counts().await?;
    let picked: Vec<_> = all.into_iter().filter(|r| !a.failed_only.unwrap_or(false) || r.failed()).collect();
    let picked = last(picked, n);
    let text = picked
        .iter()
        .map(|r| {
            let outcome =
                r.status.map_or_else(|| r.failure.clone().unwrap_or_else(|| "pending".into()), |s| s.to_string());
            format!("{} {} → {}", r.method, r.url, outcome)
        })
        .collect::<Vec<_>>()
        .join("\n");
    let data = json!({"requests": picked, "requestCount": counts.requests, "failedCount": counts.failed_requests});
    Ok(Reply::data(data).with_text(if text.is_empty() { "No requests.".into() } else { text }))
}

/// The JavaScript dialogs the page opened so far (kind, message, default prompt), oldest first, and the one open now if any.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetDialogsIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
}

pub async fn get_dialogs(cx: Cx, a: GetDialogsIn) -> AutoResult<Reply> {
    let l = live(&cx, &a.session_id).await?;
    let all = l.session.dialogs().await?;
    let open = l.session.open_dialog().await?;
    Ok(Reply::data(json!({"dialogs": all, "open": open})))
}

page_input! {
    /// The page's performance: DevTools metrics (JS heap, DOM nodes, layouts, script and task durations) and the navigation timing (time to first byte, DOMContentLoaded, load, in ms).
    PerformanceIn
}

pub async fn get_performance(cx: Cx, a: PerformanceIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(&cx, &a.session_id).await?;
    let _ = l.session.cdp("Performance.enable", json!({}), t).await?;
    let m = l.session.cdp("Performance.getMetrics", json!({}), t).await?;
    let metrics: serde_json::Map<String, Value> = m
        .get("metrics")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|x| Some((x.get("name")?.as_str()?.to_string(), x.get("value")?.clone())))
        .collect();
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

pub async fn wait_for_request(cx: Cx, a: WaitForRequestIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.url.is_empty() || a.url.len() > 4096 {
        return Err(AutoError::invalid("url", "must be 1 to 4096 characters"));
    }
    let l = live(&cx, &a.session_id).await?;
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
            return Err(AutoError::new(
                "TIMEOUT",
                format!("no request to a URL containing '{}' within {} ms", a.url, t.as_millis()),
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
