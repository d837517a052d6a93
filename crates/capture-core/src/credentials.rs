//! The credentials a capture may carry (`headers`, `cookies`, `httpAuth`): their wire types,
//! their checks, and what of them may be shown (names, never values). The service keeps them
//! sealed with its master key while the job waits; nothing here serialises a value where a
//! job, a log or a webhook could show it (`Debug` prints names only).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::FieldError;

/// Limits of the credential options.
pub mod bounds {
    /// `headers`: at most this many, names up to `NAME_MAX` bytes, values up to `VALUE_MAX`.
    pub const HEADERS_MAX: usize = 50;
    pub const NAME_MAX: usize = 256;
    pub const VALUE_MAX: usize = 8192;
    /// `cookies`: at most this many, values up to `COOKIE_VALUE_MAX` bytes.
    pub const COOKIES_MAX: usize = 50;
    pub const COOKIE_VALUE_MAX: usize = 4096;
    /// `httpAuth`: user name and password sizes.
    pub const USERNAME_MAX: usize = 256;
    pub const PASSWORD_MAX: usize = 1024;
}

/// Request headers a page load may not set: the connection's own (hop-by-hop), the host,
/// and what the browser computes itself.
const FORBIDDEN_HEADERS: [&str; 11] = [
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
];

/// `sameSite` of a cookie.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
pub enum SameSite {
    Strict,
    Lax,
    None,
}

impl SameSite {
    /// The DevTools protocol's name (`Network.CookieSameSite`).
    pub fn cdp_name(self) -> &'static str {
        match self {
            SameSite::Strict => "Strict",
            SameSite::Lax => "Lax",
            SameSite::None => "None",
        }
    }
}

/// A cookie set before the page loads (`cookies`).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CookieIn {
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = bounds::NAME_MAX)))]
    pub name: String,
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::COOKIE_VALUE_MAX)))]
    pub value: String,
    /// The cookie's domain (default: the page's own host only; a leading dot or a parent
    /// domain covers its subdomains).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Default `/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_only: Option<bool>,
    /// Strict, Lax or None (None needs secure: true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_site: Option<SameSite>,
}

impl std::fmt::Debug for CookieIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CookieIn").field("name", &self.name).field("domain", &self.domain).finish_non_exhaustive()
    }
}

/// HTTP Basic credentials for the page's own origin (`httpAuth`).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct HttpAuth {
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = bounds::USERNAME_MAX)))]
    pub username: String,
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::PASSWORD_MAX)))]
    pub password: String,
}

impl std::fmt::Debug for HttpAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HttpAuth(…)")
    }
}

/// A capture's credentials, checked. Never shown: the service stores them sealed and a job
/// shows only [`CredentialsSet`].
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Credentials {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cookies: Vec<CookieIn>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_auth: Option<HttpAuth>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Credentials").field(&self.summary()).finish()
    }
}

/// Which credentials a job was given: header and cookie names, and whether HTTP
/// authentication was set. Never their values.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CredentialsSet {
    /// Names of the extra request headers.
    pub headers: Vec<String>,
    /// Names of the cookies set before the page loaded.
    pub cookies: Vec<String>,
    /// Whether HTTP Basic credentials were given.
    pub http_auth: bool,
}

