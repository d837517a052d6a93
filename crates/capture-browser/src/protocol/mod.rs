//! The DevTools commands and events the engine uses, as typed messages: a small
//! hand-written subset of the protocol (<https://chromedevtools.github.io/devtools-protocol/>),
//! not a generated crate. A command is a struct naming its method and its reply type;
//! events a page session receives are decoded once, into [`PageEvent`].

use std::collections::HashMap;

pub(crate) mod session;
pub(crate) mod tools;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A DevTools command: its method name and the type of its reply.
pub(crate) trait Command: Serialize {
    /// `Domain.method`.
    const METHOD: &'static str;
    /// The reply's `result`.
    type Response: DeserializeOwned;
}

/// A reply with nothing in it (most `enable`/`set…` commands).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Empty {}

/// Declare a command struct's method and reply type.
macro_rules! command {
    ($ty:ty, $method:literal, $resp:ty) => {
        impl Command for $ty {
            const METHOD: &'static str = $method;
            type Response = $resp;
        }
    };
}

// ---- Browser and Target ----------------------------------------------------------------

/// `Browser.getVersion`.
#[derive(Debug, Serialize)]
pub(crate) struct GetVersion {}
/// Its reply.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Version {
    #[serde(default)]
    pub product: String,
    #[serde(default)]
    pub protocol_version: String,
    #[serde(default)]
    pub user_agent: String,
}
command!(GetVersion, "Browser.getVersion", Version);

/// `Browser.close`.
#[derive(Debug, Serialize)]
pub(crate) struct CloseBrowser {}
command!(CloseBrowser, "Browser.close", Empty);

/// `Browser.setDownloadBehavior`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetDownloadBehavior<'a> {
    pub behavior: &'a str,
    pub browser_context_id: &'a str,
}
command!(SetDownloadBehavior<'_>, "Browser.setDownloadBehavior", Empty);

/// `Target.createBrowserContext`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateBrowserContext {
    pub dispose_on_detach: bool,
    /// This context's own proxy (a route of the egress proxy), instead of the browser's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy_server: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy_bypass_list: Option<&'static str>,
}

#[cfg(feature = "bench")]
impl CreateBrowserContext {
    /// A context using the browser's proxy (the egress proxy).
    pub(crate) fn plain() -> CreateBrowserContext {
        CreateBrowserContext { dispose_on_detach: true, proxy_server: None, proxy_bypass_list: None }
    }
}
/// Its reply.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BrowserContextCreated {
    pub browser_context_id: String,
}
command!(CreateBrowserContext, "Target.createBrowserContext", BrowserContextCreated);

/// `Target.disposeBrowserContext`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DisposeBrowserContext<'a> {
    pub browser_context_id: &'a str,
}
command!(DisposeBrowserContext<'_>, "Target.disposeBrowserContext", Empty);

/// `Target.createTarget`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateTarget<'a> {
    pub url: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub browser_context_id: Option<&'a str>,
    pub new_window: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
}
/// Its reply.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TargetCreated {
    pub target_id: String,
}
command!(CreateTarget<'_>, "Target.createTarget", TargetCreated);

/// `Target.attachToTarget` (always flattened: one connection, sessions by id).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AttachToTarget<'a> {
    pub target_id: &'a str,
    pub flatten: bool,
}
/// Its reply.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Attached {
    pub session_id: String,
}
command!(AttachToTarget<'_>, "Target.attachToTarget", Attached);

// ---- Domains of a page session ---------------------------------------------------------

/// `Page.enable`.
#[derive(Debug, Serialize)]
pub(crate) struct PageEnable {}
command!(PageEnable, "Page.enable", Empty);

/// `Page.setLifecycleEventsEnabled`.
#[derive(Debug, Serialize)]
pub(crate) struct SetLifecycleEventsEnabled {
    pub enabled: bool,
}
command!(SetLifecycleEventsEnabled, "Page.setLifecycleEventsEnabled", Empty);

/// `Network.enable`; buffer sizes of 0 keep no response bodies in the browser.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NetworkEnable {
    pub max_total_buffer_size: u64,
    pub max_resource_buffer_size: u64,
}
command!(NetworkEnable, "Network.enable", Empty);

/// `Inspector.enable` (for `Inspector.targetCrashed`).
#[derive(Debug, Serialize)]
pub(crate) struct InspectorEnable {}
command!(InspectorEnable, "Inspector.enable", Empty);

