//! The DevTools commands and events only sessions use (device emulation, input, storage,
//! accessibility, screencast, console).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Command, Empty, RemoteObject};

macro_rules! command {
    ($ty:ty, $method:literal, $resp:ty) => {
        impl Command for $ty {
            const METHOD: &'static str = $method;
            type Response = $resp;
        }
    };
}

// ---- Emulation -------------------------------------------------------------------------

/// `Emulation.setTouchEmulationEnabled`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetTouchEmulationEnabled {
    pub enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_touch_points: Option<u32>,
}
command!(SetTouchEmulationEnabled, "Emulation.setTouchEmulationEnabled", Empty);

/// `Emulation.setUserAgentOverride`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetUserAgentOverride<'a> {
    pub user_agent: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accept_language: Option<&'a str>,
}
command!(SetUserAgentOverride<'_>, "Emulation.setUserAgentOverride", Empty);

/// `Emulation.setLocaleOverride` (None: back to the default).
#[derive(Debug, Serialize)]
pub(crate) struct SetLocaleOverride<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locale: Option<&'a str>,
}
command!(SetLocaleOverride<'_>, "Emulation.setLocaleOverride", Empty);

/// `Emulation.setTimezoneOverride`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetTimezoneOverride<'a> {
    pub timezone_id: &'a str,
}
command!(SetTimezoneOverride<'_>, "Emulation.setTimezoneOverride", Empty);

/// `Emulation.setGeolocationOverride` (all None: position unavailable).
#[derive(Debug, Serialize)]
pub(crate) struct SetGeolocationOverride {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latitude: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub longitude: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<f64>,
}
command!(SetGeolocationOverride, "Emulation.setGeolocationOverride", Empty);

// ---- Network ---------------------------------------------------------------------------

/// `Network.setExtraHTTPHeaders`.
#[derive(Debug, Serialize)]
pub(crate) struct SetExtraHttpHeaders<'a> {
    pub headers: &'a BTreeMap<String, String>,
}
command!(SetExtraHttpHeaders<'_>, "Network.setExtraHTTPHeaders", Empty);

/// `Network.emulateNetworkConditions` (throughputs in bytes/s, -1: unlimited).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EmulateNetworkConditions {
    pub offline: bool,
    pub latency: f64,
    pub download_throughput: f64,
    pub upload_throughput: f64,
}
command!(EmulateNetworkConditions, "Network.emulateNetworkConditions", Empty);

// ---- Page ------------------------------------------------------------------------------

/// `Page.addScriptToEvaluateOnNewDocument`.
#[derive(Debug, Serialize)]
pub(crate) struct AddScriptToEvaluateOnNewDocument<'a> {
    pub source: &'a str,
}
/// Its reply.
#[derive(Debug, Deserialize)]
pub(crate) struct ScriptAdded {
    pub identifier: String,
}
command!(AddScriptToEvaluateOnNewDocument<'_>, "Page.addScriptToEvaluateOnNewDocument", ScriptAdded);

/// `Page.removeScriptToEvaluateOnNewDocument`.
#[derive(Debug, Serialize)]
pub(crate) struct RemoveScriptToEvaluateOnNewDocument<'a> {
    pub identifier: &'a str,
}
command!(RemoveScriptToEvaluateOnNewDocument<'_>, "Page.removeScriptToEvaluateOnNewDocument", Empty);

/// `Page.startScreencast`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StartScreencast {
    pub format: &'static str,
    pub quality: u8,
    pub max_width: u32,
    pub max_height: u32,
    pub every_nth_frame: u32,
}
command!(StartScreencast, "Page.startScreencast", Empty);

/// `Page.stopScreencast`.
#[derive(Debug, Serialize)]
pub(crate) struct StopScreencast {}
command!(StopScreencast, "Page.stopScreencast", Empty);

/// `Page.screencastFrameAck`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ScreencastFrameAck {
    pub session_id: i64,
}
command!(ScreencastFrameAck, "Page.screencastFrameAck", Empty);

/// `Page.getLayoutMetrics`.
#[derive(Debug, Serialize)]
pub(crate) struct GetLayoutMetrics {}
/// A size in CSS pixels.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Size {
    #[serde(default)]
    pub width: f64,
    #[serde(default)]
    pub height: f64,
}
/// Its reply.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LayoutMetrics {
    #[serde(default)]
    pub css_content_size: Size,
}
command!(GetLayoutMetrics, "Page.getLayoutMetrics", LayoutMetrics);

