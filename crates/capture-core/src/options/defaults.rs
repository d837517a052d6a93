//! Defaults of the options a request leaves out.

pub const WIDTH: u32 = 1280;
pub const HEIGHT: u32 = 800;
pub const DELAY: u64 = 0;
pub const TIMEOUT_MS: u64 = 10_000;
pub const DEVICE_SCALE_FACTOR: f64 = 1.0;
pub const FORMAT: super::ImageFormat = super::ImageFormat::Png;
pub const WAIT_UNTIL: super::WaitUntil = super::WaitUntil::Networkidle;
/// JPEG and WebP quality when a request sets none.
pub const QUALITY: u8 = 80;
/// A scrolling video's length when `scroll` sets none.
pub const SCROLL_MS: u64 = 5000;
