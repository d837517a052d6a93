//! Bounds from DESIGN.md.

pub const WIDTH: (u32, u32) = (100, 3840);
pub const HEIGHT: (u32, u32) = (100, 2160);
pub const DELAY_MAX: u64 = 30_000;
pub const TIMEOUT: (u64, u64) = (1000, 60_000);
pub const DSF: (f64, f64) = (0.5, 3.0);
pub const JS_MAX: usize = 16 * 1024;
pub const SELECTOR_MAX: usize = 1024;
pub const URL_MAX: usize = 4096;
/// Tallest full page captured in one piece, in output pixels; taller ones are captured
/// screen by screen up to [`FULL_PAGE_TILED_MAX`](Self::FULL_PAGE_TILED_MAX) (WebP stops at
/// [`WEBP_MAX`](Self::WEBP_MAX), its format's limit).
pub const FULL_PAGE_MAX: u32 = 16384;
/// Tallest full page (PNG, JPEG), in output pixels: tagged `fullpage-truncated` past it.
pub const FULL_PAGE_TILED_MAX: u32 = 60_000;
/// Tallest WebP: the format's own limit.
pub const WEBP_MAX: u32 = 16383;
/// The largest coordinate or size of a `clip`, in CSS pixels.
pub const CLIP_MAX: f64 = 16384.0;
/// `hideSelectors`: at most this many.
pub const HIDE_SELECTORS_MAX: usize = 50;
pub const QUALITY: (u8, u8) = (1, 100);
pub const IMAGE_WIDTH: (u32, u32) = (16, 7680);
pub const LOCALE_MAX: usize = 35;
pub const TIMEZONE_MAX: usize = 64;
/// `failIfContentContains` / `failIfContentMissing`: at most this many strings each, of
/// at most `CONTENT_MATCH_MAX` bytes.
pub const CONTENT_MATCHES_MAX: usize = 10;
pub const CONTENT_MATCH_MAX: usize = 1024;
pub const USER_AGENT_MAX: usize = 512;
/// A PDF header or footer template, in bytes.
pub const PDF_TEMPLATE_MAX: usize = 16 * 1024;
/// `blockRequests`: at most this many patterns of at most `URL_MAX` bytes.
pub const BLOCK_REQUESTS_MAX: usize = 100;
/// `cacheTtl`: 30 days, in seconds.
pub const CACHE_TTL_MAX: u64 = 30 * 24 * 3600;
pub const CACHE_KEY_MAX: usize = 256;
/// A `storage.key` template, in bytes.
pub const STORAGE_KEY_MAX: usize = 512;
/// A scrolling video's length, in milliseconds.
pub const SCROLL_MS: (u64, u64) = (1000, 30_000);
/// A video's largest side, in output pixels (width or height × deviceScaleFactor).
pub const VIDEO_SIDE_MAX: f64 = 1920.0;
