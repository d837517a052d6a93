//! Capture options of `POST /v1/screenshot`: defaults, bounds (DESIGN.md) and validation.

use serde::{Deserialize, Serialize};

use crate::credentials::{CookieIn, Credentials, CredentialsSet, HttpAuth};
use crate::error::FieldError;
use crate::states::OutputFormat;

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

/// Where a capture's file is also written (`storage`): one of the account's storage
/// destinations, under a key made from a template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageTarget {
    /// The destination's id (`sd_…`).
    pub destination: String,
    /// The object key under the destination's prefix, a template of `{id}` (the job's id),
    /// `{date}` (YYYY-MM-DD, UTC, when the capture finished), `{ext}` (png, jpeg, webp, pdf,
    /// mp4, webm, gif) and `{host}` (the page's host name); default `{id}.{ext}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = bounds::STORAGE_KEY_MAX), extend("examples" = ["captures/{date}/{host}-{id}.{ext}"])))]
    pub key: Option<String>,
}

/// The placeholders a `storage.key` template may hold.
pub const STORAGE_KEY_PLACEHOLDERS: [&str; 4] = ["id", "date", "ext", "host"];

impl StorageTarget {
    /// The template in force.
    pub fn template(&self) -> &str {
        self.key.as_deref().unwrap_or("{id}.{ext}")
    }

    /// The destination names an `sd_` id and the template is a safe relative key: known
    /// placeholders only, no empty, `.` or `..` segment, no leading `/`, printable, at most
    /// 512 bytes.
    pub fn check(self) -> Result<StorageTarget, FieldError> {
        if !crate::ids::looks_like(crate::ids::STORAGE_DESTINATION, &self.destination) {
            return Err(FieldError::new("storage.destination", "must be a storage destination id (sd_…)"));
        }
        if let Some(k) = &self.key {
            check_storage_key(k).map_err(|why| FieldError::new("storage.key", why))?;
        }
        Ok(self)
    }

    /// The object key for a job: the template with its placeholders filled in.
    pub fn render_key(&self, id: &str, date: &str, ext: &str, host: &str) -> String {
        let mut out = String::new();
        let mut rest = self.template();
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let Some(close) = rest[open..].find('}') else { break };
            match &rest[open + 1..open + close] {
                "id" => out.push_str(id),
                "date" => out.push_str(date),
                "ext" => out.push_str(ext),
                "host" => out.push_str(host),
                other => {
                    out.push('{');
                    out.push_str(other);
                    out.push('}');
                }
            }
            rest = &rest[open + close + 1..];
        }
        out.push_str(rest);
        out
    }
}

fn check_scroll(s: ScrollIn) -> Result<ScrollSettings, FieldError> {
    let duration_ms = s.duration_ms.unwrap_or(defaults::SCROLL_MS);
    if !(bounds::SCROLL_MS.0..=bounds::SCROLL_MS.1).contains(&duration_ms) {
        return Err(FieldError::new("scroll.durationMs", "must be between 1000 and 30000"));
    }
    Ok(ScrollSettings {
        duration_ms,
        easing: s.easing.unwrap_or_default(),
        until_selector: selector("scroll.untilSelector", s.until_selector)?,
        scroll_back: s.scroll_back.unwrap_or(false),
    })
}

fn check_storage_key(k: &str) -> Result<(), &'static str> {
    if k.is_empty() || k.len() > bounds::STORAGE_KEY_MAX {
        return Err("must be 1 to 512 bytes");
    }
    if k.chars().any(|c| c.is_control() || c == '\\') {
        return Err("must not hold control characters or backslashes");
    }
    if k.starts_with('/') || k.split('/').any(|seg| seg.is_empty() || seg == "." || seg == "..") {
        return Err("must be a relative key without empty, '.' or '..' segments");
    }
    let mut rest = k;
    while let Some(open) = rest.find(['{', '}']) {
        if rest.as_bytes()[open] == b'}' {
            return Err("has a '}' without its '{'");
        }
        let Some(close) = rest[open..].find('}') else { return Err("has a '{' without its '}'") };
        let name = &rest[open + 1..open + close];
        if !STORAGE_KEY_PLACEHOLDERS.contains(&name) {
            return Err("may only use the placeholders {id}, {date}, {ext} and {host}");
        }
        rest = &rest[open + close + 1..];
    }
    Ok(())
}

/// When navigation counts as finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum WaitUntil {
    Networkidle,
    Load,
    Domcontentloaded,
    None,
}

/// `cookieConsent`: what to do with a cookie-consent pop-up, by DuckDuckGo's autoconsent rules
/// (200+ consent platforms) run in every frame before the page's own scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum CookieConsent {
    /// Opt out where a rule knows how, else hide the banner (the default).
    #[default]
    Auto,
    /// Opt out only; a banner that cannot be refused stays (`action: failed`).
    Reject,
    /// Opt in (accept all).
    Accept,
    /// Neither: hide the banner without answering it.
    Hide,
    /// Leave banners as they are.
    None,
}

impl CookieConsent {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            CookieConsent::Auto => "auto",
            CookieConsent::Reject => "reject",
            CookieConsent::Accept => "accept",
            CookieConsent::Hide => "hide",
            CookieConsent::None => "none",
        }
    }

    /// From the wire name.
    pub fn parse(s: &str) -> Option<CookieConsent> {
        [CookieConsent::Auto, CookieConsent::Reject, CookieConsent::Accept, CookieConsent::Hide, CookieConsent::None]
            .into_iter()
            .find(|c| c.as_str() == s)
    }
}

/// A stored job's `cookieConsent`: the names, or `true`/`false` of jobs stored before the names
/// existed (`true` was `auto`).
fn stored_consent<'de, D: serde::Deserializer<'de>>(d: D) -> Result<CookieConsent, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stored {
        Old(bool),
        Name(CookieConsent),
    }
    Ok(match Stored::deserialize(d)? {
        Stored::Old(true) => CookieConsent::Auto,
        Stored::Old(false) => CookieConsent::None,
        Stored::Name(c) => c,
    })
}

/// A region of the page in CSS pixels (`clip`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Clip {
    /// Left edge, from the page's (or with fullPage the document's) left.
    #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = bounds::CLIP_MAX)))]
    pub x: f64,
    /// Top edge.
    #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = bounds::CLIP_MAX)))]
    pub y: f64,
    /// Width, at least 1.
    #[cfg_attr(feature = "schema", schemars(range(min = 1.0, max = bounds::CLIP_MAX)))]
    pub width: f64,
    /// Height, at least 1.
    #[cfg_attr(feature = "schema", schemars(range(min = 1.0, max = bounds::CLIP_MAX)))]
    pub height: f64,
}

/// A position the page's `navigator.geolocation` reports (`geolocation`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Geolocation {
    /// Degrees north, -90 to 90.
    #[cfg_attr(feature = "schema", schemars(range(min = -90.0, max = 90.0)))]
    pub latitude: f64,
    /// Degrees east, -180 to 180.
    #[cfg_attr(feature = "schema", schemars(range(min = -180.0, max = 180.0)))]
    pub longitude: f64,
    /// Accuracy in metres (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = 100000.0)))]
    pub accuracy: Option<f64>,
}

/// The CSS media type the page is rendered for (`mediaType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum MediaType {
    #[default]
    Screen,
    Print,
}

/// A kind of request of `blockResources`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum ResourceKind {
    Image,
    Media,
    Font,
    Stylesheet,
    Script,
    Xhr,
    Fetch,
    Websocket,
    Other,
}

impl ResourceKind {
    /// The DevTools protocol's name of the kind (`Network.ResourceType`).
    pub fn cdp_name(self) -> &'static str {
        match self {
            ResourceKind::Image => "Image",
            ResourceKind::Media => "Media",
            ResourceKind::Font => "Font",
            ResourceKind::Stylesheet => "Stylesheet",
            ResourceKind::Script => "Script",
            ResourceKind::Xhr => "XHR",
            ResourceKind::Fetch => "Fetch",
            ResourceKind::Websocket => "WebSocket",
            ResourceKind::Other => "Other",
        }
    }
}

/// A paper size of `pdfOptions.paperFormat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum PaperFormat {
    A0,
    A1,
    A2,
    A3,
    A4,
    A5,
    A6,
    Letter,
    Legal,
    Tabloid,
}

