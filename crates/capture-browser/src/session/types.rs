//! What sessions are asked for and answer with: the options of a session (device, locale,
//! dialogs…), element targets, navigations, screenshots and PDFs, network conditions,
//! uploads, waits, the accessibility tree, log counts and the screencast.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::ImageFormat;

/// Pages a session's context may hold at once (its own first page included): more are
/// closed as soon as they open (popups) or refused (a relayed `Target.createTarget`).
pub const MAX_PAGES: usize = 5;

/// The emulated device (the one device type of the service).
pub use capture_core::devices::Device;

/// `prefers-color-scheme`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorScheme {
    Light,
    Dark,
    NoPreference,
}

/// A position for `navigator.geolocation`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Geolocation {
    pub latitude: f64,
    pub longitude: f64,
    /// Metres.
    pub accuracy: f64,
}

/// What happens to `alert`, `confirm`, `prompt` and `beforeunload` dialogs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DialogPolicy {
    /// Accepted at once (the default; `prompt` gets its default text).
    #[default]
    Accept,
    /// Dismissed at once.
    Dismiss,
    /// Left open until [`Session::handle_dialog`].
    Manual,
}

/// How a session starts.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    pub device: Device,
    /// `navigator.language`, `Intl` and `Accept-Language` (`de-DE`).
    pub locale: Option<String>,
    /// IANA time zone (`Europe/Berlin`).
    pub timezone: Option<String>,
    /// Granted and emulated when set.
    pub geolocation: Option<Geolocation>,
    pub color_scheme: Option<ColorScheme>,
    /// Sent with every request of the session.
    pub extra_headers: BTreeMap<String, String>,
    /// Run in every new document before its own scripts (`Page.addScriptToEvaluateOnNewDocument`).
    pub init_scripts: Vec<String>,
    pub dialogs: DialogPolicy,
    /// The session ends (and its context is disposed) this long after it opened.
    pub deadline: Duration,
    /// How long to wait for a free page slot of the pool.
    pub slot_timeout: Duration,
    /// Pages the context may hold at once ([`MAX_PAGES`]); popups past it are closed.
    pub max_pages: usize,
    /// A profile's cookies and site storage, in place before the first page loads.
    pub state: Option<capture_core::profile::BrowserState>,
    /// The consent engine run in every document of the session (`cookieConsent`; `none` by
    /// default here: audits, runs and automation sessions choose), answered by itself as pages
    /// load; [`crate::session::Session::consent`] says what it did on the current page.
    pub cookie_consent: capture_core::options::CookieConsent,
    /// The customer's proxy every connection of the session leaves through (behind the
    /// egress guard); None: directly from this server.
    pub proxy: Option<capture_core::egress::UpstreamProxy>,
}

impl Default for SessionOptions {
    fn default() -> SessionOptions {
        SessionOptions {
            device: Device::default(),
            locale: None,
            timezone: None,
            geolocation: None,
            color_scheme: None,
            extra_headers: BTreeMap::new(),
            init_scripts: Vec::new(),
            dialogs: DialogPolicy::default(),
            deadline: Duration::from_secs(300),
            slot_timeout: Duration::from_secs(30),
            max_pages: MAX_PAGES,
            state: None,
            cookie_consent: capture_core::options::CookieConsent::None,
            proxy: None,
        }
    }
}

/// What an input or element operation acts on.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A point of the viewport, in CSS pixels.
    Point { x: f64, y: f64 },
    /// The first element matching a CSS selector.
    Selector(String),
    /// An element by its backend node id (from [`Session::accessibility_snapshot`]).
    Ref(i64),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Point { x, y } => write!(f, "({x}, {y})"),
            Target::Selector(s) => write!(f, "'{s}'"),
            Target::Ref(r) => write!(f, "ref {r}"),
        }
    }
}

/// One redirect of a navigation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Redirect {
    pub url: String,
    pub status: u16,
}

/// When a navigation's steps happened, in milliseconds after it started.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NavigationTiming {
    /// The main document's response headers arrived.
    pub response_ms: Option<u64>,
    pub dom_content_loaded_ms: Option<u64>,
    pub load_ms: Option<u64>,
    /// The navigation counted as done (per its `WaitUntil`).
    pub total_ms: u64,
}

/// The outcome of [`Session::goto`] (and back/forward/reload).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Navigation {
    /// The main document's HTTP status (None for a document without a response).
    pub status: Option<u16>,
    /// `location.href` once loaded.
    pub final_url: String,
    pub title: String,
    /// The redirects before the final document, in order.
    pub redirects: Vec<Redirect>,
    /// The final document's response headers (lower-case names, sorted).
    pub headers: Vec<(String, String)>,
    pub timing: NavigationTiming,
    /// `networkidle-timeout`, `http-404`…
    pub tags: Vec<String>,
}

/// What a screenshot covers.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ShotArea {
    #[default]
    Viewport,
    /// The whole document (at most 16384 output pixels tall).
    FullPage,
    Element(Target),
    /// A rectangle of the document, in CSS pixels.
    Clip {
        x: f64,
        y: f64,
        width: f64,
        height: f64,
    },
}

/// A screenshot request.
#[derive(Debug, Clone, PartialEq)]
pub struct ScreenshotSpec {
    pub area: ShotArea,
    pub format: ImageFormat,
    /// JPEG/WebP quality (default 80).
    pub quality: Option<u8>,
}

