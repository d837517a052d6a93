//! Browser sessions: a fresh context of the pool driven step by step, for everything
//! after screenshots — audits, ad drafts, scripted and live runs, the MCP automation
//! tools.
//!
//! ```no_run
//! # use std::time::Duration;
//! # use capture_browser::{BrowserPool, WaitUntil};
//! # use capture_browser::session::{Device, SessionOptions, Target, ScreenshotSpec};
//! # async fn demo(pool: &BrowserPool) -> Result<(), capture_browser::CaptureError> {
//! let s = pool
//!     .open_session(SessionOptions { device: Device::phone(390, 844, 3.0), ..Default::default() })
//!     .await?;
//! let nav = s.goto("https://example.com/", WaitUntil::Load, Duration::from_secs(15)).await?;
//! s.tap(Target::Selector("#menu".into()), Duration::from_secs(5)).await?;
//! let shot = s.screenshot(ScreenshotSpec::default(), Duration::from_secs(10)).await?;
//! let errors = s.counts().await?.console_errors;
//! s.close().await;
//! # let _ = (nav, shot, errors); Ok(()) }
//! ```
//!
//! How it works:
//! - [`BrowserPool::open_session`](crate::BrowserPool::open_session) claims a page slot
//!   (sessions and captures share the pool's slots) and a fresh browser context with one
//!   page in its own window, set up for the [`SessionOptions`] (device, locale, time zone,
//!   geolocation, colour scheme, headers, init scripts) before anything loads.
//! - A [`Session`] is a cheap, cloneable handle. One task per session owns the page and
//!   runs the operations one at a time, in the order they were asked for; between
//!   operations it keeps processing the page's events (so logs, dialogs and screencast
//!   frames are handled while the caller thinks).
//! - Every operation has its own timeout and stops at the session's deadline at the
//!   latest; errors name the operation (`click '#go': no element matches…`). After the
//!   deadline, a crash, or [`Session::close`], operations fail with
//!   [`CaptureError::Closed`] and the context is disposed.
//! - Everything the page loads goes through the pool's egress guard; only `http(s)` URLs
//!   are navigated to. Downloads are denied. [`Session::cdp`] passes raw page commands
//!   through [`filter`], which refuses those that would reach past the session's context.
//! - Logs: every request with its transfer size and outcome ([`RequestRecord`]), console
//!   messages and uncaught exceptions ([`ConsoleEntry`]), dialogs; bounded
//!   ([`log::MAX_REQUESTS`], [`log::MAX_CONSOLE`]). A *failed request* is a network
//!   failure other than a cancellation, or an HTTP status ≥ 400; a *console error* is a
//!   `console.error`/`console.assert` message or an uncaught exception.
//! - Dialogs are accepted by default ([`DialogPolicy`]); with [`DialogPolicy::Manual`]
//!   they stay open until [`Session::handle_dialog`], and the operation that opened one
//!   returns at once (an input action counts as done; a script fails naming the dialog).
//! - Element targets ([`Target`]): a point, a CSS selector (waited for until the
//!   operation's timeout, scrolled into view), or a backend node id from
//!   [`Session::accessibility_snapshot`] (`no such element ref N` when it is gone).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::page::Page;
use crate::pool::Lease;
use crate::prepare::View;
use crate::protocol::session::DialogOpening;
use crate::{BrowserPool, CaptureError, ImageFormat, WaitUntil};

pub mod clipboard;
pub mod filter;
mod guard;
mod keys;
pub mod log;
mod ops;

pub use log::{ConsoleEntry, Dialog, RequestRecord};

/// Pages a session's context may hold at once (its own first page included): more are
/// closed as soon as they open (popups) or refused (a relayed `Target.createTarget`).
pub const MAX_PAGES: usize = 5;

/// The emulated device.
#[derive(Debug, Clone, PartialEq)]
pub struct Device {
    /// Viewport in CSS pixels (as held: a phone held in landscape has the larger width).
    pub width: u32,
    pub height: u32,
    pub device_scale_factor: f64,
    /// Mobile viewport semantics (meta viewport, overlay scrollbars, text autosizing).
    pub mobile: bool,
    /// Touch events and `navigator.maxTouchPoints`.
    pub touch: bool,
    /// Held in landscape (`screen.orientation`).
    pub landscape: bool,
    /// User agent (None: the browser's own).
    pub user_agent: Option<String>,
}

impl Device {
    /// A desktop browser window of `width`×`height`.
    pub fn desktop(width: u32, height: u32) -> Device {
        Device {
            width,
            height,
            device_scale_factor: 1.0,
            mobile: false,
            touch: false,
            landscape: width > height,
            user_agent: None,
        }
    }

