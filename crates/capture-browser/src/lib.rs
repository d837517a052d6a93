//! Chromium process pool, a small DevTools (CDP) client, the capture pipeline and the
//! egress guard (a checking forward proxy every browser connection goes through).
//!
//! The public surface below is what the server depends on; keep it stable.
//!
//! How it works, in short:
//! - [`BrowserPool`] runs `browsers` Chromium processes, each reached over one DevTools
//!   pipe (`--remote-debugging-pipe`: no TCP port exists that a page could reach) with
//!   flattened sessions. Each process runs in its own PID namespace
//!   (`unshare`, when available) under a small `sh` watchdog, so killing or losing a
//!   browser never orphans its helper processes, and they die with us.
//! - The engine is Debian's `chromium-headless-shell` when installed (see
//!   [`default_chromium_path`]), else the full `chromium` in its headless mode.
//! - Every job gets a fresh browser context with its own window. Contexts are created
//!   and warmed up ahead of jobs ("spare pages", `pages_per_browser` per browser) and
//!   disposed after the job, so context creation is off the job's critical path.
//! - PNG captures use Chromium's fast encoder and are re-deflated here (smaller than
//!   Chromium's default encoder, much faster overall); thumbnails are scaled from the
//!   decoded capture. Decoding is bounded ([`encode`]): an image of more than
//!   [`encode::MAX_DECODE_PIXELS`] (25 megapixels) is never decoded in this process (it
//!   keeps Chromium's encoding and Chromium scales its thumbnail), and at most
//!   [`encode::max_concurrent_decodes`] decodes run at once.
//! - All browser traffic goes through [`egress`], which checks every resolved address
//!   against the [`EgressPolicy`] (an allowlist of non-public destinations; the service's
//!   own listeners are refused whatever it says). Only `http`/`https` URLs are navigated
//!   to; `file:` and every other scheme are refused.
//! - A memory guard samples each browser's whole process tree every 2 s (see
//!   [`MemoryLimit`]): past the limit the browser takes no new jobs and is restarted once
//!   its captures finish; past 1.5 × the limit it is restarted at once.
//!
//! Besides one-shot captures ([`BrowserPool::capture`]), the pool opens
//! [`session::Session`]s ([`BrowserPool::open_session`]): a fresh context driven step by
//! step (navigate, evaluate, screenshots and PDFs, device emulation, mouse, touch and
//! keyboard input, dialogs, cookies and storage, the accessibility tree, console and
//! network logs, screencast, raw page commands) for audits, runs and the MCP tools; see
//! the [`session`] module. A live session can be handed to a DevTools client
//! (puppeteer, Playwright) through the [`relay`], which shows it a browser whose only
//! context is the session's.
//!
//! Inside: `cdp` (the connection), `protocol` (the DevTools commands and events used,
//! typed), `launch` (one Chromium process tree), `pool`, `prepare` (spare pages),
//! `page` (event state and the deadline-bounded pump; navigation; actions; full-page
//! preparation), `pipeline` (one capture), [`encode`], [`egress`] (the proxy).
//!
//! Tags a capture can carry: `http-<status>` (main document status ≥ 400),
//! `consent-dismissed`, `consent-hidden`, `wait-for-timeout`, `fullpage-truncated`,
//! `networkidle-timeout` (the page loaded but its network never went quiet before
//! `timeout_ms`; it is captured anyway).

use std::path::PathBuf;
use std::time::Duration;

pub mod blocklists;
mod cdp;
pub mod consent;
pub mod content;
pub mod egress;
pub mod encode;
#[cfg(feature = "bench")]
pub mod floor;
mod imgsize;
mod launch;
mod memory;
mod overlays;
mod page;
mod phases;
mod pipeline;
mod pngenc;
mod pool;
mod prepare;
mod procedural;
mod protocol;
pub mod relay;
pub mod scriptlets;
mod scripts;
pub mod session;
pub mod state;
pub mod walls;

pub use capture_core::egress::{EgressAllow, EgressPolicy};
pub use phases::{Phase, Phases};
pub use pool::{BrowserPool, PoolStats, RestartReason};

/// Chromium builds to look for, best first: the headless shell (Debian's
/// `chromium-headless-shell`, the "old headless" build made for automation: a fresh
/// context costs about a fifth of the CPU it costs in the full browser's headless mode),
/// then the full browser.
pub const CHROMIUM_CANDIDATES: [&str; 3] =
    ["/usr/lib/chromium/chromium-headless-shell", "/usr/bin/chromium-headless-shell", "/usr/bin/chromium"];