impl Default for ScreenshotSpec {
    fn default() -> ScreenshotSpec {
        ScreenshotSpec { area: ShotArea::Viewport, format: ImageFormat::Png, quality: None }
    }
}

/// An encoded image.
#[derive(Debug, Clone)]
pub struct Image {
    pub bytes: Vec<u8>,
    pub width: u32,
    pub height: u32,
    /// `image/png`, `image/jpeg` or `image/webp`.
    pub content_type: &'static str,
}

/// A PDF request.
#[derive(Debug, Clone, PartialEq)]
pub struct PdfSpec {
    pub landscape: bool,
    pub print_background: bool,
    /// Inches (A4 by default).
    pub paper_width: f64,
    pub paper_height: f64,
    pub scale: Option<f64>,
}

impl Default for PdfSpec {
    fn default() -> PdfSpec {
        PdfSpec { landscape: false, print_background: true, paper_width: 8.27, paper_height: 11.69, scale: None }
    }
}

/// Emulated network conditions.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct NetworkConditions {
    pub offline: bool,
    /// Added round-trip latency.
    pub latency_ms: u64,
    /// Bytes per second (None: unlimited).
    pub download_bps: Option<u64>,
    pub upload_bps: Option<u64>,
}

impl NetworkConditions {
    /// "Slow 3G" as DevTools defines it.
    pub fn slow_3g() -> NetworkConditions {
        NetworkConditions { offline: false, latency_ms: 400, download_bps: Some(50_000), upload_bps: Some(50_000) }
    }

    /// "Fast 3G" as DevTools defines it.
    pub fn fast_3g() -> NetworkConditions {
        NetworkConditions { offline: false, latency_ms: 150, download_bps: Some(197_500), upload_bps: Some(84_375) }
    }

    /// No network at all.
    pub fn offline() -> NetworkConditions {
        NetworkConditions { offline: true, ..Default::default() }
    }
}

/// A file for a file input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileUpload {
    pub name: String,
    pub mime_type: String,
    pub bytes: Vec<u8>,
}

/// Largest total size of the files given to one file input.
pub const MAX_UPLOAD_BYTES: usize = 16 << 20;

/// What [`Session::wait_for`] waits for.
#[derive(Debug, Clone, PartialEq)]
pub enum WaitFor {
    /// An element matching a CSS selector exists.
    Selector(String),
    /// The page's visible text contains this.
    Text(String),
    /// `location.href` equals this (an absolute URL) or contains it (anything else).
    Url(String),
    /// No request in flight for 500 ms.
    NetworkIdle,
}

/// A node of the accessibility tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AxNode {
    pub node_id: String,
    pub parent_id: Option<String>,
    pub child_ids: Vec<String>,
    pub role: String,
    pub name: String,
    pub value: Option<Value>,
    pub description: Option<String>,
    /// `focused`, `checked`, `disabled`, `expanded`, `level`…
    pub properties: BTreeMap<String, Value>,
    /// The DOM node behind it: usable as [`Target::Ref`].
    pub backend_node_id: Option<i64>,
}

/// Counts over the whole session (they go on past the logs' caps).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogCounts {
    pub console_errors: u64,
    pub failed_requests: u64,
    pub requests: u64,
}

/// Screencast settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScreencastOptions {
    /// JPEG (default) or PNG.
    pub format: ImageFormat,
    pub quality: u8,
    pub max_width: u32,
    pub max_height: u32,
    /// Send every n-th frame Chromium paints.
    pub every_nth_frame: u32,
}

impl Default for ScreencastOptions {
    fn default() -> ScreencastOptions {
        ScreencastOptions {
            format: ImageFormat::Jpeg,
            quality: 70,
            max_width: 1280,
            max_height: 1280,
            every_nth_frame: 1,
        }
    }
}

/// One screencast frame.
#[derive(Debug, Clone)]
pub struct Frame {
    /// Encoded image (per [`ScreencastOptions::format`]).
    pub data: Vec<u8>,
    /// Seconds since the Unix epoch when Chromium produced it.
    pub timestamp: f64,
    /// The viewport it shows, in CSS pixels (what input coordinates are in); 0 when unknown.
    pub width: f64,
    pub height: f64,
}

/// Frames buffered for a live view before new ones are dropped: a viewer that falls behind
/// skips frames rather than seeing old ones.
pub const VIEW_BUFFER: usize = 4;

/// A person's input from a live view (`control` mode), in the viewport's CSS pixels.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveInput {
    /// `kind`: `move`, `down` or `up`; `button`: `left`, `middle`, `right` or `none`.
    Mouse { kind: String, x: f64, y: f64, button: String, clicks: u32, modifiers: u32 },
    /// A wheel turn at (x, y).
    Wheel { x: f64, y: f64, dx: f64, dy: f64 },
    /// A key pressed or let go: `key` as the DOM names it (`a`, `Enter`, `ArrowLeft`).
    Key { key: String, down: bool, modifiers: u32 },
}

/// Frames buffered for a slow reader before new ones are dropped.
pub const SCREENCAST_BUFFER: usize = 256;

/// The frames of a running screencast; ends when the screencast stops or the session ends.
pub struct Screencast {
    pub(crate) rx: mpsc::Receiver<Frame>,
}

impl Screencast {
    /// The next frame (None: the screencast ended).
    pub async fn next(&mut self) -> Option<Frame> {
        self.rx.recv().await
    }

    /// A frame already received, without waiting.
    pub fn try_next(&mut self) -> Option<Frame> {
        self.rx.try_recv().ok()
    }
}
