//! Inputs: the mouse, touch and keys, aimed inside the visual viewport at the element a
//! pointer there hits; form controls, files and dialogs, each checking its effect.

use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;
use serde_json::json;
use tokio::time::Instant;

use super::{
    AIM, CHECKED, CaptureError, FIELD_VALUE, FILES, FOCUS, FOCUS_SELECT, FileUpload, HAS_FOCUS, HITS, MAX_UPLOAD_BYTES,
    SELECT, SETTLE, SessionPage, Stop, Target, keys, ms, p, s,
};
use crate::ElementFault;

/// How long a tap or click aimed at a field may take to give it the focus (Chromium holds a
/// tap up to 300 ms on a zoomable page, to tell it from a double tap) before the element is
/// focused directly.
const TAP_FOCUS: Duration = Duration::from_millis(400);

impl SessionPage {
    /// Where to touch or click a target: its centre, scrolled into view.
    pub(super) async fn point(&mut self, t: &Target) -> Result<(f64, f64), CaptureError> {
        if let Target::Point { x, y } = t {
            return Ok((*x, *y));
        }
        let obj = self.object(t).await?;
        let mut at = None;
        if let Target::Ref(id) = t {
            // Quads from the DOM (works for any node with a box, text included); they are
            // relative to the visual viewport already, as inputs are.
            let r = self.page.call(&s::ScrollIntoViewIfNeeded { backend_node_id: *id }).await;
            if r.is_ok()
                && let Ok(q) = self.page.call(&s::GetContentQuads { backend_node_id: *id }).await
                && let Some(quad) = q.quads.first().filter(|q| q.len() == 8)
            {
                at = Some((
                    (quad[0] + quad[2] + quad[4] + quad[6]) / 4.0,
                    (quad[1] + quad[3] + quad[5] + quad[7]) / 4.0,
                ));
            }
        }
        let (x, y) = match at {
            Some(p) => p,
            None => {
                let v = self.call_on(&obj, AIM, Vec::new()).await?;
                match (v.get("x").and_then(Value::as_f64), v.get("y").and_then(Value::as_f64)) {
                    (Some(x), Some(y)) => (x, y),
                    _ => {
                        return Err(CaptureError::Script(match v.get("error").and_then(Value::as_str) {
                            Some("offscreen") => format!("{t} could not be scrolled into the visible part of the page"),
                            _ => format!("{t} is not visible (it has no box)"),
                        }));
                    }
                }
            }
        };
        let hit = self.call_on(&obj, HITS, vec![json!(x), json!(y)]).await?;
        if hit.get("ok") == Some(&Value::Bool(false)) {
            let by = hit.get("by").and_then(Value::as_str).unwrap_or("another element");
            return Err(CaptureError::Element(
                ElementFault::Covered,
                format!("{t} is covered by {by}: an input there would not reach it"),
            ));
        }
        Ok((x, y))
    }

    /// Let the page react to an input; if it started a navigation, wait for it to load.
    pub(super) async fn settle(&mut self, loads_before: u32) -> Result<(), CaptureError> {
        let until = (Instant::now() + SETTLE).min(self.page.deadline);
        self.page.pump_for(until).await?;
        if self.page.started_loading != loads_before {
            while self.page.loading {
                match self.page.pump_until(self.page.deadline).await {
                    Ok(()) => {}
                    // The action happened; the page is just slow: the caller waits on.
                    Err(Stop::Elapsed) => break,
                    Err(Stop::Fail(e)) => return Err(e),
                }
            }
            self.release_objects();
        }
        Ok(())
    }

    /// Run an input command; a dialog it opens (Manual policy) counts as its effect.
    pub(super) async fn input<C: p::Command>(&mut self, cmd: &C) -> Result<(), CaptureError> {
        match self.page.call(cmd).await {
            Ok(_) => Ok(()),
            Err(_) if self.hooks_ref().is_some_and(|h| h.open_dialog.is_some()) => Ok(()),
            Err(e) => Err(e),
        }
    }

    pub(super) fn dialog_open(&self) -> bool {
        self.hooks_ref().is_some_and(|h| h.open_dialog.is_some())
    }

