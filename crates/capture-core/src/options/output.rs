//! The output format, and how the page scrolls in a video (`scroll`): the request's form and
//! the checked settings.

use serde::{Deserialize, Serialize};

#[cfg(feature = "schema")]
use super::{bounds, defaults};

/// Output format: an image, or a video of the page scrolling (`scroll`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    Png,
    #[serde(alias = "jpg")]
    Jpeg,
    Webp,
    // Videos (`scroll`): H.264, VP9, an animated GIF. Plain comments, so the schema stays a
    // plain enum of names.
    Mp4,
    Webm,
    Gif,
    // The page as text (issue 41): GitHub-flavoured Markdown, the visible text, the rendered
    // DOM.
    Markdown,
    Text,
    Html,
}

impl ImageFormat {
    /// Name on the wire and file extension.
    pub fn as_str(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpeg",
            ImageFormat::Webp => "webp",
            ImageFormat::Mp4 => "mp4",
            ImageFormat::Webm => "webm",
            ImageFormat::Gif => "gif",
            ImageFormat::Markdown => "markdown",
            ImageFormat::Text => "text",
            ImageFormat::Html => "html",
        }
    }

    /// The page as text rather than pixels, and in which form.
    pub fn content(self) -> Option<super::ContentFormat> {
        match self {
            ImageFormat::Markdown => Some(super::ContentFormat::Markdown),
            ImageFormat::Text => Some(super::ContentFormat::Text),
            ImageFormat::Html => Some(super::ContentFormat::Html),
            _ => None,
        }
    }

    /// A video of the page scrolling, not a still image.
    pub fn is_video(self) -> bool {
        matches!(self, ImageFormat::Mp4 | ImageFormat::Webm | ImageFormat::Gif)
    }

    /// The file's media type.
    pub fn content_type(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Webp => "image/webp",
            ImageFormat::Mp4 => "video/mp4",
            ImageFormat::Webm => "video/webm",
            ImageFormat::Gif => "image/gif",
            ImageFormat::Markdown => "text/markdown; charset=utf-8",
            ImageFormat::Text => "text/plain; charset=utf-8",
            ImageFormat::Html => "text/html; charset=utf-8",
        }
    }
}

/// How a scrolling video's speed changes along the way (`scroll.easing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Easing {
    Linear,
    EaseIn,
    EaseOut,
    #[default]
    EaseInOut,
}

impl Easing {
    /// Progress 0..=1 along the way at time fraction `t` (0..=1).
    pub fn at(self, t: f64) -> f64 {
        let t = t.clamp(0.0, 1.0);
        match self {
            Easing::Linear => t,
            Easing::EaseIn => t * t * t,
            Easing::EaseOut => 1.0 - (1.0 - t).powi(3),
            Easing::EaseInOut if t < 0.5 => 4.0 * t * t * t,
            Easing::EaseInOut => 1.0 - (-2.0 * t + 2.0).powi(3) / 2.0,
        }
    }
}

/// `scroll`: how the page moves in a video (`format: mp4 | webm | gif`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScrollIn {
    /// The video's length in milliseconds, 1000 to 30000 (default 5000); charged one action
    /// per started 10 seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = bounds::SCROLL_MS.0, max = bounds::SCROLL_MS.1), extend("default" = defaults::SCROLL_MS)))]
    pub duration_ms: Option<u64>,
    /// linear, ease-in, ease-out or ease-in-out (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub easing: Option<Easing>,
    /// Stop when this element reaches the top of the view (or the page's end comes first)
    /// instead of at the end of the page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::SELECTOR_MAX)))]
    pub until_selector: Option<String>,
    /// Scroll back to the top at the end: three quarters of the time down, one quarter back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scroll_back: Option<bool>,
}

/// Checked `scroll` settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScrollSettings {
    pub duration_ms: u64,
    pub easing: Easing,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_selector: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub scroll_back: bool,
}

impl ScrollSettings {
    /// Frames per second of every video.
    pub const FPS: u32 = 25;

    /// Frames in the video.
    pub fn frames(&self) -> u32 {
        ((self.duration_ms * u64::from(Self::FPS)).div_ceil(1000)).max(2) as u32
    }

    /// Where the page is, as a fraction of the way to its end, at frame `i`.
    pub fn position(&self, i: u32) -> f64 {
        let n = self.frames();
        if !self.scroll_back {
            return self.easing.at(f64::from(i) / f64::from(n - 1));
        }
        // Three quarters of the frames down (the last of them at the end), the rest back.
        let down = ((f64::from(n) * 0.75).round() as u32).clamp(2, n - 1);
        if i < down {
            self.easing.at(f64::from(i) / f64::from(down - 1))
        } else {
            1.0 - self.easing.at(f64::from(i - (down - 1)) / f64::from(n - down))
        }
    }

    /// Actions charged: one per started 10 seconds.
    pub fn actions(&self) -> i64 {
        self.duration_ms.div_ceil(10_000).max(1) as i64
    }
}