/// The Chromium binary to use when none is configured: the first of
/// [`CHROMIUM_CANDIDATES`] that exists (the last one otherwise, for its error message).
pub fn default_chromium_path() -> PathBuf {
    CHROMIUM_CANDIDATES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(CHROMIUM_CANDIDATES[CHROMIUM_CANDIDATES.len() - 1]))
}

/// Configuration of the browser pool.
#[derive(Debug, Clone)]
pub struct BrowserConfig {
    /// Path of the Chromium binary (default `/usr/bin/chromium`).
    pub chromium_path: PathBuf,
    /// Number of Chromium processes (about one per core).
    pub browsers: usize,
    /// Concurrent captures per Chromium process.
    pub pages_per_browser: usize,
    /// Restart a browser process after it has served this many jobs.
    pub recycle_after: u64,
    /// Restart a browser whose process tree uses too much memory (None: never).
    pub memory_limit: Option<MemoryLimit>,
    /// What pages may reach: the allowlist of non-public destinations and the service's
    /// own listeners (refused whatever the allowlist says). The egress proxy adds its own
    /// address and the pool adds this host's interface addresses.
    pub egress: EgressPolicy,
    /// Parent folder for per-browser profile folders (created and removed by the pool).
    pub work_dir: PathBuf,
}

/// The memory guard's thresholds, in bytes of the browser's whole process tree (the sum of
/// each process's PSS, or RSS where PSS cannot be read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryLimit {
    /// Above this the browser gets no new jobs and is restarted once its captures finish.
    pub drain_above: u64,
    /// Above this it is restarted at once: its captures fail with a transient
    /// [`CaptureError::Browser`], which callers retry.
    pub kill_above: u64,
}

impl MemoryLimit {
    /// Drain above `limit`, restart at once above 1.5 × `limit`.
    pub fn new(limit: u64) -> MemoryLimit {
        MemoryLimit { drain_above: limit, kill_above: limit.saturating_add(limit / 2) }
    }
}

// The capture options and their enums are capture-core's, the one type the server checks,
// the CLI sends and the browser reads.
pub use capture_core::options::{CaptureOptions, ImageFormat, WaitUntil};

/// What to load.
#[derive(Debug, Clone)]
pub enum PageSource {
    /// An http(s) URL.
    Url(String),
    /// An uploaded HTML document, rendered as if it were a page.
    Html(String),
}

/// One capture job, already validated by the caller.
#[derive(Debug, Clone)]
pub struct CaptureRequest {
    /// What to load (the options' `url` is not read: an upload has none).
    pub source: PageSource,
    pub options: CaptureOptions,
    /// Hard deadline for the whole job; every DevTools call is bounded by it.
    pub deadline: Duration,
    /// The customer's proxy the page's connections leave through (after the egress guard's
    /// checks); None: directly from this server.
    pub proxy: Option<capture_core::egress::UpstreamProxy>,
}

/// The result of a capture.
#[derive(Debug, Clone)]
pub struct CaptureOutput {
    /// Image bytes in the requested format, or PDF bytes.
    pub bytes: Vec<u8>,
    /// `image/png`, `image/jpeg`, `image/webp` or `application/pdf`.
    pub content_type: &'static str,
    /// Output pixel size (None for a PDF).
    pub width: Option<u32>,
    pub height: Option<u32>,
    /// A small PNG of the top of the page, 320 px wide.
    pub thumbnail: Option<Vec<u8>>,
    pub page_title: String,
    pub final_url: String,
    /// Labels such as `fullpage-truncated`, `wait-for-timeout`, `http-404`, `consent-dismissed`.
    pub tags: Vec<String>,
    /// What the page said of itself, capped.
    pub metadata: capture_core::metadata::PageMetadata,
    /// A scrolling video's frames, to be encoded (then `bytes` is empty).
    pub video: Option<VideoFrames>,
    /// The page as text, when the options ask for it (`content`, or `extract` with a prompt).
    pub content: Option<content::PageContent>,
    /// The files of the text forms `content` asks for beside the job's own file, each
    /// rendered (front matter, `maxChars`) as it is stored.
    pub texts: Vec<(capture_core::options::ContentFormat, Vec<u8>)>,
    /// How long each step took (the spans of a traced job).
    pub phases: Phases,
}

