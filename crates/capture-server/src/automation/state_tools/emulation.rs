//! What the page is told about the device: viewport, user agent, colour scheme, reduced
//! motion and media type (one emulated-media state per session), time zone, locale,
//! JavaScript on or off, vision deficiencies, device orientation.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::grant;
use crate::automation::sessions::{Scheme, device_json, live};
use crate::automation::timeout;
use crate::error::Result;
use crate::tool::{Cx, Reply, invalid};
use capture_browser::session::{Device, DeviceOrientation, VisionDeficiency as Vision};
use serde_json::Value;

/// Resize the viewport to width×height CSS pixels, keeping the rest of the device (scale, touch, user agent); orientation follows the shape.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ViewportIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    #[schemars(range(min = 200, max = 3840))]
    pub width: u32,
    #[schemars(range(min = 200, max = 4320))]
    pub height: u32,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn set_viewport(cx: &Cx<'_>, a: ViewportIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if !(200..=3840).contains(&a.width) {
        return Err(invalid("width", "must be from 200 to 3840"));
    }
    if !(200..=4320).contains(&a.height) {
        return Err(invalid("height", "must be from 200 to 4320"));
    }
    let l = live(cx, &a.session_id).await?;
    l.session.set_viewport(a.width, a.height, t).await?;
    let d: Device = l.session.device().await?;
    *l.device.lock().unwrap() = d.clone();
    Ok(Reply::data(json!({"device": device_json(&d, None)})))
}

/// Override the user agent (navigator.userAgent and the User-Agent header) for the next requests; null or absent goes back to the device's own.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UserAgentIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    #[schemars(length(min = 1, max = 512))]
    pub user_agent: Option<String>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn set_user_agent(cx: &Cx<'_>, a: UserAgentIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if let Some(ua) = &a.user_agent
        && (ua.is_empty() || ua.len() > 512 || ua.chars().any(char::is_control))
    {
        return Err(invalid("userAgent", "must be 1 to 512 characters without control characters"));
    }
    let l = live(cx, &a.session_id).await?;
    l.session.set_user_agent(a.user_agent.clone(), t).await?;
    let now = l.session.evaluate("navigator.userAgent", false, t).await?;
    Ok(Reply::data(json!({"userAgent": now})))
}

/// Emulate prefers-color-scheme: light, dark or no-preference (pages with a dark theme switch at once).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ColorSchemeIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    pub color_scheme: Scheme,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn set_color_scheme(cx: &Cx<'_>, a: ColorSchemeIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let value = match a.color_scheme {
        Scheme::Light => "light",
        Scheme::Dark => "dark",
        Scheme::NoPreference => "no-preference",
    };
    let l = live(cx, &a.session_id).await?;
    // One emulated-media state per session: the reduced motion or media type set earlier stays.
    l.session.set_media_feature("prefers-color-scheme", value, t).await?;
    let dark = l.session.evaluate("matchMedia('(prefers-color-scheme: dark)').matches", false, t).await?;
    Ok(Reply::data(json!({"colorScheme": value, "prefersDark": dark})))
}

/// Emulate a time zone (IANA name such as Europe/Berlin or America/New_York) for Date and Intl in the page.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TimezoneIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    #[schemars(length(min = 1, max = 64))]
    pub timezone: String,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn set_timezone(cx: &Cx<'_>, a: TimezoneIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.timezone.is_empty() || a.timezone.len() > 64 || a.timezone.contains(char::is_whitespace) {
        return Err(invalid("timezone", "must be an IANA time zone name such as Europe/Berlin"));
    }
    let l = live(cx, &a.session_id).await?;
    // Clear the override in effect first.
    let _ = l.session.set_timezone(None, t).await;
    l.session
        .set_timezone(Some(&a.timezone), t)
        .await
        .map_err(|e| invalid("timezone", format!("'{}' was refused: {e}", a.timezone)))?;
    let now = l.session.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone", false, t).await?;
    Ok(Reply::data(json!({"timezone": now})))
}

/// Emulate a locale (BCP 47, e.g. de-DE, ja-JP): navigator.language, Intl formatting and the Accept-Language header of later requests.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocaleIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    #[schemars(length(min = 2, max = 35))]
    pub locale: String,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn set_locale(cx: &Cx<'_>, a: LocaleIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.locale.len() < 2
        || a.locale.len() > 35
        || !a.locale.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(invalid("locale", "must be a BCP 47 tag such as de-DE"));
    }
    let l = live(cx, &a.session_id).await?;
    // DevTools refuses a second override while one is in effect: clear it first.
    let _ = l.session.set_locale(None, t).await;
    l.session
        .set_locale(Some(&a.locale), t)
        .await
        .map_err(|e| invalid("locale", format!("'{}' was refused: {e}", a.locale)))?;
    let ua = l.session.evaluate("navigator.userAgent", false, t).await?;
    if let Value::String(ua) = ua {
        l.session.set_user_agent_override(&ua, Some(&a.locale), t).await?;
    }
    let now =
        l.session.evaluate("[navigator.language, Intl.NumberFormat().resolvedOptions().locale]", false, t).await?;
    Ok(Reply::data(json!({"locale": a.locale, "navigatorLanguage": now[0], "intlLocale": now[1]})))
}

