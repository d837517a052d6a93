//! A customer's own proxy (`/v1/proxies`): the egress guard connects **through** it after
//! checking the destination, instead of connecting directly. Pure: the URL's shape and its
//! parts; the dialling lives with the egress proxy (`capture_browser::egress`).
//!
//! Accepted URLs: `http://host:port`, `https://host:port` (TLS to the proxy itself) and
//! `socks5://host:port`, each optionally with `user:password@` (percent-encoded), no path,
//! query or fragment. The port defaults to 80, 443 and 1080.

use std::fmt;

/// How the egress guard talks to the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyScheme {
    /// HTTP `CONNECT` for tunnels, absolute-form requests for plain `http://`.
    Http,
    /// The same inside TLS to the proxy.
    Https,
    /// SOCKS5 (RFC 1928), username/password authentication (RFC 1929).
    Socks5,
}

impl ProxyScheme {
    /// `http`, `https` or `socks5`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProxyScheme::Http => "http",
            ProxyScheme::Https => "https",
            ProxyScheme::Socks5 => "socks5",
        }
    }

    fn default_port(self) -> u16 {
        match self {
            ProxyScheme::Http => 80,
            ProxyScheme::Https => 443,
            ProxyScheme::Socks5 => 1080,
        }
    }
}

/// One proxy the egress guard may connect through.
#[derive(Clone, PartialEq, Eq)]
pub struct UpstreamProxy {
    /// How failures name it: the proxy's name (and pool member), as in
    /// `proxy_failed: <label>: <why>`.
    pub label: String,
    pub scheme: ProxyScheme,
    /// A host name or an IP address (IPv6 without brackets).
    pub host: String,
    pub port: u16,
    pub username: Option<String>,
    pub password: Option<String>,
}

impl fmt::Debug for UpstreamProxy {
    // Credentials never reach a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UpstreamProxy")
            .field("label", &self.label)
            .field("url", &self.shown())
            .field("authenticated", &self.username.is_some())
            .finish()
    }
}

/// Most bytes of a proxy URL.
pub const PROXY_URL_MAX: usize = 2048;

/// The prefix of every error a customer's proxy caused: `proxy_failed: <label>: <why>`.
pub const PROXY_FAILED: &str = "proxy_failed: ";