/// A scrolling video's frames: JPEG files `f00000.jpg`, … in a spool directory removed
/// when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct VideoFrames {
    pub dir: std::sync::Arc<tempfile::TempDir>,
    pub count: u32,
    pub fps: u32,
}

/// Why a capture failed. The message is readable by end users.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CaptureError {
    /// The page could not be loaded (unreachable, DNS failure, refused, blocked by the egress guard).
    #[error("{0}")]
    Navigation(String),
    /// One of the request's own timeouts ran out (`timeoutMs` for navigation, clickBefore,
    /// waitFor, the script), or a step's.
    #[error("{0}")]
    Timeout(String),
    /// The job's whole deadline ran out ([`deadline_message`]).
    #[error("{0}")]
    Deadline(String),
    /// A user script or selector failed (preScreenshotJs threw, clickBefore not found).
    #[error("{0}")]
    Script(String),
    /// The browser or the tab crashed or the DevTools connection dropped: worth a retry.
    #[error("{0}")]
    Browser(String),
    /// The page answered, but not as the request demanded (`failOnHttpError`,
    /// `failIfContentContains`, `failIfContentMissing`): the page's fault, so charged.
    #[error("{0}")]
    Rejected(String),
    /// An element the request names (`selector`) is not on the page, or the page has no
    /// text to read (it is not HTML) when the request asks for its text: the job fails and,
    /// as it captured nothing, is not charged.
    #[error("{0}")]
    NotFound(String),
    /// Something the request needs is not installed here (the filter lists of `blockAds`):
    /// nothing was captured, so it is not charged.
    #[error("{0}")]
    Unavailable(String),
    /// A session ended (its deadline, `close`, a crash): it takes no more operations.
    #[error("{0}")]
    Closed(String),
    /// A command or URL a session's policy refuses (see [`session::filter`]).
    #[error("{0}")]
    Refused(String),
    /// The page started from a profile was sent to a sign-in form: the profile's session
    /// expired. Nothing the request wanted was captured, so it is not charged.
    #[error("{0}")]
    SignedOut(String),
    /// The site answered with a bot wall (a challenge or block page, [`walls`]) instead of the
    /// page: `blocked: <vendor>: …` with a hint. Nothing the request wanted was captured, so it
    /// is not charged.
    #[error("{0}")]
    Blocked(String),
    /// The customer's proxy refused or failed the main document's connection:
    /// `proxy_failed: <name>: <why>`. Nothing was captured, so it is not charged.
    #[error("{0}")]
    ProxyFailed(String),
    /// An element a session's operation names is missing or out of reach (what is wrong is
    /// the [`ElementFault`]; the message says which element).
    #[error("{1}")]
    Element(ElementFault, String),
    /// A JavaScript dialog is open (a session with the manual dialog policy): only reading
    /// and handling it work until it is accepted or dismissed.
    #[error("{0}")]
    DialogOpen(String),
}

/// What is wrong with an element a session's operation names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementFault {
    /// No element matches the selector (waited for until the operation's timeout).
    NotFound,
    /// The selector is not valid CSS.
    BadSelector,
    /// A ref from an earlier snapshot no longer names an element (the page changed).
    NoSuchRef,
    /// Another element covers it: an input there would not reach it.
    Covered,
}

impl CaptureError {
    /// A navigation that failed for `reason` (the egress proxy's word for it): the
    /// customer's proxy's failure when it says so.
    pub(crate) fn navigation(reason: String) -> CaptureError {
        if reason.starts_with(capture_core::egress::PROXY_FAILED) {
            CaptureError::ProxyFailed(reason)
        } else {
            CaptureError::Navigation(reason)
        }
    }

    /// Transient failures are retried by the worker (twice) before the job fails.
    pub fn is_transient(&self) -> bool {
        matches!(self, CaptureError::Browser(_))
    }

    /// The job's whole deadline ran out, not one of the request's own timeouts.
    pub fn is_deadline(&self) -> bool {
        matches!(self, CaptureError::Deadline(_))
    }

    /// A timeout of either kind: the request's own or the whole deadline.
    pub fn is_timeout(&self) -> bool {
        matches!(self, CaptureError::Timeout(_) | CaptureError::Deadline(_))
    }
}

/// The error text of a capture that ran past its whole deadline.
pub fn deadline_message(deadline: std::time::Duration) -> String {
    format!("capture exceeded the {} ms deadline", deadline.as_millis())
}
