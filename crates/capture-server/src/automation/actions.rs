//! Acting on a session's page: navigation, touch (tap, double tap, long press, swipe,
//! pinch), mouse (click, hover), scrolling, keys and text, form controls, files, dialogs,
//! waiting, scripts. Touch goes through `Input.dispatchTouchEvent`, the mouse through
//! `Input.dispatchMouseEvent`, keys through `Input.dispatchKeyEvent`.

use std::time::Duration;

use base64::Engine;
use capture_browser::WaitUntil;
use capture_browser::session::{FileUpload, MAX_UPLOAD_BYTES, Navigation, Session, Target, WaitFor, filter};
use capture_core::ScreenshotId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::sessions::{Live, live};
use super::{AutoError, AutoResult, Cx, Reply, point_target, required_element, timeout};
use crate::error::Error;

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

fn nav_timeout(ms: Option<u64>) -> AutoResult<Duration> {
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

pub async fn navigate(cx: Cx, a: NavigateIn) -> AutoResult<Reply> {
    let t = nav_timeout(a.timeout_ms)?;
    let url = a.url.trim();
    if url.len() > 4096 {
        return Err(AutoError::invalid("url", "must be at most 4096 characters"));
    }
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {}
        _ => {
            let why = filter::check_url(url).err().unwrap_or_else(|| "an absolute http(s) URL is needed".into());
            return Err(AutoError::invalid("url", why));
        }
    }
    let l = live(&cx, &a.session_id).await?;
    let wait = match a.wait_until.unwrap_or(WaitUntilIn::Load) {
        WaitUntilIn::Load => WaitUntil::Load,
        WaitUntilIn::Domcontentloaded => WaitUntil::DomContentLoaded,
        WaitUntilIn::Networkidle => WaitUntil::NetworkIdle,
    };
    Ok(nav_reply(l.session.goto(url, wait, t).await?))
}

page_input! {
    /// Go back one entry in the session's history (like the phone's back gesture) and wait for the page to load.
    BackIn
}

pub async fn back(cx: Cx, a: BackIn) -> AutoResult<Reply> {
    let t = nav_timeout(a.timeout_ms)?;
    let l = live(&cx, &a.session_id).await?;
    Ok(nav_reply(l.session.back(t).await?))
}

page_input! {
    /// Go forward one entry in the session's history and wait for the page to load.
    ForwardIn
}

pub async fn forward(cx: Cx, a: ForwardIn) -> AutoResult<Reply> {
    let t = nav_timeout(a.timeout_ms)?;
    let l = live(&cx, &a.session_id).await?;
    Ok(nav_reply(l.session.forward(t).await?))
}

page_input! {
    /// Reload the current page and wait for it to load.
    ReloadIn
}

pub async fn reload(cx: Cx, a: ReloadIn) -> AutoResult<Reply> {
    let t = nav_timeout(a.timeout_ms)?;
    let l = live(&cx, &a.session_id).await?;
    Ok(nav_reply(l.session.reload(t).await?))
}

