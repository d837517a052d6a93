//! Acting on a session's page: navigation, touch (tap, double tap, long press, swipe,
//! pinch), mouse (click, hover), scrolling, keys and text, form controls, files, dialogs,
//! waiting, scripts. Touch goes through `Input.dispatchTouchEvent`, the mouse through
//! `Input.dispatchMouseEvent`, keys through `Input.dispatchKeyEvent`.

use std::time::Duration;

use capture_browser::WaitUntil;
use capture_browser::session::{Navigation, Session, Target, filter};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::sessions::{Live, live};
use super::timeout;
use crate::error::Result;
use crate::tool::{Cx, Reply, invalid};

mod forms;
mod page;
mod pointer;

pub use forms::{
    BlurIn, CheckIn, ClearIn, FillIn, FocusIn, KeyIn, SelectIn, TypeIn, UploadIn, blur, check, clear, fill, focus,
    press_key, select_option, type_text, upload_file,
};
pub use page::{DialogIn, EvaluateIn, WaitForIn, WaitIn, evaluate, handle_dialog, wait, wait_for};
pub use pointer::{
    ClickIn, DoubleTapIn, DragIn, HoverIn, LongPressIn, PinchIn, ScrollIn, SwipeIn, TapIn, click, double_tap, drag,
    hover, long_press, pinch, scroll, swipe, tap,
};

/// Default time of a navigation.
const NAV_TIMEOUT_MS: u64 = 30_000;

/// `load` (default), `domcontentloaded` or `networkidle`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WaitUntilIn {
    Load,
    Domcontentloaded,
    Networkidle,
}

fn nav_reply(n: Navigation) -> Reply {
    let text =
        format!("{} (HTTP {}), title {:?}", n.final_url, n.status.map_or("-".into(), |s| s.to_string()), n.title);
    Reply::data(json!({
        "url": n.final_url, "status": n.status, "title": n.title, "redirects": n.redirects,
        "timing": n.timing, "tags": n.tags,
    }))
    .with_text(text)
}

fn nav_timeout(ms: Option<u64>) -> Result<Duration> {
    timeout(Some(ms.unwrap_or(NAV_TIMEOUT_MS)))
}

/// Load a URL (http or https) in the session and wait until it has loaded (waitUntil). Every request goes through the service's egress guard: private and internal addresses are refused (NAVIGATION_FAILED). An HTTP error status is a result (status 404), not an error.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NavigateIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// An absolute http(s) URL.
    #[schemars(length(max = 4096))]
    pub url: String,
    /// When the page counts as loaded (default load).
    pub wait_until: Option<WaitUntilIn>,
    /// Most time in ms (default 30000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn navigate(cx: &Cx<'_>, a: NavigateIn) -> Result<Reply> {
    let t = nav_timeout(a.timeout_ms)?;
    let url = a.url.trim();
    if url.len() > 4096 {
        return Err(invalid("url", "must be at most 4096 characters"));
    }
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {}
        _ => {
            let why = filter::check_url(url).err().unwrap_or_else(|| "an absolute http(s) URL is needed".into());
            return Err(invalid("url", why));
        }
    }
    let l = live(cx, &a.session_id).await?;
    let wait = match a.wait_until.unwrap_or(WaitUntilIn::Load) {
        WaitUntilIn::Load => WaitUntil::Load,
        WaitUntilIn::Domcontentloaded => WaitUntil::Domcontentloaded,
        WaitUntilIn::Networkidle => WaitUntil::Networkidle,
    };
    let nav = l.session.goto(url, wait, t).await?;
    // What the session's consent engine did with the page's pop-up (absent with none).
    let consent = l.session.consent(Duration::from_secs(5)).await.ok().flatten();
    let mut reply = nav_reply(nav);
    if let Some(c) = consent {
        reply.data["consent"] = json!(c);
    }
    Ok(reply)
}

page_input! {
    /// Go back one entry in the session's history (like the phone's back gesture) and wait for the page to load.
    BackIn
}

pub async fn back(cx: &Cx<'_>, a: BackIn) -> Result<Reply> {
    let t = nav_timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    Ok(nav_reply(l.session.back(t).await?))
}

page_input! {
    /// Go forward one entry in the session's history and wait for the page to load.
    ForwardIn
}

pub async fn forward(cx: &Cx<'_>, a: ForwardIn) -> Result<Reply> {
    let t = nav_timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    Ok(nav_reply(l.session.forward(t).await?))
}

page_input! {
    /// Reload the current page and wait for it to load.
    ReloadIn
}

pub async fn reload(cx: &Cx<'_>, a: ReloadIn) -> Result<Reply> {
    let t = nav_timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    Ok(nav_reply(l.session.reload(t).await?))
}

/// After an input: where the page is now (an input may have navigated).
async fn after(l: &Live, what: String) -> Result<Reply> {
    if let Some(d) = l.session.open_dialog().await? {
        let text =
            format!("{what}; the page opened a {} dialog ({:?}): answer it with handle_dialog", d.kind, d.message);
        return Ok(Reply::data(json!({"done": what, "dialog": d})).with_text(text));
    }
    let (title, url) = l.session.title_url(Duration::from_secs(5)).await?;
    Ok(Reply::data(json!({"done": what, "url": url, "title": title})).with_text(format!("{what}; now at {url}")))
}

fn touch_device(l: &Live) -> bool {
    l.device.lock().unwrap().touch
}

fn show(t: &Target) -> String {
    match t {
        Target::Ref(id) => format!("e{id}"),
        other => other.to_string(),
    }
}

/// Evaluate, awaiting a promise.
pub async fn eval(s: &Session, expression: &str, t: Duration) -> Result<Value> {
    Ok(s.evaluate(expression, true, t).await?)
}
