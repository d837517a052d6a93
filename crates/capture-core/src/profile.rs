//! A browser profile's state: the cookies and site storage a page starts from, in
//! Playwright's storage-state format (`{cookies, origins: [{origin, localStorage,
//! indexedDB}]}`), so a state saved by Playwright (`context.storageState()`) can be
//! imported and one saved here can be used there.
//!
//! - **Cookies** are set in the page's browser context before anything loads (expired ones
//!   are dropped).
//! - **localStorage and IndexedDB** are restored by a script that runs in every new
//!   document before the page's own scripts ([`BrowserState::restore_script`]): the first
//!   document of an origin in a tab writes its items (keys the page already has are kept)
//!   and creates its databases that do not exist yet, in their saved version, inside the
//!   upgrade transaction, so the page's own `indexedDB.open` sees them. IndexedDB values are
//!   those JSON can carry (a `Date` comes back as its string, a `Blob` is not saved).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::FieldError;

/// Most cookies a state may hold.
pub const MAX_COOKIES: usize = 3_000;
/// Most origins a state may hold.
pub const MAX_ORIGINS: usize = 100;
/// Largest state, serialized (bytes).
pub const MAX_STATE_BYTES: usize = 4 * 1024 * 1024;
/// Longest profile name.
pub const NAME_MAX: usize = 100;

/// Cookies and site storage (Playwright's `storageState`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrowserState {
    #[serde(default)]
    pub cookies: Vec<StateCookie>,
    #[serde(default)]
    pub origins: Vec<OriginState>,
}

/// A cookie as Playwright writes it.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateCookie {
    pub name: String,
    pub value: String,
    /// `example.com` (this host only) or `.example.com` (and its subdomains).
    pub domain: String,
    #[serde(default = "root_path")]
    pub path: String,
    /// Seconds since the epoch; -1: a session cookie.
    #[serde(default = "session_cookie")]
    pub expires: f64,
    #[serde(default)]
    pub http_only: bool,
    #[serde(default)]
    pub secure: bool,
    /// `Strict`, `Lax` or `None`.
    #[serde(default = "lax")]
    pub same_site: String,
}

impl std::fmt::Debug for StateCookie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateCookie").field("name", &self.name).field("domain", &self.domain).finish_non_exhaustive()
    }
}

fn root_path() -> String {
    "/".into()
}
fn session_cookie() -> f64 {
    -1.0
}
fn lax() -> String {
    "Lax".into()
}

/// What one origin keeps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OriginState {
    /// `https://example.com` (scheme, host and a non-default port).
    pub origin: String,
    #[serde(default)]
    pub local_storage: Vec<StorageItem>,
    #[serde(default, rename = "indexedDB", skip_serializing_if = "Vec::is_empty")]
    pub indexed_db: Vec<IdbDatabase>,
}

/// A localStorage entry.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct StorageItem {
    pub name: String,
    pub value: String,
}

impl std::fmt::Debug for StorageItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageItem").field("name", &self.name).finish_non_exhaustive()
    }
}

/// An IndexedDB database with its stores and records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdbDatabase {
    pub name: String,
    pub version: u64,
    #[serde(default)]
    pub stores: Vec<IdbStore>,
}

/// An object store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdbStore {
    pub name: String,
    /// A string, an array of strings, or null (out-of-line keys).
    #[serde(default)]
    pub key_path: Value,
    #[serde(default)]
    pub auto_increment: bool,
    #[serde(default)]
    pub indexes: Vec<IdbIndex>,
    #[serde(default)]
    pub records: Vec<IdbRecord>,
}

/// An index of a store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdbIndex {
    pub name: String,
    pub key_path: Value,
    #[serde(default)]
    pub unique: bool,
    #[serde(default)]
    pub multi_entry: bool,
}

/// A record: its key (out-of-line keys only) and value.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct IdbRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<Value>,
    pub value: Value,
}

impl std::fmt::Debug for IdbRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdbRecord").finish_non_exhaustive()
    }
}

/// What a profile holds, without a value: what the API shows of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StateSummary {
    pub cookies: usize,
    /// The cookies' domains, sorted, without a leading dot.
    pub domains: Vec<String>,
    /// The origins with localStorage or IndexedDB.
    pub origins: Vec<String>,
    pub local_storage_items: usize,
    pub indexed_db_databases: usize,
}

