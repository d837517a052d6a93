//! What the session keeps: cookies, local and session storage, its own clipboard.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::automation::sessions::live;
use crate::automation::timeout;
use crate::error::Result;
use crate::tool::{Cx, Reply, invalid};
use capture_browser::session::{Cookie, DeleteCookies};

page_input! {
    /// Every cookie of the session (all sites): name, value, domain, path, expires, httpOnly, secure, sameSite.
    GetCookiesIn
}

pub async fn get_cookies(cx: &Cx<'_>, a: GetCookiesIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
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

pub async fn set_cookies(cx: &Cx<'_>, a: CookiesIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.cookies.is_empty() || a.cookies.len() > 50 {
        return Err(invalid("cookies", "give 1 to 50 cookies"));
    }
    let l = live(cx, &a.session_id).await?;
    let (_, page_url) = l.session.title_url(t).await?;
    let mut out = Vec::new();
    for (i, c) in a.cookies.into_iter().enumerate() {
        if c.name.is_empty() || c.name.len() > 4096 || c.value.len() > 4096 {
            return Err(invalid(&format!("cookies[{i}].name"), "name 1–4096 and value up to 4096 characters"));
        }
        if let Some(s) = &c.same_site
            && !matches!(s.as_str(), "Strict" | "Lax" | "None")
        {
            return Err(invalid(&format!("cookies[{i}].sameSite"), "must be Strict, Lax or None"));
        }
        let url = match (&c.url, &c.domain) {
            (Some(u), _) => Some(u.clone()),
            (None, Some(_)) => None,
            (None, None) if page_url.starts_with("http") => Some(page_url.clone()),
            (None, None) => {
                return Err(invalid(&format!("cookies[{i}].url"), "the page has no http(s) URL: give url or domain"));
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

pub async fn clear_cookies(cx: &Cx<'_>, a: ClearCookiesIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    l.session.clear_cookies(t).await?;
    Ok(Reply::data(json!({"cleared": true})))
}

page_input! {
    /// The current page's localStorage items (key → value) of its origin.
    GetStorageIn
}

pub async fn get_local_storage(cx: &Cx<'_>, a: GetStorageIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
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

pub async fn set_local_storage(cx: &Cx<'_>, a: StorageIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.key.is_empty() || a.key.len() > 1024 || a.value.len() > 100_000 {
        return Err(invalid("key", "key 1–1024 and value up to 100000 characters"));
    }
    let l = live(cx, &a.session_id).await?;
    l.session.set_local_storage(&a.key, &a.value, t).await?;
    Ok(Reply::data(json!({"key": a.key, "value": a.value})))
}

page_input! {
    /// Clear localStorage and sessionStorage of the current page's origin.
    ClearStorageIn
}

pub async fn clear_local_storage(cx: &Cx<'_>, a: ClearStorageIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    l.session.clear_local_storage(t).await?;
    Ok(Reply::data(json!({"cleared": true})))
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

pub async fn clipboard_write(cx: &Cx<'_>, a: ClipboardIn) -> Result<Reply> {
    if a.text.len() > 100_000 {
        return Err(invalid("text", "must be at most 100000 characters"));
    }
    let _ = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    l.session.set_clipboard(&a.text)?;
    Ok(Reply::data(json!({"written": a.text.chars().count()})))
}

page_input! {
    /// The text on the session's own clipboard (what its pages copied, or clipboard_write put there; "" at first).
    ClipboardReadIn
}

pub async fn clipboard_read(cx: &Cx<'_>, a: ClipboardReadIn) -> Result<Reply> {
    let _ = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    let text = l.session.clipboard();
    Ok(Reply::data(json!({"text": text})).with_text(text))
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

pub async fn set_session_storage(cx: &Cx<'_>, a: SessionStorageIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.key.is_empty() || a.key.len() > 1024 || a.value.len() > 100_000 {
        return Err(invalid("key", "key 1–1024 and value up to 100000 characters"));
    }
    let l = live(cx, &a.session_id).await?;
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

pub async fn delete_cookie(cx: &Cx<'_>, a: DeleteCookieIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.name.is_empty() || a.name.len() > 4096 {
        return Err(invalid("name", "must be 1 to 4096 characters"));
    }
    let l = live(cx, &a.session_id).await?;
    let mut which = DeleteCookies { name: a.name.clone(), ..DeleteCookies::default() };
    match &a.domain {
        Some(d) => {
            which.domain = Some(d.clone());
            which.path = a.path.clone();
        }
        None => {
            let (_, url) = l.session.title_url(t).await?;
            which.url = Some(url);
        }
    }
    l.session.delete_cookies(which, t).await?;
    let left = l.session.cookies(t).await?.iter().filter(|c| c.name == a.name).count();
    Ok(Reply::data(json!({"deleted": a.name, "remainingWithThatName": left})))
}
