//! The device and its state: position, network, cookies, local storage, permissions,
//! clipboard, viewport, user agent, extra headers, colour scheme, time zone, locale.

use std::collections::BTreeMap;
use std::time::Duration;

use capture_browser::session::{Cookie, Device, NetworkConditions, Session};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::sessions::{GeoIn, Live, NetworkProfile, Scheme, device_json, live};
use super::{AutoError, AutoResult, Cx, Reply, timeout};

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
async fn grant(l: &Live, more: &[&str], t: Duration) -> AutoResult<()> {
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

pub async fn set_geolocation(cx: Cx, a: GeolocationIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let at = match (a.clear.unwrap_or(false), a.latitude, a.longitude) {
        (true, None, None) => None,
        (false, Some(latitude), Some(longitude)) => Some(GeoIn { latitude, longitude, accuracy: a.accuracy }.check()?),
        _ => return Err(AutoError::invalid("latitude", "give latitude and longitude, or clear: true")),
    };
    let l = live(&cx, &a.session_id).await?;
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

pub async fn set_network(cx: Cx, a: NetworkIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let custom = a.latency_ms.is_some() || a.download_kbps.is_some() || a.upload_kbps.is_some();
    let c = match (a.profile, custom) {
        (Some(_), true) => return Err(AutoError::invalid("profile", "give a profile or the numbers, not both")),
        (Some(p), false) => p.conditions(),
        (None, true) => {
            let lat = a.latency_ms.unwrap_or(0);
            if lat > 60_000 {
                return Err(AutoError::invalid("latencyMs", "must be at most 60000"));
            }
            let bps = |field: &str, k: Option<u64>| match k {
                Some(k) if !(1..=10_000_000).contains(&k) => {
                    Err(AutoError::invalid(field, "must be from 1 to 10000000"))
                }
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
            return Err(AutoError::invalid("profile", "give a profile or latencyMs/downloadKbps/uploadKbps"));
        }
    };
    let l = live(&cx, &a.session_id).await?;
    l.session.set_network(c, t).await?;
    Ok(Reply::data(json!({
        "offline": c.offline, "latencyMs": c.latency_ms, "downloadBytesPerSecond": c.download_bps,
        "uploadBytesPerSecond": c.upload_bps,
    })))
}

page_input! {
    /// Every cookie of the session (all sites): name, value, domain, path, expires, httpOnly, secure, sameSite.
    GetCookiesIn
}

pub async fn get_cookies(cx: Cx, a: GetCookiesIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(&cx, &a.session_id).await?;
    let cookies = l.session.cookies(t).await?;
    let text = cookies
        .iter()
        .map(|c| format!("{}={} ({}{})", c.name, c.value, c.domain, c.path))
        .collect::<Vec<_>>()
        .join("\n");
    Ok(Reply::data(json!({"cookies": cookies})).with_text(if text.is_empty() { "No cookies.".into() } else { text }))
}

/// A cookie to set.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CookieIn {
    #[schemars(length(min = 1, max = 4096))]
    pub name: String,
    #[schemars(length(max = 4096))]
    pub value: String,
    /// The URL it belongs to (default: the current page's); or domain and path.
    pub url: Option<String>,
    pub domain: Option<String>,
    pub path: Option<String>,
    /// Seconds since the epoch (default: a session cookie).
    pub expires: Option<f64>,
    pub http_only: Option<bool>,
    pub secure: Option<bool>,
    /// Strict, Lax or None.
    pub same_site: Option<String>,
}

/// Set cookies in the session (for the current page's URL unless url or domain is given).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CookiesIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    #[schemars(length(min = 1, max = 50))]
    pub cookies: Vec<CookieIn>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn set_cookies(cx: Cx, a: CookiesIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.cookies.is_empty() || a.cookies.len() > 50 {
        return Err(AutoError::invalid("cookies", "give 1 to 50 cookies"));
    }
    let l = live(&cx, &a.session_id).await?;
    let (_, page_url) = l.session.title_url(t).await?;
    let mut out = Vec::new();
    for (i, c) in a.cookies.into_iter().enumerate() {
        if c.name.is_empty() || c.name.len() > 4096 || c.value.len() > 4096 {
            return Err(AutoError::invalid(
                &format!("cookies[{i}].name"),
                "name 1–4096 and value up to 4096 characters",
            ));
        }
        if let Some(s) = &c.same_site
            && !matches!(s.as_str(), "Strict" | "Lax" | "None")
        {
            return Err(AutoError::invalid(&format!("cookies[{i}].sameSite"), "must be Strict, Lax or None"));
        }
        let url = match (&c.url, &c.domain) {
            (Some(u), _) => Some(u.clone()),
            (None, Some(_)) => None,
            (None, None) if page_url.starts_with("http") => Some(page_url.clone()),
            (None, None) => {
                return Err(AutoError::invalid(
                    &format!("cookies[{i}].url"),
                    "the page has no http(s) URL: give url or domain",
                ));
            }
        };
        out.push(Cookie {
            name: c.name,
            value: c.value,
            url,
            domain: c.domain.unwrap_or_default(),
            path: c.path.unwrap_or_default(),
            expires: c.expires,
            http_only: c.http_only.unwrap_or(false),
            secure: c.secure.unwrap_or(false),
            same_site: c.same_site,
        });
    }
    let n = out.len();
    l.session.set_cookies(out, t).await?;
    Ok(Reply::data(json!({"set": n})).with_text(format!("set {n} cookie(s)")))
}

page_input! {
    /// Delete every cookie of the session.
    ClearCookiesIn
}

pub async fn clear_cookies(cx: Cx, a: ClearCookiesIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(&cx, &a.session_id).await?;
    l.session.clear_cookies(t).await?;
    Ok(Reply::data(json!({"cleared": true})))
}

page_input! {
    /// The current page's localStorage items (key → value) of its origin.
    GetStorageIn
}

pub async fn get_local_storage(cx: Cx, a: GetStorageIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(&cx, &a.session_id).await?;
    let items = l.session.local_storage(t).await?;
    Ok(Reply::data(json!({"items": items})))
}

/// Set one localStorage item of the current page's origin.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    #[schemars(length(min = 1, max = 1024))]
    pub key: String,
    #[schemars(length(max = 100_000))]
    pub value: String,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn set_local_storage(cx: Cx, a: StorageIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.key.is_empty() || a.key.len() > 1024 || a.value.len() > 100_000 {
        return Err(AutoError::invalid("key", "key 1–1024 and value up to 100000 characters"));
    }
    let l = live(&cx, &a.session_id).await?;
    l.session.set_local_storage(&a.key, &a.value, t).await?;
    Ok(Reply::data(json!({"key": a.key, "value": a.value})))
}

page_input! {
    /// Clear localStorage and sessionStorage of the current page's origin.
    ClearStorageIn
}

pub async fn clear_local_storage(cx: Cx, a: ClearStorageIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(&cx, &a.session_id).await?;
    l.session.clear_local_storage(t).await?;
    Ok(Reply::data(json!({"cleared": true})))
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

pub async fn grant_permissions(cx: Cx, a: PermissionsIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.permissions.is_empty() {
        return Err(AutoError::invalid("permissions", "give at least one"));
    }
    let mut names = Vec::new();
    for (i, p) in a.permissions.iter().enumerate() {
        let Some(known) = PERMISSIONS.iter().find(|k| **k == p.as_str()) else {
            return Err(AutoError::invalid(
                &format!("permissions[{i}]"),
                format!("unknown permission '{p}' (known: {})", PERMISSIONS.join(", ")),
            ));
        };
        names.push(*known);
    }
    let l = live(&cx, &a.session_id).await?;
    grant(&l, &names, t).await?;
    let granted: Vec<String> = l.granted.lock().unwrap().iter().cloned().collect();
    Ok(Reply::data(json!({"granted": granted})))
}

page_input! {
    /// Take back every permission granted to the session (geolocation included); pages are asked again.
    ResetPermissionsIn
}

pub async fn reset_permissions(cx: Cx, a: ResetPermissionsIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(&cx, &a.session_id).await?;
    l.session.reset_permissions(t).await?;
    l.granted.lock().unwrap().clear();
    Ok(Reply::data(json!({"granted": []})))
}

/// Put text on the session's own clipboard (each session has its own; the browser's shared clipboard is never used): the page's navigator.clipboard, paste handlers and press_key Control+v get it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClipboardIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    #[schemars(length(max = 100_000))]
    pub text: String,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn clipboard_write(cx: Cx, a: ClipboardIn) -> AutoResult<Reply> {
    if a.text.len() > 100_000 {
        return Err(AutoError::invalid("text", "must be at most 100000 characters"));
    }
    let _ = timeout(a.timeout_ms)?;
    let l = live(&cx, &a.session_id).await?;
    l.session.set_clipboard(&a.text)?;
    Ok(Reply::data(json!({"written": a.text.chars().count()})))
}

page_input! {
    /// The text on the session's own clipboard (what its pages copied, or clipboard_write put there; "" at first).
    ClipboardReadIn
}

pub async fn clipboard_read(cx: Cx, a: ClipboardReadIn) -> AutoResult<Reply> {
    let _ = timeout(a.timeout_ms)?;
    let l = live(&cx, &a.session_id).await?;
    let text = l.session.clipboard();
    Ok(Reply::data(json!({"text": text})).with_text(text))
}

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

pub async fn set_viewport(cx: Cx, a: ViewportIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if !(200..=3840).contains(&a.width) {
        return Err(AutoError::invalid("width", "must be from 200 to 3840"));
    }
    if !(200..=4320).contains(&a.height) {
        return Err(AutoError::invalid("height", "must be from 200 to 4320"));
    }
    let l = live(&cx, &a.session_id).await?;
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

pub async fn set_user_agent(cx: Cx, a: UserAgentIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if let Some(ua) = &a.user_agent
        && (ua.is_empty() || ua.len() > 512 || ua.chars().any(char::is_control))
    {
        return Err(AutoError::invalid("userAgent", "must be 1 to 512 characters without control characters"));
    }
    let l = live(&cx, &a.session_id).await?;
    l.session.set_user_agent(a.user_agent.clone(), t).await?;
    let now = l.session.evaluate("navigator.userAgent", false, t).await?;
    Ok(Reply::data(json!({"userAgent": now})))
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

pub async fn set_extra_headers(cx: Cx, a: HeadersIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.headers.len() > 50 {
        return Err(AutoError::invalid("headers", "at most 50 headers"));
    }
    for (k, v) in &a.headers {
        if !is_token(k) || k.len() > 256 {
            return Err(AutoError::invalid("headers", format!("'{k}' is not a header name")));
        }
        let lower = k.to_ascii_lowercase();
        if ["host", "content-length", "connection", "transfer-encoding", "cookie"].contains(&lower.as_str())
            || lower.starts_with("proxy-")
        {
            return Err(AutoError::invalid("headers", format!("{k} is set by the browser (cookies: use set_cookies)")));
        }
        if v.len() > 8192 || v.chars().any(|c| c.is_control() && c != '\t') {
            return Err(AutoError::invalid(
                "headers",
                format!("the value of {k} must be up to 8192 characters without line breaks"),
            ));
        }
    }
    let l = live(&cx, &a.session_id).await?;
    l.session.set_extra_headers(a.headers.clone(), t).await?;
    Ok(Reply::data(json!({"headers": a.headers})))
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

pub async fn set_color_scheme(cx: Cx, a: ColorSchemeIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let value = match a.color_scheme {
        Scheme::Light => "light",
        Scheme::Dark => "dark",
        Scheme::NoPreference => "no-preference",
    };
    let l = live(&cx, &a.session_id).await?;
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

async fn override_again(s: &Session, method: &str, key: &str, value: &str, t: Duration) -> AutoResult<()> {
    // DevTools refuses a second override while one is in effect: clear it first.
    let _ = s.cdp(method, json!({}), t).await;
    let mut params = serde_json::Map::new();
    params.insert(key.to_string(), json!(value));
    s.cdp(method, Value::Object(params), t)
        .await
        .map_err(|e| AutoError::invalid(key, format!("'{value}' was refused: {e}")))?;
    Ok(())
}

pub async fn set_timezone(cx: Cx, a: TimezoneIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.timezone.is_empty() || a.timezone.len() > 64 || a.timezone.contains(char::is_whitespace) {
        return Err(AutoError::invalid("timezone", "must be an IANA time zone name such as Europe/Berlin"));
    }
    let l = live(&cx, &a.session_id).await?;
    // Clearing takes an empty id.
    let _ = l.session.cdp("Emulation.setTimezoneOverride", json!({"timezoneId": ""}), t).await;
    l.session
        .cdp("Emulation.setTimezoneOverride", json!({"timezoneId": a.timezone}), t)
        .await
        .map_err(|e| AutoError::invalid("timezone", format!("'{}' was refused: {e}", a.timezone)))?;
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

pub async fn set_locale(cx: Cx, a: LocaleIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.locale.len() < 2
        || a.locale.len() > 35
        || !a.locale.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(AutoError::invalid("locale", "must be a BCP 47 tag such as de-DE"));
    }
    let l = live(&cx, &a.session_id).await?;
    override_again(&l.session, "Emulation.setLocaleOverride", "locale", &a.locale, t).await?;
    let ua = l.session.evaluate("navigator.userAgent", false, t).await?;
    if let Value::String(ua) = ua {
        l.session
            .cdp("Emulation.setUserAgentOverride", json!({"userAgent": ua, "acceptLanguage": a.locale}), t)
            .await?;
    }
    let now =
        l.session.evaluate("[navigator.language, Intl.NumberFormat().resolvedOptions().locale]", false, t).await?;
    Ok(Reply::data(json!({"locale": a.locale, "navigatorLanguage": now[0], "intlLocale": now[1]})))
}

/// Set one sessionStorage item of the current page's origin (kept for this tab only).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionStorageIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    #[schemars(length(min = 1, max = 1024))]
    pub key: String,
    #[schemars(length(max = 100_000))]
    pub value: String,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn set_session_storage(cx: Cx, a: SessionStorageIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.key.is_empty() || a.key.len() > 1024 || a.value.len() > 100_000 {
        return Err(AutoError::invalid("key", "key 1–1024 and value up to 100000 characters"));
    }
    let l = live(&cx, &a.session_id).await?;
    let expr = format!("sessionStorage.setItem({}, {}), true", json!(a.key), json!(a.value));
    l.session.evaluate(&expr, false, t).await?;
    Ok(Reply::data(json!({"key": a.key, "value": a.value})))
}

/// Delete the cookies named name (for the current page's URL, or for domain and path when given).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteCookieIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    #[schemars(length(min = 1, max = 4096))]
    pub name: String,
    pub domain: Option<String>,
    pub path: Option<String>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn delete_cookie(cx: Cx, a: DeleteCookieIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.name.is_empty() || a.name.len() > 4096 {
        return Err(AutoError::invalid("name", "must be 1 to 4096 characters"));
    }
    let l = live(&cx, &a.session_id).await?;
    let mut params = json!({"name": a.name});
    match &a.domain {
        Some(d) => {
            params["domain"] = json!(d);
            if let Some(p) = &a.path {
                params["path"] = json!(p);
            }
        }
        None => {
            let (_, url) = l.session.title_url(t).await?;
            params["url"] = json!(url);
        }
    }
    l.session.cdp("Network.deleteCookies", params, t).await?;
    let left = l.session.cookies(t).await?.iter().filter(|c| c.name == a.name).count();
    Ok(Reply::data(json!({"deleted": a.name, "remainingWithThatName": left})))
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

pub async fn block_urls(cx: Cx, a: BlockUrlsIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.patterns.len() > 100 || a.patterns.iter().any(|p| p.is_empty() || p.len() > 1024) {
        return Err(AutoError::invalid("patterns", "at most 100 patterns of 1 to 1024 characters"));
    }
    let l = live(&cx, &a.session_id).await?;
    l.session.cdp("Network.setBlockedURLs", json!({"urls": a.patterns}), t).await?;
    Ok(Reply::data(json!({"blocked": a.patterns})))
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

pub async fn set_reduced_motion(cx: Cx, a: ReducedMotionIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let value = if a.reduce { "reduce" } else { "no-preference" };
    let l = live(&cx, &a.session_id).await?;
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

pub async fn set_media_type(cx: Cx, a: MediaTypeIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let media = match a.media {
        MediaType::Screen => "screen",
        MediaType::Print => "print",
    };
    let l = live(&cx, &a.session_id).await?;
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

pub async fn set_javascript(cx: Cx, a: JavascriptIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(&cx, &a.session_id).await?;
    l.session.cdp("Emulation.setScriptExecutionDisabled", json!({"value": !a.enabled}), t).await?;
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

pub async fn set_vision_deficiency(cx: Cx, a: VisionIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    let kind = serde_json::to_value(a.deficiency).unwrap_or(json!("none"));
    let l = live(&cx, &a.session_id).await?;
    l.session.cdp("Emulation.setEmulatedVisionDeficiency", json!({"type": kind}), t).await?;
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

pub async fn set_device_orientation(cx: Cx, a: DeviceOrientationIn) -> AutoResult<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.clear == Some(true) {
        let l = live(&cx, &a.session_id).await?;
        l.session.cdp("DeviceOrientation.clearDeviceOrientationOverride", json!({}), t).await?;
        return Ok(Reply::data(json!({"cleared": true})));
    }
    let (al, be, ga) = (a.alpha.unwrap_or(0.0), a.beta.unwrap_or(0.0), a.gamma.unwrap_or(0.0));
    if !(0.0..=360.0).contains(&al) {
        return Err(AutoError::invalid("alpha", "must be from 0 to 360"));
    }
    if !(-180.0..=180.0).contains(&be) {
        return Err(AutoError::invalid("beta", "must be from -180 to 180"));
    }
    if !(-90.0..=90.0).contains(&ga) {
        return Err(AutoError::invalid("gamma", "must be from -90 to 90"));
    }
    let l = live(&cx, &a.session_id).await?;
    // Pages read the orientation through the motion sensors.
    grant(&l, &["sensors"], t).await?;
    l.session
        .cdp("DeviceOrientation.setDeviceOrientationOverride", json!({"alpha": al, "beta": be, "gamma": ga}), t)
        .await?;
    Ok(Reply::data(json!({"alpha": al, "beta": be, "gamma": ga})))
}