    /// A touch phone of `width`×`height` CSS pixels held upright, at `dsf`.
    pub fn phone(width: u32, height: u32, dsf: f64) -> Device {
        Device {
            width,
            height,
            device_scale_factor: dsf,
            mobile: true,
            touch: true,
            landscape: false,
            user_agent: None,
        }
    }

    /// The same device turned by 90°.
    pub fn rotated(&self) -> Device {
        Device { width: self.height, height: self.width, landscape: !self.landscape, ..self.clone() }
    }
}

impl Default for Device {
    fn default() -> Device {
        Device::desktop(1280, 800)
    }
}

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
}

/// Frames buffered for a slow reader before new ones are dropped.
pub const SCREENCAST_BUFFER: usize = 256;

/// The frames of a running screencast; ends when the screencast stops or the session ends.
pub struct Screencast {
    rx: mpsc::Receiver<Frame>,
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

/// What a session's page does besides a capture's: record logs, handle dialogs, pass
/// screencast frames on.
#[derive(Debug, Default)]
pub(crate) struct Hooks {
    pub(crate) recorder: log::Recorder,
    pub(crate) dialogs: DialogPolicy,
    pub(crate) open_dialog: Option<Dialog>,
    /// A dialog opened (Manual policy) that the running operation has not seen yet.
    new_dialog: Option<Dialog>,
    pub(crate) screencast: Option<mpsc::Sender<Frame>>,
    pub(crate) frames_dropped: u64,
}

impl Hooks {
    /// A dialog opened: Some(accept) to handle it now, None to leave it open.
    pub(crate) fn dialog_opened(&mut self, d: &DialogOpening) -> Option<bool> {
        match self.dialogs {
            DialogPolicy::Accept => Some(true),
            DialogPolicy::Dismiss => Some(false),
            DialogPolicy::Manual => {
                let dialog = Dialog {
                    kind: d.kind.clone(),
                    message: d.message.clone(),
                    default_prompt: d.default_prompt.clone(),
                };
                self.open_dialog = Some(dialog.clone());
                self.new_dialog = Some(dialog);
                None
            }
        }
    }

    /// The dialog that opened during the running operation, once.
    pub(crate) fn take_new_dialog(&mut self) -> Option<Dialog> {
        self.new_dialog.take()
    }

    pub(crate) fn frame(&mut self, f: crate::protocol::session::ScreencastFrame) {
        let Some(tx) = &self.screencast else { return };
        let Ok(data) = crate::encode::decode_base64(&f.data, "screencast frame") else { return };
        let timestamp = f.metadata.timestamp.unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
        });
        match tx.try_send(Frame { data, timestamp }) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => self.frames_dropped += 1,
            Err(mpsc::error::TrySendError::Closed(_)) => self.screencast = None,
        }
    }
}

/// The page a session's task owns, with what the session set up.
pub(crate) struct SessionPage {
    pub(crate) page: Page,
    pub(crate) lease: Lease,
    pub(crate) context_id: String,
    pub(crate) device: Device,
    pub(crate) locale: Option<String>,
    /// The browser's own user agent (to go back to it).
    pub(crate) default_ua: String,
    pub(crate) user_agent: Option<String>,
    /// When the session ends.
    pub(crate) session_deadline: Instant,
    pub(crate) session_deadline_msg: String,
    pub(crate) screencasting: bool,
    /// The emulated media the session set (see [`EmulatedMedia`]).
    pub(crate) media: EmulatedMedia,
}

/// The media a session emulates. `Emulation.setEmulatedMedia` replaces all of it with each
/// call, so the session keeps the whole state and sends all of it every time: a color
/// scheme set earlier survives setting reduced motion or the print media type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct EmulatedMedia {
    /// `screen`, `print`, or empty (the page's own).
    pub(crate) media: String,
    /// CSS media features by name (`prefers-color-scheme` → `dark`).
    pub(crate) features: BTreeMap<String, String>,
}

impl EmulatedMedia {
    pub(crate) fn params(&self) -> Value {
        let features: Vec<Value> =
            self.features.iter().map(|(name, value)| serde_json::json!({"name": name, "value": value})).collect();
        serde_json::json!({"media": self.media, "features": features})
    }