impl PaperFormat {
    /// Width and height in inches, portrait.
    pub fn inches(self) -> (f64, f64) {
        match self {
            PaperFormat::A0 => (33.1102, 46.811),
            PaperFormat::A1 => (23.3858, 33.1102),
            PaperFormat::A2 => (16.5354, 23.3858),
            PaperFormat::A3 => (11.6929, 16.5354),
            PaperFormat::A4 => (8.2677, 11.6929),
            PaperFormat::A5 => (5.8268, 8.2677),
            PaperFormat::A6 => (4.1339, 5.8268),
            PaperFormat::Letter => (8.5, 11.0),
            PaperFormat::Legal => (8.5, 14.0),
            PaperFormat::Tabloid => (11.0, 17.0),
        }
    }
}

/// Page margins of a PDF, each a CSS length (`1cm`, `0.5in`, `10mm`, `20px`; a bare
/// number is pixels).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PdfMargin {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top: Option<Length>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub right: Option<Length>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottom: Option<Length>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left: Option<Length>,
}

/// A CSS length: a string with a unit (`px`, `in`, `cm`, `mm`), or a number of pixels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(untagged)]
pub enum Length {
    Px(f64),
    Css(String),
}

impl Length {
    /// In inches (96 CSS pixels to the inch), or why not.
    pub fn inches(&self) -> Result<f64, String> {
        let (n, unit) = match self {
            Length::Px(n) => (*n, "px"),
            Length::Css(s) => {
                let s = s.trim();
                let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
                let n: f64 = s[..split].trim().parse().map_err(|_| format!("'{s}' is not a length (e.g. 1cm)"))?;
                (n, &s[split..])
            }
        };
        let per_inch = match unit {
            "px" | "" => 96.0,
            "in" => 1.0,
            "cm" => 2.54,
            "mm" => 25.4,
            other => return Err(format!("unit '{other}' is not one of px, in, cm, mm")),
        };
        if !n.is_finite() || n < 0.0 {
            return Err("must be 0 or more".into());
        }
        Ok(n / per_inch)
    }
}

/// How a PDF is printed (`pdfOptions`, with `pdf: true`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PdfOptionsIn {
    /// A paper size (default a4, unless the page's CSS sets one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_format: Option<PaperFormat>,
    /// A paper width instead of a format (with paperHeight): `210mm`, `8.5in`, or pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_width: Option<Length>,
    /// A paper height instead of a format (with paperWidth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_height: Option<Length>,
    /// Print in landscape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landscape: Option<bool>,
    /// Page margins (default none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin: Option<PdfMargin>,
    /// Print backgrounds (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub print_background: Option<bool>,
    /// Scale of the page's rendering, 0.1-2 (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 0.1, max = 2.0)))]
    pub scale: Option<f64>,
    /// Pages to print, e.g. `1-3, 5` (default all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = 200)))]
    pub page_ranges: Option<String>,
    /// HTML of each page's header; elements of class pageNumber, totalPages, date, title and
    /// url are filled in. Give it a font-size (the default is tiny).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::PDF_TEMPLATE_MAX)))]
    pub header_template: Option<String>,
    /// HTML of each page's footer, as headerTemplate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::PDF_TEMPLATE_MAX)))]
    pub footer_template: Option<String>,
    /// The whole page on one sheet: as wide as the paper, as tall as the page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit_one_page: Option<bool>,
}

/// Checked PDF settings, in inches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PdfSettings {
    /// None: the page's CSS size, else A4.
    pub paper: Option<(f64, f64)>,
    pub landscape: bool,
    /// top, right, bottom, left
    pub margin: [f64; 4],
    pub print_background: bool,
    pub scale: f64,
    pub page_ranges: Option<String>,
    pub header_template: Option<String>,
    pub footer_template: Option<String>,
    pub fit_one_page: bool,
}

impl Default for PdfSettings {
    fn default() -> Self {
        PdfSettings {
            paper: None,
            landscape: false,
            margin: [0.0; 4],
            print_background: true,
            scale: 1.0,
            page_ranges: None,
            header_template: None,
            footer_template: None,
            fit_one_page: false,
        }
    }
}

impl PdfOptionsIn {
    /// The checks beyond the shape, each refusal naming `pdfOptions.<field>`.
    pub fn check(self) -> Result<PdfSettings, FieldError> {
        let f = |name: &str| format!("pdfOptions.{name}");
        let len = |name: &str, l: &Length| {
            l.inches().map_err(|e| FieldError::new(f(name), e)).and_then(|v| {
                if v > 200.0 { Err(FieldError::new(f(name), "must be at most 200 inches")) } else { Ok(v) }
            })
        };
        let paper = match (self.paper_format, &self.paper_width, &self.paper_height) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                return Err(FieldError::new(f("paperWidth"), "cannot be combined with paperFormat"));
            }
            (Some(p), None, None) => Some(p.inches()),
            (None, Some(w), Some(h)) => {
                let (w, h) = (len("paperWidth", w)?, len("paperHeight", h)?);
                if w < 0.5 || h < 0.5 {
                    return Err(FieldError::new(f("paperWidth"), "paper must be at least half an inch each way"));
                }
                Some((w, h))
            }
            (None, Some(_), None) => return Err(FieldError::new(f("paperHeight"), "is required with paperWidth")),
            (None, None, Some(_)) => return Err(FieldError::new(f("paperWidth"), "is required with paperHeight")),
            (None, None, None) => None,
        };
        let m = self.margin.unwrap_or_default();
        let mut margin = [0.0; 4];
        for (i, (name, v)) in
            [("top", &m.top), ("right", &m.right), ("bottom", &m.bottom), ("left", &m.left)].into_iter().enumerate()
        {
            if let Some(v) = v {
                margin[i] = len(&format!("margin.{name}"), v)?;
            }
        }
        let scale = self.scale.unwrap_or(1.0);
        if !(0.1..=2.0).contains(&scale) {
            return Err(FieldError::new(f("scale"), "must be between 0.1 and 2"));
        }
        let page_ranges = match self.page_ranges.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(r) if r.len() <= 200 && valid_ranges(r) => Some(r.to_string()),
            Some(r) => {
                return Err(FieldError::new(f("pageRanges"), format!("'{r}' is not a list of pages like 1-3, 5")));
            }
        };
        let template = |name: &str, t: Option<String>| match t {
            Some(t) if t.len() > bounds::PDF_TEMPLATE_MAX => {
                Err(FieldError::new(f(name), "must be at most 16384 bytes"))
            }
            Some(t) if t.trim().is_empty() => Ok(None),
            other => Ok(other),
        };
        Ok(PdfSettings {
            paper,
            landscape: self.landscape.unwrap_or(false),
            margin,
            print_background: self.print_background.unwrap_or(true),
            scale,
            page_ranges,
            header_template: template("headerTemplate", self.header_template)?,
            footer_template: template("footerTemplate", self.footer_template)?,
            fit_one_page: self.fit_one_page.unwrap_or(false),
        })
    }
}

/// `1-3, 5, 8-`: numbers from 1, ranges with a dash (open at the end), separated by commas.
fn valid_ranges(r: &str) -> bool {
    r.split(',').all(|part| {
        let part = part.trim();
        let num =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) && s.parse::<u32>().is_ok_and(|n| n >= 1);
        match part.split_once('-') {
            None => num(part),
            Some((a, b)) => num(a.trim()) && (b.trim().is_empty() || num(b.trim())),
        }
    })
}