impl UpstreamProxy {
    /// Read a proxy URL; the error says what is wrong in words.
    pub fn parse(raw: &str, label: impl Into<String>) -> Result<UpstreamProxy, String> {
        let raw = raw.trim();
        if raw.len() > PROXY_URL_MAX {
            return Err(format!("must be at most {PROXY_URL_MAX} bytes"));
        }
        let (scheme_str, _) = raw.split_once("://").ok_or("must be a URL such as http://proxy.example:3128")?;
        let scheme = match scheme_str.to_ascii_lowercase().as_str() {
            "http" => ProxyScheme::Http,
            "https" => ProxyScheme::Https,
            "socks5" | "socks5h" => ProxyScheme::Socks5,
            other => return Err(format!("scheme '{other}' is not supported (use http://, https:// or socks5://)")),
        };
        // The url crate knows http(s)' default ports only; read socks5 as http to parse it.
        let rest = &raw[scheme_str.len()..];
        let u = url::Url::parse(&format!("http{rest}")).map_err(|e| format!("is not a valid URL: {e}"))?;
        let host = match u.host() {
            Some(url::Host::Domain(d)) if !d.is_empty() => d.to_string(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            _ => return Err("has no host".into()),
        };
        // `Url` drops an explicit :80 (http's default): read the port as written.
        let port = explicit_port(rest)?.unwrap_or_else(|| scheme.default_port());
        if port == 0 {
            return Err("has port 0".into());
        }
        if u.path() != "/" || u.query().is_some() || u.fragment().is_some() {
            return Err("must not have a path, query or fragment (just scheme://[user:password@]host:port)".into());
        }
        let decode = |s: &str| {
            percent_decode(s).ok_or_else(|| "has credentials that are not valid percent-encoded UTF-8".to_string())
        };
        let username = match u.username() {
            "" => None,
            name => Some(decode(name)?),
        };
        let password = u.password().map(decode).transpose()?;
        if password.is_some() && username.is_none() {
            return Err("has a password without a user name".into());
        }
        for part in [&username, &password].into_iter().flatten() {
            if part.len() > 255 || part.chars().any(char::is_control) {
                return Err("has credentials longer than 255 bytes or with control characters".into());
            }
        }
        Ok(UpstreamProxy { label: label.into(), scheme, host, port, username, password })
    }

    /// `scheme://host:port`, without credentials: how the proxy is shown.
    pub fn shown(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        format!("{}://{host}:{}", self.scheme.as_str(), self.port)
    }

    /// The whole URL, credentials included (percent-encoded): what is sealed and stored.
    pub fn to_url(&self) -> String {
        match (&self.username, &self.password) {
            (Some(u), Some(p)) => self.shown().replacen("://", &format!("://{}:{}@", encode(u), encode(p)), 1),
            (Some(u), None) => self.shown().replacen("://", &format!("://{}@", encode(u)), 1),
            _ => self.shown(),
        }
    }

    /// `host:port` for a request line (IPv6 in brackets).
    pub fn authority(&self) -> String {
        self.shown().split_once("://").map(|(_, a)| a.to_string()).unwrap_or_default()
    }

    /// The error of a failure this proxy caused.
    pub fn failed(&self, why: impl fmt::Display) -> String {
        format!("{PROXY_FAILED}{}: {why}", self.label)
    }
}

/// The port written after the host of `://[userinfo@]host[:port]…`, if any.
fn explicit_port(rest: &str) -> Result<Option<u16>, String> {
    let after = rest.trim_start_matches("://");
    let authority = after.split(['/', '?', '#']).next().unwrap_or("");
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let port = if let Some(v6) = hostport.strip_prefix('[') {
        v6.split_once(']').and_then(|(_, p)| p.strip_prefix(':'))
    } else {
        hostport.rsplit_once(':').map(|(_, p)| p)
    };
    match port {
        None | Some("") => Ok(None),
        Some(p) => p.parse::<u16>().map(Some).map_err(|_| format!("has an invalid port '{p}' (1 to 65535)")),
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_three_schemes_with_their_default_ports() {
        let p = UpstreamProxy::parse("http://proxy.example:3128", "office").unwrap();
        assert_eq!(
            (p.scheme, p.host.as_str(), p.port, p.username.clone()),
            (ProxyScheme::Http, "proxy.example", 3128, None)
        );
        assert_eq!(p.shown(), "http://proxy.example:3128");
        assert_eq!(UpstreamProxy::parse("http://p.example", "x").unwrap().port, 80);
        assert_eq!(UpstreamProxy::parse("http://p.example:80", "x").unwrap().port, 80);
        assert_eq!(UpstreamProxy::parse("HTTPS://p.example", "x").unwrap().port, 443);
        let s = UpstreamProxy::parse("socks5://10.0.0.1", "x").unwrap();
        assert_eq!((s.scheme, s.port), (ProxyScheme::Socks5, 1080));
        let v6 = UpstreamProxy::parse("socks5://[::1]:9050", "x").unwrap();
        assert_eq!((v6.host.as_str(), v6.port, v6.authority()), ("::1", 9050, "[::1]:9050".to_string()));
    }

    #[test]
    fn credentials_are_decoded_kept_out_of_what_is_shown_and_sealed_back_whole() {
        let p = UpstreamProxy::parse("http://b%40b:p%3Ass%20w@proxy.example:8080", "office").unwrap();
        assert_eq!((p.username.as_deref(), p.password.as_deref()), (Some("b@b"), Some("p:ss w")));
        assert_eq!(p.shown(), "http://proxy.example:8080");
        assert!(!format!("{p:?}").contains("ss"), "{p:?}");
        let again = UpstreamProxy::parse(&p.to_url(), "office").unwrap();
        assert_eq!(again, p);
        assert_eq!(p.failed("connection refused"), "proxy_failed: office: connection refused");
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        for (url, why) in [
            ("ftp://p.example:21", "scheme 'ftp' is not supported (use http://, https:// or socks5://)"),
            ("p.example:3128", "must be a URL such as http://proxy.example:3128"),
            ("http://:3128", "is not a valid URL: empty host"),
            ("http://p.example:99999", "is not a valid URL: invalid port number"),
            ("http://p.example:0", "has port 0"),
            ("socks5://p.example:x", "is not a valid URL: invalid port number"),
            (
                "http://p.example:3128/path",
                "must not have a path, query or fragment (just scheme://[user:password@]host:port)",
            ),
            ("http://:pw@p.example", "has a password without a user name"),
        ] {
            assert_eq!(UpstreamProxy::parse(url, "x").unwrap_err(), why, "{url}");
        }
    }
}