impl Credentials {
    /// Check the request's credential options; `page` is the page's URL (none for an
    /// uploaded document, which takes no `httpAuth` and only cookies with a domain).
    pub fn check(
        headers: Option<BTreeMap<String, String>>,
        cookies: Option<Vec<CookieIn>>,
        http_auth: Option<HttpAuth>,
        page: Option<&str>,
    ) -> Result<Option<Credentials>, FieldError> {
        let headers = headers.unwrap_or_default();
        if headers.len() > bounds::HEADERS_MAX {
            return Err(FieldError::new("headers", "must set at most 50 headers"));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (name, value) in &headers {
            let field = format!("headers.{name}");
            if name.is_empty() || name.len() > bounds::NAME_MAX || !name.bytes().all(is_token_byte) {
                return Err(FieldError::new(field, "is not a valid header name"));
            }
            let lower = name.to_ascii_lowercase();
            if FORBIDDEN_HEADERS.contains(&lower.as_str()) {
                return Err(FieldError::new(field, "cannot be set: the browser owns the connection's headers"));
            }
            if !seen.insert(lower) {
                return Err(FieldError::new(field, "is set twice (header names are case-insensitive)"));
            }
            if value.len() > bounds::VALUE_MAX || !value.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b)) {
                return Err(FieldError::new(field, "must be at most 8192 bytes of printable ASCII (no line breaks)"));
            }
        }
        let cookies = cookies.unwrap_or_default();
        if cookies.len() > bounds::COOKIES_MAX {
            return Err(FieldError::new("cookies", "must list at most 50 cookies"));
        }
        for (i, c) in cookies.iter().enumerate() {
            let at = |f: &str| format!("cookies[{i}].{f}");
            if c.name.is_empty() || c.name.len() > bounds::NAME_MAX || !c.name.bytes().all(is_token_byte) {
                return Err(FieldError::new(at("name"), "is not a valid cookie name"));
            }
            if c.value.len() > bounds::COOKIE_VALUE_MAX
                || !c.value.bytes().all(|b| (0x20..0x7f).contains(&b) && !b";,\"\\".contains(&b))
            {
                return Err(FieldError::new(
                    at("value"),
                    "must be at most 4096 bytes of printable ASCII without ; , \" or \\ (percent-encode the rest)",
                ));
            }
            match c.domain.as_deref() {
                Some(d) if !valid_domain(d) => return Err(FieldError::new(at("domain"), "is not a host name")),
                None if page.is_none() => {
                    return Err(FieldError::new(at("domain"), "is required when the page has no URL (an upload)"));
                }
                _ => {}
            }
            if let Some(p) = &c.path
                && (!p.starts_with('/') || p.len() > 1024 || p.chars().any(|ch| ch.is_control() || ch == ';'))
            {
                return Err(FieldError::new(at("path"), "must start with / (at most 1024 bytes)"));
            }
            if c.same_site == Some(SameSite::None) && c.secure != Some(true) {
                return Err(FieldError::new(at("sameSite"), "None needs secure: true (browsers drop it otherwise)"));
            }
        }
        if let Some(a) = &http_auth {
            if page.is_none() {
                return Err(FieldError::new("httpAuth", "applies to a page at a URL, not to an upload"));
            }
            if a.username.is_empty()
                || a.username.len() > bounds::USERNAME_MAX
                || a.username.contains(':')
                || a.username.chars().any(char::is_control)
            {
                return Err(FieldError::new(
                    "httpAuth.username",
                    "must be 1 to 256 bytes without ':' or control characters",
                ));
            }
            if a.password.len() > bounds::PASSWORD_MAX || a.password.chars().any(char::is_control) {
                return Err(FieldError::new(
                    "httpAuth.password",
                    "must be at most 1024 bytes without control characters",
                ));
            }
        }
        let c = Credentials { headers, cookies, http_auth };
        Ok((!c.is_empty()).then_some(c))
    }

    pub fn is_empty(&self) -> bool {
        self.headers.is_empty() && self.cookies.is_empty() && self.http_auth.is_none()
    }

    /// What may be shown of them.
    pub fn summary(&self) -> CredentialsSet {
        CredentialsSet {
            headers: self.headers.keys().cloned().collect(),
            cookies: self.cookies.iter().map(|c| c.name.clone()).collect(),
            http_auth: self.http_auth.is_some(),
        }
    }
}

