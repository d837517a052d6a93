//! The MCP automation tools: an agent opens a browser session on an emulated phone, tablet
//! or desktop, looks at it (screenshots, an accessibility snapshot with element refs, text,
//! logs), acts on it (real touch, mouse and key events through DevTools) and changes its
//! device and state — see `docs/automation.md`.
//!
//! A session is a live run (`runs`): created through the same service function (actions
//! reserved per minute of its `timeoutMs`, the account's bound on active runs), its
//! single-use connect token spent at once by this node, which then holds the run and its
//! browser session in memory ([`sessions`]). It ends on `session_end`, at its timeout, when
//! idle past its idle timeout, on `stop_run`, or at shutdown — finalised like every run:
//! the video, the console and network error counts, `run.completed`.
//!
//! Every tool comes from one typed definition: an input struct deriving `Deserialize` (the
//! arguments, unknown fields refused) and `JsonSchema` (the tool's `inputSchema`; the
//! struct's doc comment is the tool's description), and one async handler
//! `async fn(&Cx<'_>, Input) -> Result<Reply>` — in the `typed` table of the one tool layer's
//! [`tool_group!`](crate::tool::tool_group), which makes the catalogue and the dispatch; a
//! failure is the service's [`Error`] with its code, as for every other tool.

/// An input of a tool on a session's page: `sessionId` and `timeoutMs` (plus the doc
/// comment, which is the tool's description).
macro_rules! page_input {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub struct $name {
            /// The session (run_…) from session_start.
            pub session_id: String,
            /// Most time for this tool in ms (default 10000, 100–60000).
            pub timeout_ms: Option<u64>,
        }
    };
}

/// An input of a tool on one element (or a point): `sessionId`, `ref` or `selector` (or
/// `x`/`y`), `timeoutMs`.
macro_rules! point_input {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub struct $name {
            /// The session (run_…) from session_start.
            pub session_id: String,
            /// The element's ref from snapshot or find (e.g. e42): preferred over selectors.
            #[serde(rename = "ref")]
            pub element_ref: Option<String>,
            /// A CSS selector (waited for until timeoutMs), instead of ref.
            pub selector: Option<String>,
            /// A point of the viewport in CSS pixels, instead of an element (with y).
            pub x: Option<f64>,
            /// With x.
            pub y: Option<f64>,
            /// Most time for this tool in ms (default 10000, 100–60000).
            pub timeout_ms: Option<u64>,
        }

        impl $name {
            pub fn target(&self) -> crate::error::Result<capture_browser::session::Target> {
                crate::automation::point_target(self.element_ref.as_deref(), self.selector.as_deref(), self.x, self.y)
            }
        }
    };
}