/// `Emulation.setDeviceMetricsOverride`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetDeviceMetricsOverride {
    pub width: u32,
    pub height: u64,
    pub device_scale_factor: f64,
    pub mobile: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screen_orientation: Option<ScreenOrientation>,
}

/// The screen's orientation, as `screen.orientation` reports it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ScreenOrientation {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub angle: u32,
}
command!(SetDeviceMetricsOverride, "Emulation.setDeviceMetricsOverride", Empty);

/// One CSS media feature (`prefers-color-scheme: dark`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct MediaFeature {
    pub name: &'static str,
    pub value: &'static str,
}

/// `Emulation.setEmulatedMedia`: the media type (`print`; empty: the default, screen) and
/// features.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SetEmulatedMedia {
    pub media: &'static str,
    pub features: Vec<MediaFeature>,
}
command!(SetEmulatedMedia, "Emulation.setEmulatedMedia", Empty);

/// A colour with alpha (0-1).
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Rgba {
    pub r: u8,
    pub g: u8,
    pub b: u8,
    pub a: f64,
}

/// `Emulation.setDefaultBackgroundColorOverride` (None: back to the default white).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SetDefaultBackgroundColorOverride {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub color: Option<Rgba>,
}
command!(SetDefaultBackgroundColorOverride, "Emulation.setDefaultBackgroundColorOverride", Empty);

/// `Network.setBlockedURLs`: requests matching a pattern (`*` wildcards) fail.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SetBlockedUrls {
    pub urls: Vec<String>,
}
command!(SetBlockedUrls, "Network.setBlockedURLs", Empty);

/// One pattern of `Fetch.enable`: a URL pattern (`*` wildcards) or a resource type.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequestPattern {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url_pattern: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<&'static str>,
    pub request_stage: &'static str,
}

/// `Fetch.enable`: requests of these patterns pause until answered; with
/// `handle_auth_requests`, their authentication challenges too (`Fetch.authRequired`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FetchEnable {
    pub patterns: Vec<RequestPattern>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub handle_auth_requests: bool,
}
command!(FetchEnable, "Fetch.enable", Empty);

/// `Fetch.failRequest`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FailRequest<'a> {
    pub request_id: &'a str,
    pub error_reason: &'static str,
}
command!(FailRequest<'_>, "Fetch.failRequest", Empty);

/// `Fetch.continueRequest`: let a paused request go on unchanged.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ContinueRequest<'a> {
    pub request_id: &'a str,
}
command!(ContinueRequest<'_>, "Fetch.continueRequest", Empty);

/// The answer to an authentication challenge.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuthChallengeResponse<'a> {
    /// `Default`, `CancelAuth` or `ProvideCredentials`.
    pub response: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<&'a str>,
}

/// `Fetch.continueWithAuth`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ContinueWithAuth<'a> {
    pub request_id: &'a str,
    pub auth_challenge_response: AuthChallengeResponse<'a>,
}
command!(ContinueWithAuth<'_>, "Fetch.continueWithAuth", Empty);

/// The request of a paused fetch (the part the engine reads).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct PausedRequest {
    pub url: String,
}

/// `Fetch.requestPaused` (the part the engine reads).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequestPaused {
    pub request_id: String,
    pub request: PausedRequest,
    #[serde(default)]
    pub resource_type: String,
    #[serde(default)]
    pub frame_id: Option<String>,
    #[serde(default)]
    pub network_id: Option<String>,
}

/// Who asks for credentials, and for which origin.
#[derive(Debug, Deserialize)]
pub(crate) struct AuthChallenge {
    /// `Server` or `Proxy`.
    #[serde(default)]
    pub source: Option<String>,
    pub origin: String,
}

/// `Fetch.authRequired`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuthRequired {
    pub request_id: String,
    pub auth_challenge: AuthChallenge,
}

/// `Network.setExtraHTTPHeaders`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SetExtraHttpHeaders<'a> {
    pub headers: &'a std::collections::BTreeMap<String, String>,
}
command!(SetExtraHttpHeaders<'_>, "Network.setExtraHTTPHeaders", Empty);

/// One cookie of `Network.setCookies`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CookieParam<'a> {
    pub name: &'a str,
    pub value: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secure: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_only: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_site: Option<&'static str>,
}