/// Validated capture options, stored with the job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaptureOptions {
    /// The requested page (`None` for an uploaded HTML document).
    pub url: Option<String>,
    pub width: u32,
    pub height: u32,
    pub full_page: bool,
    pub format: ImageFormat,
    pub pdf: bool,
    pub delay: u64,
    pub dark_mode: bool,
    /// What to do with cookie-consent pop-ups.
    #[serde(deserialize_with = "stored_consent")]
    pub cookie_consent: CookieConsent,
    pub wait_for: Option<String>,
    pub wait_until: WaitUntil,
    pub timeout_ms: u64,
    pub pre_screenshot_js: Option<String>,
    pub device_scale_factor: f64,
    pub click_before: Option<String>,
    // The options below came later: a job stored before them reads their defaults.
    /// Capture just this element's box.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// Capture just this region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clip: Option<Clip>,
    /// Hidden (`visibility: hidden`) before the capture.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hide_selectors: Vec<String>,
    /// A transparent background (PNG and WebP).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub omit_background: bool,
    /// JPEG and WebP quality (None: the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<u8>,
    /// The returned image's width in pixels (the height keeps the aspect ratio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_width: Option<u32>,
    /// The IANA time zone the page sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// The BCP 47 locale the page sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
    /// The position the page sees, with the permission granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geolocation: Option<Geolocation>,
    /// `prefers-reduced-motion: reduce`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reduced_motion: bool,
    /// The CSS media type.
    #[serde(default, skip_serializing_if = "is_screen")]
    pub media_type: MediaType,
    /// Fail when the main document answers 4xx or 5xx.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fail_on_http_error: bool,
    /// Fail when the page's text contains one of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fail_if_content_contains: Vec<String>,
    /// Fail when the page's text lacks one of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fail_if_content_missing: Vec<String>,
    /// The device preset asked for (its values are in the fields here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Mobile viewport semantics (meta viewport, overlay scrollbars).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mobile: bool,
    /// Touch events and `navigator.maxTouchPoints`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub touch: bool,
    /// The User-Agent (None: the browser's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// How a PDF is printed (None: A4, backgrounds, no margins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pdf_options: Option<PdfSettings>,
    /// URL patterns (`*` wildcards) whose requests are refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block_requests: Vec<String>,
    /// Kinds of requests refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block_resources: Vec<ResourceKind>,
    /// Refuse requests EasyList names (ads) and hide what they leave.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub block_ads: bool,
    /// Refuse requests EasyPrivacy names (trackers).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub block_trackers: bool,
    /// Refuse chat-widget requests and hide their launchers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub block_chats: bool,
    /// Refuse pop-up tools' requests and hide newsletter/app/notification pop-ups, floating
    /// video players, back-to-top buttons and chat launchers (Capture's annoyances list).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub block_annoyances: bool,
    /// Hide what still covers the page once the rest ran: any fixed or sticky element over
    /// more than a quarter of the viewport (a newsletter modal, an app banner), and give the
    /// page back the scrolling it locked (tag `popups-hidden`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hide_popups: bool,
    /// The request's headers, cookies and HTTP credentials, in the clear: never serialised.
    /// The service stores them sealed with its master key beside the options, and opens
    /// them for the browser.
    #[serde(skip)]
    pub credentials: Option<Credentials>,
    /// Which credentials were set (names only): what the job shows of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_set: Option<CredentialsSet>,
    /// Seconds a done capture of this request answers an identical one (`cacheTtl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_ttl: Option<u64>,
    /// Separates otherwise identical requests in the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
    /// Also write the file to the account's own bucket (`storage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<StorageTarget>,
    /// How a video scrolls (set exactly when `format` is a video).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scroll: Option<ScrollSettings>,
    /// The browser profile the page starts from: as asked (an id or a name), then the
    /// profile's id once the service found it among the caller's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// That profile's cookies and site storage, opened for the browser: never serialised.
    #[serde(skip)]
    pub state: Option<crate::profile::BrowserState>,
}

fn is_screen(m: &MediaType) -> bool {
    *m == MediaType::Screen
}

impl Default for CaptureOptions {
    /// What a request that sets nothing but its page gets (no page here).
    fn default() -> Self {
        CaptureOptions {
            url: None,
            width: defaults::WIDTH,
            height: defaults::HEIGHT,
            full_page: false,
            format: defaults::FORMAT,
            pdf: false,
            delay: defaults::DELAY,
            dark_mode: false,
            cookie_consent: CookieConsent::Auto,
            wait_for: None,
            wait_until: defaults::WAIT_UNTIL,
            timeout_ms: defaults::TIMEOUT_MS,
            pre_screenshot_js: None,
            device_scale_factor: defaults::DEVICE_SCALE_FACTOR,
            click_before: None,
            selector: None,
            clip: None,
            hide_selectors: Vec::new(),
            omit_background: false,
            quality: None,
            image_width: None,
            timezone: None,
            locale: None,
            geolocation: None,
            reduced_motion: false,
            media_type: MediaType::Screen,
            fail_on_http_error: false,
            fail_if_content_contains: Vec::new(),
            fail_if_content_missing: Vec::new(),
            device: None,
            mobile: false,
            touch: false,
            user_agent: None,
            pdf_options: None,
            block_requests: Vec::new(),
            block_resources: Vec::new(),
            block_ads: false,
            block_trackers: false,
            block_chats: false,
            block_annoyances: false,
            hide_popups: false,
            credentials: None,
            credentials_set: None,
            cache_ttl: None,
            cache_key: None,
            storage: None,
            scroll: None,
            profile: None,
            state: None,
        }
    }
}

/// Defaults of the options a request leaves out.
pub mod defaults {
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
}

/// Bounds from DESIGN.md.
pub mod bounds {
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
}