    pub(crate) async fn click(&mut self, t: &Target, clicks: u32) -> Result<(), CaptureError> {
        let (x, y) = self.point(t).await?;
        let before = self.page.started_loading;
        let ev = |kind: &'static str, button: &'static str, n: u32| p::DispatchMouseEvent {
            kind,
            x,
            y,
            button,
            click_count: n,
            ..Default::default()
        };
        self.input(&ev("mouseMoved", "none", 0)).await?;
        for n in 1..=clicks {
            self.input(&ev("mousePressed", "left", n)).await?;
            if self.dialog_open() {
                return Ok(());
            }
            self.input(&ev("mouseReleased", "left", n)).await?;
            if self.dialog_open() {
                return Ok(());
            }
        }
        self.settle(before).await
    }

    pub(crate) async fn hover(&mut self, t: &Target) -> Result<(), CaptureError> {
        let (x, y) = self.point(t).await?;
        self.input(&p::DispatchMouseEvent { kind: "mouseMoved", x, y, button: "none", ..Default::default() }).await?;
        let until = (Instant::now() + SETTLE).min(self.page.deadline);
        self.page.pump_for(until).await
    }

    pub(super) fn finger(x: f64, y: f64, id: u32) -> s::TouchPoint {
        s::TouchPoint { x, y, id, radius_x: 1.0, radius_y: 1.0, force: 1.0 }
    }

    pub(super) async fn touch(&mut self, kind: &'static str, points: Vec<s::TouchPoint>) -> Result<(), CaptureError> {
        self.input(&s::DispatchTouchEvent { kind, touch_points: points }).await
    }

    pub(crate) async fn tap(&mut self, t: &Target, taps: u32) -> Result<(), CaptureError> {
        let (x, y) = self.point(t).await?;
        let before = self.page.started_loading;
        for i in 0..taps {
            if i > 0 {
                // Apart enough to be two taps, close enough to be a double tap.
                let until = (Instant::now() + Duration::from_millis(60)).min(self.page.deadline);
                self.page.pump_for(until).await?;
            }
            self.touch("touchStart", vec![Self::finger(x, y, 0)]).await?;
            self.touch("touchEnd", Vec::new()).await?;
            if self.dialog_open() {
                return Ok(());
            }
        }
        self.settle(before).await
    }

    pub(crate) async fn long_press(&mut self, t: &Target, hold: Duration) -> Result<(), CaptureError> {
        let (x, y) = self.point(t).await?;
        let before = self.page.started_loading;
        self.touch("touchStart", vec![Self::finger(x, y, 0)]).await?;
        let until = Instant::now() + hold;
        if until > self.page.deadline {
            return Err(self.page.deadline_err());
        }
        self.page.pump_for(until).await?;
        self.touch("touchEnd", Vec::new()).await?;
        self.settle(before).await
    }

    pub(crate) async fn swipe(
        &mut self,
        from: &Target,
        dx: f64,
        dy: f64,
        duration: Duration,
    ) -> Result<(), CaptureError> {
        let (x, y) = self.point(from).await?;
        let before = self.page.started_loading;
        let steps = (ms(duration) / 16).clamp(5, 60) as u32;
        let start = Instant::now();
        if start + duration > self.page.deadline {
            return Err(self.page.deadline_err());
        }
        self.touch("touchStart", vec![Self::finger(x, y, 0)]).await?;
        for i in 1..=steps {
            let f = f64::from(i) / f64::from(steps);
            self.page.pump_for(start + duration.mul_f64(f)).await?;
            self.touch("touchMove", vec![Self::finger(x + dx * f, y + dy * f, 0)]).await?;
        }
        self.touch("touchEnd", Vec::new()).await?;
        self.settle(before).await
    }

    pub(crate) async fn pinch(&mut self, centre: &Target, scale: f64) -> Result<(), CaptureError> {
        if !(0.1..=10.0).contains(&scale) {
            return Err(CaptureError::Script(format!("a pinch scale of {scale} is out of range (0.1-10)")));
        }
        let (x, y) = self.point(centre).await?;
        // Two fingers on a horizontal line through the centre, moving apart or together.
        let d0 = 60.0;
        let d1 = d0 * scale;
        let steps = 12;
        let start = Instant::now();
        let duration = Duration::from_millis(300);
        let at = |d: f64| vec![Self::finger(x - d / 2.0, y, 0), Self::finger(x + d / 2.0, y, 1)];
        self.touch("touchStart", at(d0)).await?;
        for i in 1..=steps {
            let f = f64::from(i) / f64::from(steps);
            self.page.pump_for((start + duration.mul_f64(f)).min(self.page.deadline)).await?;
            self.touch("touchMove", at(d0 + (d1 - d0) * f)).await?;
        }
        self.touch("touchEnd", Vec::new()).await?;
        let until = (Instant::now() + SETTLE).min(self.page.deadline);
        self.page.pump_for(until).await
    }