impl BrowserState {
    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.cookies.is_empty() && self.origins.iter().all(|o| o.local_storage.is_empty() && o.indexed_db.is_empty())
    }

    /// Check the bounds and shapes; errors name the field under `field` (`state`).
    pub fn validate(&self, field: &str) -> Result<(), FieldError> {
        if self.cookies.len() > MAX_COOKIES {
            return Err(FieldError::new(
                format!("{field}.cookies"),
                format!("must hold at most {MAX_COOKIES} cookies"),
            ));
        }
        if self.origins.len() > MAX_ORIGINS {
            return Err(FieldError::new(
                format!("{field}.origins"),
                format!("must hold at most {MAX_ORIGINS} origins"),
            ));
        }
        for (i, c) in self.cookies.iter().enumerate() {
            let at = |k: &str| format!("{field}.cookies[{i}].{k}");
            if c.name.is_empty()
                || c.name.len() > 4096
                || c.name.chars().any(|ch| ch.is_control() || ch == ';' || ch == '=')
            {
                return Err(FieldError::new(
                    at("name"),
                    "must be 1–4096 characters without ';', '=' or control characters",
                ));
            }
            if c.value.len() > 4096 || c.value.chars().any(|ch| ch.is_control() || ch == ';') {
                return Err(FieldError::new(
                    at("value"),
                    "must be at most 4096 characters without ';' or control characters",
                ));
            }
            let host = c.domain.trim_start_matches('.');
            if host.is_empty()
                || host.len() > 253
                || host.chars().any(|ch| !(ch.is_ascii_alphanumeric() || "-.:[]_".contains(ch)))
            {
                return Err(FieldError::new(at("domain"), "must be a host name (a leading dot covers its subdomains)"));
            }
            if !c.path.starts_with('/') {
                return Err(FieldError::new(at("path"), "must start with /"));
            }
            if !matches!(c.same_site.as_str(), "Strict" | "Lax" | "None") {
                return Err(FieldError::new(at("sameSite"), "must be Strict, Lax or None"));
            }
            if !c.expires.is_finite() {
                return Err(FieldError::new(at("expires"), "must be seconds since the epoch, or -1"));
            }
        }
        for (i, o) in self.origins.iter().enumerate() {
            match url::Url::parse(&o.origin) {
                Ok(u) if matches!(u.scheme(), "http" | "https") && u.origin().ascii_serialization() == o.origin => {}
                _ => {
                    return Err(FieldError::new(
                        format!("{field}.origins[{i}].origin"),
                        "must be an origin: scheme, host and port only (https://example.com)",
                    ));
                }
            }
            for (j, db) in o.indexed_db.iter().enumerate() {
                if db.name.is_empty() || db.version == 0 {
                    return Err(FieldError::new(
                        format!("{field}.origins[{i}].indexedDB[{j}]"),
                        "needs a name and a version of 1 or more",
                    ));
                }
            }
        }
        let size = serde_json::to_vec(self).map(|v| v.len()).unwrap_or(usize::MAX);
        if size > MAX_STATE_BYTES {
            return Err(FieldError::new(
                field,
                format!("must be at most {} MB serialized", MAX_STATE_BYTES / (1024 * 1024)),
            ));
        }
        Ok(())
    }

    /// The cookies still alive at `now_s` (seconds since the epoch).
    pub fn live_cookies(&self, now_s: f64) -> impl Iterator<Item = &StateCookie> {
        self.cookies.iter().filter(move |c| c.expires <= 0.0 || c.expires > now_s)
    }

    /// What it holds, without values.
    pub fn summary(&self) -> StateSummary {
        let mut domains: Vec<String> =
            self.cookies.iter().map(|c| c.domain.trim_start_matches('.').to_owned()).collect();
        domains.sort();
        domains.dedup();
        let kept: Vec<&OriginState> =
            self.origins.iter().filter(|o| !o.local_storage.is_empty() || !o.indexed_db.is_empty()).collect();
        StateSummary {
            cookies: self.cookies.len(),
            domains,
            origins: kept.iter().map(|o| o.origin.clone()).collect(),
            local_storage_items: kept.iter().map(|o| o.local_storage.len()).sum(),
            indexed_db_databases: kept.iter().map(|o| o.indexed_db.len()).sum(),
        }
    }

    /// The script that restores the origins' localStorage and IndexedDB in each new
    /// document, before the page's own scripts; None when there is nothing to restore.
    pub fn restore_script(&self) -> Option<String> {
        let mut by_origin: BTreeMap<&str, Value> = BTreeMap::new();
        for o in &self.origins {
            if o.local_storage.is_empty() && o.indexed_db.is_empty() {
                continue;
            }
            let ls: Vec<[&str; 2]> = o.local_storage.iter().map(|i| [i.name.as_str(), i.value.as_str()]).collect();
            by_origin.insert(&o.origin, serde_json::json!({ "ls": ls, "idb": o.indexed_db }));
        }
        if by_origin.is_empty() {
            return None;
        }
        let data = serde_json::to_string(&by_origin).ok()?;
        Some(RESTORE_JS.replace("__STATE__", &data))
    }
}

