//! Capture options of `POST /v1/screenshot`: defaults, bounds (DESIGN.md) and validation.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::FieldError;
use crate::states::OutputFormat;

/// Raster output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    Png,
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

const KNOWN: &[&str] = &[
    "url",
    "width",
    "height",
    "fullPage",
    "format",
    "pdf",
    "delay",
    "darkMode",
    "cookieConsent",
    "waitFor",
    "waitUntil",
    "timeoutMs",
    "preScreenshotJs",
    "deviceScaleFactor",
    "clickBefore",
];

impl CaptureOptions {
    /// The names of every option (for form parsing and docs).
    pub fn field_names() -> &'static [&'static str] {
        KNOWN
    }

    /// Validate a JSON object. `require_url` is false for uploaded HTML documents.
    pub fn from_json(obj: &Map<String, Value>, require_url: bool) -> Result<Self, FieldError> {
        let url = match obj.get("url") {
            None | Some(Value::Null) if require_url => {
                return Err(FieldError::new("url", "is required"));
            }
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(validate_url(s)?),
            Some(_) => return Err(FieldError::new("url", "must be a string")),
        };
        let width = int(obj, "width", defaults::WIDTH as i64, bounds::WIDTH.0 as i64, bounds::WIDTH.1 as i64)? as u32;
        let height =
            int(obj, "height", defaults::HEIGHT as i64, bounds::HEIGHT.0 as i64, bounds::HEIGHT.1 as i64)? as u32;
        let full_page = boolean(obj, "fullPage", false)?;
        let format = match string(obj, "format")?.as_deref() {
            None => defaults::FORMAT,
            Some("png") => ImageFormat::Png,
            Some("jpeg") | Some("jpg") => ImageFormat::Jpeg,
            Some("webp") => ImageFormat::Webp,
            Some(_) => return Err(FieldError::new("format", "must be one of png, jpeg, webp")),
        };
        let pdf = boolean(obj, "pdf", false)?;
        let delay = int(obj, "delay", defaults::DELAY as i64, 0, bounds::DELAY_MAX as i64)? as u64;
        let dark_mode = boolean(obj, "darkMode", false)?;
        let cookie_consent = match string(obj, "cookieConsent")?.as_deref() {
            None | Some("auto") => true,
            Some("none") => false,
            Some(_) => return Err(FieldError::new("cookieConsent", "must be auto or none")),
        };
        let wait_for = selector(obj, "waitFor")?;
        let wait_until = match string(obj, "waitUntil")?.as_deref() {
            None => defaults::WAIT_UNTIL,
            Some("networkidle") => WaitUntil::Networkidle,
            Some("load") => WaitUntil::Load,
            Some("domcontentloaded") => WaitUntil::Domcontentloaded,
            Some("none") => WaitUntil::None,
            Some(_) => {
                return Err(FieldError::new("waitUntil", "must be one of networkidle, load, domcontentloaded, none"));
            }
        };
        let timeout_ms =
            int(obj, "timeoutMs", defaults::TIMEOUT_MS as i64, bounds::TIMEOUT.0 as i64, bounds::TIMEOUT.1 as i64)?
                as u64;
        let pre_screenshot_js = match string(obj, "preScreenshotJs")? {
            Some(s) if s.len() > bounds::JS_MAX => {
                return Err(FieldError::new("preScreenshotJs", "must be at most 16384 bytes"));
            }
            Some(s) if s.trim().is_empty() => None,
            other => other,
        };
        let device_scale_factor = match obj.get("deviceScaleFactor") {
            None | Some(Value::Null) => defaults::DEVICE_SCALE_FACTOR,
            Some(Value::Number(n)) => {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if !(bounds::DSF.0..=bounds::DSF.1).contains(&f) {
                    return Err(FieldError::new("deviceScaleFactor", "must be between 0.5 and 3"));
                }
                f
            }
            Some(_) => return Err(FieldError::new("deviceScaleFactor", "must be a number")),
        };
        let click_before = selector(obj, "clickBefore")?;
        Ok(CaptureOptions {
            url,
            width,
            height,
            full_page,
            format,
            pdf,
            delay,
            dark_mode,
            cookie_consent,
            wait_for,
            wait_until,
            timeout_ms,
            pre_screenshot_js,
            device_scale_factor,
            click_before,
        })
    }

    /// Turn multipart form fields (all strings) into the JSON object `from_json` expects.
    pub fn form_to_json(fields: &[(String, String)]) -> Map<String, Value> {
        let mut m = Map::new();
        for (k, v) in fields {
            let val = match k.as_str() {
                "width" | "height" | "delay" | "timeoutMs" | "deviceScaleFactor" => {
                    match v.trim().parse::<serde_json::Number>() {
                        Ok(n) => Value::Number(n),
                        Err(_) => Value::String(v.clone()),
                    }
                }
                "fullPage" | "pdf" | "darkMode" => match v.trim() {
                    "true" | "1" | "on" => Value::Bool(true),
                    "false" | "0" | "off" | "" => Value::Bool(false),
                    _ => Value::String(v.clone()),
                },
                _ => Value::String(v.clone()),
            };
            m.insert(k.clone(), val);
        }
        m
    }

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