/// `Page.reload`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Reload {
    pub ignore_cache: bool,
}
command!(Reload, "Page.reload", Empty);

/// `Page.getNavigationHistory`.
#[derive(Debug, Serialize)]
pub(crate) struct GetNavigationHistory {}
/// One entry of the history.
#[derive(Debug, Deserialize)]
pub(crate) struct HistoryEntry {
    pub id: i64,
    #[serde(default)]
    pub url: String,
}
/// Its reply.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NavigationHistory {
    pub current_index: i64,
    pub entries: Vec<HistoryEntry>,
}
command!(GetNavigationHistory, "Page.getNavigationHistory", NavigationHistory);

/// `Page.navigateToHistoryEntry`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NavigateToHistoryEntry {
    pub entry_id: i64,
}
command!(NavigateToHistoryEntry, "Page.navigateToHistoryEntry", Empty);

// ---- Runtime and DOM -------------------------------------------------------------------

/// `Runtime.enable` (console messages and exceptions).
#[derive(Debug, Serialize)]
pub(crate) struct RuntimeEnable {}
command!(RuntimeEnable, "Runtime.enable", Empty);

/// An argument of `Runtime.callFunctionOn`.
#[derive(Debug, Serialize)]
pub(crate) struct CallArgument {
    pub value: Value,
}

/// `Runtime.callFunctionOn`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CallFunctionOn<'a> {
    pub function_declaration: &'a str,
    pub object_id: &'a str,
    pub arguments: Vec<CallArgument>,
    pub return_by_value: bool,
    pub await_promise: bool,
    pub user_gesture: bool,
}
command!(CallFunctionOn<'_>, "Runtime.callFunctionOn", super::Evaluated);

/// `Runtime.releaseObjectGroup`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReleaseObjectGroup<'a> {
    pub object_group: &'a str,
}
command!(ReleaseObjectGroup<'_>, "Runtime.releaseObjectGroup", Empty);

/// `DOM.resolveNode`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResolveNode<'a> {
    pub backend_node_id: i64,
    pub object_group: &'a str,
}
/// Its reply.
#[derive(Debug, Deserialize)]
pub(crate) struct ResolvedNode {
    pub object: RemoteObject,
}
command!(ResolveNode<'_>, "DOM.resolveNode", ResolvedNode);

/// `DOM.scrollIntoViewIfNeeded`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ScrollIntoViewIfNeeded {
    pub backend_node_id: i64,
}
command!(ScrollIntoViewIfNeeded, "DOM.scrollIntoViewIfNeeded", Empty);

/// `DOM.getContentQuads`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GetContentQuads {
    pub backend_node_id: i64,
}
/// Its reply: quads of 4 points (x1,y1…x4,y4) in viewport pixels.
#[derive(Debug, Deserialize)]
pub(crate) struct ContentQuads {
    pub quads: Vec<Vec<f64>>,
}
command!(GetContentQuads, "DOM.getContentQuads", ContentQuads);

// ---- Input -----------------------------------------------------------------------------

/// One finger of a touch event, relative to the visual viewport in CSS pixels.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TouchPoint {
    pub x: f64,
    pub y: f64,
    pub id: u32,
    pub radius_x: f64,
    pub radius_y: f64,
    pub force: f64,
}

/// `Input.dispatchTouchEvent`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DispatchTouchEvent {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub touch_points: Vec<TouchPoint>,
}
command!(DispatchTouchEvent, "Input.dispatchTouchEvent", Empty);

/// `Input.dispatchKeyEvent`.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DispatchKeyEvent {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub modifiers: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unmodified_text: Option<String>,
    pub key: String,
    pub code: String,
    pub windows_virtual_key_code: u32,
    pub native_virtual_key_code: u32,
}
command!(DispatchKeyEvent, "Input.dispatchKeyEvent", Empty);