    /// The state a raw `Emulation.setEmulatedMedia` call leaves (it replaces everything).
    pub(crate) fn from_params(params: &Value) -> EmulatedMedia {
        let media = params.get("media").and_then(Value::as_str).unwrap_or_default().to_owned();
        let features = params
            .get("features")
            .and_then(Value::as_array)
            .map(|fs| {
                fs.iter()
                    .filter_map(|f| {
                        let name = f.get("name")?.as_str()?;
                        let value = f.get("value")?.as_str()?;
                        Some((name.to_owned(), value.to_owned()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        EmulatedMedia { media, features }
    }
}

type Op = Box<dyn for<'a> FnOnce(&'a mut SessionPage) -> BoxFuture<'a, ()> + Send>;

/// What the session's task tells its handles.
struct Shared {
    /// Why the session ended, once it has.
    ended: Mutex<Option<String>>,
    context_id: String,
    target_id: String,
    conn: Arc<crate::cdp::Conn>,
    done: tokio::sync::watch::Receiver<bool>,
    /// The session's own clipboard (see [`clipboard`]).
    clipboard: clipboard::Store,
}

/// A browser session; see the [module docs](self). Cloning gives another handle to the
/// same session; it ends at its deadline, on [`close`](Session::close), or when every
/// handle is dropped.
#[derive(Clone)]
pub struct Session {
    ops: mpsc::Sender<Op>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("context", &self.shared.context_id).finish()
    }
}

fn closed_err(shared: &Shared) -> CaptureError {
    let why = shared.ended.lock().unwrap().clone();
    CaptureError::Closed(why.unwrap_or_else(|| "the session is closed".into()))
}

impl BrowserPool {
    /// Open a session: a fresh context of this pool with one page, set up per `opts`,
    /// counted against the pool's page slots until it ends.
    pub async fn open_session(&self, opts: SessionOptions) -> Result<Session, CaptureError> {
        let opened = Instant::now();
        let deadline = opened + opts.deadline.max(Duration::from_secs(1));
        let slot_until = deadline.min(opened + opts.slot_timeout);
        let view = View {
            width: opts.device.width,
            height: opts.device.height,
            dsf: opts.device.device_scale_factor,
            dark: opts.color_scheme == Some(ColorScheme::Dark),
        };
        let what = format!("no page slot of the browser pool became free within {} ms", opts.slot_timeout.as_millis());
        let (lease, prepared, spare_missing) = self.lease_page(slot_until, view, &what).await?;
        self.after_job(&lease, spare_missing);
        let conn = lease.conn().clone();
        let context_id = prepared.guard.id.clone();
        let target_id = prepared.target_id.clone();
        let session_deadline_msg = format!("the session's {} s deadline passed", opts.deadline.as_secs());
        let mut page =
            Page::new(conn.clone(), lease.failures().clone(), prepared, deadline, session_deadline_msg.clone());
        page.hooks = Some(Box::new(Hooks { dialogs: opts.dialogs, ..Default::default() }));
        let mut sp = SessionPage {
            page,
            lease,
            context_id: context_id.clone(),
            device: opts.device.clone(),
            locale: opts.locale.clone(),
            default_ua: String::new(),
            user_agent: opts.device.user_agent.clone(),
            session_deadline: deadline,
            session_deadline_msg,
            screencasting: false,
            media: EmulatedMedia::default(),
        };
        let setup_until = deadline.min(Instant::now() + Duration::from_secs(15));
        sp.begin("opening the session", setup_until);
        let (done_tx, done) = tokio::sync::watch::channel(false);
        let store = clipboard::Store::default();
        let guarded =
            guard::start(&conn, &context_id, &target_id, opts.max_pages, store.clone(), setup_until, done.clone())
                .await;
        if let Err(e) = guarded {
            return Err(sp.fail(e));
        }
        if let Err(e) = sp.setup(&opts).await {
            let _ = done_tx.send(true);
            return Err(sp.fail(e));
        }
        let (tx, rx) = mpsc::channel::<Op>(64);
        let shared = Arc::new(Shared { ended: Mutex::new(None), context_id, target_id, conn, done, clipboard: store });
        tokio::spawn(drive(sp, rx, shared.clone(), done_tx));
        Ok(Session { ops: tx, shared })
    }
}

/// The session's task: run operations in order; between them, keep handling the page's
/// events; end at the deadline, on close, when the page is gone or every handle dropped.
async fn drive(
    mut sp: SessionPage,
    mut ops: mpsc::Receiver<Op>,
    shared: Arc<Shared>,
    done: tokio::sync::watch::Sender<bool>,
) {
    let why = loop {
        if let Some(e) = sp.page.crash_err() {
            break sp.fail(e).to_string();
        }
        tokio::select! {
            op = ops.recv() => match op {
                Some(op) => op(&mut sp).await,
                None => break "the session was closed".to_owned(),
            },
            r = sp.page.pump_until(sp.session_deadline) => match r {
                Ok(()) => {}
                Err(crate::page::Stop::Elapsed) => break sp.session_deadline_msg.clone(),
                Err(crate::page::Stop::Fail(e)) => break sp.fail(e).to_string(),
            },
        }
        if sp.page.hooks.as_ref().is_some_and(|h| h.screencast.is_none()) && sp.screencasting {
            // The reader went away: stop producing frames.
            sp.screencasting = false;
            sp.page.conn.cmd_forget(&crate::protocol::session::StopScreencast {}, Some(&sp.page.sid));
        }
        if *shared.ended.lock().unwrap() == Some(String::new()) {
            break "the session was closed".to_owned();
        }
    };
    *shared.ended.lock().unwrap() = Some(why);
    ops.close();
    // Operations already queued learn the session ended (their reply channel drops).
    while ops.try_recv().is_ok() {}
    drop(sp);
    let _ = done.send(true);
}

impl Session {
    /// Run `f` on the session's page as operation `name`, bounded by `timeout` and the
    /// session's deadline.
    async fn run<T, F>(&self, name: String, timeout: Duration, f: F) -> Result<T, CaptureError>
    where
        T: Send + 'static,
        F: for<'a> FnOnce(&'a mut SessionPage) -> BoxFuture<'a, Result<T, CaptureError>> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let op: Op = Box::new(move |sp: &mut SessionPage| {
            Box::pin(async move {
                let until = Instant::now() + timeout;
                sp.begin(&name, until);
                let r = match sp.check_dialog(&name) {
                    Err(e) => Err(e),
                    Ok(()) => f(sp).await,
                };
                let r = r.map_err(|e| sp.fail(e)).map_err(|e| ops::name_error(&name, e));
                let _ = tx.send(r);
            })
        });
        self.ops.send(op).await.map_err(|_| closed_err(&self.shared))?;
        rx.await.map_err(|_| closed_err(&self.shared))?
    }

