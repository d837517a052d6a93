//! Capture options of `POST /v1/screenshot`: defaults, bounds (DESIGN.md) and validation.

use serde::{Deserialize, Serialize};

use crate::error::FieldError;
use crate::states::OutputFormat;

/// Raster output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    Png,
    #[serde(alias = "jpg")]
    Jpeg,
    Webp,
}

impl ImageFormat {
    /// Name on the wire and file extension.
    pub fn as_str(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpeg",
            ImageFormat::Webp => "webp",
        }
    }
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

/// `cookieConsent` on the wire: `auto` dismisses common consent banners, `none` leaves them
/// (stored in [`CaptureOptions::cookie_consent`] as a bool).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum CookieConsent {
    Auto,
    None,
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
    /// true = `cookieConsent: auto`.
    pub cookie_consent: bool,
    pub wait_for: Option<String>,
    pub wait_until: WaitUntil,
    pub timeout_ms: u64,
    pub pre_screenshot_js: Option<String>,
    pub device_scale_factor: f64,
    pub click_before: Option<String>,
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
            cookie_consent: true,
            wait_for: None,
            wait_until: defaults::WAIT_UNTIL,
            timeout_ms: defaults::TIMEOUT_MS,
            pre_screenshot_js: None,
            device_scale_factor: defaults::DEVICE_SCALE_FACTOR,
            click_before: None,
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
    /// Tallest full-page output, in output pixels.
    pub const FULL_PAGE_MAX: u32 = 16384;
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
    /// Image format.
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
    /// auto dismisses common cookie banners; none leaves them.
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
        let width = within("width", self.width.unwrap_or(defaults::WIDTH), bounds::WIDTH)?;
        let height = within("height", self.height.unwrap_or(defaults::HEIGHT), bounds::HEIGHT)?;
        let delay = within("delay", self.delay.unwrap_or(defaults::DELAY), (0, bounds::DELAY_MAX))?;
        let timeout_ms = within("timeoutMs", self.timeout_ms.unwrap_or(defaults::TIMEOUT_MS), bounds::TIMEOUT)?;
        let pre_screenshot_js = match self.pre_screenshot_js {
            Some(s) if s.len() > bounds::JS_MAX => {
                return Err(FieldError::new("preScreenshotJs", "must be at most 16384 bytes"));
            }
            Some(s) if s.trim().is_empty() => None,
            other => other,
        };
        let device_scale_factor = self.device_scale_factor.unwrap_or(defaults::DEVICE_SCALE_FACTOR);
        if !(bounds::DSF.0..=bounds::DSF.1).contains(&device_scale_factor) {
            return Err(FieldError::new("deviceScaleFactor", "must be between 0.5 and 3"));
        }
        Ok(CaptureOptions {
            url,
            width,
            height,
            full_page: self.full_page.unwrap_or(false),
            format: self.format.unwrap_or(defaults::FORMAT),
            pdf: self.pdf.unwrap_or(false),
            delay,
            dark_mode: self.dark_mode.unwrap_or(false),
            cookie_consent: self.cookie_consent.unwrap_or(CookieConsent::Auto) == CookieConsent::Auto,
            wait_for: selector("waitFor", self.wait_for)?,
            wait_until: self.wait_until.unwrap_or(defaults::WAIT_UNTIL),
            timeout_ms,
            pre_screenshot_js,
            device_scale_factor,
            click_before: selector("clickBefore", self.click_before)?,
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
        }
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
        assert!(o.cookie_consent && !o.full_page && !o.pdf && !o.dark_mode);
        assert_eq!(o.device_scale_factor, 1.0);
        let o = parse(json!({"url": "https://example.com", "width": 800.0, "format": "jpg"})).unwrap();
        assert_eq!((o.width, o.format), (800, ImageFormat::Jpeg));
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
        ];
        for (v, field) in cases {
            assert_eq!(parse(v.clone()).unwrap_err(), field, "{v}");
        }
        // Wrong shapes are refused by the type itself (the server names the field by its path).
        for v in [
            json!({"url": "https://x.com", "width": "wide"}),
            json!({"url": "https://x.com", "width": 800.5}),
            json!({"url": "https://x.com", "width": -1}),
            json!({"url": "https://x.com", "format": "gif"}),
            json!({"url": "https://x.com", "waitUntil": "idle"}),
            json!({"url": "https://x.com", "cookieConsent": "yes"}),
            json!({"url": "https://x.com", "fullPage": "yes"}),
            json!({"url": "https://x.com", "fullpage": true}),
        ] {
            assert!(parse(v.clone()).unwrap_err().starts_with("shape: "), "{v}");
        }
    }

    #[test]
    fn the_field_names_are_the_types_own() {
        let names = ScreenshotIn::field_names();
        assert_eq!(names.len(), 15);
        assert_eq!((names[0], names[14]), ("url", "clickBefore"));
        assert!(names.contains(&"preScreenshotJs") && names.contains(&"deviceScaleFactor"));
    }

    #[test]
    fn a_request_built_in_code_serialises_only_what_it_sets() {
        let r = ScreenshotIn { url: Some("https://example.com".into()), full_page: Some(true), ..Default::default() };
        assert_eq!(serde_json::to_value(&r).unwrap(), json!({"url": "https://example.com", "fullPage": true}));
    }
}