/// After an input: where the page is now (an input may have navigated).
async fn after(l: &Live, what: String) -> AutoResult<Reply> {
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

point_input! {
    /// Tap an element (by ref from snapshot/find, or selector) or a point with one finger: real touchstart/touchend events (Input.dispatchTouchEvent), then the click the browser derives from them. Scrolls the element into view first; waits for a navigation the tap starts. On a device without touch it clicks instead.
    TapIn
}

pub async fn tap(cx: Cx, a: TapIn) -> AutoResult<Reply> {
    let (t, target) = (timeout(a.timeout_ms)?, a.target()?);
    let l = live(&cx, &a.session_id).await?;
    if touch_device(&l) {
        l.session.tap(target.clone(), t).await?;
        after(&l, format!("tapped {}", show(&target))).await
    } else {
        l.session.click(target.clone(), t).await?;
        after(&l, format!("clicked {} (the device has no touch)", show(&target))).await
    }
}

point_input! {
    /// Double-tap an element or point (two taps 60 ms apart), e.g. to zoom or to trigger a double-tap handler.
    DoubleTapIn
}

pub async fn double_tap(cx: Cx, a: DoubleTapIn) -> AutoResult<Reply> {
    let (t, target) = (timeout(a.timeout_ms)?, a.target()?);
    let l = live(&cx, &a.session_id).await?;
    if touch_device(&l) {
        l.session.double_tap(target.clone(), t).await?;
    } else {
        l.session.double_click(target.clone(), t).await?;
    }
    after(&l, format!("double-tapped {}", show(&target))).await
}

fn show(t: &Target) -> String {
    match t {
        Target::Ref(id) => format!("e{id}"),
        other => other.to_string(),
    }
}

/// Press and hold an element or point with one finger (default 800 ms), then release: context menus, drag handles, long-press actions.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LongPressIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// The element's ref from snapshot or find.
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// A CSS selector, instead of ref.
    pub selector: Option<String>,
    /// A point of the viewport (CSS pixels), with y.
    pub x: Option<f64>,
    /// With x.
    pub y: Option<f64>,
    /// How long the finger stays down in ms (default 800, 100–10000).
    #[schemars(range(min = 100, max = 10_000))]
    pub duration_ms: Option<u64>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn long_press(cx: Cx, a: LongPressIn) -> AutoResult<Reply> {
    let target = point_target(a.element_ref.as_deref(), a.selector.as_deref(), a.x, a.y)?;
    let hold = a.duration_ms.unwrap_or(800);
    if !(100..=10_000).contains(&hold) {
        return Err(AutoError::invalid("durationMs", "must be from 100 to 10000"));
    }
    let t = timeout(a.timeout_ms)?.max(Duration::from_millis(hold + 2_000));
    let l = live(&cx, &a.session_id).await?;
    l.session.long_press(target.clone(), Duration::from_millis(hold), t).await?;
    after(&l, format!("long-pressed {} for {hold} ms", show(&target))).await
}

/// `up`, `down`, `left` or `right`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Up,
    Down,
    Left,
    Right,
}

/// Swipe one finger across the screen in a direction (the finger's movement: left moves content/carousels to the next item, up scrolls down a page), starting on an element, a point, or the viewport's centre. Real touchstart/touchmove/touchend events over durationMs. As on a phone, a fast swipe on scrollable content flings it, and a tap while it still moves only stops it: wait a moment (wait_for, wait) before the next tap.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SwipeIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Which way the finger moves.
    pub direction: Direction,
    /// How far in CSS pixels (default 60% of the viewport along the direction).
    #[schemars(range(min = 1.0, max = 10000.0))]
    pub distance: Option<f64>,
    /// Start on this element (ref from snapshot or find).
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// Start on the element matching this CSS selector.
    pub selector: Option<String>,
    /// Start at this point (with y); default the viewport's centre.
    pub x: Option<f64>,
    /// With x.
    pub y: Option<f64>,
    /// How long the swipe takes in ms (default 300, 50–5000).
    #[schemars(range(min = 50, max = 5000))]
    pub duration_ms: Option<u64>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn swipe(cx: Cx, a: SwipeIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let duration = a.duration_ms.unwrap_or(300);
    if !(50..=5_000).contains(&duration) {
        return Err(AutoError::invalid("durationMs", "must be from 50 to 5000"));
    }
    let l = live(&cx, &a.session_id).await?;
    let (w, h) = {
        let d = l.device.lock().unwrap();
        (f64::from(d.width), f64::from(d.height))
    };
    let from = if a.element_ref.is_none() && a.selector.is_none() && a.x.is_none() && a.y.is_none() {
        Target::Point { x: w / 2.0, y: h / 2.0 }
    } else {
        point_target(a.element_ref.as_deref(), a.selector.as_deref(), a.x, a.y)?
    };
    let along = if matches!(a.direction, Direction::Left | Direction::Right) { w } else { h };
    let distance = a.distance.unwrap_or(along * 0.6);
    if !distance.is_finite() || !(1.0..=10_000.0).contains(&distance) {
        return Err(AutoError::invalid("distance", "must be from 1 to 10000 CSS pixels"));
    }
    let (dx, dy) = match a.direction {
        Direction::Left => (-distance, 0.0),
        Direction::Right => (distance, 0.0),
        Direction::Up => (0.0, -distance),
        Direction::Down => (0.0, distance),
    };
    let t = t.max(Duration::from_millis(duration + 2_000));
    l.session.swipe(from.clone(), dx, dy, Duration::from_millis(duration), t).await?;
    after(&l, format!("swiped {:?} {distance:.0} px from {}", a.direction, show(&from)).to_lowercase()).await
}