/// Restores one origin's storage, once per tab (a sessionStorage mark), in the first
/// document of that origin. `__STATE__`: `{origin: {ls: [[name, value]], idb: [database]}}`.
const RESTORE_JS: &str = r#"(() => {
  let origin;
  try { origin = location.origin; } catch (e) { return; }
  const s = (__STATE__)[origin];
  if (!s) return;
  const mark = '__captureProfileRestored';
  try {
    if (sessionStorage.getItem(mark)) return;
    sessionStorage.setItem(mark, '1');
  } catch (e) { return; }
  try {
    for (const [k, v] of s.ls) if (localStorage.getItem(k) === null) localStorage.setItem(k, v);
  } catch (e) {}
  for (const db of s.idb) {
    try {
      const req = indexedDB.open(db.name, db.version);
      req.onupgradeneeded = (ev) => {
        if (ev.oldVersion !== 0) { req.transaction.abort(); return; }
        const d = req.result;
        for (const st of db.stores) {
          const opts = { autoIncrement: !!st.autoIncrement };
          if (st.keyPath !== null && st.keyPath !== undefined) opts.keyPath = st.keyPath;
          const os = d.createObjectStore(st.name, opts);
          for (const ix of st.indexes || []) os.createIndex(ix.name, ix.keyPath, { unique: !!ix.unique, multiEntry: !!ix.multiEntry });
          for (const r of st.records || []) { if (opts.keyPath === undefined) os.put(r.value, r.key); else os.put(r.value); }
        }
      };
      req.onsuccess = () => req.result.close();
      req.onerror = (e) => { e.preventDefault(); };
    } catch (e) {}
  }
})();"#;

/// Reads the current document's IndexedDB databases (values JSON can carry) as
/// [`IdbDatabase`]s; an awaited expression.
pub const SAVE_IDB_JS: &str = r#"(async () => {
  const out = [];
  if (!self.indexedDB || !indexedDB.databases) return out;
  const ask = (r) => new Promise((res, rej) => { r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
  let infos = [];
  try { infos = await indexedDB.databases(); } catch (e) { return out; }
  for (const info of infos.slice(0, 20)) {
    let db;
    try { db = await ask(indexedDB.open(info.name)); } catch (e) { continue; }
    const stores = [];
    for (const name of Array.from(db.objectStoreNames)) {
      const os = db.transaction(name, 'readonly').objectStore(name);
      const [keys, values] = await Promise.all([ask(os.getAllKeys(undefined, 10000)), ask(os.getAll(undefined, 10000))]);
      const records = [];
      values.forEach((v, i) => {
        let value;
        try { value = JSON.parse(JSON.stringify(v)); } catch (e) { return; }
        if (value === undefined) return;
        records.push(os.keyPath === null ? { key: keys[i], value } : { value });
      });
      const indexes = Array.from(os.indexNames).map((n) => {
        const ix = os.index(n);
        return { name: n, keyPath: ix.keyPath, unique: ix.unique, multiEntry: ix.multiEntry };
      });
      stores.push({ name, keyPath: os.keyPath, autoIncrement: os.autoIncrement, indexes, records });
    }
    out.push({ name: db.name, version: db.version, stores });
    db.close();
  }
  return out;
})()"#;

/// Whether the page looks signed out: a visible password field (a sign-in form). Returns
/// `{password: number, url: string}`.
pub const SIGNED_OUT_JS: &str = r#"(() => {
  const seen = (el) => { const r = el.getBoundingClientRect(); const s = getComputedStyle(el); return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'; };
  const password = Array.from(document.querySelectorAll('input[type=password]')).filter(seen).length;
  return { password, url: location.href };
})()"#;