/// `Network.setCookies`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SetCookies<'a> {
    pub cookies: Vec<CookieParam<'a>>,
}
command!(SetCookies<'_>, "Network.setCookies", Empty);

/// `Page.setDocumentContent`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetDocumentContent<'a> {
    pub frame_id: &'a str,
    pub html: &'a str,
}
command!(SetDocumentContent<'_>, "Page.setDocumentContent", Empty);

/// `Page.navigate`.
#[derive(Debug, Serialize)]
pub(crate) struct Navigate<'a> {
    pub url: &'a str,
}
/// Its reply: the new document's loader, or why it could not be loaded.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Navigated {
    #[serde(default)]
    pub loader_id: Option<String>,
    #[serde(default)]
    pub error_text: Option<String>,
}
command!(Navigate<'_>, "Page.navigate", Navigated);

/// `Page.handleJavaScriptDialog`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HandleDialog {
    pub accept: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_text: Option<String>,
}
command!(HandleDialog, "Page.handleJavaScriptDialog", Empty);

/// A screenshot's region, in CSS pixels, and its scale.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Clip {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
    pub scale: f64,
}

/// `Page.captureScreenshot`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CaptureScreenshot {
    pub format: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quality: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clip: Option<Clip>,
    pub from_surface: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub optimize_for_speed: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub capture_beyond_viewport: bool,
}
/// Base64 data (a screenshot, a PDF).
#[derive(Debug, Deserialize)]
pub(crate) struct Data {
    pub data: String,
}
command!(CaptureScreenshot, "Page.captureScreenshot", Data);

/// `Page.printToPDF` (A4 unless the page's CSS sets its size).
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PrintToPdf {
    pub print_background: bool,
    #[serde(rename = "preferCSSPageSize")]
    pub prefer_css_page_size: bool,
    pub paper_width: f64,
    pub paper_height: f64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub landscape: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub margin_top: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub margin_right: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub margin_bottom: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub margin_left: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_ranges: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub display_header_footer: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_template: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub footer_template: Option<String>,
}
command!(PrintToPdf, "Page.printToPDF", Data);

/// `Runtime.evaluate`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Evaluate<'a> {
    pub expression: &'a str,
    pub await_promise: bool,
    pub return_by_value: bool,
    pub user_gesture: bool,
    /// Top-level `await` and `const` re-declaration, like the DevTools console.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub repl_mode: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub silent: bool,
    /// Objects kept for later calls (`returnByValue: false`) belong to this group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_group: Option<&'a str>,
    /// Run in this context (an isolated world's) instead of the page's main world.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_id: Option<i64>,
}
/// A JavaScript value as DevTools describes it (`returnByValue` fills `value`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RemoteObject {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub value: Option<Value>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub object_id: Option<String>,
    #[serde(default)]
    pub unserializable_value: Option<String>,
}
/// A thrown exception.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExceptionDetails {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub exception: Option<RemoteObject>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub line_number: Option<u64>,
}
/// `Runtime.evaluate`'s reply.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Evaluated {
    #[serde(default)]
    pub result: RemoteObject,
    #[serde(default)]
    pub exception_details: Option<ExceptionDetails>,
}
command!(Evaluate<'_>, "Runtime.evaluate", Evaluated);

/// `Page.createIsolatedWorld`: a JavaScript world of our own over the frame's DOM.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateIsolatedWorld<'a> {
    pub frame_id: &'a str,
    pub world_name: &'a str,
    /// (sic: the protocol's spelling)
    pub grant_univeral_access: bool,
}
/// Its reply.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct IsolatedWorld {
    pub execution_context_id: i64,
}
command!(CreateIsolatedWorld<'_>, "Page.createIsolatedWorld", IsolatedWorld);

impl ExceptionDetails {
    /// A one-line message: the exception's first line, its value, or the text.
    pub(crate) fn message(&self) -> String {
        let exc = self.exception.as_ref();
        exc.and_then(|e| e.description.as_deref())
            .map(|d| d.lines().next().unwrap_or(d).trim().to_owned())
            .or_else(|| {
                exc.and_then(|e| e.value.as_ref()).map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
            })
            .or_else(|| (!self.text.is_empty()).then(|| self.text.clone()))
            .unwrap_or_else(|| "unknown error".into())
    }
}

/// `Input.dispatchMouseEvent`.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DispatchMouseEvent {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub x: f64,
    pub y: f64,
    pub button: &'static str,
    pub click_count: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_x: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_y: Option<f64>,
}
command!(DispatchMouseEvent, "Input.dispatchMouseEvent", Empty);

// ---- Events ----------------------------------------------------------------------------

