//! The device and its state: position, network, cookies, local storage, permissions,
//! clipboard, viewport, user agent, extra headers, colour scheme, time zone, locale.

use std::collections::BTreeMap;
use std::time::Duration;

use capture_browser::session::NetworkConditions;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::sessions::{GeoIn, Live, NetworkProfile, live};
use super::timeout;
use crate::error::Result;
use crate::tool::{Cx, Reply, invalid};

mod emulation;
mod storage;

pub use emulation::{
    ColorSchemeIn, DeviceOrientationIn, JavascriptIn, LocaleIn, MediaTypeIn, ReducedMotionIn, TimezoneIn, UserAgentIn,
    ViewportIn, VisionIn, set_color_scheme, set_device_orientation, set_javascript, set_locale, set_media_type,
    set_reduced_motion, set_timezone, set_user_agent, set_viewport, set_vision_deficiency,
};
pub use storage::{
    ClearCookiesIn, ClearStorageIn, ClipboardIn, ClipboardReadIn, CookiesIn, DeleteCookieIn, GetCookiesIn,
    GetStorageIn, SessionStorageIn, StorageIn, clear_cookies, clear_local_storage, clipboard_read, clipboard_write,
    delete_cookie, get_cookies, get_local_storage, set_cookies, set_local_storage, set_session_storage,
};

/// Permissions `grant_permissions` takes (DevTools' names).
pub const PERMISSIONS: &[&str] = &[
    "geolocation",
    "notifications",
    "camera",
    "microphone",
    "clipboardReadWrite",
    "clipboardSanitizedWrite",
    "midi",
    "midiSysex",
    "backgroundSync",
    "sensors",
    "storageAccess",
    "idleDetection",
    "localFonts",
    "wakeLockScreen",
    "displayCapture",
    "paymentHandler",
    "protectedMediaIdentifier",
    "windowManagement",
];

/// Grant the session's permissions again with `more` (DevTools replaces the set each time).
async fn grant(l: &Live, more: &[&str], t: Duration) -> Result<()> {
    let all: Vec<String> = {
        let mut g = l.granted.lock().unwrap();
        for p in more {
            g.insert((*p).to_string());
        }
        g.iter().cloned().collect()
    };
    if !all.is_empty() {
        l.session.grant_permissions(all, None, t).await?;
    }
    Ok(())
}

/// Set the position navigator.geolocation reports (and grant the geolocation permission), or clear: true for none (position requests then fail).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GeolocationIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Degrees, -90 to 90.
    pub latitude: Option<f64>,
    /// Degrees, -180 to 180.
    pub longitude: Option<f64>,
    /// Metres (default 20).
    pub accuracy: Option<f64>,
    /// Remove the emulated position.
    pub clear: Option<bool>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn set_geolocation(cx: &Cx<'_>, a: GeolocationIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let at = match (a.clear.unwrap_or(false), a.latitude, a.longitude) {
        (true, None, None) => None,
        (false, Some(latitude), Some(longitude)) => Some(GeoIn { latitude, longitude, accuracy: a.accuracy }.check()?),
        _ => return Err(invalid("latitude", "give latitude and longitude, or clear: true")),
    };
    let l = live(cx, &a.session_id).await?;
    l.session.set_geolocation(at, t).await?;
    if at.is_some() {
        grant(&l, &["geolocation"], t).await?;
    }
    let data = match at {
        Some(g) => json!({"latitude": g.latitude, "longitude": g.longitude, "accuracy": g.accuracy}),
        None => json!({"cleared": true}),
    };
    Ok(Reply::data(data))
}

/// Emulate network conditions: a profile (online, offline, slow-3g, fast-3g) or explicit latency and throughput. Offline makes navigator.onLine false and every request fail.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// A profile (instead of the numbers).
    pub profile: Option<NetworkProfile>,
    /// Added round-trip latency in ms.
    #[schemars(range(min = 0, max = 60_000))]
    pub latency_ms: Option<u64>,
    /// Download throughput in kbit/s.
    #[schemars(range(min = 1, max = 10_000_000))]
    pub download_kbps: Option<u64>,
    /// Upload throughput in kbit/s.
    #[schemars(range(min = 1, max = 10_000_000))]
    pub upload_kbps: Option<u64>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn set_network(cx: &Cx<'_>, a: NetworkIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let custom = a.latency_ms.is_some() || a.download_kbps.is_some() || a.upload_kbps.is_some();
    let c = match (a.profile, custom) {
        (Some(_), true) => return Err(invalid("profile", "give a profile or the numbers, not both")),
        (Some(p), false) => p.conditions(),
        (None, true) => {
            let lat = a.latency_ms.unwrap_or(0);
            if lat > 60_000 {
                return Err(invalid("latencyMs", "must be at most 60000"));
            }
            let bps = |field: &str, k: Option<u64>| match k {
                Some(k) if !(1..=10_000_000).contains(&k) => Err(invalid(field, "must be from 1 to 10000000")),
                Some(k) => Ok(Some(k * 1000 / 8)),
                None => Ok(None),
            };
            NetworkConditions {
                offline: false,
                latency_ms: lat,
                download_bps: bps("downloadKbps", a.download_kbps)?,
                upload_bps: bps("uploadKbps", a.upload_kbps)?,
            }
        }
        (None, false) => {
            return Err(invalid("profile", "give a profile or latencyMs/downloadKbps/uploadKbps"));
        }
    };
    let l = live(cx, &a.session_id).await?;
    l.session.set_network(c, t).await?;
    Ok(Reply::data(json!({
        "offline": c.offline, "latencyMs": c.latency_ms, "downloadBytesPerSecond": c.download_bps,
        "uploadBytesPerSecond": c.upload_bps,
    })))
}