// This one type is the request's shape everywhere: the server deserialises and checks it
// (`ScreenshotIn::into_options`), derives the OpenAPI document and the MCP tool schema from it
// (feature `schema`), and the CLI builds its requests with it. Its doc comment below is the
// schema's published description.
/// What to capture and how: the body of `POST /v1/screenshot` (also the fields of an HTML
/// upload, and the `take_screenshot` tool's input).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "schema", schemars(rename = "ScreenshotRequest"))]
pub struct ScreenshotIn {
    /// The page to capture (http or https).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String", required, url, length(max = bounds::URL_MAX), extend("examples" = ["https://example.com"])))]
    pub url: Option<String>,
    /// Viewport width in CSS pixels.
    #[serde(default, deserialize_with = "whole", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = bounds::WIDTH.0, max = bounds::WIDTH.1), extend("default" = defaults::WIDTH)))]
    pub width: Option<u32>,
    /// Viewport height in CSS pixels.
    #[serde(default, deserialize_with = "whole", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = bounds::HEIGHT.0, max = bounds::HEIGHT.1), extend("default" = defaults::HEIGHT)))]
    pub height: Option<u32>,
    /// Capture the whole scrollable page (scrolls first so lazy content loads), up to the
    /// service's full-page height.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub full_page: Option<bool>,
    /// Image format (png, jpeg, webp), or a video of the page scrolling (mp4, webm, gif;
    /// see scroll).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = defaults::FORMAT)))]
    pub format: Option<ImageFormat>,
    /// Produce a PDF instead of an image (the result is a link).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub pdf: Option<bool>,
    /// Milliseconds to wait after the page loads.
    #[serde(default, deserialize_with = "whole", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(max = bounds::DELAY_MAX), extend("default" = defaults::DELAY)))]
    pub delay: Option<u64>,
    /// Send prefers-color-scheme: dark.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub dark_mode: Option<bool>,
    /// What to do with a cookie-consent pop-up: `auto` opts out where a rule of DuckDuckGo's
    /// autoconsent knows how (200+ consent platforms) and hides the banner otherwise; `reject`
    /// only opts out; `accept` opts in; `hide` hides it unanswered; `none` leaves it. What
    /// happened is the job's `metadata.consent`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = CookieConsent::Auto)))]
    pub cookie_consent: Option<CookieConsent>,
    /// CSS selector to wait for before capturing (best effort).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::SELECTOR_MAX)))]
    pub wait_for: Option<String>,
    /// When navigation counts as finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = defaults::WAIT_UNTIL)))]
    pub wait_until: Option<WaitUntil>,
    /// Timeout for navigation, waitFor and clickBefore, in milliseconds.
    #[serde(default, deserialize_with = "whole", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = bounds::TIMEOUT.0, max = bounds::TIMEOUT.1), extend("default" = defaults::TIMEOUT_MS)))]
    pub timeout_ms: Option<u64>,
    /// JavaScript evaluated in the page right before the capture (its length in bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::JS_MAX)))]
    pub pre_screenshot_js: Option<String>,
    /// Device pixel ratio (2 for retina-sharp images).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = bounds::DSF.0, max = bounds::DSF.1), extend("default" = defaults::DEVICE_SCALE_FACTOR)))]
    pub device_scale_factor: Option<f64>,
    /// CSS selector to click before waiting and capturing.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::SELECTOR_MAX)))]
    pub click_before: Option<String>,
    /// CSS selector of the one element to capture: its box, scrolled into view, waited for up
    /// to timeoutMs. The image is the element's size × deviceScaleFactor. A missing element
    /// fails the job, and its action is given back. Not with clip or pdf.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::SELECTOR_MAX)))]
    pub selector: Option<String>,
    /// A region to capture, in CSS pixels: of the viewport, or with fullPage of the whole
    /// page. The image is its size × deviceScaleFactor. Not with selector or pdf.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clip: Option<Clip>,
    /// CSS selectors of elements hidden (visibility: hidden) before the capture: cookie
    /// banners, chat widgets, ads. Up to 50.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::HIDE_SELECTORS_MAX), inner(length(min = 1, max = bounds::SELECTOR_MAX))))]
    pub hide_selectors: Option<Vec<String>>,
    /// A transparent background where the page paints none (PNG and WebP).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub omit_background: Option<bool>,
    /// Image quality of a JPEG or WebP, 1-100.
    #[serde(default, deserialize_with = "whole", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = bounds::QUALITY.0, max = bounds::QUALITY.1), extend("default" = defaults::QUALITY)))]
    pub quality: Option<u8>,
    /// Width of the returned image in pixels; the height keeps the aspect ratio. The page is
    /// rendered at that size (sharp, not resampled). Not with pdf.
    #[serde(default, deserialize_with = "whole", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = bounds::IMAGE_WIDTH.0, max = bounds::IMAGE_WIDTH.1)))]
    pub image_width: Option<u32>,
    /// The IANA time zone the page sees (Date, Intl), e.g. Europe/Berlin.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("examples" = ["Europe/Berlin"])))]
    pub timezone: Option<String>,
    /// The BCP 47 locale the page sees: navigator.language, Intl and the Accept-Language
    /// header, e.g. de-DE.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("examples" = ["de-DE"])))]
    pub locale: Option<String>,
    /// The position navigator.geolocation reports, with the permission granted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geolocation: Option<Geolocation>,
    /// Send prefers-reduced-motion: reduce (pages that honour it stop their animations).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub reduced_motion: Option<bool>,
    /// The CSS media type the page is rendered for: screen, or print (its print styles).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = MediaType::Screen)))]
    pub media_type: Option<MediaType>,
    /// Fail the job when the main document answers 4xx or 5xx (its status is in the error).
    /// The page ran, so the action is charged.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub fail_on_http_error: Option<bool>,
    /// Fail the job when the page's visible text contains any of these strings (exact,
    /// case-sensitive; up to 10). The action is charged.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::CONTENT_MATCHES_MAX), inner(length(min = 1, max = bounds::CONTENT_MATCH_MAX))))]
    pub fail_if_content_contains: Option<Vec<String>>,
    /// Fail the job when the page's visible text lacks any of these strings (exact,
    /// case-sensitive; up to 10). The action is charged.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::CONTENT_MATCHES_MAX), inner(length(min = 1, max = bounds::CONTENT_MATCH_MAX))))]
    pub fail_if_content_missing: Option<Vec<String>>,
    /// A device preset (iphone-15, pixel-8, ipad-mini, desktop-1280, …; GET /v1/devices
    /// lists them): viewport, pixel ratio, mobile, touch and user agent in one word. An
    /// explicit width, height, deviceScaleFactor or userAgent overrides its value.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("examples" = ["iphone-15"])))]
    pub device: Option<String>,
    /// The User-Agent the page and its requests see (default: the browser's, or the device's).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::USER_AGENT_MAX)))]
    pub user_agent: Option<String>,
    /// How the PDF is printed (with pdf: true): paper, margins, scale, pages, header and
    /// footer, backgrounds, or the whole page on one sheet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pdf_options: Option<PdfOptionsIn>,
    /// URL patterns whose requests are refused, `*` matching anything (`*://*.doubleclick.net/*`,
    /// `*/ads/*`, `*.mp4`). Up to 100.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::BLOCK_REQUESTS_MAX), inner(length(min = 1, max = bounds::URL_MAX))))]
    pub block_requests: Option<Vec<String>>,
    /// Kinds of requests refused: image, media, font, stylesheet, script, xhr, fetch,
    /// websocket, other. The page itself always loads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_resources: Option<Vec<ResourceKind>>,
    /// Refuse requests to ad servers (EasyList, matched by Brave's adblock engine) and hide
    /// the containers they leave (EasyList's element rules for the page).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub block_ads: Option<bool>,
    /// Refuse requests to trackers and analytics (EasyPrivacy, matched by the same engine).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub block_trackers: Option<bool>,
    /// Refuse requests to chat widgets (Intercom, Drift, Zendesk, Crisp, tawk.to, …) and hide
    /// their launchers and frames.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub block_chats: Option<bool>,
    /// Remove newsletter, app and notification pop-ups, floating video players, back-to-top
    /// buttons and chat launchers (Capture's annoyances list, in EasyList syntax); turns
    /// `hidePopups` on unless it is set to false.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub block_annoyances: Option<bool>,
    /// Hide any fixed or sticky element still covering more than a quarter of the viewport
    /// (newsletter and app pop-ups, their backdrops) and undo the page's scroll lock.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = false)))]
    pub hide_popups: Option<bool>,
    /// Extra HTTP request headers (up to 50; no Host or hop-by-hop headers), sent with every
    /// request the page makes. Credentials: kept encrypted until the job runs and never
    /// shown again; the job lists their names under credentials.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("examples" = [{"X-Api-Key": "…"}])))]
    pub headers: Option<std::collections::BTreeMap<String, String>>,
    /// Cookies set before the page loads (up to 50; the page's own host unless a domain is
    /// given). Credentials, like headers: the job lists their names, never their values.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::credentials::bounds::COOKIES_MAX)))]
    pub cookies: Option<Vec<CookieIn>>,
    /// HTTP Basic credentials, answered only to the page's own origin when it asks.
    /// Kept encrypted until the job runs and never shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_auth: Option<HttpAuth>,
    /// Seconds (up to 30 days) this capture answers identical requests of the account: one
    /// made within them (same URL and options) is a new job, done at once, cached: true,
    /// charging nothing. Render links cache for a day unless they set it.
    #[serde(default, deserialize_with = "whole", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = bounds::CACHE_TTL_MAX)))]
    pub cache_ttl: Option<u64>,
    /// Separates otherwise identical requests in the cache (up to 256 bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = bounds::CACHE_KEY_MAX)))]
    pub cache_key: Option<String>,
    /// Also write the file to one of the account's storage destinations (its own
    /// S3-compatible bucket, `POST /v1/storage-destinations`); the job then carries
    /// storageUrl, or storageError when the upload failed after its retries (the service
    /// keeps its own copy either way).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<StorageTarget>,
    /// How the page scrolls in a video (`format: mp4`, `webm` or `gif`): from the top to the
    /// end of the page (or to `untilSelector`) in `durationMs`, recorded at the viewport's
    /// size at 25 frames a second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scroll: Option<ScrollIn>,
    /// Start the page from one of your browser profiles (`POST /v1/profiles`), by id or
    /// name: its cookies and site storage are in place before the page loads, so it sees
    /// the signed-in site. When the page is sent to a sign-in form instead, the job fails
    /// with an error starting `profile_expired:` (and the profile shows `expired`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::profile::NAME_MAX)))]
    pub profile: Option<String>,
}

/// A whole number, also when a client wrote it as `800.0`.
fn whole<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<u64>,
{
    use serde::de::Error;
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else { return Ok(None) };
    let v = match (n.as_u64(), n.as_f64()) {
        (Some(v), _) => Some(v),
        (None, Some(x)) if x.fract() == 0.0 && (0.0..1e15).contains(&x) => Some(x as u64),
        _ => None,
    };
    v.and_then(|v| T::try_from(v).ok()).map(Some).ok_or_else(|| D::Error::custom("must be a whole number, 0 or more"))
}