    /// The browser context of this session (the relay restricts clients to it).
    pub fn context_id(&self) -> &str {
        &self.shared.context_id
    }

    /// The DevTools target id of the session's page.
    pub fn target_id(&self) -> &str {
        &self.shared.target_id
    }

    /// The browser connection the session's page lives on (the relay forwards to it).
    pub(crate) fn conn(&self) -> &Arc<crate::cdp::Conn> {
        &self.shared.conn
    }

    /// Resolves once the session has ended.
    pub async fn ended(&self) {
        let mut done = self.shared.done.clone();
        let _ = done.wait_for(|d| *d).await;
    }

    /// True once the session has ended.
    pub fn is_closed(&self) -> bool {
        self.shared.ended.lock().unwrap().is_some() || self.ops.is_closed()
    }

    /// Why the session ended (None while it runs).
    pub fn end_reason(&self) -> Option<String> {
        self.shared.ended.lock().unwrap().clone()
    }

    /// End the session and dispose of its context; waits until it is gone. Idempotent.
    pub async fn close(&self) {
        {
            let mut ended = self.shared.ended.lock().unwrap();
            if ended.is_none() {
                // Seen by the task after its current operation.
                *ended = Some(String::new());
            }
        }
        // Wake the task if it is idle.
        let _ = self.ops.try_send(Box::new(|_sp: &mut SessionPage| Box::pin(async {})));
        let mut done = self.shared.done.clone();
        let _ = done.wait_for(|d| *d).await;
    }

    /// Load `url` (http/https only) and wait per `wait_until`; an HTTP error status is a
    /// result (`status`, tag `http-404`), not an error.
    pub async fn goto(&self, url: &str, wait_until: WaitUntil, timeout: Duration) -> Result<Navigation, CaptureError> {
        let url = url.to_owned();
        self.run(format!("goto {url}"), timeout, move |sp| Box::pin(async move { sp.goto(&url, wait_until).await }))
            .await
    }

    /// Go back one history entry and wait for its load.
    pub async fn back(&self, timeout: Duration) -> Result<Navigation, CaptureError> {
        self.run("back".into(), timeout, |sp| Box::pin(async move { sp.history(-1).await })).await
    }

    /// Go forward one history entry and wait for its load.
    pub async fn forward(&self, timeout: Duration) -> Result<Navigation, CaptureError> {
        self.run("forward".into(), timeout, |sp| Box::pin(async move { sp.history(1).await })).await
    }

    /// Reload and wait for the load.
    pub async fn reload(&self, timeout: Duration) -> Result<Navigation, CaptureError> {
        self.run("reload".into(), timeout, |sp| Box::pin(async move { sp.reload().await })).await
    }

    /// Evaluate a JavaScript expression and return its value as JSON (a promise is
    /// awaited when `await_promise`; for `await` inside, use an async function:
    /// `(async () => { … })()`); a thrown exception is a [`CaptureError::Script`].
    pub async fn evaluate(
        &self,
        expression: &str,
        await_promise: bool,
        timeout: Duration,
    ) -> Result<Value, CaptureError> {
        let expr = expression.to_owned();
        self.run("evaluate".into(), timeout, move |sp| Box::pin(async move { sp.evaluate(&expr, await_promise).await }))
            .await
    }

    /// A screenshot of the viewport, the whole page, an element or a rectangle.
    pub async fn screenshot(&self, spec: ScreenshotSpec, timeout: Duration) -> Result<Image, CaptureError> {
        self.run("screenshot".into(), timeout, move |sp| Box::pin(async move { sp.screenshot(&spec).await })).await
    }