fn int(obj: &Map<String, Value>, f: &str, def: i64, min: i64, max: i64) -> Result<i64, FieldError> {
    match obj.get(f) {
        None | Some(Value::Null) => Ok(def),
        Some(Value::Number(n)) => {
            let v = match n.as_i64() {
                Some(v) => v,
                None => match n.as_f64() {
                    Some(x) if x.fract() == 0.0 && x.abs() < 1e15 => x as i64,
                    _ => return Err(FieldError::new(f, "must be a whole number")),
                },
            };
            if v < min || v > max {
                return Err(FieldError::new(f, format!("must be between {min} and {max}")));
            }
            Ok(v)
        }
        Some(_) => Err(FieldError::new(f, "must be a number")),
    }
}

fn boolean(obj: &Map<String, Value>, f: &str, def: bool) -> Result<bool, FieldError> {
    match obj.get(f) {
        None | Some(Value::Null) => Ok(def),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(FieldError::new(f, "must be true or false")),
    }
}

fn string(obj: &Map<String, Value>, f: &str) -> Result<Option<String>, FieldError> {
    match obj.get(f) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(FieldError::new(f, "must be a string")),
    }
}

fn selector(obj: &Map<String, Value>, f: &str) -> Result<Option<String>, FieldError> {
    match string(obj, f)? {
        Some(s) if s.len() > bounds::SELECTOR_MAX => Err(FieldError::new(f, "must be at most 1024 characters")),
        Some(s) if s.trim().is_empty() => Ok(None),
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<CaptureOptions, FieldError> {
        CaptureOptions::from_json(v.as_object().unwrap(), true)
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
            (json!({"url": "https://x.com", "width": "wide"}), "width"),
            (json!({"url": "https://x.com", "format": "gif"}), "format"),
            (json!({"url": "https://x.com", "delay": 30001}), "delay"),
            (json!({"url": "https://x.com", "timeoutMs": 999}), "timeoutMs"),
            (json!({"url": "https://x.com", "deviceScaleFactor": 4}), "deviceScaleFactor"),
            (json!({"url": "https://x.com", "waitUntil": "idle"}), "waitUntil"),
            (json!({"url": "https://x.com", "cookieConsent": "yes"}), "cookieConsent"),
            (json!({"url": "https://x.com", "fullPage": "yes"}), "fullPage"),
            (json!({"url": "https://x.com", "preScreenshotJs": "x".repeat(16385)}), "preScreenshotJs"),
        ];
        for (v, field) in cases {
            assert_eq!(parse(v.clone()).unwrap_err().field, field, "{v}");
        }
    }

    #[test]
    fn form_fields_become_typed() {
        let f = vec![("width".to_string(), "800".to_string()), ("fullPage".into(), "true".into())];
        let o = CaptureOptions::from_json(&CaptureOptions::form_to_json(&f), false).unwrap();
        assert_eq!(o.width, 800);
        assert!(o.full_page);
        assert!(o.url.is_none());
    }
}
