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
//!   through [`filter`], which refuses those that would reach past the session's context;
//!   the typed single commands (`dispatch_mouse`, `query_selector`, `set_timezone`…) take
//!   the same path.
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
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::page::Page;
use crate::pool::Lease;
use crate::prepare::View;
pub use crate::protocol::session::Cookie;
use crate::protocol::session::DialogOpening;
use crate::{BrowserPool, CaptureError, WaitUntil};

mod calls;
pub mod clipboard;
mod devtools;
pub mod filter;
mod guard;
mod keys;
pub mod log;
mod ops;
mod types;

pub use crate::protocol::session::TouchPoint;
pub use crate::protocol::tools::{
    CallOutcome, DeleteCookies, DeviceOrientation, DomNode, FrameInfo, FrameTree, MouseButton, MouseEvent,
    MouseEventKind, PerformanceMetric, ThrownException, TouchEvent, TouchEventKind, VisionDeficiency,
};
pub use log::{ConsoleEntry, Dialog, RequestRecord};
pub use types::{
    AxNode, ColorScheme, Device, DialogPolicy, FileUpload, Frame, Geolocation, Image, LiveInput, LogCounts, MAX_PAGES,
    MAX_UPLOAD_BYTES, Navigation, NavigationTiming, NetworkConditions, PdfSpec, Redirect, SCREENCAST_BUFFER,
    Screencast, ScreencastOptions, ScreenshotSpec, SessionOptions, ShotArea, Target, VIEW_BUFFER, WaitFor,
};

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
    /// Live views watching the page (each gets every frame the screencast makes).
    pub(crate) viewers: Vec<mpsc::Sender<Frame>>,
    pub(crate) frames_dropped: u64,
}

impl crate::page::PageHooks for Hooks {
    fn on_event(&mut self, ev: &crate::protocol::PageEvent, main_frame: &str) {
        self.recorder.on_event(ev, main_frame);
    }

    fn dialog_closed(&mut self) {
        self.open_dialog = None;
    }

    fn take_new_dialog(&mut self) -> Option<(String, String)> {
        self.new_dialog.take().map(|d| (d.kind, d.message))
    }

    fn frame(&mut self, f: crate::protocol::session::ScreencastFrame) {
        Hooks::frame(self, f)
    }

    fn dialog_opened(&mut self, d: &DialogOpening) -> Option<bool> {
        Hooks::dialog_opened(self, d)
    }
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

    pub(crate) fn frame(&mut self, f: crate::protocol::session::ScreencastFrame) {
        if self.screencast.is_none() && self.viewers.is_empty() {
            return;
        }
        let Ok(data) = crate::encode::decode_base64(&f.data, "screencast frame") else { return };
        let timestamp = f.metadata.timestamp.unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
        });
        let frame = Frame {
            data,
            timestamp,
            width: f.metadata.device_width.unwrap_or(0.0),
            height: f.metadata.device_height.unwrap_or(0.0),
        };
        // A viewer that falls behind skips this frame; one that left is forgotten.
        self.viewers.retain(|v| !matches!(v.try_send(frame.clone()), Err(mpsc::error::TrySendError::Closed(_))));
        if let Some(tx) = &self.screencast {
            match tx.try_send(frame) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => self.frames_dropped += 1,
                Err(mpsc::error::TrySendError::Closed(_)) => self.screencast = None,
            }
        }
    }

    /// Whether anyone still reads the screencast's frames.
    pub(crate) fn watched(&mut self) -> bool {
        self.viewers.retain(|v| !v.is_closed());
        self.screencast.is_some() || !self.viewers.is_empty()
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
    /// The session's `cookieConsent`.
    pub(crate) consent_mode: capture_core::options::CookieConsent,
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
    /// Marks set on the session's timeline ([`Session::mark`]): (Unix seconds, label).
    marks: Mutex<Vec<(f64, String)>>,
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
            mobile: opts.device.mobile,
            consent: opts.cookie_consent,
            ..View::default()
        };
        let what = format!("no page slot of the browser pool became free within {} ms", opts.slot_timeout.as_millis());
        let (lease, prepared, spare_missing) = self.lease_page(slot_until, view, &what).await?;
        if let Some(up) = &opts.proxy {
            prepared.route_through(up.clone())?;
        }
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
            user_agent: opts.device.user_agent.as_deref().map(str::to_string),
            session_deadline: deadline,
            session_deadline_msg,
            screencasting: false,
            media: EmulatedMedia::default(),
            consent_mode: opts.cookie_consent,
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
        let shared = Arc::new(Shared {
            ended: Mutex::new(None),
            context_id,
            target_id,
            conn,
            done,
            clipboard: store,
            marks: Mutex::new(Vec::new()),
        });
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
        if sp.screencasting && !sp.hooks().watched() {
            // The readers went away: stop producing frames.
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