/// Scroll the page (or the scrollable element under ref/selector) by a direction and amount, or by dx/dy, with the mouse wheel; with only ref or selector, bring that element into view. Returns the window's scroll position.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScrollIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Which way the content moves into view: down shows what is below.
    pub direction: Option<Direction>,
    /// CSS pixels for direction (default 80% of the viewport).
    pub amount: Option<f64>,
    /// Horizontal pixels (instead of direction).
    pub dx: Option<f64>,
    /// Vertical pixels (instead of direction).
    pub dy: Option<f64>,
    /// Scroll at (or to) this element: a ref from snapshot or find.
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// Scroll at (or to) the element matching this CSS selector.
    pub selector: Option<String>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn scroll(cx: Cx, a: ScrollIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let at = super::element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let l = live(&cx, &a.session_id).await?;
    let (w, h) = {
        let d = l.device.lock().unwrap();
        (f64::from(d.width), f64::from(d.height))
    };
    let (dx, dy) = match (a.direction, a.dx, a.dy) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(AutoError::invalid("direction", "give direction (and amount) or dx/dy, not both"));
        }
        (Some(d), None, None) => {
            let along = if matches!(d, Direction::Left | Direction::Right) { w } else { h };
            let n = a.amount.unwrap_or(along * 0.8);
            match d {
                Direction::Down => (0.0, n),
                Direction::Up => (0.0, -n),
                Direction::Right => (n, 0.0),
                Direction::Left => (-n, 0.0),
            }
        }
        (None, dx, dy) => (dx.unwrap_or(0.0), dy.unwrap_or(0.0)),
    };
    if !dx.is_finite() || !dy.is_finite() || dx.abs() > 1e6 || dy.abs() > 1e6 {
        return Err(AutoError::invalid("dy", "must be within ±1000000 pixels"));
    }
    if dx == 0.0 && dy == 0.0 && at.is_none() {
        return Err(AutoError::invalid("direction", "give direction, dx/dy, or the element to bring into view"));
    }
    l.session.scroll(at, dx, dy, t).await?;
    let pos = l.session.evaluate("({scrollX, scrollY})", false, t).await?;
    let text = format!("scrolled; the window is at x={} y={}", pos["scrollX"], pos["scrollY"]);
    Ok(Reply::data(json!({"scrollX": pos["scrollX"], "scrollY": pos["scrollY"]})).with_text(text))
}

/// Pinch with two fingers around an element or point (default the viewport's centre): scale above 1 spreads the fingers (zoom in), below 1 brings them together (zoom out).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PinchIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// How far apart the fingers end relative to their start, 0.1–10.
    #[schemars(range(min = 0.1, max = 10.0))]
    pub scale: f64,
    /// Around this element (ref from snapshot or find).
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// Around the element matching this CSS selector.
    pub selector: Option<String>,
    /// Around this point (with y).
    pub x: Option<f64>,
    /// With x.
    pub y: Option<f64>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn pinch(cx: Cx, a: PinchIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if !a.scale.is_finite() || !(0.1..=10.0).contains(&a.scale) {
        return Err(AutoError::invalid("scale", "must be from 0.1 to 10"));
    }
    let l = live(&cx, &a.session_id).await?;
    let centre = if a.element_ref.is_none() && a.selector.is_none() && a.x.is_none() && a.y.is_none() {
        let d = l.device.lock().unwrap().clone();
        Target::Point { x: f64::from(d.width) / 2.0, y: f64::from(d.height) / 2.0 }
    } else {
        point_target(a.element_ref.as_deref(), a.selector.as_deref(), a.x, a.y)?
    };
    l.session.pinch(centre.clone(), a.scale, t).await?;
    after(&l, format!("pinched ×{} around {}", a.scale, show(&centre))).await
}