impl ScreenshotIn {
    /// The names of every option, as the type declares them (an upload form's fields).
    pub fn field_names() -> &'static [&'static str] {
        static NAMES: std::sync::OnceLock<&'static [&'static str]> = std::sync::OnceLock::new();
        NAMES.get_or_init(struct_fields::<ScreenshotIn>)
    }

    /// The checks beyond the shape, with the defaults filled in: the bounds of DESIGN.md, an
    /// http(s) URL (`require_url` is false for an uploaded HTML document), selectors and the
    /// script within their sizes (blank ones dropped).
    pub fn into_options(self, require_url: bool) -> Result<CaptureOptions, FieldError> {
        let url = match self.url {
            None if require_url => return Err(FieldError::new("url", "is required")),
            None => None,
            Some(s) => Some(validate_url(&s)?),
        };
        // A device gives the defaults of the view; explicit values win.
        let device = match self.device.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(name) => Some((
                name.to_string(),
                crate::devices::preset(name).ok_or_else(|| {
                    FieldError::new("device", format!("'{name}' is not a device preset (GET /v1/devices lists them)"))
                })?,
            )),
        };
        let (dev_w, dev_h) = device.as_ref().map_or((defaults::WIDTH, defaults::HEIGHT), |(_, p)| (p.0, p.1));
        let width = within("width", self.width.unwrap_or(dev_w), bounds::WIDTH)?;
        let height = within("height", self.height.unwrap_or(dev_h), bounds::HEIGHT)?;
        let delay = within("delay", self.delay.unwrap_or(defaults::DELAY), (0, bounds::DELAY_MAX))?;
        let timeout_ms = within("timeoutMs", self.timeout_ms.unwrap_or(defaults::TIMEOUT_MS), bounds::TIMEOUT)?;
        let pre_screenshot_js = match self.pre_screenshot_js {
            Some(s) if s.len() > bounds::JS_MAX => {
                return Err(FieldError::new("preScreenshotJs", "must be at most 16384 bytes"));
            }
            Some(s) if s.trim().is_empty() => None,
            other => other,
        };
        // A preset's own pixel ratio may be beyond the bounds of an explicit one (4 on some phones).
        let device_scale_factor = match (self.device_scale_factor, &device) {
            (Some(d), _) if !(bounds::DSF.0..=bounds::DSF.1).contains(&d) => {
                return Err(FieldError::new("deviceScaleFactor", "must be between 0.5 and 3"));
            }
            (Some(d), _) => d,
            (None, Some((_, p))) => p.2,
            (None, None) => defaults::DEVICE_SCALE_FACTOR,
        };
        let user_agent = match self.user_agent {
            Some(ua) if ua.len() > bounds::USER_AGENT_MAX => {
                return Err(FieldError::new("userAgent", "must be at most 512 bytes"));
            }
            Some(ua) if ua.chars().any(char::is_control) => {
                return Err(FieldError::new("userAgent", "must not contain control characters"));
            }
            Some(ua) if !ua.trim().is_empty() => Some(ua.trim().to_string()),
            _ => device.as_ref().map(|(_, p)| p.4).filter(|ua| !ua.is_empty()).map(str::to_owned),
        };
        let mobile = device.as_ref().is_some_and(|(_, p)| p.3);
        let pdf = self.pdf.unwrap_or(false);
        let format = self.format.unwrap_or(defaults::FORMAT);
        let full_page = self.full_page.unwrap_or(false);
        let selector_opt = selector("selector", self.selector)?;
        if selector_opt.is_some() && self.clip.is_some() {
            return Err(FieldError::new("clip", "cannot be combined with selector"));
        }
        if pdf {
            for (set, field) in [
                (selector_opt.is_some(), "selector"),
                (self.clip.is_some(), "clip"),
                (self.image_width.is_some(), "imageWidth"),
                (self.quality.is_some(), "quality"),
                (self.omit_background == Some(true), "omitBackground"),
            ] {
                if set {
                    return Err(FieldError::new(field, "applies to images, not to a PDF"));
                }
            }
        }
        if let Some(c) = &self.clip {
            check_clip(c, full_page, width, height)?;
        }
        let hide_selectors = hide_selectors(self.hide_selectors)?;
        let quality = match self.quality {
            Some(_) if format == ImageFormat::Png => {
                return Err(FieldError::new("quality", "applies to jpeg and webp; a PNG is lossless"));
            }
            Some(q) => Some(within("quality", q, bounds::QUALITY)?),
            None => None,
        };
        let omit_background = self.omit_background.unwrap_or(false);
        if omit_background && format == ImageFormat::Jpeg {
            return Err(FieldError::new("omitBackground", "needs png or webp; a JPEG has no transparency"));
        }
        let image_width = match self.image_width {
            Some(w) => Some(within("imageWidth", w, bounds::IMAGE_WIDTH)?),
            None => None,
        };
        let pdf_options = match self.pdf_options {
            Some(_) if !pdf => return Err(FieldError::new("pdfOptions", "applies to a PDF (set pdf: true)")),
            Some(p) => Some(p.check()?),
            None => None,
        };
        let block_requests = self.block_requests.unwrap_or_default();
        if block_requests.len() > bounds::BLOCK_REQUESTS_MAX {
            return Err(FieldError::new("blockRequests", "must list at most 100 patterns"));
        }
        for (i, p) in block_requests.iter().enumerate() {
            if p.trim().is_empty() || p.len() > bounds::URL_MAX || p.chars().any(char::is_control) {
                return Err(FieldError::new(format!("blockRequests[{i}]"), "must be a URL pattern of 1 to 4096 bytes"));
            }
        }
        let mut block_resources = self.block_resources.unwrap_or_default();
        block_resources.dedup();
        let credentials = Credentials::check(self.headers, self.cookies, self.http_auth, url.as_deref())?;
        let profile = match self.profile.map(|p| p.trim().to_owned()) {
            Some(p) if p.is_empty() || p.chars().count() > crate::profile::NAME_MAX => {
                return Err(FieldError::new("profile", "must be a profile's id or name (1 to 100 characters)"));
            }
            Some(_) if url.is_none() => {
                return Err(FieldError::new("profile", "applies to a page at a URL, not to an upload"));
            }
            other => other,
        };
        let cache_ttl = match self.cache_ttl {
            Some(_) if url.is_none() => {
                return Err(FieldError::new("cacheTtl", "applies to a page at a URL, not to an upload"));
            }
            Some(t) => Some(within("cacheTtl", t, (1, bounds::CACHE_TTL_MAX))?),
            None => None,
        };
        let cache_key = match self.cache_key {
            Some(k) if k.is_empty() || k.len() > bounds::CACHE_KEY_MAX || k.chars().any(char::is_control) => {
                return Err(FieldError::new("cacheKey", "must be 1 to 256 bytes without control characters"));
            }
            other => other,
        };
        let scroll = match (format.is_video(), self.scroll) {
            (false, Some(_)) => return Err(FieldError::new("scroll", "applies to a video (format mp4, webm or gif)")),
            (false, None) => None,
            (true, s) => Some(check_scroll(s.unwrap_or_default())?),
        };
        if format.is_video() {
            for (set, field) in [
                (pdf, "pdf"),
                (full_page, "fullPage"),
                (selector_opt.is_some(), "selector"),
                (self.clip.is_some(), "clip"),
                (self.image_width.is_some(), "imageWidth"),
                (self.quality.is_some(), "quality"),
                (omit_background, "omitBackground"),
            ] {
                if set {
                    return Err(FieldError::new(field, "applies to images, not to a video"));
                }
            }
            let side = f64::from(width.max(height)) * device_scale_factor;
            if side > bounds::VIDEO_SIDE_MAX {
                return Err(FieldError::new(
                    "width",
                    "a video is at most 1920 pixels on a side (width and height × deviceScaleFactor)",
                ));
            }
        }
        let geolocation = match self.geolocation {
            Some(g) => Some(check_geolocation(g)?),
            None => None,
        };
        Ok(CaptureOptions {
            url,
            width,
            height,
            full_page,
            format,
            pdf,
            delay,
            dark_mode: self.dark_mode.unwrap_or(false),
            cookie_consent: self.cookie_consent.unwrap_or_default(),
            wait_for: selector("waitFor", self.wait_for)?,
            wait_until: self.wait_until.unwrap_or(defaults::WAIT_UNTIL),
            timeout_ms,
            pre_screenshot_js,
            device_scale_factor,
            click_before: selector("clickBefore", self.click_before)?,
            selector: selector_opt,
            clip: self.clip,
            hide_selectors,
            omit_background,
            quality,
            image_width,
            timezone: self.timezone.map(|t| check_timezone(&t)).transpose()?,
            locale: self.locale.map(|l| check_locale(&l)).transpose()?,
            geolocation,
            reduced_motion: self.reduced_motion.unwrap_or(false),
            media_type: self.media_type.unwrap_or_default(),
            fail_on_http_error: self.fail_on_http_error.unwrap_or(false),
            fail_if_content_contains: content_matches("failIfContentContains", self.fail_if_content_contains)?,
            fail_if_content_missing: content_matches("failIfContentMissing", self.fail_if_content_missing)?,
            device: device.map(|(name, _)| name),
            mobile,
            touch: mobile,
            user_agent,
            pdf_options,
            block_requests,
            block_resources,
            block_ads: self.block_ads.unwrap_or(false),
            block_trackers: self.block_trackers.unwrap_or(false),
            block_chats: self.block_chats.unwrap_or(false),
            block_annoyances: self.block_annoyances.unwrap_or(false),
            hide_popups: self.hide_popups.unwrap_or(self.block_annoyances.unwrap_or(false)),
            credentials_set: credentials.as_ref().map(Credentials::summary),
            credentials,
            cache_ttl,
            cache_key,
            storage: self.storage.map(StorageTarget::check).transpose()?,
            scroll,
            profile,
            state: None,
        })
    }
}