    /// The page as a PDF.
    pub async fn pdf(&self, spec: PdfSpec, timeout: Duration) -> Result<Vec<u8>, CaptureError> {
        self.run("pdf".into(), timeout, move |sp| Box::pin(async move { sp.pdf(&spec).await })).await
    }

    /// Emulate another device (viewport, scale, mobile, touch, orientation, user agent).
    pub async fn set_device(&self, device: Device, timeout: Duration) -> Result<(), CaptureError> {
        self.run("set_device".into(), timeout, move |sp| Box::pin(async move { sp.set_device(device).await })).await
    }

    /// Resize the viewport, keeping the rest of the device.
    pub async fn set_viewport(&self, width: u32, height: u32, timeout: Duration) -> Result<(), CaptureError> {
        self.run("set_viewport".into(), timeout, move |sp| {
            Box::pin(async move {
                let device = Device { width, height, landscape: width > height, ..sp.device.clone() };
                sp.set_device(device).await
            })
        })
        .await
    }

    /// Turn the device by 90° (width and height swap; `screen.orientation` changes).
    pub async fn rotate(&self, timeout: Duration) -> Result<Device, CaptureError> {
        self.run("rotate".into(), timeout, |sp| {
            Box::pin(async move {
                let device = sp.device.rotated();
                sp.set_device(device.clone()).await?;
                Ok(device)
            })
        })
        .await
    }

    /// The emulated device.
    pub async fn device(&self) -> Result<Device, CaptureError> {
        self.run("device".into(), Duration::from_secs(5), |sp| Box::pin(async move { Ok(sp.device.clone()) })).await
    }

    /// Emulate a position (and grant the geolocation permission), or none (None).
    pub async fn set_geolocation(&self, at: Option<Geolocation>, timeout: Duration) -> Result<(), CaptureError> {
        self.run("set_geolocation".into(), timeout, move |sp| Box::pin(async move { sp.set_geolocation(at).await }))
            .await
    }

    /// Emulate network conditions (offline, latency, throughput).
    pub async fn set_network(&self, conditions: NetworkConditions, timeout: Duration) -> Result<(), CaptureError> {
        self.run("set_network".into(), timeout, move |sp| Box::pin(async move { sp.set_network(conditions).await }))
            .await
    }

    /// Grant permissions (`geolocation`, `notifications`…), for one origin or all. Clipboard
    /// permissions are left out: Chromium's clipboard is the whole browser's, and the
    /// session's own clipboard needs none.
    pub async fn grant_permissions(
        &self,
        permissions: Vec<String>,
        origin: Option<String>,
        timeout: Duration,
    ) -> Result<(), CaptureError> {
        self.run("grant_permissions".into(), timeout, move |sp| {
            Box::pin(async move { sp.grant_permissions(&permissions, origin.as_deref()).await })
        })
        .await
    }

    /// The session's clipboard: what its pages copied or [`set_clipboard`](Self::set_clipboard)
    /// put there ("" at first). Never Chromium's own clipboard, which every tenant of the
    /// browser shares.
    pub fn clipboard(&self) -> String {
        self.shared.clipboard.get()
    }

    /// Put text on the session's clipboard (what its pages' `navigator.clipboard` and
    /// paste shortcuts get); at most [`clipboard::MAX_CLIPBOARD_BYTES`].
    pub fn set_clipboard(&self, text: &str) -> Result<(), CaptureError> {
        if self.is_closed() {
            return Err(closed_err(&self.shared));
        }
        self.shared.clipboard.set(text).map_err(CaptureError::Script)
    }

    /// Take back every granted permission.
    pub async fn reset_permissions(&self, timeout: Duration) -> Result<(), CaptureError> {
        self.run("reset_permissions".into(), timeout, |sp| Box::pin(async move { sp.reset_permissions().await })).await
    }

    /// Replace the extra headers sent with every request.
    pub async fn set_extra_headers(
        &self,
        headers: BTreeMap<String, String>,
        timeout: Duration,
    ) -> Result<(), CaptureError> {
        self.run("set_extra_headers".into(), timeout, move |sp| {
            Box::pin(async move { sp.set_extra_headers(&headers).await })
        })
        .await
    }

    /// Override the user agent (None: the device's, else the browser's own).
    pub async fn set_user_agent(&self, user_agent: Option<String>, timeout: Duration) -> Result<(), CaptureError> {
        self.run("set_user_agent".into(), timeout, move |sp| {
            Box::pin(async move {
                sp.user_agent = user_agent.or_else(|| sp.device.user_agent.clone());
                sp.apply_user_agent().await
            })
        })
        .await
    }

