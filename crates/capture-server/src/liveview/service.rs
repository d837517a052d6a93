//! Live views: a signed, expiring link to a page of this service that shows a session's
//! current tab as it changes (`Page.startScreencast` frames over a WebSocket) and, in
//! `control` mode, forwards a person's pointer, wheel and keyboard to it.
//!
//! The link carries its own proof: `{run, user, mode, expiry, reason}` signed with the master
//! key (every node has it), so any node can check it; the node holding the session serves the
//! frames, and any other node relays the WebSocket to it (its internal address from
//! `cluster_nodes`), as live DevTools sessions travel. A `view` link's input is refused.

use std::time::Duration;

use base64::Engine as _;
use capture_browser::session::{LiveInput, Session};
use capture_core::time::iso;
use capture_core::{ErrorCode, RunId};
use capture_store::RunRow;
use futures_util::{SinkExt, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use super::types::{LiveView, LiveViewSettings, Mode, ValidLiveView, ViewerMessage};
use crate::auth::Account;
use crate::error::{Error, Result};
use crate::state::AppState;

/// What a link proves: its holder may watch (or drive) this run of this account until `exp`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The run (`run_…`).
    pub r: String,
    /// Its account.
    pub u: String,
    pub m: Mode,
    /// Expiry, Unix ms.
    pub e: i64,
    /// Why a person is asked to step in (`request_human`), shown on the page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h: Option<String>,
}

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// `payload.signature`: the claims (base64url JSON) and their keyed hash.
pub fn sign(state: &AppState, c: &Claims) -> String {
    let payload = B64.encode(serde_json::to_vec(c).unwrap_or_default());
    let sig = state.master.keyed_hash(format!("live-view\n{payload}").as_bytes());
    format!("{payload}.{sig}")
}

/// Why a link is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Altered, or not ours.
    Invalid,
    /// Past its time.
    Expired,
}

/// The claims of a link for `run`, if it is intact, its own and in time.
pub fn verify(state: &AppState, token: &str, run: &str) -> std::result::Result<Claims, Refusal> {
    let (payload, sig) = token.split_once('.').ok_or(Refusal::Invalid)?;
    let want = state.master.keyed_hash(format!("live-view\n{payload}").as_bytes());
    if !crate::crypto::ct_eq(want.as_bytes(), sig.as_bytes()) {
        return Err(Refusal::Invalid);
    }
    let c: Claims = B64.decode(payload).ok().and_then(|b| serde_json::from_slice(&b).ok()).ok_or(Refusal::Invalid)?;
    if c.r != run {
        return Err(Refusal::Invalid);
    }
    if c.e <= state.clock.now_ms() {
        return Err(Refusal::Expired);
    }
    Ok(c)
}

/// The caller's run, while it runs.
async fn running_run(state: &AppState, account: &Account, id: &RunId) -> Result<RunRow> {
    let row = crate::runs::service::find(state, account, id).await?;
    if row.ended_at.is_some() || row.status.is_final() {
        return Err(Error::Refused(
            ErrorCode::SessionExpired,
            format!("the run {id} has ended: there is nothing to watch"),
        ));
    }
    Ok(row)
}

/// A link to watch (or drive) a run of the caller's while it runs.
pub async fn create(
    state: &AppState,
    account: &Account,
    id: &RunId,
    v: ValidLiveView,
    reason: Option<String>,
) -> Result<LiveView> {
    running_run(state, account, id).await?;
    let exp = state.clock.now_ms() + i64::try_from(v.ttl).unwrap_or(i64::MAX / 4) * 1000;
    let claims = Claims { r: id.to_string(), u: account.user.id.clone(), m: v.mode, e: exp, h: reason };
    let token = sign(state, &claims);
    Ok(LiveView {
        url: format!("{}/live/{id}?t={token}", state.base_url.trim_end_matches('/')),
        expires_at: iso(exp),
        mode: v.mode,
    })
}

/// The account's embedding setting.
pub async fn settings(state: &AppState, account: &Account) -> Result<LiveViewSettings> {
    let raw = state.store.live_view_frame_ancestors(&account.user.id).await?;
    let frame_ancestors = raw.and_then(|r| serde_json::from_str(&r).ok()).unwrap_or_default();
    Ok(LiveViewSettings { frame_ancestors })
}

pub async fn set_settings(state: &AppState, account: &Account, s: LiveViewSettings) -> Result<LiveViewSettings> {
    let json = serde_json::to_string(&s.frame_ancestors).map_err(Error::internal)?;
    let stored = if s.frame_ancestors.is_empty() { None } else { Some(json.as_str()) };
    state.store.set_live_view_frame_ancestors(&account.user.id, stored).await?;
    Ok(s)
}