impl CaptureOptions {
    /// The result's format: `pdf` or the image format.
    pub fn output_format(&self) -> OutputFormat {
        match (self.pdf, self.format) {
            (true, _) => OutputFormat::Pdf,
            (false, ImageFormat::Png) => OutputFormat::Png,
            (false, ImageFormat::Jpeg) => OutputFormat::Jpeg,
            (false, ImageFormat::Webp) => OutputFormat::Webp,
            (false, ImageFormat::Mp4) => OutputFormat::Mp4,
            (false, ImageFormat::Webm) => OutputFormat::Webm,
            (false, ImageFormat::Gif) => OutputFormat::Gif,
        }
    }

    /// Actions a capture with these options is charged: one, or for a video one per
    /// started 10 seconds.
    pub fn actions(&self) -> i64 {
        self.scroll.as_ref().map_or(1, ScrollSettings::actions)
    }
}

/// Accept only absolute http(s) URLs with a host.
pub fn validate_url(s: &str) -> Result<String, FieldError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(FieldError::new("url", "is required"));
    }
    if s.len() > bounds::URL_MAX {
        return Err(FieldError::new("url", "must be at most 4096 characters"));
    }
    let u = url::Url::parse(s).map_err(|e| FieldError::new("url", format!("is not a valid URL ({e})")))?;
    if u.scheme() != "http" && u.scheme() != "https" {
        return Err(FieldError::new("url", "must use http or https"));
    }
    if u.host_str().is_none_or(str::is_empty) {
        return Err(FieldError::new("url", "must have a host"));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(FieldError::new("url", "must not contain credentials"));
    }
    Ok(u.to_string())
}

/// `value` when within `(min, max)`, refused naming `field` otherwise.
fn within<T: PartialOrd + std::fmt::Display + Copy>(
    field: &str,
    value: T,
    (min, max): (T, T),
) -> Result<T, FieldError> {
    if value < min || value > max {
        return Err(FieldError::new(field, format!("must be between {min} and {max}")));
    }
    Ok(value)
}

/// A selector within its size; a blank one is none.
fn selector(field: &str, value: Option<String>) -> Result<Option<String>, FieldError> {
    match value {
        Some(s) if s.len() > bounds::SELECTOR_MAX => Err(FieldError::new(field, "must be at most 1024 characters")),
        Some(s) if s.trim().is_empty() => Ok(None),
        other => Ok(other),
    }
}

/// A clip within its bounds (and, without fullPage, within the viewport).
fn check_clip(c: &Clip, full_page: bool, width: u32, height: u32) -> Result<(), FieldError> {
    let finite = [c.x, c.y, c.width, c.height].iter().all(|v| v.is_finite());
    if !finite || c.x < 0.0 || c.y < 0.0 {
        return Err(FieldError::new("clip", "x and y must be 0 or more"));
    }
    if c.width < 1.0 || c.height < 1.0 || c.width > bounds::CLIP_MAX || c.height > bounds::CLIP_MAX {
        return Err(FieldError::new("clip", "width and height must be between 1 and 16384"));
    }
    if c.x + c.width > bounds::CLIP_MAX || c.y + c.height > bounds::CLIP_MAX {
        return Err(FieldError::new("clip", "must lie within 16384 CSS pixels of the top left"));
    }
    if !full_page && (c.x + c.width > f64::from(width) || c.y + c.height > f64::from(height)) {
        return Err(FieldError::new(
            "clip",
            format!("must lie within the {width}×{height} viewport (set fullPage to clip the whole page)"),
        ));
    }
    Ok(())
}

/// `hideSelectors`: at most 50, each within its size; blank ones dropped.
fn hide_selectors(list: Option<Vec<String>>) -> Result<Vec<String>, FieldError> {
    let list = list.unwrap_or_default();
    if list.len() > bounds::HIDE_SELECTORS_MAX {
        return Err(FieldError::new("hideSelectors", "must list at most 50 selectors"));
    }
    let mut out = Vec::with_capacity(list.len());
    for (i, s) in list.into_iter().enumerate() {
        if s.len() > bounds::SELECTOR_MAX {
            return Err(FieldError::new(format!("hideSelectors[{i}]"), "must be at most 1024 characters"));
        }
        if !s.trim().is_empty() {
            out.push(s);
        }
    }
    Ok(out)
}

/// `failIfContent…`: at most 10 non-empty strings within their size.
fn content_matches(field: &str, list: Option<Vec<String>>) -> Result<Vec<String>, FieldError> {
    let list = list.unwrap_or_default();
    if list.len() > bounds::CONTENT_MATCHES_MAX {
        return Err(FieldError::new(field, "must list at most 10 strings"));
    }
    for (i, s) in list.iter().enumerate() {
        if s.is_empty() || s.len() > bounds::CONTENT_MATCH_MAX {
            return Err(FieldError::new(format!("{field}[{i}]"), "must be 1 to 1024 bytes"));
        }
    }
    Ok(list)
}

/// A position on the globe.
fn check_geolocation(g: Geolocation) -> Result<Geolocation, FieldError> {
    if !(-90.0..=90.0).contains(&g.latitude) {
        return Err(FieldError::new("geolocation.latitude", "must be between -90 and 90"));
    }
    if !(-180.0..=180.0).contains(&g.longitude) {
        return Err(FieldError::new("geolocation.longitude", "must be between -180 and 180"));
    }
    if g.accuracy.is_some_and(|a| !(0.0..=100_000.0).contains(&a)) {
        return Err(FieldError::new("geolocation.accuracy", "must be between 0 and 100000 metres"));
    }
    Ok(g)
}

/// An IANA time zone name the tz database knows (as Chromium's ICU does).
fn check_timezone(t: &str) -> Result<String, FieldError> {
    let t = t.trim();
    if t.len() > bounds::TIMEZONE_MAX || t.parse::<chrono_tz::Tz>().is_err() {
        return Err(FieldError::new("timezone", format!("'{t}' is not an IANA time zone (e.g. Europe/Berlin)")));
    }
    Ok(t.to_string())
}

/// A BCP 47 language tag: a 2-3 letter language, then subtags of 1-8 letters or digits
/// (`de`, `de-DE`, `zh-Hant-TW`, `sr-Latn`).
fn check_locale(l: &str) -> Result<String, FieldError> {
    let l = l.trim();
    let mut parts = l.split('-');
    let lang_ok =
        parts.next().is_some_and(|p| (2..=3).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphabetic()));
    let rest_ok = parts.all(|p| (1..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()));
    if l.len() > bounds::LOCALE_MAX || !lang_ok || !rest_ok {
        return Err(FieldError::new("locale", format!("'{l}' is not a BCP 47 language tag (e.g. de-DE)")));
    }
    Ok(l.to_string())
}

