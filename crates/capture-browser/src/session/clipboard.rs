//! Every session has its own clipboard: Chromium has one per browser process, and tenants
//! share browsers, so nothing a session copies may reach Chromium's clipboard and nothing
//! it pastes may come from there.
//!
//! Every path into the process clipboard, and what closes it:
//!
//! | path | closed by |
//! |---|---|
//! | `navigator.clipboard` (read, write, readText, writeText) | [`SHIM`] in every frame replaces them with the session's store (a DevTools binding); the context's `clipboard-read`/`clipboard-write` permissions are denied, so a document the shim missed is refused by Chromium |
//! | granting those permissions (`Browser.grantPermissions`, `setPermission`, the tools) | refused by the relay; [`super::Session::grant_permissions`] leaves them out; `resetPermissions` denies them again |
//! | Ctrl+C/X/V, Ctrl+Insert, Shift+Insert, Shift+Delete, Ctrl+Shift+V sent with `Input.dispatchKeyEvent` | [`guard_key_event`] sends them with key code 0, so Blink runs no editing command; the shim acts on the session's store instead |
//! | `commands: ["copy" / "cut" / "paste" …]` of a key event | [`guard_key_event`] removes them; the relay and the session ask the shim to run them ([`command_expression`]) |
//! | `copy`/`cut`/`paste` events Blink raises (a page's `execCommand('copy')`) | the shim cancels them before the page sees them and raises its own with the session's data |
//! | `execCommand('paste')` | refused by Chromium without the clipboard-read permission (denied) |
//! | a middle click (pastes Linux's selection buffer, which every selection writes) | refused by [`super::filter`]; the shim cancels the paste of a middle click too |
//!
//! The store lives as long as the session: it is gone with it.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// The binding the shim calls (`window.__captureClipboard(json)`).
pub(crate) const BINDING: &str = "__captureClipboard";

/// The page side: runs in every document of the session before the page's scripts.
pub(crate) const SHIM: &str = include_str!("clipboard.js");

/// Largest text the session's clipboard holds; a bigger write is refused.
pub const MAX_CLIPBOARD_BYTES: usize = 1 << 20;

/// A session's clipboard: text, shared by its pages, frames and tools.
#[derive(Debug, Clone, Default)]
pub(crate) struct Store(Arc<Mutex<String>>);

impl Store {
    pub(crate) fn get(&self) -> String {
        self.0.lock().unwrap().clone()
    }

    pub(crate) fn set(&self, text: &str) -> Result<(), String> {
        if text.len() > MAX_CLIPBOARD_BYTES {
            return Err(format!("the clipboard holds at most {MAX_CLIPBOARD_BYTES} bytes"));
        }
        *self.0.lock().unwrap() = text.to_owned();
        Ok(())
    }

    /// Answer one call of the binding: the expression that settles it in the page.
    pub(crate) fn answer(&self, payload: &str) -> Option<String> {
        let call: Value = serde_json::from_str(payload).ok()?;
        let id = call.get("id")?.as_u64()?;
        let (ok, value) = match call.get("op").and_then(Value::as_str) {
            Some("read") => (true, json!(self.get())),
            Some("write") => match self.set(call.get("text").and_then(Value::as_str).unwrap_or("")) {
                Ok(()) => (true, Value::Null),
                Err(_) => (false, Value::Null),
            },
            _ => (false, Value::Null),
        };
        Some(format!("window[Symbol.for('{BINDING}')]?.settle({id}, {ok}, {value})"))
    }
}

/// The permissions denied in every session's context (Chromium's clipboard is the whole
/// browser's): `Browser.setPermission` descriptors.
pub(crate) fn denied_permissions() -> [Value; 3] {
    [
        json!({ "name": "clipboard-read" }),
        json!({ "name": "clipboard-write" }),
        json!({ "name": "clipboard-write", "allowWithoutSanitization": true }),
    ]
}

/// Is this `Browser.grantPermissions` / `setPermission` name a clipboard permission?
pub(crate) fn is_clipboard_permission(name: &str) -> bool {
    let n = name.to_ascii_lowercase().replace(['-', '_'], "");
    n.starts_with("clipboard")
}

/// Which clipboard command Blink runs for a key-down of `key_code` with `modifiers` on
/// Linux (its `EditingBehavior` key table): the modifiers must match exactly.
pub(crate) fn shortcut(key_code: u64, modifiers: u64) -> Option<&'static str> {
    const ALT: u64 = 1;
    const CTRL: u64 = 2;
    const META: u64 = 4;
    const SHIFT: u64 = 8;
    let m = modifiers & (ALT | CTRL | META | SHIFT);
    match (key_code, m) {
        (67, CTRL) | (45, CTRL) => Some("copy"),
        (88, CTRL) | (46, SHIFT) => Some("cut"),
        (86, CTRL) | (45, SHIFT) => Some("paste"),
        (86, m) if m == CTRL | SHIFT => Some("paste"),
        _ => None,
    }
}