point_input! {
    /// Click an element or point with the mouse (mouseMoved, mousePressed, mouseReleased via Input.dispatchMouseEvent): for desktop sessions; on phones prefer tap. Waits for a navigation it starts.
    ClickIn
}

pub async fn click(cx: Cx, a: ClickIn) -> AutoResult<Reply> {
    let (t, target) = (timeout(a.timeout_ms)?, a.target()?);
    let l = live(&cx, &a.session_id).await?;
    l.session.click(target.clone(), t).await?;
    after(&l, format!("clicked {}", show(&target))).await
}

point_input! {
    /// Move the mouse over an element or point (hover menus, tooltips): for desktop sessions.
    HoverIn
}

pub async fn hover(cx: Cx, a: HoverIn) -> AutoResult<Reply> {
    let (t, target) = (timeout(a.timeout_ms)?, a.target()?);
    let l = live(&cx, &a.session_id).await?;
    l.session.hover(target.clone(), t).await?;
    after(&l, format!("hovering {}", show(&target))).await
}

/// Type text key by key (real keyDown/char/keyUp events, so input handlers and autocompletes react) into the focused field, or first tap (click on desktop) the element given by ref or selector to focus it. Appends to what the field holds; use fill to replace. submit: press Enter afterwards.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TypeIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// The text to type.
    #[schemars(length(max = 10_000))]
    pub text: String,
    /// Focus this element first (ref from snapshot or find).
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// Focus the element matching this CSS selector first.
    pub selector: Option<String>,
    /// Press Enter after typing.
    pub submit: Option<bool>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn type_text(cx: Cx, a: TypeIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.text.len() > 10_000 {
        return Err(AutoError::invalid("text", "must be at most 10000 characters"));
    }
    let target = super::element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let l = live(&cx, &a.session_id).await?;
    let n = a.text.chars().count();
    let done = match target {
        // The tap or click must land on the field and the field must take the text: each
        // is checked, and the tool fails when either did not happen.
        Some(target) => {
            l.session.type_into(target.clone(), &a.text, touch_device(&l), t).await?;
            format!("typed {n} characters into {}", show(&target))
        }
        None => {
            l.session.type_text(&a.text, t).await?;
            format!("typed {n} characters")
        }
    };
    if a.submit.unwrap_or(false) {
        l.session.press("Enter", t).await?;
    }
    after(&l, done).await
}

/// Replace a field's content with value: focus it, select what it holds, type value key by key (input and change events fire). For text inputs and textareas; use select_option for selects and check for checkboxes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FillIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// The field's ref from snapshot or find.
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// A CSS selector, instead of ref.
    pub selector: Option<String>,
    /// The new content.
    #[schemars(length(max = 10_000))]
    pub value: String,
    /// Press Enter afterwards.
    pub submit: Option<bool>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn fill(cx: Cx, a: FillIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.value.len() > 10_000 {
        return Err(AutoError::invalid("value", "must be at most 10000 characters"));
    }
    let target = required_element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let l = live(&cx, &a.session_id).await?;
    let now = l.session.fill(target.clone(), &a.value, t).await?;
    if a.submit.unwrap_or(false) {
        l.session.press("Enter", t).await?;
    }
    // The page may reformat what was typed (a phone number, a card number): say so.
    let what = if now == a.value {
        format!("filled {}", show(&target))
    } else {
        format!("filled {} (the page made it {now:?})", show(&target))
    };
    after(&l, what).await
}

element_input! {
    /// Empty a text field or textarea (ref or selector), with input and change events.
    ClearIn
}