    /// Emulate one CSS media feature (`prefers-color-scheme`, `prefers-reduced-motion`…;
    /// an empty value drops it), keeping the rest of the session's emulated media.
    pub async fn set_media_feature(&self, name: &str, value: &str, timeout: Duration) -> Result<(), CaptureError> {
        let (name, value) = (name.to_owned(), value.to_owned());
        self.run(format!("set_media_feature {name}"), timeout, move |sp| {
            Box::pin(async move {
                let mut media = sp.media.clone();
                if value.is_empty() {
                    media.features.remove(&name);
                } else {
                    media.features.insert(name, value);
                }
                sp.apply_media(media).await
            })
        })
        .await
    }

    /// Emulate a media type (`screen`, `print`; empty: the page's own), keeping the
    /// session's emulated media features.
    pub async fn set_media_type(&self, media: &str, timeout: Duration) -> Result<(), CaptureError> {
        let kind = media.to_owned();
        self.run(format!("set_media_type {kind}"), timeout, move |sp| {
            Box::pin(async move {
                let mut media = sp.media.clone();
                media.media = kind;
                sp.apply_media(media).await
            })
        })
        .await
    }

    /// Every cookie of the session's context.
    pub async fn cookies(&self, timeout: Duration) -> Result<Vec<Cookie>, CaptureError> {
        self.run("cookies".into(), timeout, |sp| Box::pin(async move { sp.cookies().await })).await
    }

    /// Set cookies in the session's context.
    pub async fn set_cookies(&self, cookies: Vec<Cookie>, timeout: Duration) -> Result<(), CaptureError> {
        self.run("set_cookies".into(), timeout, move |sp| Box::pin(async move { sp.set_cookies(&cookies).await })).await
    }

    /// Delete every cookie of the session's context.
    pub async fn clear_cookies(&self, timeout: Duration) -> Result<(), CaptureError> {
        self.run("clear_cookies".into(), timeout, |sp| Box::pin(async move { sp.clear_cookies().await })).await
    }

    /// The current origin's `localStorage`.
    pub async fn local_storage(&self, timeout: Duration) -> Result<BTreeMap<String, String>, CaptureError> {
        self.run("local_storage".into(), timeout, |sp| Box::pin(async move { sp.local_storage().await })).await
    }

    /// Set one `localStorage` item of the current origin.
    pub async fn set_local_storage(&self, key: &str, value: &str, timeout: Duration) -> Result<(), CaptureError> {
        let (k, v) = (key.to_owned(), value.to_owned());
        self.run("set_local_storage".into(), timeout, move |sp| {
            Box::pin(async move { sp.set_local_storage(&k, &v).await })
        })
        .await
    }

    /// Clear the current origin's `localStorage` and `sessionStorage`.
    pub async fn clear_local_storage(&self, timeout: Duration) -> Result<(), CaptureError> {
        self.run("clear_local_storage".into(), timeout, |sp| Box::pin(async move { sp.clear_local_storage().await }))
            .await
    }

    /// A mouse click (move, press, release); waits for a navigation it starts.
    pub async fn click(&self, target: Target, timeout: Duration) -> Result<(), CaptureError> {
        self.run(format!("click {target}"), timeout, move |sp| Box::pin(async move { sp.click(&target, 1).await }))
            .await
    }

    /// A double click.
    pub async fn double_click(&self, target: Target, timeout: Duration) -> Result<(), CaptureError> {
        self.run(format!("double_click {target}"), timeout, move |sp| {
            Box::pin(async move { sp.click(&target, 2).await })
        })
        .await
    }

    /// Move the mouse over a target.
    pub async fn hover(&self, target: Target, timeout: Duration) -> Result<(), CaptureError> {
        self.run(format!("hover {target}"), timeout, move |sp| Box::pin(async move { sp.hover(&target).await })).await
    }

    /// A tap (touch start and end); waits for a navigation it starts.
    pub async fn tap(&self, target: Target, timeout: Duration) -> Result<(), CaptureError> {
        self.run(format!("tap {target}"), timeout, move |sp| Box::pin(async move { sp.tap(&target, 1).await })).await
    }

    /// Two taps in quick succession.
    pub async fn double_tap(&self, target: Target, timeout: Duration) -> Result<(), CaptureError> {
        self.run(format!("double_tap {target}"), timeout, move |sp| Box::pin(async move { sp.tap(&target, 2).await }))
            .await
    }

    /// A touch held for `hold` (default-ish 800 ms), then released.
    pub async fn long_press(&self, target: Target, hold: Duration, timeout: Duration) -> Result<(), CaptureError> {
        self.run(format!("long_press {target}"), timeout, move |sp| {
            Box::pin(async move { sp.long_press(&target, hold).await })
        })
        .await
    }