/// Grant browser permissions to the session's pages (every origin): geolocation, notifications, camera, microphone, midi, sensors, storageAccess, idleDetection, localFonts, wakeLockScreen… The page's permission queries then answer granted. Adds to what was granted before. clipboardReadWrite and clipboardSanitizedWrite are accepted and change nothing: the session's own clipboard needs no permission, and the browser's shared one stays closed.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionsIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// DevTools permission names.
    #[schemars(length(min = 1, max = 20))]
    pub permissions: Vec<String>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn grant_permissions(cx: &Cx<'_>, a: PermissionsIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.permissions.is_empty() {
        return Err(invalid("permissions", "give at least one"));
    }
    let mut names = Vec::new();
    for (i, p) in a.permissions.iter().enumerate() {
        let Some(known) = PERMISSIONS.iter().find(|k| **k == p.as_str()) else {
            return Err(invalid(
                &format!("permissions[{i}]"),
                format!("unknown permission '{p}' (known: {})", PERMISSIONS.join(", ")),
            ));
        };
        names.push(*known);
    }
    let l = live(cx, &a.session_id).await?;
    grant(&l, &names, t).await?;
    let granted: Vec<String> = l.granted.lock().unwrap().iter().cloned().collect();
    Ok(Reply::data(json!({"granted": granted})))
}

page_input! {
    /// Take back every permission granted to the session (geolocation included); pages are asked again.
    ResetPermissionsIn
}

pub async fn reset_permissions(cx: &Cx<'_>, a: ResetPermissionsIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    l.session.reset_permissions(t).await?;
    l.granted.lock().unwrap().clear();
    Ok(Reply::data(json!({"granted": []})))
}

/// Send these extra HTTP headers with every request of the session from now on (replacing earlier ones; an empty object removes them).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HeadersIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Header name → value.
    pub headers: BTreeMap<String, String>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

pub async fn set_extra_headers(cx: &Cx<'_>, a: HeadersIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.headers.len() > 50 {
        return Err(invalid("headers", "at most 50 headers"));
    }
    for (k, v) in &a.headers {
        if !is_token(k) || k.len() > 256 {
            return Err(invalid("headers", format!("'{k}' is not a header name")));
        }
        let lower = k.to_ascii_lowercase();
        if ["host", "content-length", "connection", "transfer-encoding", "cookie"].contains(&lower.as_str())
            || lower.starts_with("proxy-")
        {
            return Err(invalid("headers", format!("{k} is set by the browser (cookies: use set_cookies)")));
        }
        if v.len() > 8192 || v.chars().any(|c| c.is_control() && c != '\t') {
            return Err(invalid(
                "headers",
                format!("the value of {k} must be up to 8192 characters without line breaks"),
            ));
        }
    }
    let l = live(cx, &a.session_id).await?;
    l.session.set_extra_headers(a.headers.clone(), t).await?;
    Ok(Reply::data(json!({"headers": a.headers})))
}

/// Refuse the page's requests whose URL matches any of these patterns (* is a wildcard, e.g. *.png or *://ads.example.com/*): they fail as blocked. An empty list stops blocking.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BlockUrlsIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    #[schemars(length(max = 100))]
    pub patterns: Vec<String>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn block_urls(cx: &Cx<'_>, a: BlockUrlsIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.patterns.len() > 100 || a.patterns.iter().any(|p| p.is_empty() || p.len() > 1024) {
        return Err(invalid("patterns", "at most 100 patterns of 1 to 1024 characters"));
    }
    let l = live(cx, &a.session_id).await?;
    l.session.set_blocked_urls(a.patterns.clone(), t).await?;
    Ok(Reply::data(json!({"blocked": a.patterns})))
}