pub async fn clear(cx: Cx, a: ClearIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let target = required_element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let l = live(&cx, &a.session_id).await?;
    l.session.fill(target.clone(), "", t).await?;
    after(&l, format!("cleared {}", show(&target))).await
}

/// Press a key or chord on the focused element: Enter, Tab, Escape, Backspace, ArrowDown, PageDown, a single character, or modifiers joined with + (Control+a, Shift+Tab). Waits for a navigation it starts.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyIn {
    /// The key, e.g. Enter or Control+a.
    #[schemars(length(min = 1, max = 64))]
    pub key: String,
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn press_key(cx: Cx, a: KeyIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.key.is_empty() || a.key.len() > 64 {
        return Err(AutoError::invalid("key", "must be a key name of 1 to 64 characters"));
    }
    let l = live(&cx, &a.session_id).await?;
    l.session.press(&a.key, t).await?;
    after(&l, format!("pressed {}", a.key)).await
}

/// Choose options of a select element (ref or selector) by value or visible label; several for a multiple select. Returns the values now selected.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelectIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// The select's ref from snapshot or find.
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// A CSS selector, instead of ref.
    pub selector: Option<String>,
    /// Values or labels to select.
    #[schemars(length(min = 1, max = 100))]
    pub values: Vec<String>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn select_option(cx: Cx, a: SelectIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.values.is_empty() || a.values.len() > 100 {
        return Err(AutoError::invalid("values", "give 1 to 100 values"));
    }
    let target = required_element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let l = live(&cx, &a.session_id).await?;
    let chosen = l.session.select_option(target, a.values.clone(), t).await?;
    if chosen.is_empty() {
        return Err(AutoError::new("ACTION_FAILED", format!("no option has the value or label {:?}", a.values)));
    }
    let text = format!("selected {}", chosen.join(", "));
    Ok(Reply::data(json!({"selected": chosen})).with_text(text))
}

/// Check (or, with checked false, uncheck) a checkbox or radio button (ref or selector) by tapping/clicking it when its state must change. Returns the state it ends in.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// The control's ref from snapshot or find.
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// A CSS selector, instead of ref.
    pub selector: Option<String>,
    /// The state wanted (default true).
    pub checked: Option<bool>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn check(cx: Cx, a: CheckIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let target = required_element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let want = a.checked.unwrap_or(true);
    let l = live(&cx, &a.session_id).await?;
    l.session.set_checked(target.clone(), want, t).await?;
    let now = super::look::on_element(&l.session, &target, "function() { return !!this.checked; }", vec![], t).await?;
    if now != json!(want) {
        return Err(AutoError::new(
            "ACTION_FAILED",
            format!("{} is still {}", show(&target), if want { "unchecked" } else { "checked" }),
        ));
    }
    Ok(Reply::data(json!({"checked": want})).with_text(format!(
        "{} is {}",
        show(&target),
        if want { "checked" } else { "unchecked" }
    )))
}

/// A file given inline.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InlineFile {
    /// File name, e.g. avatar.png.
    #[schemars(length(min = 1, max = 255))]
    pub name: String,
    /// MIME type (default application/octet-stream).
    pub mime_type: Option<String>,
    /// The content, base64.
    pub content_base64: String,
}

/// An attachment of a message in this account's saved test inbox.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InboxAttachmentIn {
    /// The message (eml_…) from inbox_messages or inbox_wait.
    pub message_id: String,
    /// The attachment's index in the message's attachments (from 0).
    pub index: u32,
}