/// Blink editing commands that use the process clipboard.
fn clipboard_command(name: &str) -> Option<&'static str> {
    match name.to_ascii_lowercase().as_str() {
        "copy" => Some("copy"),
        "cut" => Some("cut"),
        "paste" | "pasteandmatchstyle" | "pasteglobalselection" => Some("paste"),
        _ => None,
    }
}

/// Make an `Input.dispatchKeyEvent` unable to reach the process clipboard: a key-down
/// Blink would map to a clipboard command goes with key code 0 (the page still gets its
/// `keydown`; the shim acts on the session's clipboard), and clipboard `commands` are taken
/// out. Returns the clipboard command taken out, for the caller to run through the shim
/// ([`command_expression`]).
pub(crate) fn guard_key_event(params: &mut Value) -> Option<&'static str> {
    let obj = params.as_object_mut()?;
    let down = matches!(obj.get("type").and_then(Value::as_str), Some("keyDown" | "rawKeyDown"));
    let code = obj.get("windowsVirtualKeyCode").and_then(Value::as_u64).unwrap_or(0);
    let mods = obj.get("modifiers").and_then(Value::as_u64).unwrap_or(0);
    if down && shortcut(code, mods).is_some() {
        obj.insert("windowsVirtualKeyCode".into(), json!(0));
        obj.insert("nativeVirtualKeyCode".into(), json!(0));
    }
    let mut taken = None;
    if let Some(Value::Array(cmds)) = obj.get_mut("commands") {
        cmds.retain(|c| match c.as_str().and_then(clipboard_command) {
            Some(op) => {
                taken = taken.or(Some(op));
                false
            }
            None => true,
        });
    }
    taken.filter(|_| down)
}

/// The expression that has the shim of the focused document run a clipboard command.
pub(crate) fn command_expression(op: &str) -> String {
    format!("void window[Symbol.for('{BINDING}')]?.command({})", json!(op))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipboard_shortcuts_lose_their_key_code_and_commands() {
        let mut ctrl_v = json!({ "type": "rawKeyDown", "modifiers": 2, "windowsVirtualKeyCode": 86, "nativeVirtualKeyCode": 86, "key": "v", "code": "KeyV" });
        assert_eq!(guard_key_event(&mut ctrl_v), None);
        assert_eq!(ctrl_v["windowsVirtualKeyCode"], 0);
        assert_eq!(ctrl_v["nativeVirtualKeyCode"], 0);
        assert_eq!(ctrl_v["key"], "v");
        for (code, mods) in [(67, 2), (45, 2), (88, 2), (46, 8), (86, 2), (45, 8), (86, 10)] {
            let mut ev = json!({ "type": "keyDown", "modifiers": mods, "windowsVirtualKeyCode": code });
            guard_key_event(&mut ev);
            assert_eq!(ev["windowsVirtualKeyCode"], 0, "{code} {mods}");
        }
        // Not clipboard shortcuts: left alone.
        for (kind, code, mods) in
            [("rawKeyDown", 86, 0), ("rawKeyDown", 86, 3), ("rawKeyDown", 65, 2), ("keyUp", 86, 2)]
        {
            let mut ev = json!({ "type": kind, "modifiers": mods, "windowsVirtualKeyCode": code });
            guard_key_event(&mut ev);
            assert_eq!(ev["windowsVirtualKeyCode"], code, "{kind} {code} {mods}");
        }
        let mut cmd = json!({ "type": "keyDown", "key": "v", "commands": ["selectAll", "Paste"] });
        assert_eq!(guard_key_event(&mut cmd), Some("paste"));
        assert_eq!(cmd["commands"], json!(["selectAll"]));
        let mut cmd = json!({ "type": "keyUp", "commands": ["copy"] });
        assert_eq!(guard_key_event(&mut cmd), None);
        assert_eq!(cmd["commands"], json!([]));
    }

    #[test]
    fn the_store_answers_the_shim() {
        let s = Store::default();
        assert_eq!(
            s.answer(r#"{"id":1,"op":"read"}"#).unwrap(),
            "window[Symbol.for('__captureClipboard')]?.settle(1, true, \"\")"
        );
        s.answer(r#"{"id":2,"op":"write","text":"a\"b"}"#).unwrap();
        assert_eq!(s.get(), "a\"b");
        assert!(s.answer(r#"{"id":3,"op":"read"}"#).unwrap().ends_with(r#"settle(3, true, "a\"b")"#));
        assert!(s.answer("nonsense").is_none());
        assert!(is_clipboard_permission("clipboardReadWrite"));
        assert!(is_clipboard_permission("clipboard-sanitized-write"));
        assert!(!is_clipboard_permission("notifications"));
    }
}