    pub(crate) async fn scroll(&mut self, at: Option<&Target>, dx: f64, dy: f64) -> Result<(), CaptureError> {
        if dx == 0.0 && dy == 0.0 {
            if let Some(t) = at {
                self.point(t).await?;
            }
            return Ok(());
        }
        let (x, y) = match at {
            Some(t) => self.point(t).await?,
            None => (f64::from(self.device.width) / 2.0, f64::from(self.device.height) / 2.0),
        };
        let before = self.script("[scrollX, scrollY]").await?;
        let wheel = p::DispatchMouseEvent {
            kind: "mouseWheel",
            x,
            y,
            button: "none",
            delta_x: Some(dx),
            delta_y: Some(dy),
            ..Default::default()
        };
        self.input(&wheel).await?;
        // Wheel scrolling is asynchronous: wait (briefly) until the window has moved.
        let until = (Instant::now() + Duration::from_millis(500)).min(self.page.deadline);
        while Instant::now() < until {
            if self.script("[scrollX, scrollY]").await? != before {
                break;
            }
            self.page.pump_for((Instant::now() + Duration::from_millis(20)).min(until)).await?;
        }
        Ok(())
    }

    pub(super) async fn key(
        &mut self,
        kind: &'static str,
        key: &keys::Key,
        modifiers: u32,
        with_text: bool,
    ) -> Result<(), CaptureError> {
        let text = if with_text { key.text.clone() } else { None };
        // A clipboard shortcut goes without its key code: Blink then runs no clipboard
        // command of its own, and the page's shim uses the session's clipboard.
        let key_code = match kind {
            "keyDown" | "rawKeyDown"
                if crate::session::clipboard::shortcut(u64::from(key.key_code), u64::from(modifiers)).is_some() =>
            {
                0
            }
            _ => key.key_code,
        };
        let cmd = s::DispatchKeyEvent {
            kind,
            modifiers,
            unmodified_text: text.clone(),
            text,
            key: key.key.clone(),
            code: key.code.clone(),
            windows_virtual_key_code: key_code,
            native_virtual_key_code: key_code,
        };
        self.input(&cmd).await
    }

    pub(crate) async fn type_text(&mut self, text: &str) -> Result<(), CaptureError> {
        for c in text.chars() {
            let key = if c == '\n' { keys::named("Enter") } else { keys::char_key(c) };
            match key {
                Some(k) => {
                    self.key("keyDown", &k, 0, true).await?;
                    self.key("keyUp", &k, 0, false).await?;
                }
                None => {
                    let mut buf = [0u8; 4];
                    self.input(&s::InsertText { text: c.encode_utf8(&mut buf) }).await?;
                }
            }
            if self.dialog_open() {
                return Ok(());
            }
        }
        Ok(())
    }

    /// A person's input from a live view, as it came (no waiting for the page: the person
    /// sees what it did in the next frames).
    pub(crate) async fn live_input(&mut self, ev: crate::session::LiveInput) -> Result<(), CaptureError> {
        use crate::session::LiveInput;
        match ev {
            LiveInput::Mouse { kind, x, y, button, clicks, .. } => {
                let kind = match kind.as_str() {
                    "down" => "mousePressed",
                    "up" => "mouseReleased",
                    _ => "mouseMoved",
                };
                let button = match button.as_str() {
                    "left" => "left",
                    "middle" => "middle",
                    "right" => "right",
                    _ => "none",
                };
                let cmd = p::DispatchMouseEvent {
                    kind,
                    x,
                    y,
                    button,
                    click_count: clicks.min(3),
                    delta_x: None,
                    delta_y: None,
                };
                self.page.call(&cmd).await?;
            }
            LiveInput::Wheel { x, y, dx, dy } => {
                let cmd = p::DispatchMouseEvent {
                    kind: "mouseWheel",
                    x,
                    y,
                    button: "none",
                    click_count: 0,
                    delta_x: Some(dx),
                    delta_y: Some(dy),
                };
                self.page.call(&cmd).await?;
            }
            LiveInput::Key { key, down, modifiers } => {
                let mut chars = key.chars();
                let k = match (chars.next(), chars.next()) {
                    (Some(c), None) => keys::char_key(c),
                    _ => keys::named(&key),
                };
                let Some(k) = k else { return Ok(()) };
                // Control, Alt or Meta with a key types nothing.
                let types = k.text.is_some() && modifiers & (keys::CONTROL | keys::ALT | keys::META) == 0;
                let kind = match (down, types) {
                    (true, true) => "keyDown",
                    (true, false) => "rawKeyDown",
                    (false, _) => "keyUp",
                };
                self.key(kind, &k, modifiers, down && types).await?;
            }
        }
        Ok(())
    }