/// Give files to a file input (ref or selector), as if chosen in the phone's picker: a screenshot of this account (screenshotId, its image), an attachment of a message in this account's inbox (inboxAttachment) and/or files given inline (base64). At most 16 MB together. The input's change event fires.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UploadIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// The file input's ref from snapshot or find.
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// A CSS selector, instead of ref (e.g. input[type=file]).
    pub selector: Option<String>,
    /// A finished screenshot of this account (scr_…): its image is the file.
    pub screenshot_id: Option<String>,
    /// An attachment of a message in this account's inbox: the file keeps its name and bytes.
    pub inbox_attachment: Option<InboxAttachmentIn>,
    /// Files given inline.
    #[schemars(length(max = 10))]
    pub files: Option<Vec<InlineFile>>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn upload_file(cx: Cx, a: UploadIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let target = required_element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let mut files = Vec::new();
    if let Some(id) = &a.screenshot_id {
        let sid = ScreenshotId::parse(id.trim()).ok_or_else(|| Error::not_found(ScreenshotId::NOUN))?;
        let row = crate::screenshots::service::find(&cx.state, &cx.account, &sid).await?;
        let key = row.result_key.clone().filter(|_| row.status == "done").ok_or_else(|| {
            AutoError::invalid(
                "screenshotId",
                format!("screenshot {id} is {}, not done: it has no image yet", row.status),
            )
        })?;
        let bytes = cx.state.blobs.get(&key).await.map_err(Error::internal)?.ok_or_else(|| {
            AutoError::invalid("screenshotId", format!("the image of screenshot {id} is no longer stored"))
        })?;
        let ext = key.rsplit('.').next().unwrap_or("png").to_string();
        files.push(FileUpload {
            name: format!("{}.{ext}", row.id),
            mime_type: crate::blob::content_type(&key).into(),
            bytes,
        });
    }
    if let Some(att) = &a.inbox_attachment {
        let (info, bytes) =
            crate::inbox::service::attachment(&cx.state, &cx.account, att.message_id.trim(), &att.index.to_string())
                .await?;
        let name = info
            .name
            .as_deref()
            .map(|n| n.rsplit(['/', '\\']).next().unwrap_or(n).trim())
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| format!("attachment-{}", info.index));
        files.push(FileUpload { name, mime_type: info.content_type, bytes });
    }
    for (i, f) in a.files.iter().flatten().enumerate() {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(f.content_base64.trim())
            .map_err(|_| AutoError::invalid(&format!("files[{i}].contentBase64"), "is not valid base64"))?;
        if f.name.is_empty() || f.name.len() > 255 || f.name.contains(['/', '\\']) {
            return Err(AutoError::invalid(&format!("files[{i}].name"), "must be a file name of 1 to 255 characters"));
        }
        let mime = f.mime_type.clone().unwrap_or_else(|| "application/octet-stream".into());
        files.push(FileUpload { name: f.name.clone(), mime_type: mime, bytes });
    }
    if files.is_empty() {
        return Err(AutoError::invalid("files", "give screenshotId, inboxAttachment or files"));
    }
    if files.len() > 10 {
        return Err(AutoError::invalid("files", "at most 10 files"));
    }
    let total: usize = files.iter().map(|f| f.bytes.len()).sum();
    if total > MAX_UPLOAD_BYTES {
        return Err(AutoError::invalid("files", format!("{total} bytes together; at most {MAX_UPLOAD_BYTES}")));
    }
    let names: Vec<String> = files.iter().map(|f| f.name.clone()).collect();
    let l = live(&cx, &a.session_id).await?;
    l.session.set_input_files(target.clone(), files, t).await?;
    let text = format!("gave {} to {}", names.join(", "), show(&target));
    Ok(Reply::data(json!({"files": names, "bytes": total})).with_text(text))
}

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

