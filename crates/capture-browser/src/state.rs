//! A profile's state and the browser's cookies and storage: from one to the other.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use capture_core::profile::{BrowserState, MAX_ORIGINS, StateCookie, StorageItem};
use serde_json::Value;

use crate::session::Cookie;

/// The state's cookies still alive now, as `Storage.setCookies` takes them (by domain and
/// path; a session cookie stays one).
pub fn cookies_of(state: &BrowserState) -> Vec<Cookie> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    state
        .live_cookies(now)
        .map(|c| Cookie {
            name: c.name.clone(),
            value: c.value.clone(),
            url: None,
            domain: c.domain.clone(),
            path: c.path.clone(),
            expires: (c.expires > 0.0).then_some(c.expires),
            http_only: c.http_only,
            secure: c.secure,
            same_site: Some(c.same_site.clone()),
        })
        .collect()
}

/// A cookie of the browser as the state keeps it.
pub fn state_cookie(c: Cookie) -> StateCookie {
    StateCookie {
        name: c.name,
        value: c.value,
        domain: c.domain,
        path: if c.path.is_empty() { "/".into() } else { c.path },
        expires: c.expires.filter(|e| *e > 0.0).unwrap_or(-1.0),
        http_only: c.http_only,
        secure: c.secure,
        same_site: match c.same_site.as_deref() {
            Some(s @ ("Strict" | "Lax" | "None")) => s.to_owned(),
            _ => "Lax".into(),
        },
    }
}

/// The origin of an http(s) URL.
pub fn origin_of(url: &str) -> Option<String> {
    let u = url::Url::parse(url).ok()?;
    matches!(u.scheme(), "http" | "https").then(|| u.origin().ascii_serialization())
}

/// The distinct origins of these URLs, in first-seen order, at most [`MAX_ORIGINS`].
pub fn origins_of(urls: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for u in urls {
        if let Some(o) = origin_of(&u)
            && !out.contains(&o)
        {
            out.push(o);
            if out.len() == MAX_ORIGINS {
                break;
            }
        }
    }
    out
}

/// localStorage as the state keeps it (sorted by name).
pub fn items(m: BTreeMap<String, String>) -> Vec<StorageItem> {
    m.into_iter().map(|(name, value)| StorageItem { name, value }).collect()
}

/// `DOMStorage.getDOMStorageItems`'s `entries` (`[[name, value]]`).
pub fn dom_storage_items(v: &Value) -> Vec<StorageItem> {
    let mut m = BTreeMap::new();
    for e in v["entries"].as_array().into_iter().flatten() {
        if let (Some(k), Some(val)) = (e[0].as_str(), e[1].as_str()) {
            m.insert(k.to_owned(), val.to_owned());
        }
    }
    items(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_round_trip_through_the_state() {
        let c = Cookie {
            name: "sid".into(),
            value: "abc".into(),
            url: None,
            domain: "127.0.0.1".into(),
            path: "/".into(),
            expires: Some(4_000_000_000.0),
            http_only: true,
            secure: false,
            same_site: Some("Lax".into()),
        };
        let s = state_cookie(c.clone());
        assert_eq!(s.expires, 4_000_000_000.0);
        let back = cookies_of(&BrowserState { cookies: vec![s], origins: vec![] });
        assert_eq!(back, vec![c]);
        let session = state_cookie(Cookie { expires: Some(-1.0), same_site: None, ..Cookie::default() });
        assert_eq!((session.expires, session.same_site.as_str(), session.path.as_str()), (-1.0, "Lax", "/"));
    }

    #[test]
    fn origins_are_distinct_and_http_only() {
        let urls = ["http://127.0.0.1:8080/a", "about:blank", "http://127.0.0.1:8080/b?x", "https://example.com/"];
        assert_eq!(
            origins_of(urls.iter().map(|u| u.to_string())),
            vec!["http://127.0.0.1:8080".to_string(), "https://example.com".to_string()]
        );
    }

    #[test]
    fn dom_storage_entries_are_read() {
        let v = serde_json::json!({ "entries": [["b", "2"], ["a", "1"], ["bad"]] });
        let got: Vec<(String, String)> = dom_storage_items(&v).into_iter().map(|i| (i.name, i.value)).collect();
        assert_eq!(got, vec![("a".into(), "1".into()), ("b".into(), "2".into())]);
    }
}