/// A request as `Network.requestWillBeSent` describes it.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RequestInfo {
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub method: String,
}

/// `Network.requestWillBeSent` (the parts the engine reads).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequestWillBeSent {
    pub request_id: String,
    #[serde(default)]
    pub loader_id: String,
    #[serde(default)]
    pub frame_id: Option<String>,
    #[serde(rename = "type", default)]
    pub resource_type: String,
    #[serde(default)]
    pub request: RequestInfo,
    /// Set when this request follows a redirect: the redirect's response.
    #[serde(default)]
    pub redirect_response: Option<Response>,
}

/// `Network.loadingFinished` / `Network.loadingFailed`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LoadingDone {
    pub request_id: String,
    /// Bytes received over the network (headers and body, as transferred).
    #[serde(default)]
    pub encoded_data_length: f64,
    #[serde(default)]
    pub error_text: Option<String>,
    #[serde(default)]
    pub canceled: bool,
    #[serde(default)]
    pub blocked_reason: Option<String>,
}

/// A response as `Network.responseReceived` describes it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Response {
    #[serde(default)]
    pub status: f64,
    #[serde(default)]
    pub headers: HashMap<String, Value>,
    #[serde(default)]
    pub mime_type: String,
    #[serde(default)]
    pub from_disk_cache: bool,
}

/// `Network.responseReceived`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResponseReceived {
    pub request_id: String,
    #[serde(default)]
    pub frame_id: Option<String>,
    #[serde(rename = "type", default)]
    pub resource_type: String,
    #[serde(default)]
    pub response: Response,
}

impl Response {
    /// A header's value, whatever the case of its name.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).and_then(|(_, v)| v.as_str())
    }
}

/// `Page.lifecycleEvent`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LifecycleEvent {
    pub frame_id: String,
    pub loader_id: String,
    pub name: String,
}

/// A frame as `Page.frameNavigated` describes it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Frame {
    pub id: String,
    #[serde(default)]
    pub loader_id: String,
}

/// `Page.frameNavigated`.
#[derive(Debug, Deserialize)]
pub(crate) struct FrameNavigated {
    pub frame: Frame,
}

/// `Page.frameStartedLoading` / `Page.frameStoppedLoading`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FrameLoading {
    pub frame_id: String,
}

/// The events a page session acts on, decoded once from the connection's raw events.
#[derive(Debug)]
pub(crate) enum PageEvent {
    RequestWillBeSent(RequestWillBeSent),
    LoadingFinished(LoadingDone),
    LoadingFailed(LoadingDone),
    ResponseReceived(ResponseReceived),
    Lifecycle(LifecycleEvent),
    FrameNavigated(FrameNavigated),
    FrameStartedLoading(FrameLoading),
    FrameStoppedLoading(FrameLoading),
    LoadEventFired,
    DialogOpening(session::DialogOpening),
    DialogClosed,
    ConsoleApiCalled(session::ConsoleApiCalled),
    ExceptionThrown(session::ExceptionThrown),
    ScreencastFrame(session::ScreencastFrame),
    /// `Fetch.requestPaused`: a request of a blocked kind waits for its refusal.
    RequestPaused(RequestPaused),
    /// `Fetch.authRequired`: a server (or proxy) asks for credentials.
    AuthRequired(AuthRequired),
    /// `Inspector.targetCrashed`: the renderer died.
    TargetCrashed,
    /// `Target.detachedFromTarget`: the page is gone (closed, or its browser restarted).
    Detached,
    /// Anything else (or a message that does not have the expected shape).
    Other,
}

fn decode<T: DeserializeOwned>(params: Value, wrap: impl FnOnce(T) -> PageEvent) -> PageEvent {
    serde_json::from_value(params).map_or(PageEvent::Other, wrap)
}