/// [`expired_message`] from what [`SIGNED_OUT_JS`] answered.
pub fn signed_out(requested: &str, facts: &Value) -> Option<String> {
    expired_message(requested, facts["url"].as_str().unwrap_or_default(), facts["password"].as_u64().unwrap_or(0))
}

/// The profile's session has expired when the page asked for was sent elsewhere and the
/// page it landed on asks for a password; the message the job reports then.
pub fn expired_message(requested: &str, landed: &str, password_fields: u64) -> Option<String> {
    if password_fields == 0 {
        return None;
    }
    let strip = |u: &str| -> String {
        url::Url::parse(u)
            .map(|mut u| {
                u.set_fragment(None);
                u.to_string().trim_end_matches('/').to_owned()
            })
            .unwrap_or_else(|_| u.to_owned())
    };
    if strip(requested) == strip(landed) {
        return None;
    }
    Some(format!(
        "profile_expired: the page redirected to a sign-in form ({landed}): the profile's session has expired; sign in again (capture profile login, or the MCP tool profile_login) and retry"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cookie(name: &str, expires: f64) -> StateCookie {
        StateCookie {
            name: name.into(),
            value: "v".into(),
            domain: "127.0.0.1".into(),
            path: "/".into(),
            expires,
            http_only: true,
            secure: false,
            same_site: "Lax".into(),
        }
    }

    #[test]
    fn playwright_state_parses_and_round_trips() {
        let raw = r#"{"cookies":[{"name":"sid","value":"abc","domain":".example.com","path":"/","expires":-1,"httpOnly":true,"secure":true,"sameSite":"Lax"}],
            "origins":[{"origin":"https://example.com","localStorage":[{"name":"theme","value":"dark"}]}]}"#;
        let s: BrowserState = serde_json::from_str(raw).unwrap();
        assert_eq!(s.cookies[0].domain, ".example.com");
        assert_eq!(s.origins[0].local_storage[0].value, "dark");
        s.validate("state").unwrap();
        let back: BrowserState = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        let sum = s.summary();
        assert_eq!(sum.domains, vec!["example.com".to_string()]);
        assert_eq!(sum.origins, vec!["https://example.com".to_string()]);
        assert_eq!(sum.local_storage_items, 1);
    }

    #[test]
    fn bad_states_name_their_field() {
        let mut s = BrowserState { cookies: vec![cookie("a;b", -1.0)], origins: vec![] };
        assert_eq!(s.validate("state").unwrap_err().field, "state.cookies[0].name");
        s.cookies[0].name = "a".into();
        s.cookies[0].same_site = "lax".into();
        assert_eq!(s.validate("state").unwrap_err().field, "state.cookies[0].sameSite");
        s.cookies[0].same_site = "Lax".into();
        s.origins.push(OriginState { origin: "https://example.com/path".into(), ..Default::default() });
        assert_eq!(s.validate("state").unwrap_err().field, "state.origins[0].origin");
    }

    #[test]
    fn expired_cookies_are_dropped() {
        let s = BrowserState {
            cookies: vec![cookie("old", 100.0), cookie("new", 3000.0), cookie("session", -1.0)],
            origins: vec![],
        };
        let live: Vec<&str> = s.live_cookies(2000.0).map(|c| c.name.as_str()).collect();
        assert_eq!(live, vec!["new", "session"]);
    }

    #[test]
    fn restore_script_only_when_storage() {
        let mut s = BrowserState { cookies: vec![cookie("a", -1.0)], origins: vec![] };
        assert!(s.restore_script().is_none());
        s.origins.push(OriginState {
            origin: "http://127.0.0.1:8080".into(),
            local_storage: vec![StorageItem { name: "k".into(), value: "v\"</script>".into() }],
            indexed_db: vec![],
        });
        let js = s.restore_script().unwrap();
        assert!(js.contains(r#"{"http://127.0.0.1:8080":{"idb":[],"ls":[["k","v\"</script>"]]}}"#), "{js}");
    }

    #[test]
    fn expiry_needs_a_redirect_to_a_password_form() {
        assert_eq!(expired_message("http://a/members", "http://a/members/", 1), None);
        assert_eq!(expired_message("http://a/members", "http://a/login", 0), None);
        let m = expired_message("http://a/members", "http://a/login?next=/members", 1).unwrap();
        assert!(m.starts_with("profile_expired: the page redirected to a sign-in form (http://a/login?next=/members)"));
    }
}