pub async fn handle_dialog(cx: Cx, a: DialogIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(&cx, &a.session_id).await?;
    if l.session.open_dialog().await?.is_none() {
        return Err(AutoError::new("NO_DIALOG", "no dialog is open"));
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

pub async fn wait_for(cx: Cx, a: WaitForIn) -> AutoResult<Reply> {
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
        return Err(AutoError::invalid("selector", "give exactly one of selector, text, url or networkIdle: true"));
    }
    let w = what.remove(0);
    if let WaitFor::Selector(s) | WaitFor::Text(s) | WaitFor::Url(s) = &w
        && (s.is_empty() || s.len() > 10_000)
    {
        return Err(AutoError::invalid("selector", "must be 1 to 10000 characters"));
    }
    let l = live(&cx, &a.session_id).await?;
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

pub async fn evaluate(cx: Cx, a: EvaluateIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.expression.trim().is_empty() || a.expression.len() > 16 * 1024 {
        return Err(AutoError::invalid("expression", "must be 1 to 16384 characters"));
    }
    let l = live(&cx, &a.session_id).await?;
    let v = eval(&l.session, &a.expression, t).await?;
    Ok(Reply::data(json!({"value": v})))
}

/// Evaluate, awaiting a promise.
pub async fn eval(s: &Session, expression: &str, t: Duration) -> AutoResult<Value> {
    Ok(s.evaluate(expression, true, t).await?)
}

/// The centre of a target in viewport coordinates (scrolled into view when an element).
async fn centre(s: &Session, target: &Target, t: Duration) -> AutoResult<(f64, f64)> {
    if let Target::Point { x, y } = target {
        return Ok((*x, *y));
    }
    let f = "function() { this.scrollIntoView({block: 'center', inline: 'center'}); const r = this.getBoundingClientRect(); \
             return {x: r.x + r.width / 2, y: r.y + r.height / 2, w: r.width, h: r.height}; }";
    let v = super::look::on_element(s, target, f, vec![], t).await?;
    match (v["x"].as_f64(), v["y"].as_f64(), v["w"].as_f64()) {
        (Some(x), Some(y), Some(w)) if w > 0.0 => Ok((x, y)),
        _ => Err(AutoError::new("ACTION_FAILED", format!("{} is not visible (it has no box)", show(target)))),
    }
}

/// Drag from one element or point to another: with a finger (touchstart, touchmove…, touchend; the default on touch devices) or the mouse (pressed, moved, released). For sliders, sortable lists, maps, drawers.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DragIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Start on this element (ref from snapshot or find).
    pub from_ref: Option<String>,
    /// Start on the element matching this CSS selector.
    pub from_selector: Option<String>,
    /// Start at this point (with fromY).
    pub from_x: Option<f64>,
    /// With fromX.
    pub from_y: Option<f64>,
    /// End on this element (ref).
    pub to_ref: Option<String>,
    /// End on the element matching this CSS selector.
    pub to_selector: Option<String>,
    /// End at this point (with toY).
    pub to_x: Option<f64>,
    /// With toX.
    pub to_y: Option<f64>,
    /// touch or mouse (default: touch on touch devices).
    pub pointer: Option<Pointer>,
    /// How long the move takes in ms (default 500, 50–5000).
    #[schemars(range(min = 50, max = 5000))]
    pub duration_ms: Option<u64>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

/// `touch` or `mouse`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Pointer {
    Touch,
    Mouse,
}

pub async fn drag(cx: Cx, a: DragIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let from = point_target(a.from_ref.as_deref(), a.from_selector.as_deref(), a.from_x, a.from_y)
        .map_err(|e| AutoError::invalid("fromRef", e.message))?;
    let to = point_target(a.to_ref.as_deref(), a.to_selector.as_deref(), a.to_x, a.to_y)
        .map_err(|e| AutoError::invalid("toRef", e.message))?;
    let duration = a.duration_ms.unwrap_or(500);
    if !(50..=5_000).contains(&duration) {
        return Err(AutoError::invalid("durationMs", "must be from 50 to 5000"));
    }
    let l = live(&cx, &a.session_id).await?;
    let (x0, y0) = centre(&l.session, &from, t).await?;
    let (x1, y1) = centre(&l.session, &to, t).await?;
    let pointer = a.pointer.unwrap_or(if touch_device(&l) { Pointer::Touch } else { Pointer::Mouse });
    let t = t.max(Duration::from_millis(duration + 2_000));
    match pointer {
        Pointer::Touch => {
            // Not `swipe`: a drag holds still at its end before the finger lifts, so the
            // release starts no fling (which would swallow the next tap, as on a phone).
            let s = &l.session;
            let finger = |x: f64, y: f64| json!([{"x": x, "y": y, "id": 0, "radiusX": 1, "radiusY": 1, "force": 1}]);
            let touch = |kind: &str, points: Value| json!({"type": kind, "touchPoints": points});
            s.cdp("Input.dispatchTouchEvent", touch("touchStart", finger(x0, y0)), t).await?;
            let steps: u32 = 12;
            for i in 1..=steps {
                let f = f64::from(i) / f64::from(steps);
                tokio::time::sleep(Duration::from_millis(duration / u64::from(steps))).await;
                s.cdp(
                    "Input.dispatchTouchEvent",
                    touch("touchMove", finger(x0 + (x1 - x0) * f, y0 + (y1 - y0) * f)),
                    t,
                )
                .await?;
            }
            for _ in 0..3 {
                tokio::time::sleep(Duration::from_millis(60)).await;
                s.cdp("Input.dispatchTouchEvent", touch("touchMove", finger(x1, y1)), t).await?;
            }
            s.cdp("Input.dispatchTouchEvent", touch("touchEnd", json!([])), t).await?;
            l.session.wait(Duration::from_millis(100)).await?;
        }
        Pointer::Mouse => {
            let ev = |kind: &str, x: f64, y: f64, button: &str, buttons: u32| json!({"type": kind, "x": x, "y": y, "button": button, "buttons": buttons, "clickCount": 1});
            let s = &l.session;
            s.cdp("Input.dispatchMouseEvent", ev("mouseMoved", x0, y0, "none", 0), t).await?;
            s.cdp("Input.dispatchMouseEvent", ev("mousePressed", x0, y0, "left", 1), t).await?;
            let steps: u32 = 10;
            for i in 1..=steps {
                let f = f64::from(i) / f64::from(steps);
                tokio::time::sleep(Duration::from_millis(duration / u64::from(steps))).await;
                s.cdp(
                    "Input.dispatchMouseEvent",
                    ev("mouseMoved", x0 + (x1 - x0) * f, y0 + (y1 - y0) * f, "left", 1),
                    t,
                )
                .await?;
            }
            s.cdp("Input.dispatchMouseEvent", ev("mouseReleased", x1, y1, "left", 0), t).await?;
        }
    }
    after(&l, format!("dragged from ({x0:.0}, {y0:.0}) to ({x1:.0}, {y1:.0}) with {pointer:?}").to_lowercase()).await
}

element_input! {
    /// Give an element (ref or selector) the keyboard focus without tapping it (focus handlers run); type and press_key then go to it.
    FocusIn
}

pub async fn focus(cx: Cx, a: FocusIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let target = required_element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let l = live(&cx, &a.session_id).await?;
    let ok = super::look::on_element(
        &l.session,
        &target,
        "function() { this.focus(); return document.activeElement === this; }",
        vec![],
        t,
    )
    .await?;
    if ok != json!(true) {
        return Err(AutoError::new("ACTION_FAILED", format!("{} cannot take the focus", show(&target))));
    }
    after(&l, format!("focused {}", show(&target))).await
}

page_input! {
    /// Take the focus away from the focused element (blur handlers and validation run; on a phone the on-screen keyboard would close).
    BlurIn
}

pub async fn blur(cx: Cx, a: BlurIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(&cx, &a.session_id).await?;
    let was = l
        .session
        .evaluate(
            "(() => { const e = document.activeElement; const d = e && e !== document.body ? (e.id || e.localName) : null; \
             if (e && e.blur) e.blur(); return d; })()",
            false,
            t,
        )
        .await?;
    Ok(Reply::data(json!({"blurred": was})))
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

pub async fn wait(cx: Cx, a: WaitIn) -> AutoResult<Reply> {
    if !(1..=60_000).contains(&a.ms) {
        return Err(AutoError::invalid("ms", "must be from 1 to 60000"));
    }
    let l = live(&cx, &a.session_id).await?;
    l.session.wait(Duration::from_millis(a.ms)).await?;
    after(&l, format!("waited {} ms", a.ms)).await
}
