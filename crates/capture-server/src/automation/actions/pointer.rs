//! Touch and the mouse: tap, double tap, long press, swipe, scroll, pinch, click, hover,
//! drag. Touch goes through `Input.dispatchTouchEvent`, the mouse through
//! `Input.dispatchMouseEvent`; element targets are aimed inside the visual viewport.

use capture_core::ErrorCode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{after, show, touch_device};
use crate::automation::sessions::live;
use crate::automation::{point_target, timeout};
use crate::error::Result;
use crate::tool::{Cx, Reply, invalid, refused};
use capture_browser::session::{
    MouseButton, MouseEvent, MouseEventKind, Session, Target, TouchEvent, TouchEventKind, TouchPoint,
};
use std::time::Duration;

point_input! {
    /// Tap an element (by ref from snapshot/find, or selector) or a point with one finger: real touchstart/touchend events (Input.dispatchTouchEvent), then the click the browser derives from them. Scrolls the element into view first; waits for a navigation the tap starts. On a device without touch it clicks instead.
    TapIn
}

pub async fn tap(cx: &Cx<'_>, a: TapIn) -> Result<Reply> {
    let (t, target) = (timeout(a.timeout_ms)?, a.target()?);
    let l = live(cx, &a.session_id).await?;
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

pub async fn double_tap(cx: &Cx<'_>, a: DoubleTapIn) -> Result<Reply> {
    let (t, target) = (timeout(a.timeout_ms)?, a.target()?);
    let l = live(cx, &a.session_id).await?;
    if touch_device(&l) {
        l.session.double_tap(target.clone(), t).await?;
    } else {
        l.session.double_click(target.clone(), t).await?;
    }
    after(&l, format!("double-tapped {}", show(&target))).await
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

pub async fn long_press(cx: &Cx<'_>, a: LongPressIn) -> Result<Reply> {
    let target = point_target(a.element_ref.as_deref(), a.selector.as_deref(), a.x, a.y)?;
    let hold = a.duration_ms.unwrap_or(800);
    if !(100..=10_000).contains(&hold) {
        return Err(invalid("durationMs", "must be from 100 to 10000"));
    }
    let t = timeout(a.timeout_ms)?.max(Duration::from_millis(hold + 2_000));
    let l = live(cx, &a.session_id).await?;
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

pub async fn swipe(cx: &Cx<'_>, a: SwipeIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let duration = a.duration_ms.unwrap_or(300);
    if !(50..=5_000).contains(&duration) {
        return Err(invalid("durationMs", "must be from 50 to 5000"));
    }
    let l = live(cx, &a.session_id).await?;
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
        return Err(invalid("distance", "must be from 1 to 10000 CSS pixels"));
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

pub async fn scroll(cx: &Cx<'_>, a: ScrollIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let at = crate::automation::element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let l = live(cx, &a.session_id).await?;
    let (w, h) = {
        let d = l.device.lock().unwrap();
        (f64::from(d.width), f64::from(d.height))
    };
    let (dx, dy) = match (a.direction, a.dx, a.dy) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(invalid("direction", "give direction (and amount) or dx/dy, not both"));
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
        return Err(invalid("dy", "must be within ±1000000 pixels"));
    }
    if dx == 0.0 && dy == 0.0 && at.is_none() {
        return Err(invalid("direction", "give direction, dx/dy, or the element to bring into view"));
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

pub async fn pinch(cx: &Cx<'_>, a: PinchIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if !a.scale.is_finite() || !(0.1..=10.0).contains(&a.scale) {
        return Err(invalid("scale", "must be from 0.1 to 10"));
    }
    let l = live(cx, &a.session_id).await?;
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

pub async fn click(cx: &Cx<'_>, a: ClickIn) -> Result<Reply> {
    let (t, target) = (timeout(a.timeout_ms)?, a.target()?);
    let l = live(cx, &a.session_id).await?;
    l.session.click(target.clone(), t).await?;
    after(&l, format!("clicked {}", show(&target))).await
}

point_input! {
    /// Move the mouse over an element or point (hover menus, tooltips): for desktop sessions.
    HoverIn
}

pub async fn hover(cx: &Cx<'_>, a: HoverIn) -> Result<Reply> {
    let (t, target) = (timeout(a.timeout_ms)?, a.target()?);
    let l = live(cx, &a.session_id).await?;
    l.session.hover(target.clone(), t).await?;
    after(&l, format!("hovering {}", show(&target))).await
}

/// The centre of a target where inputs aim: relative to the visual viewport (after a zoom or
/// a rotation it is not the layout viewport `getBoundingClientRect` measures), scrolled into
/// view when an element.
async fn centre(s: &Session, target: &Target, t: Duration) -> Result<(f64, f64)> {
    if let Target::Point { x, y } = target {
        return Ok((*x, *y));
    }
    let f = "function() { this.scrollIntoView({block: 'center', inline: 'center'}); const r = this.getBoundingClientRect(); \
             const vv = window.visualViewport || {offsetLeft: 0, offsetTop: 0}; \
             return {x: r.x + r.width / 2 - vv.offsetLeft, y: r.y + r.height / 2 - vv.offsetTop, w: r.width, h: r.height}; }";
    let v = crate::automation::look::on_element(s, target, f, vec![], t).await?;
    match (v["x"].as_f64(), v["y"].as_f64(), v["w"].as_f64()) {
        (Some(x), Some(y), Some(w)) if w > 0.0 => Ok((x, y)),
        _ => Err(refused(ErrorCode::ActionFailed, format!("{} is not visible (it has no box)", show(target)))),
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

pub async fn drag(cx: &Cx<'_>, a: DragIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let from = point_target(a.from_ref.as_deref(), a.from_selector.as_deref(), a.from_x, a.from_y)
        .map_err(|e| invalid("fromRef", e.to_string()))?;
    let to = point_target(a.to_ref.as_deref(), a.to_selector.as_deref(), a.to_x, a.to_y)
        .map_err(|e| invalid("toRef", e.to_string()))?;
    let duration = a.duration_ms.unwrap_or(500);
    if !(50..=5_000).contains(&duration) {
        return Err(invalid("durationMs", "must be from 50 to 5000"));
    }
    let l = live(cx, &a.session_id).await?;
    let (x0, y0) = centre(&l.session, &from, t).await?;
    let (x1, y1) = centre(&l.session, &to, t).await?;
    let pointer = a.pointer.unwrap_or(if touch_device(&l) { Pointer::Touch } else { Pointer::Mouse });
    let t = t.max(Duration::from_millis(duration + 2_000));
    match pointer {
        Pointer::Touch => {
            // Not `swipe`: a drag holds still at its end before the finger lifts, so the
            // release starts no fling (which would swallow the next tap, as on a phone).
            let s = &l.session;
            let finger = |x: f64, y: f64| vec![TouchPoint { x, y, id: 0, radius_x: 1.0, radius_y: 1.0, force: 1.0 }];
            let touch = |kind: TouchEventKind, touch_points: Vec<TouchPoint>| TouchEvent { kind, touch_points };
            s.dispatch_touch(touch(TouchEventKind::Start, finger(x0, y0)), t).await?;
            let steps: u32 = 12;
            for i in 1..=steps {
                let f = f64::from(i) / f64::from(steps);
                tokio::time::sleep(Duration::from_millis(duration / u64::from(steps))).await;
                s.dispatch_touch(touch(TouchEventKind::Move, finger(x0 + (x1 - x0) * f, y0 + (y1 - y0) * f)), t)
                    .await?;
            }
            for _ in 0..3 {
                tokio::time::sleep(Duration::from_millis(60)).await;
                s.dispatch_touch(touch(TouchEventKind::Move, finger(x1, y1)), t).await?;
            }
            s.dispatch_touch(touch(TouchEventKind::End, Vec::new()), t).await?;
            l.session.wait(Duration::from_millis(100)).await?;
        }
        Pointer::Mouse => {
            let ev = |kind: MouseEventKind, x: f64, y: f64, button: MouseButton, buttons: u32| MouseEvent {
                kind,
                x,
                y,
                button,
                buttons,
                click_count: 1,
            };
            let s = &l.session;
            s.dispatch_mouse(ev(MouseEventKind::Moved, x0, y0, MouseButton::None, 0), t).await?;
            s.dispatch_mouse(ev(MouseEventKind::Pressed, x0, y0, MouseButton::Left, 1), t).await?;
            let steps: u32 = 10;
            for i in 1..=steps {
                let f = f64::from(i) / f64::from(steps);
                tokio::time::sleep(Duration::from_millis(duration / u64::from(steps))).await;
                let (x, y) = (x0 + (x1 - x0) * f, y0 + (y1 - y0) * f);
                s.dispatch_mouse(ev(MouseEventKind::Moved, x, y, MouseButton::Left, 1), t).await?;
            }
            s.dispatch_mouse(ev(MouseEventKind::Released, x1, y1, MouseButton::Left, 0), t).await?;
        }
    }
    after(&l, format!("dragged from ({x0:.0}, {y0:.0}) to ({x1:.0}, {y1:.0}) with {pointer:?}").to_lowercase()).await
}