/// An input of a tool on an optional element: `sessionId`, `ref` or `selector`, the fields
/// given in braces after the name (if any), `timeoutMs`.
macro_rules! element_input {
    ($(#[$m:meta])* $name:ident $({ $($(#[$fm:meta])* $field:ident: $ty:ty),* $(,)? })?) => {
        $(#[$m])*
        #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub struct $name {
            /// The session (run_…) from session_start.
            pub session_id: String,
            /// The element's ref from snapshot or find (e.g. e42).
            #[serde(rename = "ref")]
            pub element_ref: Option<String>,
            /// A CSS selector (waited for until timeoutMs), instead of ref.
            pub selector: Option<String>,
            $($( $(#[$fm])* pub $field: $ty, )*)?
            /// Most time for this tool in ms (default 10000, 100–60000).
            pub timeout_ms: Option<u64>,
        }
    };
}

/// An input of a tool that reads an optional element a page at a time: an
/// [`element_input!`] with `maxChars` and `from`.
macro_rules! paged_element_input {
    ($(#[$m:meta])* $name:ident) => {
        element_input! {
            $(#[$m])*
            $name {
                /// Most characters in the answer (default 8000, 200–20000).
                #[schemars(range(min = 200, max = 20000))]
                max_chars: Option<usize>,
                /// Start at this character (a previous answer's nextFrom).
                from: Option<usize>,
            }
        }
    };
}

mod actions;
mod look;
pub mod remote;
pub mod sessions;
pub mod snapshot;
mod state_tools;

use std::time::Duration;

use capture_browser::CaptureError;
use capture_browser::session::Target;
use capture_core::ErrorCode;
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::Value;

pub use sessions::drain;

use crate::error::{Error, Result};
use crate::tool::{Cx, invalid, refused, tool_group};

/// Default time of one tool's browser operation.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// Bounds of a tool's `timeoutMs`.
pub const TIMEOUT_MS: (u64, u64) = (100, 60_000);

/// `ref 42` in the browser's messages is `e42` to the agent.
fn agent_refs(m: &str) -> String {
    let mut out = String::with_capacity(m.len());
    let mut rest = m;
    while let Some(i) = rest.find("ref ") {
        out.push_str(&rest[..i + 4]);
        rest = &rest[i + 4..];
        if rest.starts_with(|c: char| c.is_ascii_digit()) {
            out.push('e');
        }
    }
    out.push_str(rest);
    out
}

/// A browser session's failure as a tool's: the kind gives the code, and the element refs in
/// the message are the agent's (`e42`).
impl From<CaptureError> for Error {
    fn from(e: CaptureError) -> Error {
        use capture_browser::ElementFault;
        let (code, m) = match e {
            CaptureError::Closed(m) => (ErrorCode::SessionExpired, format!("session expired: {m}")),
            CaptureError::Element(ElementFault::NotFound | ElementFault::BadSelector, m) => {
                (ErrorCode::ElementNotFound, m)
            }
            CaptureError::Element(ElementFault::NoSuchRef, m) => (ErrorCode::NoSuchElementRef, m),
            CaptureError::Element(ElementFault::Covered, m) => (ErrorCode::ElementCovered, m),
            CaptureError::DialogOpen(m) => (ErrorCode::DialogOpen, m),
            CaptureError::Timeout(m) | CaptureError::Deadline(m) => (ErrorCode::Timeout, m),
            CaptureError::Script(m) | CaptureError::Rejected(m) => (ErrorCode::ActionFailed, m),
            CaptureError::NotFound(m) => (ErrorCode::ElementNotFound, m),
            CaptureError::Navigation(m) => (ErrorCode::NavigationFailed, m),
            CaptureError::Browser(m) => (ErrorCode::BrowserFailed, m),
            CaptureError::Refused(m) => (ErrorCode::Refused, m),
            CaptureError::Unavailable(m) => (ErrorCode::Unavailable, m),
            CaptureError::SignedOut(m) => (ErrorCode::ProfileExpired, m),
            CaptureError::Blocked(m) => (ErrorCode::Blocked, m),
            CaptureError::ProxyFailed(m) => (ErrorCode::ProxyFailed, m),
        };
        refused(code, agent_refs(&m))
    }
}

/// Run automation tool `name` (None: not one of these) wherever its session lives: a call
/// naming a session another node holds is forwarded to that node (see `cluster`), and
/// `session_list` lists the account's sessions on every node.
pub async fn call(cx: &Cx<'_>, name: &str, args: &JsonObject) -> Option<Result<CallToolResult>> {
    if !NAMES.contains(&name) {
        return None;
    }
    if let Some(sid) = args.get("sessionId").and_then(Value::as_str)
        && !sessions::held_here(cx.state, sid.trim())
        && let Some(out) = forward(cx, sid.trim(), name, args).await
    {
        return Some(out);
    }
    let out = call_here(cx, name, args).await?;
    if name == "session_list"
        && let Ok(here) = out
    {
        return Some(Ok(sessions::with_other_nodes(cx.state, cx.account, here).await));
    }
    Some(out)
}

/// Forward a call for session `sid` to the node that holds it; None when it is not a session
/// another node holds (this node answers then, as for an unknown or ended session).
async fn forward(cx: &Cx<'_>, sid: &str, name: &str, args: &JsonObject) -> Option<Result<CallToolResult>> {
    let (state, account) = (cx.state, cx.account);
    let id = capture_core::RunId::parse(sid)?;
    let row = state.store.run_of(&account.user.id, id.as_str()).await.ok()??;
    let worker = row.worker.as_deref()?;
    let here = state.cluster.node_id();
    if row.kind != capture_core::RunKind::Live || row.status != capture_core::RunStatus::Running || worker == here {
        return None;
    }
    let started = std::time::Instant::now();
    match crate::cluster::forward(state, worker, account, name, args).await {
        Ok(Some(out)) => {
            state.metrics.forwarded_call(started.elapsed().as_secs_f64());
            Some(Ok(out))
        }
        // The owner never said where it is (an older node, or no internal address).
        Ok(None) => None,
        Err(crate::cluster::Unreachable(why)) => Some(Err(refused(
            ErrorCode::SessionUnreachable,
            format!(
                "session {sid} is held by another node, which cannot be reached now ({why}); if that node \
                 stopped, the session ends as failed within its lease"
            ),
        ))),
    }
}

// One tool per line: name, title, read-only, destructive, input type => handler.
tool_group! {
    typed {
        // Sessions
        "list_devices", "List device presets", true, false, sessions::ListDevicesIn => sessions::list_devices;
        "session_start", "Start a browser session", false, false, sessions::SessionStartIn => sessions::session_start;
        "session_list", "List open sessions", true, false, sessions::SessionListIn => sessions::session_list;
        "session_end", "End a browser session", false, true, sessions::SessionEndIn => sessions::session_end;
        "session_set_device", "Change the session's device", false, false, sessions::SetDeviceIn => sessions::session_set_device;
        "session_rotate", "Rotate the device", false, false, sessions::RotateIn => sessions::session_rotate;
        "session_live_view", "A link to watch or drive the session", false, false, sessions::LiveViewIn => sessions::session_live_view;
        "request_human", "Ask a person to step in", false, false, sessions::RequestHumanIn => sessions::request_human;
        // Looking
        "screenshot", "Screenshot", true, false, look::ScreenshotIn => look::screenshot;
        "snapshot", "Accessibility snapshot with refs", true, false, look::SnapshotIn => look::snapshot;
        "find", "Find elements", true, false, look::FindIn => look::find;
        "get_text", "Get visible text", true, false, look::GetTextIn => look::get_text;
        "get_html", "Get HTML", true, false, look::GetHtmlIn => look::get_html;
        "get_markdown", "Get the page as Markdown", true, false, look::GetMarkdownIn => look::get_markdown;
        "get_attribute", "Get an element's attribute", true, false, look::AttributeIn => look::get_attribute;
        "get_url", "Get the URL", true, false, look::GetUrlIn => look::get_url;
        "get_title", "Get the title", true, false, look::GetTitleIn => look::get_title;
        "get_console_logs", "Console log", true, false, look::ConsoleLogsIn => look::console_logs;
        "get_network_logs", "Network log", true, false, look::NetworkLogsIn => look::network_logs;
        "pdf", "Print to PDF", true, false, look::PdfIn => look::pdf;
        "get_element_state", "Element state", true, false, look::ElementStateIn => look::get_element_state;
        "get_links", "List links", true, false, look::GetLinksIn => look::get_links;
        "get_dialogs", "Dialogs so far", true, false, look::GetDialogsIn => look::get_dialogs;
        "get_performance", "Performance metrics", true, false, look::PerformanceIn => look::get_performance;
        "get_device", "Current device", true, false, look::GetDeviceIn => look::get_device;
        "wait_for_request", "Wait for a request", true, false, look::WaitForRequestIn => look::wait_for_request;
        "get_computed_style", "Computed CSS", true, false, look::ComputedStyleIn => look::get_computed_style;
        "get_form_fields", "Form fields with refs", true, false, look::GetFormFieldsIn => look::get_form_fields;
        // Acting
        "navigate", "Navigate to a URL", false, false, actions::NavigateIn => actions::navigate;
        "back", "Go back", false, false, actions::BackIn => actions::back;
        "forward", "Go forward", false, false, actions::ForwardIn => actions::forward;
        "reload", "Reload", false, false, actions::ReloadIn => actions::reload;
        "tap", "Tap", false, false, actions::TapIn => actions::tap;
        "double_tap", "Double tap", false, false, actions::DoubleTapIn => actions::double_tap;
        "long_press", "Long press", false, false, actions::LongPressIn => actions::long_press;
        "swipe", "Swipe", false, false, actions::SwipeIn => actions::swipe;
        "scroll", "Scroll", false, false, actions::ScrollIn => actions::scroll;
        "pinch", "Pinch zoom", false, false, actions::PinchIn => actions::pinch;
        "click", "Mouse click", false, false, actions::ClickIn => actions::click;
        "hover", "Mouse hover", false, false, actions::HoverIn => actions::hover;
        "type", "Type text", false, false, actions::TypeIn => actions::type_text;
        "fill", "Fill a field", false, false, actions::FillIn => actions::fill;
        "clear", "Clear a field", false, false, actions::ClearIn => actions::clear;
        "press_key", "Press a key", false, false, actions::KeyIn => actions::press_key;
        "select_option", "Select an option", false, false, actions::SelectIn => actions::select_option;
        "check", "Check or uncheck", false, false, actions::CheckIn => actions::check;
        "upload_file", "Upload a file", false, false, actions::UploadIn => actions::upload_file;
        "handle_dialog", "Accept or dismiss a dialog", false, false, actions::DialogIn => actions::handle_dialog;
        "wait_for", "Wait for a condition", true, false, actions::WaitForIn => actions::wait_for;
        "evaluate", "Run JavaScript", false, false, actions::EvaluateIn => actions::evaluate;
        "drag", "Drag", false, false, actions::DragIn => actions::drag;
        "focus", "Focus an element", false, false, actions::FocusIn => actions::focus;
        "blur", "Remove the focus", false, false, actions::BlurIn => actions::blur;
        "wait", "Wait a fixed time", true, false, actions::WaitIn => actions::wait;
        // Device and state
        "set_geolocation", "Set the position", false, false, state_tools::GeolocationIn => state_tools::set_geolocation;
        "set_network", "Network profile", false, false, state_tools::NetworkIn => state_tools::set_network;
        "get_cookies", "Get cookies", true, false, state_tools::GetCookiesIn => state_tools::get_cookies;
        "set_cookies", "Set cookies", false, false, state_tools::CookiesIn => state_tools::set_cookies;
        "clear_cookies", "Clear cookies", false, true, state_tools::ClearCookiesIn => state_tools::clear_cookies;
        "get_local_storage", "Get localStorage", true, false, state_tools::GetStorageIn => state_tools::get_local_storage;
        "set_local_storage", "Set a localStorage item", false, false, state_tools::StorageIn => state_tools::set_local_storage;
        "clear_local_storage", "Clear localStorage", false, true, state_tools::ClearStorageIn => state_tools::clear_local_storage;
        "grant_permissions", "Grant permissions", false, false, state_tools::PermissionsIn => state_tools::grant_permissions;
        "reset_permissions", "Reset permissions", false, false, state_tools::ResetPermissionsIn => state_tools::reset_permissions;
        "clipboard_write", "Write the clipboard", false, false, state_tools::ClipboardIn => state_tools::clipboard_write;
        "clipboard_read", "Read the clipboard", true, false, state_tools::ClipboardReadIn => state_tools::clipboard_read;
        "set_viewport", "Resize the viewport", false, false, state_tools::ViewportIn => state_tools::set_viewport;
        "set_user_agent", "Set the user agent", false, false, state_tools::UserAgentIn => state_tools::set_user_agent;
        "set_extra_headers", "Set extra request headers", false, false, state_tools::HeadersIn => state_tools::set_extra_headers;
        "set_color_scheme", "Light or dark mode", false, false, state_tools::ColorSchemeIn => state_tools::set_color_scheme;
        "set_timezone", "Set the time zone", false, false, state_tools::TimezoneIn => state_tools::set_timezone;
        "set_locale", "Set the locale", false, false, state_tools::LocaleIn => state_tools::set_locale;
        "get_session_storage", "Get sessionStorage", true, false, look::GetSessionStorageIn => look::get_session_storage;
        "set_session_storage", "Set a sessionStorage item", false, false, state_tools::SessionStorageIn => state_tools::set_session_storage;
        "delete_cookie", "Delete a cookie", false, true, state_tools::DeleteCookieIn => state_tools::delete_cookie;
        "block_urls", "Block URLs", false, false, state_tools::BlockUrlsIn => state_tools::block_urls;
        "set_reduced_motion", "Reduced motion", false, false, state_tools::ReducedMotionIn => state_tools::set_reduced_motion;
        "set_media_type", "Print or screen media", false, false, state_tools::MediaTypeIn => state_tools::set_media_type;
        "set_javascript", "JavaScript on or off", false, false, state_tools::JavascriptIn => state_tools::set_javascript;
        "set_vision_deficiency", "Simulate a vision deficiency", false, false, state_tools::VisionIn => state_tools::set_vision_deficiency;
        "set_device_orientation", "Device orientation sensors", false, false, state_tools::DeviceOrientationIn => state_tools::set_device_orientation;
    }
}

/// A tool's `timeoutMs` as a duration (default 10 s, 100 ms – 60 s).
pub fn timeout(ms: Option<u64>) -> Result<Duration> {
    let ms = ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    if !(TIMEOUT_MS.0..=TIMEOUT_MS.1).contains(&ms) {
        return Err(invalid("timeoutMs", format!("must be from {} to {}", TIMEOUT_MS.0, TIMEOUT_MS.1)));
    }
    Ok(Duration::from_millis(ms))
}

/// The element a tool acts on: a `ref` from `snapshot`/`find` or a CSS `selector` (one).
pub fn element(reference: Option<&str>, selector: Option<&str>) -> Result<Option<Target>> {
    match (reference, selector) {
        (Some(_), Some(_)) => Err(invalid("ref", "give either ref or selector, not both")),
        (Some(r), None) => snapshot::parse_ref(r).map(|id| Some(Target::Ref(id))).ok_or_else(|| {
            invalid("ref", format!("'{r}' is not an element ref (refs look like e42: take them from snapshot or find)"))
        }),
        (None, Some(s)) if s.trim().is_empty() => Err(invalid("selector", "must not be empty")),
        (None, Some(s)) if s.len() > 1024 => Err(invalid("selector", "must be at most 1024 characters")),
        (None, Some(s)) => Ok(Some(Target::Selector(s.to_string()))),
        (None, None) => Ok(None),
    }
}

/// An element or a point (`x` and `y`); one of them is required.
pub fn point_target(reference: Option<&str>, selector: Option<&str>, x: Option<f64>, y: Option<f64>) -> Result<Target> {
    match (element(reference, selector)?, x, y) {
        (Some(t), None, None) => Ok(t),
        (Some(_), _, _) => Err(invalid("x", "give an element (ref or selector) or a point (x and y), not both")),
        (None, Some(x), Some(y))
            if x.is_finite() && y.is_finite() && x >= 0.0 && y >= 0.0 && x <= 100_000.0 && y <= 100_000.0 =>
        {
            Ok(Target::Point { x, y })
        }
        (None, Some(_), Some(_)) => Err(invalid("x", "x and y must be CSS pixels from 0 to 100000")),
        (None, Some(_), None) | (None, None, Some(_)) => Err(invalid("x", "give both x and y")),
        (None, None, None) => {
            Err(invalid("ref", "give the element: ref (from snapshot or find), selector, or x and y"))
        }
    }
}

/// Like [`element`], but one is required.
pub fn required_element(reference: Option<&str>, selector: Option<&str>) -> Result<Target> {
    element(reference, selector)?
        .ok_or_else(|| invalid("ref", "give the element: ref (from snapshot or find) or selector"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_tool_has_a_description_and_an_object_schema() {
        let tools = catalogue();
        assert_eq!(tools.len(), NAMES.len());
        let mut seen = std::collections::HashSet::new();
        for t in &tools {
            assert!(seen.insert(t.name.to_string()), "{} twice", t.name);
            let d = t.description.as_deref().unwrap_or("");
            assert!(d.len() > 40, "{}: description {d:?}", t.name);
            assert_eq!(t.input_schema.get("type"), Some(&json!("object")), "{}", t.name);
            let text = Value::Object((*t.input_schema).clone()).to_string();
            assert!(!text.contains("session_id") && !text.contains("timeout_ms"), "camelCase: {text}");
            if t.name != "list_devices" && t.name != "session_start" && t.name != "session_list" {
                let req = t.input_schema["required"].as_array().cloned().unwrap_or_default();
                assert!(req.contains(&json!("sessionId")), "{} requires sessionId: {req:?}", t.name);
            }
        }
        assert!(tools.len() >= 78, "{}", tools.len());
    }

    #[test]
    fn browser_errors_get_stable_codes_and_agent_refs() {
        use capture_browser::ElementFault;
        let e =
            Error::from(CaptureError::Element(ElementFault::NoSuchRef, "tap ref 42: no such element ref 42".into()));
        assert_eq!(
            (e.code().as_str(), e.to_string().as_str()),
            ("NO_SUCH_ELEMENT_REF", "tap ref e42: no such element ref e42")
        );
        let e = Error::from(CaptureError::Closed("the session's 300 s deadline passed".into()));
        assert_eq!(e.code(), ErrorCode::SessionExpired);
        assert!(e.to_string().starts_with("session expired"));
        let e =
            Error::from(CaptureError::Element(ElementFault::NotFound, "tap '#x': no element matches '#x' (…)".into()));
        assert_eq!(e.code(), ErrorCode::ElementNotFound);
        let e = Error::from(CaptureError::DialogOpen("a JavaScript alert dialog is open".into()));
        assert_eq!(e.code(), ErrorCode::DialogOpen);
        let e = Error::from(CaptureError::Script("fill '#name': '#name' is not a text field".into()));
        assert_eq!(e.code(), ErrorCode::ActionFailed);
        assert_eq!(agent_refs("refs: ref x, ref 7."), "refs: ref x, ref e7.");
    }

    #[test]
    fn targets_and_timeouts_are_checked() {
        assert_eq!(element(Some("e5"), None).unwrap(), Some(Target::Ref(5)));
        assert_eq!(element(None, Some("#go")).unwrap(), Some(Target::Selector("#go".into())));
        assert_eq!(element(None, None).unwrap(), None);
        assert_eq!(element(Some("e5"), Some("#go")).unwrap_err().code(), ErrorCode::ValidationError);
        assert_eq!(element(Some("#go"), None).unwrap_err().code(), ErrorCode::ValidationError);
        assert!(required_element(None, None).is_err());
        assert_eq!(timeout(None).unwrap(), Duration::from_secs(10));
        assert!(timeout(Some(99)).is_err() && timeout(Some(60_001)).is_err());
    }
}