/// A byte of an HTTP token (RFC 9110 `tchar`): header and cookie names.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A host name, with an optional leading dot.
fn valid_domain(d: &str) -> bool {
    let d = d.strip_prefix('.').unwrap_or(d);
    !d.is_empty()
        && d.len() <= 253
        && d.split('.').all(|l| {
            !l.is_empty() && l.len() <= 63 && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdrs(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
        Some(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    fn cookie(name: &str, value: &str) -> CookieIn {
        CookieIn {
            name: name.into(),
            value: value.into(),
            domain: None,
            path: None,
            secure: None,
            http_only: None,
            same_site: None,
        }
    }

    fn refusal(r: Result<Option<Credentials>, FieldError>) -> (String, String) {
        let e = r.expect_err("refused");
        (e.field, e.reason)
    }

    const PAGE: Option<&str> = Some("https://example.com/");

    #[test]
    fn nothing_set_is_none() {
        assert_eq!(Credentials::check(None, None, None, PAGE).unwrap(), None);
        assert_eq!(Credentials::check(hdrs(&[]), Some(vec![]), None, PAGE).unwrap(), None);
    }

    #[test]
    fn bad_headers_are_refused_by_name() {
        for (name, value, field) in [
            ("Host", "evil.test", "headers.Host"),
            ("Connection", "close", "headers.Connection"),
            ("Transfer-Encoding", "chunked", "headers.Transfer-Encoding"),
            ("X Bad", "1", "headers.X Bad"),
            ("X-Split", "a\r\nInjected: 1", "headers.X-Split"),
        ] {
            assert_eq!(refusal(Credentials::check(hdrs(&[(name, value)]), None, None, PAGE)).0, field);
        }
        let dup = hdrs(&[("X-Token", "a"), ("x-token", "b")]);
        assert_eq!(refusal(Credentials::check(dup, None, None, PAGE)).0, "headers.x-token");
        let many: Vec<(String, String)> = (0..51).map(|i| (format!("X-{i}"), "v".into())).collect();
        let many = Some(many.into_iter().collect());
        assert_eq!(refusal(Credentials::check(many, None, None, PAGE)).0, "headers");
    }

    #[test]
    fn bad_cookies_and_auth_are_refused_by_name() {
        let mut c = cookie("sid", "a;b");
        assert_eq!(refusal(Credentials::check(None, Some(vec![c.clone()]), None, PAGE)).0, "cookies[0].value");
        c.value = "café".into();
        assert_eq!(refusal(Credentials::check(None, Some(vec![c.clone()]), None, PAGE)).0, "cookies[0].value");
        let accented = hdrs(&[("X-Name", "café")]);
        assert_eq!(refusal(Credentials::check(accented, None, None, PAGE)).0, "headers.X-Name");
        c.value = "ok".into();
        c.same_site = Some(SameSite::None);
        assert_eq!(refusal(Credentials::check(None, Some(vec![c.clone()]), None, PAGE)).0, "cookies[0].sameSite");
        c.same_site = None;
        c.domain = Some("bad domain".into());
        assert_eq!(refusal(Credentials::check(None, Some(vec![c.clone()]), None, PAGE)).0, "cookies[0].domain");
        // An upload has no host to default to.
        let plain = cookie("sid", "v");
        assert_eq!(refusal(Credentials::check(None, Some(vec![plain]), None, None)).0, "cookies[0].domain");
        let auth = HttpAuth { username: "a:b".into(), password: "p".into() };
        assert_eq!(refusal(Credentials::check(None, None, Some(auth), PAGE)).0, "httpAuth.username");
        let auth = HttpAuth { username: "ann".into(), password: "p".into() };
        assert_eq!(refusal(Credentials::check(None, None, Some(auth), None)).0, "httpAuth");
    }

    #[test]
    fn the_summary_and_debug_show_names_never_values() {
        let c = Credentials::check(
            hdrs(&[("X-Api-Key", "sekrit-header")]),
            Some(vec![cookie("session", "sekrit-cookie")]),
            Some(HttpAuth { username: "ann".into(), password: "sekrit-password".into() }),
            PAGE,
        )
        .unwrap()
        .unwrap();
        let s = c.summary();
        assert_eq!(
            s,
            CredentialsSet { headers: vec!["X-Api-Key".into()], cookies: vec!["session".into()], http_auth: true }
        );
        let shown = format!("{c:?} {:?} {:?}", c.cookies, c.http_auth);
        for secret in ["sekrit-header", "sekrit-cookie", "sekrit-password", "ann"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
    }
}