/// The node a run's session lives on: a scripted run's worker is `<node>-run<i>`.
pub fn holder_node(row: &RunRow) -> Option<String> {
    let w = row.worker.as_deref()?;
    Some(w.rsplit_once("-run").map_or(w, |(n, _)| n).to_string())
}

/// The session this node holds for `run`, if it is still open.
pub fn local_session(state: &AppState, run: &str) -> Option<Session> {
    let mut views = state.cluster.sessions.views.lock().unwrap();
    match views.get(run) {
        Some(s) if !s.is_closed() => Some(s.clone()),
        Some(_) => {
            views.remove(run);
            None
        }
        None => None,
    }
}

/// How long one input may take to reach the page.
const INPUT_TIMEOUT: Duration = Duration::from_secs(5);

fn text(v: serde_json::Value) -> Message {
    Message::Text(v.to_string().into())
}

/// Serve a viewer on this node: frames out, input in (control mode), until the viewer
/// leaves, the link expires or the session ends.
pub async fn serve<S>(state: AppState, session: Session, claims: Claims, ws: S)
where
    S: futures_util::Stream<Item = std::result::Result<Message, tokio_tungstenite::tungstenite::Error>>
        + futures_util::Sink<Message>
        + Unpin,
{
    let (mut tx, mut rx) = ws.split();
    let mut cast = match session.watch(Duration::from_secs(10)).await {
        Ok(c) => c,
        Err(e) => {
            let _ = tx.send(text(json!({"t": "ended", "reason": e.to_string()}))).await;
            let _ = tx.close().await;
            return;
        }
    };
    let hello = json!({"t": "hello", "mode": claims.m, "reason": claims.h, "expiresAt": iso(claims.e)});
    if tx.send(text(hello)).await.is_err() {
        return;
    }
    let until = tokio::time::Instant::now()
        + Duration::from_millis(u64::try_from(claims.e - state.clock.now_ms()).unwrap_or(0));
    let mut ended = std::pin::pin!(session.ended());
    loop {
        tokio::select! {
            frame = cast.next() => {
                let Some(f) = frame else {
                    let _ = tx.send(text(json!({"t": "ended", "reason": session.end_reason().unwrap_or_default()}))).await;
                    break;
                };
                let msg = json!({"t": "frame", "w": f.width, "h": f.height, "ts": f.timestamp,
                                 "data": base64::engine::general_purpose::STANDARD.encode(&f.data)});
                if tx.send(text(msg)).await.is_err() {
                    break;
                }
            }
            msg = rx.next() => {
                let Some(Ok(msg)) = msg else { break };
                let body = match msg {
                    Message::Text(t) => t.to_string(),
                    Message::Close(_) => break,
                    _ => continue,
                };
                let Ok(m) = serde_json::from_str::<ViewerMessage>(&body) else {
                    let _ = tx.send(text(json!({"t": "error", "code": "VALIDATION_ERROR", "error": "not a viewer message"}))).await;
                    continue;
                };
                if claims.m != Mode::Control {
                    let _ = tx.send(text(json!({"t": "error", "code": "FORBIDDEN",
                        "error": "this link only watches: ask for a control link to drive the session"}))).await;
                    continue;
                }
                let input = match m {
                    ViewerMessage::Done => {
                        let done = state.cluster.sessions.handoffs.lock().unwrap().get(&claims.r).map(|h| h.send(true));
                        let _ = tx.send(text(json!({"t": "done", "handedBack": done.is_some_and(|r| r.is_ok())}))).await;
                        continue;
                    }
                    ViewerMessage::Mouse { kind, x, y, button, clicks, modifiers } => LiveInput::Mouse {
                        kind,
                        x,
                        y,
                        button: button.unwrap_or_else(|| "none".into()),
                        clicks: clicks.unwrap_or(0),
                        modifiers: modifiers.unwrap_or(0),
                    },
                    ViewerMessage::Wheel { x, y, dx, dy } => LiveInput::Wheel { x, y, dx, dy },
                    ViewerMessage::Key { key, down, modifiers } => {
                        LiveInput::Key { key, down, modifiers: modifiers.unwrap_or(0) }
                    }
                };
                if let Err(e) = session.live_input(input, INPUT_TIMEOUT).await {
                    let _ = tx.send(text(json!({"t": "error", "code": "ACTION_FAILED", "error": e.to_string()}))).await;
                }
            }
            () = &mut ended => {
                let _ = tx.send(text(json!({"t": "ended", "reason": session.end_reason().unwrap_or_default()}))).await;
                break;
            }
            () = tokio::time::sleep_until(until) => {
                let _ = tx.send(text(json!({"t": "expired"}))).await;
                break;
            }
        }
    }
    let _ = tx.close().await;
}