/// Emulate prefers-reduced-motion (reduce: true asks pages to drop animations).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReducedMotionIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    pub reduce: bool,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn set_reduced_motion(cx: &Cx<'_>, a: ReducedMotionIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let value = if a.reduce { "reduce" } else { "no-preference" };
    let l = live(cx, &a.session_id).await?;
    l.session.set_media_feature("prefers-reduced-motion", value, t).await?;
    let now = l.session.evaluate("matchMedia('(prefers-reduced-motion: reduce)').matches", false, t).await?;
    Ok(Reply::data(json!({"prefersReducedMotion": now})))
}

/// Render the page as for print or screen (CSS @media print rules apply while print).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MediaTypeIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    pub media: MediaType,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

/// `screen` or `print`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MediaType {
    Screen,
    Print,
}

pub async fn set_media_type(cx: &Cx<'_>, a: MediaTypeIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let media = match a.media {
        MediaType::Screen => "screen",
        MediaType::Print => "print",
    };
    let l = live(cx, &a.session_id).await?;
    l.session.set_media_type(media, t).await?;
    let print = l.session.evaluate("matchMedia('print').matches", false, t).await?;
    Ok(Reply::data(json!({"media": media, "printMatches": print})))
}

/// Turn the page's JavaScript off (enabled: false) or back on; takes effect from the next navigation or reload, as when a user disables scripts.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JavascriptIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    pub enabled: bool,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn set_javascript(cx: &Cx<'_>, a: JavascriptIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    l.session.set_script_execution_disabled(!a.enabled, t).await?;
    Ok(Reply::data(json!({"javascript": a.enabled})))
}

/// Simulate a vision deficiency for everything the page renders (screenshots and the video show it): blurredVision, reducedContrast, achromatopsia, deuteranopia, protanopia, tritanopia, or none.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VisionIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    pub deficiency: VisionDeficiency,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

/// A vision deficiency DevTools can simulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum VisionDeficiency {
    None,
    BlurredVision,
    ReducedContrast,
    Achromatopsia,
    Deuteranopia,
    Protanopia,
    Tritanopia,
}

pub async fn set_vision_deficiency(cx: &Cx<'_>, a: VisionIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let kind = serde_json::to_value(a.deficiency).unwrap_or(json!("none"));
    let deficiency = match a.deficiency {
        VisionDeficiency::None => None,
        VisionDeficiency::BlurredVision => Some(Vision::BlurredVision),
        VisionDeficiency::ReducedContrast => Some(Vision::ReducedContrast),
        VisionDeficiency::Achromatopsia => Some(Vision::Achromatopsia),
        VisionDeficiency::Deuteranopia => Some(Vision::Deuteranopia),
        VisionDeficiency::Protanopia => Some(Vision::Protanopia),
        VisionDeficiency::Tritanopia => Some(Vision::Tritanopia),
    };
    let l = live(cx, &a.session_id).await?;
    l.session.set_vision_deficiency(deficiency, t).await?;
    Ok(Reply::data(json!({"deficiency": kind})))
}

/// Emulate how the device is held in space (the deviceorientation event and sensors): alpha (compass, 0–360), beta (front-back tilt, -180–180), gamma (left-right tilt, -90–90); clear: true removes it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceOrientationIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    #[schemars(range(min = 0.0, max = 360.0))]
    pub alpha: Option<f64>,
    #[schemars(range(min = -180.0, max = 180.0))]
    pub beta: Option<f64>,
    #[schemars(range(min = -90.0, max = 90.0))]
    pub gamma: Option<f64>,
    /// Remove the emulated orientation.
    pub clear: Option<bool>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn set_device_orientation(cx: &Cx<'_>, a: DeviceOrientationIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.clear == Some(true) {
        let l = live(cx, &a.session_id).await?;
        l.session.set_device_orientation(None, t).await?;
        return Ok(Reply::data(json!({"cleared": true})));
    }
    let (al, be, ga) = (a.alpha.unwrap_or(0.0), a.beta.unwrap_or(0.0), a.gamma.unwrap_or(0.0));
    if !(0.0..=360.0).contains(&al) {
        return Err(invalid("alpha", "must be from 0 to 360"));
    }
    if !(-180.0..=180.0).contains(&be) {
        return Err(invalid("beta", "must be from -180 to 180"));
    }
    if !(-90.0..=90.0).contains(&ga) {
        return Err(invalid("gamma", "must be from -90 to 90"));
    }
    let l = live(cx, &a.session_id).await?;
    // Pages read the orientation through the motion sensors.
    grant(&l, &["sensors"], t).await?;
    l.session.set_device_orientation(Some(DeviceOrientation { alpha: al, beta: be, gamma: ga }), t).await?;
    Ok(Reply::data(json!({"alpha": al, "beta": be, "gamma": ga})))
}