    pub(crate) async fn press(&mut self, spec: &str) -> Result<(), CaptureError> {
        let (mods, key) = keys::chord(spec).map_err(CaptureError::Script)?;
        let before = self.page.started_loading;
        let held: Vec<(u32, &str)> =
            [(keys::CONTROL, "Control"), (keys::ALT, "Alt"), (keys::META, "Meta"), (keys::SHIFT, "Shift")]
                .into_iter()
                .filter(|(bit, _)| mods & bit != 0)
                .collect();
        let mut down = 0;
        for (bit, name) in &held {
            down |= bit;
            let k = keys::named(name).unwrap_or_else(|| key.clone());
            self.key("rawKeyDown", &k, down, false).await?;
        }
        // A chord with Control, Alt or Meta types nothing.
        let types = key.text.is_some() && mods & (keys::CONTROL | keys::ALT | keys::META) == 0;
        self.key(if types { "keyDown" } else { "rawKeyDown" }, &key, mods, types).await?;
        if !self.dialog_open() {
            self.key("keyUp", &key, mods, false).await?;
        }
        for (bit, name) in held.iter().rev() {
            down &= !bit;
            let k = keys::named(name).unwrap_or_else(|| key.clone());
            self.key("keyUp", &k, down, false).await?;
        }
        if self.dialog_open() {
            return Ok(());
        }
        self.settle(before).await
    }

    /// Replace a field's content; the field's value afterwards (a page may reformat it).
    /// Fails when the field did not take the focus or its content did not change.
    pub(crate) async fn fill(&mut self, t: &Target, text: &str) -> Result<String, CaptureError> {
        let obj = self.object(t).await?;
        let before = self.call_on(&obj, FIELD_VALUE, Vec::new()).await?;
        match self.call_on(&obj, FOCUS_SELECT, Vec::new()).await? {
            Value::Bool(true) => {}
            Value::String(s) if s == "nofocus" => {
                return Err(CaptureError::Script(format!("{t} cannot take the focus (disabled or hidden)")));
            }
            _ => return Err(CaptureError::Script(format!("{t} is not a text field"))),
        }
        if text.is_empty() {
            let del = keys::named("Delete").unwrap_or_else(unreachable_key);
            self.key("rawKeyDown", &del, 0, false).await?;
            self.key("keyUp", &del, 0, false).await?;
        } else {
            self.type_text(text).await?;
        }
        if self.dialog_open() {
            return Ok(text.to_owned());
        }
        let after = self.call_on(&obj, FIELD_VALUE, Vec::new()).await?;
        let after = after.as_str().unwrap_or_default().to_owned();
        if after != text && before.as_str() == Some(after.as_str()) {
            return Err(CaptureError::Script(format!(
                "{t} still holds {after:?}: the field did not accept the keys (read-only, or the page refused them)"
            )));
        }
        Ok(after)
    }

    /// Type into a field: aim a tap (`touch`) or click at it, make sure it has the focus,
    /// type, and check that its content changed. The field's value afterwards.
    pub(crate) async fn type_into(&mut self, t: &Target, text: &str, touch: bool) -> Result<String, CaptureError> {
        let obj = self.object(t).await?;
        let before = self.call_on(&obj, FIELD_VALUE, Vec::new()).await?;
        if touch {
            self.tap(t, 1).await?;
        } else {
            self.click(t, 1).await?;
        }
        if self.dialog_open() {
            return Ok(String::new());
        }
        // A tap may have navigated (a link): the element is gone then.
        let obj = self.object(t).await?;
        self.take_focus(t, &obj).await?;
        self.type_text(text).await?;
        if self.dialog_open() || text.is_empty() {
            return Ok(text.to_owned());
        }
        let after = match self.object(t).await {
            Ok(obj) => self.call_on(&obj, FIELD_VALUE, Vec::new()).await?,
            // Typing (an Enter in the text) left the page.
            Err(_) => return Ok(text.to_owned()),
        };
        if after == before && after.is_string() {
            return Err(CaptureError::Script(format!(
                "{t} still holds {after}: the field did not accept the keys (read-only, or the page refused them)"
            )));
        }
        Ok(after.as_str().unwrap_or_default().to_owned())
    }