    /// A one-finger swipe from `from` by (`dx`, `dy`) CSS pixels over `duration`.
    pub async fn swipe(
        &self,
        from: Target,
        dx: f64,
        dy: f64,
        duration: Duration,
        timeout: Duration,
    ) -> Result<(), CaptureError> {
        self.run(format!("swipe {from}"), timeout, move |sp| {
            Box::pin(async move { sp.swipe(&from, dx, dy, duration).await })
        })
        .await
    }

    /// A two-finger pinch around `centre`: `scale` > 1 spreads the fingers (zoom in).
    pub async fn pinch(&self, centre: Target, scale: f64, timeout: Duration) -> Result<(), CaptureError> {
        self.run(format!("pinch {centre}"), timeout, move |sp| Box::pin(async move { sp.pinch(&centre, scale).await }))
            .await
    }

    /// Scroll with the mouse wheel at `at` (the viewport's centre by default), or bring a
    /// target into view when `dx` and `dy` are 0.
    pub async fn scroll(&self, at: Option<Target>, dx: f64, dy: f64, timeout: Duration) -> Result<(), CaptureError> {
        self.run("scroll".into(), timeout, move |sp| Box::pin(async move { sp.scroll(at.as_ref(), dx, dy).await }))
            .await
    }

    /// Type text into the focused element, key by key.
    pub async fn type_text(&self, text: &str, timeout: Duration) -> Result<(), CaptureError> {
        let text = text.to_owned();
        self.run("type".into(), timeout, move |sp| Box::pin(async move { sp.type_text(&text).await })).await
    }

    /// Press a key or chord (`Enter`, `Tab`, `Control+a`…); waits for a navigation it starts.
    pub async fn press(&self, key: &str, timeout: Duration) -> Result<(), CaptureError> {
        let key = key.to_owned();
        self.run(format!("press {key}"), timeout, move |sp| Box::pin(async move { sp.press(&key).await })).await
    }

    /// Focus a field, replace its content with `text` (typed key by key); the field's value
    /// afterwards. Fails when the field cannot take the focus or its content did not change.
    pub async fn fill(&self, target: Target, text: &str, timeout: Duration) -> Result<String, CaptureError> {
        let text = text.to_owned();
        self.run(format!("fill {target}"), timeout, move |sp| Box::pin(async move { sp.fill(&target, &text).await }))
            .await
    }

    /// Tap (`touch`) or click a field, then type `text` into it key by key, appending; the
    /// field's value afterwards. Fails, typing nothing, when the input did not reach the
    /// field (it is covered, or the focus landed elsewhere), and fails when the field's
    /// content did not change.
    pub async fn type_into(
        &self,
        target: Target,
        text: &str,
        touch: bool,
        timeout: Duration,
    ) -> Result<String, CaptureError> {
        let text = text.to_owned();
        self.run(format!("type into {target}"), timeout, move |sp| {
            Box::pin(async move { sp.type_into(&target, &text, touch).await })
        })
        .await
    }

    /// Select options of a `<select>` by value (or by label); returns the selected values.
    pub async fn select_option(
        &self,
        target: Target,
        values: Vec<String>,
        timeout: Duration,
    ) -> Result<Vec<String>, CaptureError> {
        self.run(format!("select_option {target}"), timeout, move |sp| {
            Box::pin(async move { sp.select_option(&target, &values).await })
        })
        .await
    }

    /// Check or uncheck a checkbox or radio button (by clicking it when it must change).
    pub async fn set_checked(&self, target: Target, checked: bool, timeout: Duration) -> Result<(), CaptureError> {
        self.run(format!("check {target}"), timeout, move |sp| {
            Box::pin(async move { sp.set_checked(&target, checked).await })
        })
        .await
    }

    /// Give files (from bytes, at most [`MAX_UPLOAD_BYTES`] together) to a file input.
    pub async fn set_input_files(
        &self,
        target: Target,
        files: Vec<FileUpload>,
        timeout: Duration,
    ) -> Result<(), CaptureError> {
        self.run(format!("set_input_files {target}"), timeout, move |sp| {
            Box::pin(async move { sp.set_input_files(&target, &files).await })
        })
        .await
    }

    /// The dialog left open ([`DialogPolicy::Manual`]), if any.
    pub async fn open_dialog(&self) -> Result<Option<Dialog>, CaptureError> {
        self.run("open_dialog".into(), Duration::from_secs(5), |sp| {
            Box::pin(async move { Ok(sp.page.hooks.as_ref().and_then(|h| h.open_dialog.clone())) })
        })
        .await
    }

    /// Accept or dismiss the open dialog (`prompt_text` answers a `prompt`).
    pub async fn handle_dialog(
        &self,
        accept: bool,
        prompt_text: Option<String>,
        timeout: Duration,
    ) -> Result<Dialog, CaptureError> {
        self.run("handle_dialog".into(), timeout, move |sp| {
            Box::pin(async move { sp.handle_dialog(accept, prompt_text).await })
        })
        .await
    }