/// `Input.insertText`.
#[derive(Debug, Serialize)]
pub(crate) struct InsertText<'a> {
    pub text: &'a str,
}
command!(InsertText<'_>, "Input.insertText", Empty);

// ---- Accessibility ---------------------------------------------------------------------

/// `Accessibility.getFullAXTree`.
#[derive(Debug, Serialize)]
pub(crate) struct GetFullAxTree {}
/// A property value of an accessibility node.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct AxValue {
    #[serde(default)]
    pub value: Option<Value>,
}
/// A named property of an accessibility node (`focused`, `checked`…).
#[derive(Debug, Deserialize)]
pub(crate) struct AxProperty {
    pub name: String,
    #[serde(default)]
    pub value: AxValue,
}
/// One node of the accessibility tree.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AxNodeRaw {
    pub node_id: String,
    #[serde(default)]
    pub ignored: bool,
    #[serde(default)]
    pub role: Option<AxValue>,
    #[serde(default)]
    pub name: Option<AxValue>,
    #[serde(default)]
    pub value: Option<AxValue>,
    #[serde(default)]
    pub description: Option<AxValue>,
    #[serde(default)]
    pub properties: Vec<AxProperty>,
    #[serde(default)]
    pub parent_id: Option<String>,
    #[serde(default)]
    pub child_ids: Vec<String>,
    #[serde(rename = "backendDOMNodeId", default)]
    pub backend_dom_node_id: Option<i64>,
}
/// Its reply.
#[derive(Debug, Deserialize)]
pub(crate) struct AxTreeRaw {
    pub nodes: Vec<AxNodeRaw>,
}
command!(GetFullAxTree, "Accessibility.getFullAXTree", AxTreeRaw);

// ---- Browser-level, for the session's own context ---------------------------------------

/// `Browser.grantPermissions`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GrantPermissions<'a> {
    pub permissions: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<&'a str>,
    pub browser_context_id: &'a str,
}
command!(GrantPermissions<'_>, "Browser.grantPermissions", Empty);

/// `Browser.resetPermissions`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResetPermissions<'a> {
    pub browser_context_id: &'a str,
}
command!(ResetPermissions<'_>, "Browser.resetPermissions", Empty);

/// `Storage.getCookies`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GetCookies<'a> {
    pub browser_context_id: &'a str,
}
/// Its reply.
#[derive(Debug, Deserialize)]
pub(crate) struct Cookies {
    pub cookies: Vec<Cookie>,
}
command!(GetCookies<'_>, "Storage.getCookies", Cookies);

/// `Storage.setCookies`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetCookies<'a> {
    pub cookies: &'a [Cookie],
    pub browser_context_id: &'a str,
}
command!(SetCookies<'_>, "Storage.setCookies", Empty);

/// `Storage.clearCookies`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClearCookies<'a> {
    pub browser_context_id: &'a str,
}
command!(ClearCookies<'_>, "Storage.clearCookies", Empty);

// ---- Events ----------------------------------------------------------------------------

/// `Page.javascriptDialogOpening`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DialogOpening {
    #[serde(default)]
    pub message: String,
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub default_prompt: Option<String>,
}

/// `Runtime.consoleAPICalled`.
#[derive(Debug, Deserialize)]
pub(crate) struct ConsoleApiCalled {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub args: Vec<RemoteObject>,
}

/// `Runtime.exceptionThrown`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExceptionThrown {
    pub exception_details: super::ExceptionDetails,
}

/// The metadata of a screencast frame.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FrameMetadata {
    /// Seconds since the epoch, when the frame was swapped.
    #[serde(default)]
    pub timestamp: Option<f64>,
    /// The viewport in CSS pixels.
    #[serde(default)]
    pub device_width: Option<f64>,
    #[serde(default)]
    pub device_height: Option<f64>,
}

/// `Page.screencastFrame`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ScreencastFrame {
    pub data: String,
    #[serde(default)]
    pub metadata: FrameMetadata,
    pub session_id: i64,
}

/// A cookie, as DevTools describes it (also what [`Session::set_cookies`] takes: give
/// `url`, or `domain` and `path`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cookie {
    pub name: String,
    pub value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// Seconds since the epoch; None or negative: a session cookie.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<f64>,
    #[serde(default)]
    pub http_only: bool,
    #[serde(default)]
    pub secure: bool,
    /// `Strict`, `Lax` or `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_site: Option<String>,
}