    /// Make sure the element has the focus after a tap or click aimed at it. A tap does not
    /// always give it: Chromium turns the first touch after a swipe's fling into stopping the
    /// fling (no click, no focus), and on a page that can be zoomed it waits to tell a tap from
    /// a double tap. So wait briefly for the focus, then focus the element itself (scrolled
    /// into view); fail when even that leaves it elsewhere (a disabled field).
    async fn take_focus(&mut self, t: &Target, obj: &str) -> Result<(), CaptureError> {
        let focused = |v: &Value| v.get("focused") == Some(&Value::Bool(true));
        let until = (Instant::now() + TAP_FOCUS).min(self.page.deadline);
        let mut focus = self.call_on(obj, HAS_FOCUS, Vec::new()).await?;
        while !focused(&focus) && Instant::now() < until {
            self.page.pump_for((Instant::now() + Duration::from_millis(25)).min(until)).await?;
            focus = self.call_on(obj, HAS_FOCUS, Vec::new()).await?;
        }
        if !focused(&focus) {
            self.call_on(obj, FOCUS, Vec::new()).await?;
            focus = self.call_on(obj, HAS_FOCUS, Vec::new()).await?;
        }
        if !focused(&focus) {
            let on = focus.get("on").and_then(Value::as_str).unwrap_or("nothing");
            return Err(CaptureError::Script(format!("{t} did not take the focus (it is on {on}): nothing was typed")));
        }
        Ok(())
    }

    pub(crate) async fn select_option(&mut self, t: &Target, values: &[String]) -> Result<Vec<String>, CaptureError> {
        let obj = self.object(t).await?;
        let r = self.call_on(&obj, SELECT, vec![json!(values)]).await?;
        if let Some(e) = r.get("error").and_then(Value::as_str) {
            return Err(CaptureError::Script(format!("{t}: {e}")));
        }
        Ok(serde_json::from_value(r["selected"].clone()).unwrap_or_default())
    }

    pub(crate) async fn set_checked(&mut self, t: &Target, checked: bool) -> Result<(), CaptureError> {
        let obj = self.object(t).await?;
        match self.call_on(&obj, CHECKED, Vec::new()).await? {
            Value::Bool(now) if now == checked => return Ok(()),
            Value::Bool(_) => {}
            _ => return Err(CaptureError::Script(format!("{t} is not a checkbox or radio button"))),
        }
        self.click(t, 1).await?;
        let obj = self.object(t).await?;
        match self.call_on(&obj, CHECKED, Vec::new()).await? {
            Value::Bool(now) if now == checked => Ok(()),
            _ => Err(CaptureError::Script(format!(
                "{t} did not become {}",
                if checked { "checked" } else { "unchecked" }
            ))),
        }
    }

    pub(crate) async fn set_input_files(&mut self, t: &Target, files: &[FileUpload]) -> Result<(), CaptureError> {
        let total: usize = files.iter().map(|f| f.bytes.len()).sum();
        if total > MAX_UPLOAD_BYTES {
            return Err(CaptureError::Script(format!(
                "{total} bytes of files is more than the {MAX_UPLOAD_BYTES} allowed"
            )));
        }
        let b64 = base64::engine::general_purpose::STANDARD;
        let arg: Vec<Value> =
            files.iter().map(|f| json!({ "name": f.name, "type": f.mime_type, "b64": b64.encode(&f.bytes) })).collect();
        let obj = self.object(t).await?;
        match self.call_on(&obj, FILES, vec![Value::Array(arg)]).await? {
            Value::Number(n) if n.as_u64() == Some(files.len() as u64) => Ok(()),
            Value::String(e) => Err(CaptureError::Script(format!("{t}: {e}"))),
            other => Err(CaptureError::Script(format!("{t} took {other} files"))),
        }
    }

    pub(crate) async fn handle_dialog(
        &mut self,
        accept: bool,
        prompt_text: Option<String>,
    ) -> Result<crate::session::Dialog, CaptureError> {
        let Some(d) = self.hooks_ref().and_then(|h| h.open_dialog.clone()) else {
            return Err(CaptureError::Script("no dialog is open".into()));
        };
        self.page.call(&p::HandleDialog { accept, prompt_text }).await?;
        self.hooks().open_dialog = None;
        Ok(d)
    }
}

/// The Delete key always exists; this keeps `fill` free of a panic path.
fn unreachable_key() -> keys::Key {
    keys::Key { key: "Delete".into(), code: "Delete".into(), key_code: 46, text: None }
}
