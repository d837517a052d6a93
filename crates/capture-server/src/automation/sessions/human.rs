//! A person in the loop: `session_live_view` (a link to watch or drive the session) and
//! `request_human` (ask a person to step in — a CAPTCHA, a passkey, a 2FA prompt — and wait
//! until they press Done on the live view, or the time runs out).

use std::time::{Duration, Instant};

use capture_core::ErrorCode;
use capture_core::RunId;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::live;
use crate::error::Result;
use crate::liveview::service as views;
use crate::liveview::types::{Mode, ValidLiveView};
use crate::tool::{Cx, Reply, invalid, refused};

/// A link to a page of this service that shows the session's current tab as it changes. With mode control, the person holding it can also click, scroll and type in it. Give it to a person (or show it in an iframe of your app); it works until expiresAt.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LiveViewIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// view (default: watch only) or control (watch and drive).
    pub mode: Option<Mode>,
    /// Seconds the link works, 1 to 86400 (default 900).
    #[schemars(range(min = 1, max = 86_400))]
    pub ttl: Option<u64>,
}

fn run_id(sid: &str) -> Result<RunId> {
    RunId::parse(sid.trim()).ok_or_else(|| invalid("sessionId", "must be a session id (run_…) from session_start"))
}

pub async fn session_live_view(cx: &Cx<'_>, a: LiveViewIn) -> Result<Reply> {
    let ttl = a.ttl.unwrap_or(crate::liveview::types::TTL_DEFAULT);
    if !(1..=crate::liveview::types::TTL_MAX).contains(&ttl) {
        return Err(invalid("ttl", "must be 1 to 86400 seconds"));
    }
    let _held = live(cx, &a.session_id).await?;
    let id = run_id(&a.session_id)?;
    let v = views::create(cx.state, cx.account, &id, ValidLiveView { mode: a.mode.unwrap_or(Mode::View), ttl }, None)
        .await?;
    let text = format!("Live view ({}): {} (until {})", v.mode.as_str(), v.url, v.expires_at);
    Ok(Reply::data(json!({"url": v.url, "expiresAt": v.expires_at, "mode": v.mode})).with_text(text))
}

/// Ask a person to step in: makes a control-mode live view, fires the webhook event session.human_requested (with the link and the reason) and mails the account's address when mail is set up, then waits until the person presses Done on the live view, or timeoutSec passes. Answers done or timed_out and how long it took. Use it when a CAPTCHA, a passkey, a 2FA prompt or anything only a person can do blocks the task; the session keeps its clipboard and egress rules meanwhile.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestHumanIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// What the person should do, shown on the live view and in the mail (1 to 500 characters).
    #[schemars(length(min = 1, max = 500))]
    pub reason: String,
    /// How long to wait for the person, 10 to 3600 seconds (default 300).
    #[schemars(range(min = 10, max = 3600))]
    pub timeout_sec: Option<u64>,
}

/// Unsets a hand-off when its wait ends, however it ends.
struct Waiting<'a>(&'a crate::state::AppState, String);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.cluster.sessions.handoffs.lock().unwrap().remove(&self.1);
    }
}

pub async fn request_human(cx: &Cx<'_>, a: RequestHumanIn) -> Result<Reply> {
    let reason = a.reason.trim().to_string();
    if reason.is_empty() || reason.chars().count() > 500 || reason.chars().any(|c| c.is_control() && c != '\n') {
        return Err(invalid("reason", "must be 1 to 500 characters"));
    }
    let timeout = a.timeout_sec.unwrap_or(300);
    if !(10..=3600).contains(&timeout) {
        return Err(invalid("timeoutSec", "must be 10 to 3600 seconds"));
    }
    let held = live(cx, &a.session_id).await?;
    let id = run_id(&a.session_id)?;
    let state = cx.state;
    let (tx, mut rx) = tokio::sync::watch::channel(false);
    {
        let mut handoffs = state.cluster.sessions.handoffs.lock().unwrap();
        if handoffs.contains_key(id.as_str()) {
            return Err(refused(ErrorCode::ActionFailed, format!("session {id} is already waiting for a person")));
        }
        handoffs.insert(id.to_string(), tx);
    }
    let _waiting = Waiting(state, id.to_string());
    // The link outlives the wait a little, so a person who is late sees the session still.
    let link = ValidLiveView { mode: Mode::Control, ttl: timeout + 60 };
    let v = views::create(state, cx.account, &id, link, Some(reason.clone())).await?;
    let event =
        json!({"sessionId": id, "reason": reason, "url": v.url, "expiresAt": v.expires_at, "timeoutSec": timeout});
    if let Err(e) =
        state.store.emit_event(&cx.account.user.id, "session.human_requested", &event, state.clock.now_ms()).await
    {
        tracing::warn!(error = %e, session = %id, "session.human_requested could not be queued");
    } else {
        state.wake.queued(crate::queues::Queue::Webhook);
    }
    let to = vec![cx.account.user.email.clone()];
    let subject = format!("A browser session needs you: {}", reason.chars().take(80).collect::<String>());
    let text = format!(
        "An agent's browser session asks for a person:\n\n{reason}\n\nOpen the live view, do it, then press Done:\n{}\n\nThe agent waits until {}.",
        v.url, v.expires_at
    );
    let html = format!(
        "<p>An agent's browser session asks for a person:</p><blockquote>{}</blockquote><p><a href=\"{}\">Open the live view</a>, do it, then press <b>Done</b>.</p><p>The agent waits until {}.</p>",
        esc(&reason),
        esc(&v.url),
        v.expires_at
    );
    let mail_state = state.clone();
    tokio::spawn(async move {
        crate::notice::send(&mail_state, &to, subject, text, html, vec![], "a hand-off's mail").await
    });
    // The session's recording and log mark the hand-off.
    held.0.session.mark(&format!("hand-off: {reason}"));
    let started = Instant::now();
    let outcome = tokio::select! {
        r = rx.wait_for(|done| *done) => if r.is_ok() { "done" } else { "timed_out" },
        () = tokio::time::sleep(Duration::from_secs(timeout)) => "timed_out",
        () = held.0.session.ended() => "session_ended",
    };
    let waited = started.elapsed();
    held.0.session.mark(&format!("hand-off ended: {outcome}"));
    let text = match outcome {
        "done" => format!("The person pressed Done after {:.0} s; the session is yours again.", waited.as_secs_f64()),
        "timed_out" => format!("No one pressed Done within {timeout} s; the session is yours again as it is."),
        _ => "The session ended while waiting for the person.".to_string(),
    };
    Ok(Reply::data(json!({"outcome": outcome, "waitedMs": waited.as_millis() as u64, "liveViewUrl": v.url}))
        .with_text(text))
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