impl PageEvent {
    /// Decode one event of a page session.
    pub(crate) fn decode(method: &str, params: Value) -> PageEvent {
        match method {
            "Network.requestWillBeSent" => decode(params, PageEvent::RequestWillBeSent),
            "Network.loadingFinished" => decode(params, PageEvent::LoadingFinished),
            "Network.loadingFailed" => decode(params, PageEvent::LoadingFailed),
            "Network.responseReceived" => decode(params, PageEvent::ResponseReceived),
            "Page.lifecycleEvent" => decode(params, PageEvent::Lifecycle),
            "Page.frameNavigated" => decode(params, PageEvent::FrameNavigated),
            "Page.frameStartedLoading" => decode(params, PageEvent::FrameStartedLoading),
            "Page.frameStoppedLoading" => decode(params, PageEvent::FrameStoppedLoading),
            "Page.loadEventFired" => PageEvent::LoadEventFired,
            "Page.javascriptDialogOpening" => decode(params, PageEvent::DialogOpening),
            "Page.javascriptDialogClosed" => PageEvent::DialogClosed,
            "Runtime.consoleAPICalled" => decode(params, PageEvent::ConsoleApiCalled),
            "Runtime.exceptionThrown" => decode(params, PageEvent::ExceptionThrown),
            "Page.screencastFrame" => decode(params, PageEvent::ScreencastFrame),
            "Fetch.requestPaused" => decode(params, PageEvent::RequestPaused),
            "Fetch.authRequired" => decode(params, PageEvent::AuthRequired),
            "Inspector.targetCrashed" => PageEvent::TargetCrashed,
            "Target.detachedFromTarget" => PageEvent::Detached,
            _ => PageEvent::Other,
        }
    }

    /// The page is gone: its renderer crashed or its target was closed.
    pub(crate) fn is_gone(method: &str) -> bool {
        matches!(method, "Inspector.targetCrashed" | "Target.detachedFromTarget")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn commands_serialize_as_devtools_expects() {
        let shot = CaptureScreenshot {
            format: "png",
            quality: None,
            clip: Some(Clip { x: 0.0, y: 0.0, width: 8.0, height: 8.0, scale: 1.0 }),
            from_surface: true,
            optimize_for_speed: true,
            capture_beyond_viewport: false,
        };
        assert_eq!(
            serde_json::to_value(&shot).unwrap(),
            json!({ "format": "png", "clip": { "x": 0.0, "y": 0.0, "width": 8.0, "height": 8.0, "scale": 1.0 },
                    "fromSurface": true, "optimizeForSpeed": true })
        );
        let pdf = PrintToPdf {
            print_background: true,
            prefer_css_page_size: true,
            paper_width: 8.27,
            paper_height: 11.69,
            landscape: false,
            scale: None,
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&pdf).unwrap(),
            json!({ "printBackground": true, "preferCSSPageSize": true, "paperWidth": 8.27, "paperHeight": 11.69 })
        );
        let t = CreateTarget {
            url: "about:blank",
            browser_context_id: Some("C"),
            new_window: true,
            width: Some(1),
            height: None,
        };
        assert_eq!(
            serde_json::to_value(&t).unwrap(),
            json!({ "url": "about:blank", "browserContextId": "C", "newWindow": true, "width": 1 })
        );
        let m = DispatchMouseEvent {
            kind: "mousePressed",
            x: 1.0,
            y: 2.0,
            button: "left",
            click_count: 1,
            ..Default::default()
        };
        assert_eq!(serde_json::to_value(&m).unwrap()["type"], "mousePressed");
    }

    #[test]
    fn events_and_replies_decode() {
        let ev = PageEvent::decode(
            "Network.responseReceived",
            json!({ "requestId": "1", "frameId": "F", "type": "Document",
                    "response": { "status": 404, "headers": { "X-Capture-Egress-Error": "blocked" } } }),
        );
        let PageEvent::ResponseReceived(r) = ev else { panic!("{ev:?}") };
        assert_eq!(r.response.status, 404.0);
        assert_eq!(r.response.header("x-capture-egress-error"), Some("blocked"));
        assert!(matches!(PageEvent::decode("Page.lifecycleEvent", json!({ "name": "load" })), PageEvent::Other));
        assert!(matches!(PageEvent::decode("Something.new", json!({})), PageEvent::Other));
        let e: Evaluated = serde_json::from_value(json!({
            "result": { "type": "object" },
            "exceptionDetails": { "text": "Uncaught", "exception": { "description": "Error: boom\n    at <anonymous>:1:7" } }
        }))
        .unwrap();
        assert_eq!(e.exception_details.unwrap().message(), "Error: boom");
        let e: Evaluated = serde_json::from_value(json!({ "result": { "type": "number", "value": 3 } })).unwrap();
        assert_eq!(e.result.value, Some(json!(3)));
        let n: Navigated = serde_json::from_value(json!({ "frameId": "F", "errorText": "net::ERR_ABORTED" })).unwrap();
        assert_eq!(n.error_text.as_deref(), Some("net::ERR_ABORTED"));
        assert_eq!(n.loader_id, None);
    }
}