/// The field names serde gives a struct, read from its `Deserialize` impl.
fn struct_fields<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    use serde::de::{self, Visitor};
    struct Names<'a>(&'a mut &'static [&'static str]);
    impl<'de> de::Deserializer<'de> for Names<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("only structs"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("names read"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }
    let mut names: &'static [&'static str] = &[];
    let _ = T::deserialize(Names(&mut names));
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn parse(v: Value) -> Result<CaptureOptions, String> {
        let shaped: ScreenshotIn = serde_json::from_value(v).map_err(|e| format!("shape: {e}"))?;
        shaped.into_options(true).map_err(|e| e.field)
    }

    #[test]
    fn defaults_follow_the_contract() {
        let o = parse(json!({"url": "https://example.com"})).unwrap();
        assert_eq!((o.width, o.height), (1280, 800));
        assert_eq!(o.format, ImageFormat::Png);
        assert_eq!(o.wait_until, WaitUntil::Networkidle);
        assert_eq!(o.timeout_ms, 10_000);
        assert!(o.cookie_consent == CookieConsent::Auto && !o.full_page && !o.pdf && !o.dark_mode);
        assert_eq!(o.device_scale_factor, 1.0);
        let o = parse(json!({"url": "https://example.com", "width": 800.0, "format": "jpg"})).unwrap();
        assert_eq!((o.width, o.format), (800, ImageFormat::Jpeg));
    }

    #[test]
    fn storage_keys_are_made_from_their_template() {
        let o = parse(json!({"url": "https://x.com", "storage": {"destination": "sd_abc"}})).unwrap();
        let t = o.storage.unwrap();
        assert_eq!(t.render_key("scr_1", "2026-11-29", "png", "x.com"), "scr_1.png");
        let t = StorageTarget { destination: "sd_abc".into(), key: Some("shots/{date}/{host}-{id}.{ext}".into()) };
        assert_eq!(t.clone().check().unwrap(), t);
        assert_eq!(t.render_key("scr_1", "2026-11-29", "mp4", "x.com"), "shots/2026-11-29/x.com-scr_1.mp4");
    }

    #[test]
    fn a_video_scrolls_top_to_end_and_is_charged_per_started_ten_seconds() {
        let o = parse(json!({"url": "https://x.com", "format": "mp4"})).unwrap();
        let s = o.scroll.clone().unwrap();
        assert_eq!((s.duration_ms, s.easing, s.scroll_back, s.frames()), (5000, Easing::EaseInOut, false, 125));
        assert_eq!((s.position(0), s.position(124)), (0.0, 1.0));
        assert_eq!(o.output_format(), OutputFormat::Mp4);
        assert_eq!(o.actions(), 1);
        let o = parse(json!({"url": "https://x.com", "format": "gif",
            "scroll": {"durationMs": 10001, "easing": "linear", "scrollBack": true, "untilSelector": "#end"}}))
        .unwrap();
        let s = o.scroll.clone().unwrap();
        assert_eq!((o.actions(), s.frames(), s.until_selector.as_deref()), (2, 251, Some("#end")));
        // Three quarters down, a quarter back: the end at 3/4, the top again last.
        assert_eq!((s.position(0), s.position(187), s.position(250)), (0.0, 1.0, 0.0));
        assert_eq!(
            parse(json!({"url": "https://x.com", "format": "webm", "scroll": {"durationMs": 30000}}))
                .unwrap()
                .actions(),
            3
        );
        // Every easing starts at the top and ends at the end, never going back on the way.
        for e in [Easing::Linear, Easing::EaseIn, Easing::EaseOut, Easing::EaseInOut] {
            assert_eq!((e.at(0.0), e.at(1.0)), (0.0, 1.0));
            assert!((1..=100).all(|i| e.at(f64::from(i) / 100.0) >= e.at(f64::from(i - 1) / 100.0)), "{e:?}");
        }
        assert_eq!(parse(json!({"url": "https://x.com"})).unwrap().actions(), 1);
    }

    #[test]
    fn rejects_bad_values_naming_the_field() {
        let cases = [
            (json!({}), "url"),
            (json!({"url": "ftp://x.com"}), "url"),
            (json!({"url": "file:///etc/passwd"}), "url"),
            (json!({"url": "javascript:alert(1)"}), "url"),
            (json!({"url": "https://x.com", "width": 99}), "width"),
            (json!({"url": "https://x.com", "width": 3841}), "width"),
            (json!({"url": "https://x.com", "height": 2161}), "height"),
            (json!({"url": "https://x.com", "delay": 30001}), "delay"),
            (json!({"url": "https://x.com", "timeoutMs": 999}), "timeoutMs"),
            (json!({"url": "https://x.com", "deviceScaleFactor": 4}), "deviceScaleFactor"),
            (json!({"url": "https://x.com", "preScreenshotJs": "x".repeat(16385)}), "preScreenshotJs"),
            (json!({"url": "https://x.com", "waitFor": "x".repeat(1025)}), "waitFor"),
            (json!({"url": "https://x.com", "selector": "x".repeat(1025)}), "selector"),
            (
                json!({"url": "https://x.com", "selector": "#a", "clip": {"x": 0, "y": 0, "width": 9, "height": 9}}),
                "clip",
            ),
            (json!({"url": "https://x.com", "pdf": true, "selector": "#a"}), "selector"),
            (json!({"url": "https://x.com", "pdf": true, "imageWidth": 300}), "imageWidth"),
            (json!({"url": "https://x.com", "clip": {"x": 0, "y": 0, "width": 0, "height": 9}}), "clip"),
            (json!({"url": "https://x.com", "clip": {"x": 1200, "y": 0, "width": 100, "height": 9}}), "clip"),
            (json!({"url": "https://x.com", "clip": {"x": -1, "y": 0, "width": 10, "height": 9}}), "clip"),
            (json!({"url": "https://x.com", "hideSelectors": vec![".a"; 51]}), "hideSelectors"),
            (json!({"url": "https://x.com", "hideSelectors": [".a", "x".repeat(1025)]}), "hideSelectors[1]"),
            (json!({"url": "https://x.com", "quality": 50}), "quality"),
            (json!({"url": "https://x.com", "format": "jpeg", "quality": 0}), "quality"),
            (json!({"url": "https://x.com", "format": "webp", "quality": 101}), "quality"),
            (json!({"url": "https://x.com", "format": "jpeg", "omitBackground": true}), "omitBackground"),
            (json!({"url": "https://x.com", "imageWidth": 15}), "imageWidth"),
            (json!({"url": "https://x.com", "imageWidth": 7681}), "imageWidth"),
            (json!({"url": "https://x.com", "timezone": "Mars/Olympus"}), "timezone"),
            (json!({"url": "https://x.com", "locale": "german"}), "locale"),
            (json!({"url": "https://x.com", "locale": "de_DE"}), "locale"),
            (json!({"url": "https://x.com", "geolocation": {"latitude": 91, "longitude": 0}}), "geolocation.latitude"),
            (
                json!({"url": "https://x.com", "geolocation": {"latitude": 0, "longitude": 181}}),
                "geolocation.longitude",
            ),
            (
                json!({"url": "https://x.com", "geolocation": {"latitude": 0, "longitude": 0, "accuracy": -1}}),
                "geolocation.accuracy",
            ),
            (json!({"url": "https://x.com", "failIfContentContains": vec!["x"; 11]}), "failIfContentContains"),
            (json!({"url": "https://x.com", "failIfContentMissing": ["ok", ""]}), "failIfContentMissing[1]"),
            (json!({"url": "https://x.com", "device": "nokia-3310"}), "device"),
            (json!({"url": "https://x.com", "device": "iphone-15", "deviceScaleFactor": 4}), "deviceScaleFactor"),
            (json!({"url": "https://x.com", "userAgent": "x".repeat(513)}), "userAgent"),
            (json!({"url": "https://x.com", "userAgent": "a\r\nX-Injected: 1"}), "userAgent"),
            (json!({"url": "https://x.com", "pdfOptions": {"landscape": true}}), "pdfOptions"),
            (
                json!({"url": "https://x.com", "pdf": true, "pdfOptions": {"paperFormat": "a4", "paperWidth": "10in"}}),
                "pdfOptions.paperWidth",
            ),
            (
                json!({"url": "https://x.com", "pdf": true, "pdfOptions": {"paperWidth": "10in"}}),
                "pdfOptions.paperHeight",
            ),
            (
                json!({"url": "https://x.com", "pdf": true, "pdfOptions": {"paperWidth": "10furlong", "paperHeight": 5}}),
                "pdfOptions.paperWidth",
            ),
            (
                json!({"url": "https://x.com", "pdf": true, "pdfOptions": {"margin": {"top": "-1cm"}}}),
                "pdfOptions.margin.top",
            ),
            (json!({"url": "https://x.com", "pdf": true, "pdfOptions": {"scale": 3}}), "pdfOptions.scale"),
            (
                json!({"url": "https://x.com", "pdf": true, "pdfOptions": {"pageRanges": "1-a"}}),
                "pdfOptions.pageRanges",
            ),
            (json!({"url": "https://x.com", "pdf": true, "pdfOptions": {"pageRanges": "0"}}), "pdfOptions.pageRanges"),
            (json!({"url": "https://x.com", "blockRequests": vec!["*x*"; 101]}), "blockRequests"),
            (json!({"url": "https://x.com", "blockRequests": ["*/ads/*", " "]}), "blockRequests[1]"),
            (json!({"url": "https://x.com", "storage": {"destination": "rlk_x"}}), "storage.destination"),
            (json!({"url": "https://x.com", "storage": {"destination": "sd_abc", "key": "/abs/{id}"}}), "storage.key"),
            (json!({"url": "https://x.com", "storage": {"destination": "sd_abc", "key": "a/../{id}"}}), "storage.key"),
            (json!({"url": "https://x.com", "storage": {"destination": "sd_abc", "key": "{id}{nope}"}}), "storage.key"),
            (json!({"url": "https://x.com", "storage": {"destination": "sd_abc", "key": "{id"}}), "storage.key"),
            (json!({"url": "https://x.com", "scroll": {"durationMs": 2000}}), "scroll"),
            (json!({"url": "https://x.com", "format": "mp4", "scroll": {"durationMs": 999}}), "scroll.durationMs"),
            (json!({"url": "https://x.com", "format": "mp4", "scroll": {"durationMs": 30001}}), "scroll.durationMs"),
            (json!({"url": "https://x.com", "format": "webm", "fullPage": true}), "fullPage"),
            (json!({"url": "https://x.com", "format": "gif", "pdf": true}), "pdf"),
            (json!({"url": "https://x.com", "format": "mp4", "quality": 50}), "quality"),
            (json!({"url": "https://x.com", "format": "mp4", "width": 1920, "deviceScaleFactor": 2}), "width"),
        ];
        for (v, field) in cases {
            assert_eq!(parse(v.clone()).unwrap_err(), field, "{v}");
        }
        // Wrong shapes are refused by the type itself (the server names the field by its path).
        for v in [
            json!({"url": "https://x.com", "width": "wide"}),
            json!({"url": "https://x.com", "width": 800.5}),
            json!({"url": "https://x.com", "width": -1}),
            json!({"url": "https://x.com", "format": "tiff"}),
            json!({"url": "https://x.com", "waitUntil": "idle"}),
            json!({"url": "https://x.com", "cookieConsent": "yes"}),
            json!({"url": "https://x.com", "fullPage": "yes"}),
            json!({"url": "https://x.com", "fullpage": true}),
            json!({"url": "https://x.com", "mediaType": "tv"}),
            json!({"url": "https://x.com", "clip": {"x": 0, "y": 0, "width": 10}}),
            json!({"url": "https://x.com", "clip": {"x": 0, "y": 0, "width": 10, "height": 10, "z": 1}}),
            json!({"url": "https://x.com", "hideSelectors": ".ad"}),
            json!({"url": "https://x.com", "geolocation": {"lat": 1, "lng": 2}}),
            json!({"url": "https://x.com", "quality": 80.5}),
        ] {
            assert!(parse(v.clone()).unwrap_err().starts_with("shape: "), "{v}");
        }
    }

    #[test]
    fn the_new_options_are_read_and_defaulted() {
        let o = parse(json!({
            "url": "https://x.com", "format": "webp", "quality": 55, "imageWidth": 640, "omitBackground": true,
            "hideSelectors": [".ad", "  ", "#chat"], "selector": "main h1", "timezone": "Asia/Tokyo",
            "locale": "zh-Hant-TW", "geolocation": {"latitude": 35.68, "longitude": 139.76},
            "reducedMotion": true, "mediaType": "print"
        }))
        .unwrap();
        assert_eq!((o.quality, o.image_width, o.omit_background), (Some(55), Some(640), true));
        assert_eq!(o.hide_selectors, vec![".ad".to_string(), "#chat".to_string()]);
        assert_eq!(o.selector.as_deref(), Some("main h1"));
        assert_eq!((o.timezone.as_deref(), o.locale.as_deref()), (Some("Asia/Tokyo"), Some("zh-Hant-TW")));
        assert_eq!(o.geolocation, Some(Geolocation { latitude: 35.68, longitude: 139.76, accuracy: None }));
        assert_eq!((o.reduced_motion, o.media_type), (true, MediaType::Print));
        let clip = parse(
            json!({"url": "https://x.com", "fullPage": true, "clip": {"x": 0, "y": 5000, "width": 300, "height": 200}}),
        )
        .unwrap()
        .clip;
        assert_eq!(clip, Some(Clip { x: 0.0, y: 5000.0, width: 300.0, height: 200.0 }));
        // A job stored before these options existed reads their defaults, and the defaults
        // are not written out.
        let old = json!({"url": "https://x.com/", "width": 1280, "height": 800, "fullPage": false, "format": "png",
            "pdf": false, "delay": 0, "darkMode": false, "cookieConsent": true, "waitFor": null,
            "waitUntil": "networkidle", "timeoutMs": 10000, "preScreenshotJs": null, "deviceScaleFactor": 1.0,
            "clickBefore": null});
        let read: CaptureOptions = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(read, CaptureOptions { url: Some("https://x.com/".into()), ..CaptureOptions::default() });
        // `cookieConsent: true` was `auto`, and is written by its name now.
        let mut named = old.clone();
        named["cookieConsent"] = json!("auto");
        assert_eq!(serde_json::to_value(&read).unwrap(), named);
        // blockAnnoyances turns hidePopups on, unless it is set to false.
        let a = parse(json!({"url": "https://x.com", "blockAnnoyances": true})).unwrap();
        assert_eq!((a.block_annoyances, a.hide_popups), (true, true));
        let a = parse(json!({"url": "https://x.com", "blockAnnoyances": true, "hidePopups": false})).unwrap();
        assert_eq!((a.block_annoyances, a.hide_popups), (true, false));
        let a = parse(json!({"url": "https://x.com", "hidePopups": true})).unwrap();
        assert_eq!((a.block_annoyances, a.hide_popups), (false, true));
        let mut off = old.clone();
        off["cookieConsent"] = json!(false);
        let off: CaptureOptions = serde_json::from_value(off).unwrap();
        assert_eq!(off.cookie_consent, CookieConsent::None);
    }

    #[test]
    fn pdf_options_become_inches() {
        let o = parse(json!({"url": "https://x.com", "pdf": true, "pdfOptions": {
            "paperWidth": "210mm", "paperHeight": 1056, "landscape": true, "scale": 0.5, "pageRanges": "1-2, 4, 6-",
            "margin": {"top": "1in", "bottom": "2.54cm", "left": 48}, "printBackground": false,
            "footerTemplate": "<span class='pageNumber'></span>"}}))
        .unwrap();
        let p = o.pdf_options.unwrap();
        let (w, h) = p.paper.unwrap();
        assert!((w - 8.2677).abs() < 1e-3 && (h - 11.0).abs() < 1e-9, "{w} {h}");
        assert_eq!(p.margin, [1.0, 0.0, 1.0, 0.5]);
        assert_eq!((p.landscape, p.print_background, p.scale), (true, false, 0.5));
        assert_eq!(p.page_ranges.as_deref(), Some("1-2, 4, 6-"));
        assert_eq!(p.header_template, None);
        let p = parse(json!({"url": "https://x.com", "pdf": true, "pdfOptions": {"paperFormat": "letter"}})).unwrap();
        assert_eq!(p.pdf_options.unwrap().paper, Some((8.5, 11.0)));
    }

    #[test]
    fn a_device_sets_the_view_and_explicit_values_win() {
        let o = parse(json!({"url": "https://x.com", "device": "iphone-15"})).unwrap();
        assert_eq!((o.width, o.height, o.device_scale_factor, o.mobile, o.touch), (393, 852, 3.0, true, true));
        assert!(o.user_agent.as_deref().is_some_and(|ua| ua.contains("iPhone")));
        assert_eq!(o.device.as_deref(), Some("iphone-15"));
        let o = parse(json!({"url": "https://x.com", "device": "iphone-15", "width": 500, "deviceScaleFactor": 1,
            "userAgent": "Kettlebot/1.0"}))
        .unwrap();
        assert_eq!((o.width, o.height, o.device_scale_factor), (500, 852, 1.0));
        assert_eq!(o.user_agent.as_deref(), Some("Kettlebot/1.0"));
        // A desktop preset has the browser's own user agent; a preset's ratio may pass 3.
        let o = parse(json!({"url": "https://x.com", "device": "desktop-1920"})).unwrap();
        assert_eq!((o.width, o.height, o.mobile, o.user_agent), (1920, 1080, false, None));
        assert_eq!(parse(json!({"url": "https://x.com", "device": "galaxy-s8"})).unwrap().device_scale_factor, 4.0);
    }

    #[test]
    fn the_field_names_are_the_types_own() {
        let names = ScreenshotIn::field_names();
        assert_eq!(names.len(), 47);
        assert_eq!(
            (names[0], names[14], names[33], names[37], names[38], names[43], names[46]),
            ("url", "clickBefore", "blockResources", "blockAnnoyances", "hidePopups", "cacheKey", "profile")
        );
        assert!(names.contains(&"preScreenshotJs") && names.contains(&"deviceScaleFactor"));
    }

    #[test]
    fn a_request_built_in_code_serialises_only_what_it_sets() {
        let r = ScreenshotIn { url: Some("https://example.com".into()), full_page: Some(true), ..Default::default() };
        assert_eq!(serde_json::to_value(&r).unwrap(), json!({"url": "https://example.com", "fullPage": true}));
    }
}