    /// Wait for a selector, a text, a URL or network idle.
    pub async fn wait_for(&self, what: WaitFor, timeout: Duration) -> Result<(), CaptureError> {
        let name = match &what {
            WaitFor::Selector(s) => format!("wait_for selector '{s}'"),
            WaitFor::Text(t) => format!("wait_for text '{t}'"),
            WaitFor::Url(u) => format!("wait_for url '{u}'"),
            WaitFor::NetworkIdle => "wait_for network idle".to_owned(),
        };
        self.run(name, timeout, move |sp| Box::pin(async move { sp.wait_for(&what).await })).await
    }

    /// Wait `ms`, handling the page's events meanwhile.
    pub async fn wait(&self, duration: Duration) -> Result<(), CaptureError> {
        self.run("wait".into(), duration + Duration::from_secs(1), move |sp| {
            Box::pin(async move {
                let until = (Instant::now() + duration).min(sp.page.deadline);
                sp.page.pump_for(until).await
            })
        })
        .await
    }

    /// `document.title` and `location.href`.
    pub async fn title_url(&self, timeout: Duration) -> Result<(String, String), CaptureError> {
        self.run("title_url".into(), timeout, |sp| Box::pin(async move { sp.page.title_url().await })).await
    }

    /// The visible text of the page or of one element.
    pub async fn text(&self, target: Option<Target>, timeout: Duration) -> Result<String, CaptureError> {
        self.run("text".into(), timeout, move |sp| {
            Box::pin(async move {
                sp.element_string(target.as_ref(), "function() { return this.innerText || this.textContent || ''; }")
                    .await
            })
        })
        .await
    }

    /// The HTML of the page or of one element.
    pub async fn html(&self, target: Option<Target>, timeout: Duration) -> Result<String, CaptureError> {
        self.run("html".into(), timeout, move |sp| {
            Box::pin(
                async move { sp.element_string(target.as_ref(), "function() { return this.outerHTML || ''; }").await },
            )
        })
        .await
    }

    /// The accessibility tree (ignored nodes left out); `backend_node_id`s are usable as
    /// [`Target::Ref`].
    pub async fn accessibility_snapshot(&self, timeout: Duration) -> Result<Vec<AxNode>, CaptureError> {
        self.run("accessibility_snapshot".into(), timeout, |sp| Box::pin(async move { sp.accessibility().await })).await
    }

    /// The console log so far (bounded).
    pub async fn console(&self) -> Result<Vec<ConsoleEntry>, CaptureError> {
        self.run("console".into(), Duration::from_secs(5), |sp| {
            Box::pin(async move { Ok(sp.hooks().recorder.console.iter().cloned().collect()) })
        })
        .await
    }

    /// The network log so far (bounded).
    pub async fn network(&self) -> Result<Vec<RequestRecord>, CaptureError> {
        self.run("network".into(), Duration::from_secs(5), |sp| {
            Box::pin(async move { Ok(sp.hooks().recorder.requests.iter().cloned().collect()) })
        })
        .await
    }

    /// The dialogs the page opened.
    pub async fn dialogs(&self) -> Result<Vec<Dialog>, CaptureError> {
        self.run("dialogs".into(), Duration::from_secs(5), |sp| {
            Box::pin(async move { Ok(sp.hooks().recorder.dialogs.clone()) })
        })
        .await
    }

    /// Console errors, failed requests and requests, over the whole session.
    pub async fn counts(&self) -> Result<LogCounts, CaptureError> {
        self.run("counts".into(), Duration::from_secs(5), |sp| {
            Box::pin(async move {
                let r = &sp.hooks().recorder;
                Ok(LogCounts {
                    console_errors: r.console_errors,
                    failed_requests: r.failed_requests,
                    requests: r.total_requests(),
                })
            })
        })
        .await
    }

    /// Start a screencast: frames as Chromium paints them (none while nothing changes).
    /// A second start replaces the first.
    pub async fn start_screencast(
        &self,
        opts: ScreencastOptions,
        timeout: Duration,
    ) -> Result<Screencast, CaptureError> {
        self.run("start_screencast".into(), timeout, move |sp| Box::pin(async move { sp.start_screencast(opts).await }))
            .await
    }

    /// Stop the screencast (its stream ends).
    pub async fn stop_screencast(&self, timeout: Duration) -> Result<(), CaptureError> {
        self.run("stop_screencast".into(), timeout, |sp| Box::pin(async move { sp.stop_screencast().await })).await
    }

    /// A raw DevTools command of the page's session (see [`filter`] for what is refused).
    pub async fn cdp(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, CaptureError> {
        let method = method.to_owned();
        self.run(format!("cdp {method}"), timeout, move |sp| Box::pin(async move { sp.cdp(&method, params).await }))
            .await
    }
}
