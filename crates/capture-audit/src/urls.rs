//! URL normalisation, de-duplication and the crawl's scope.
//!
//! Two forms of a URL are used:
//! - the **fetch form** ([`normalize`]): what the crawler requests. Only `http`/`https`;
//!   scheme and host lower-cased, the default port dropped (`:80` on http, `:443` on https),
//!   an empty path becomes `/`, the fragment dropped, tracking parameters removed
//!   ([`is_tracking_param`]) and the remaining query parameters sorted by name (stable, so
//!   repeated names keep their order); an empty query disappears (`/a?` → `/a`).
//! - the **identity** ([`dedupe_key`]): the fetch form with a directory index file dropped
//!   (`/index.html`, `/index.htm`: `/docs/index.html` is `/docs/`), a trailing slash folded
//!   (`/a/` and `/a` are one page; `/` stays `/`) and a leading `www.` dropped from the host
//!   (`www.example.com` and `example.com` are one site). Two URLs with one identity are
//!   audited once, under the first form seen. (What a URL answers can make two identities one
//!   page too — a redirect, `<link rel=canonical>`, the same content: see [`crate::run`].)
//!
//! The scope ([`Scope`]) is the start URL's origin (scheme + host + port, RFC 6454) and its
//! `www.` twin: `https://example.com` also admits `https://www.example.com` and the other
//! way round, because sites link to both and serve one; another scheme or port is another
//! origin.

use url::Url;

/// Why a string is not an auditable URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Not parseable as an absolute URL (or relative to the base given).
    #[error("not a valid URL: {0}")]
    Invalid(String),
    /// A scheme other than http or https (`mailto:`, `javascript:`, `ftp:` …).
    #[error("only http and https URLs can be audited (got {0}:)")]
    Scheme(String),
    /// http(s) without a host.
    #[error("the URL has no host")]
    NoHost,
}

/// Query parameter names removed by [`normalize`] (besides every `utm_*` and `mc_*`).
pub const TRACKING_PARAMS: &[&str] = &[
    "gclid",
    "gclsrc",
    "dclid",
    "gbraid",
    "wbraid",
    "fbclid",
    "msclkid",
    "yclid",
    "igshid",
    "twclid",
    "ttclid",
    "li_fat_id",
    "_ga",
    "_gl",
    "_hsenc",
    "_hsmi",
    "mkt_tok",
    "ref",
    "ref_src",
    "ref_url",
    "srsltid",
    "oly_enc_id",
    "oly_anon_id",
    "vero_id",
    "wickedid",
    "rb_clickid",
    "s_cid",
];

/// Whether a query parameter only tracks the visit (`utm_*`, `mc_*`, `gclid`, `fbclid`, `ref`, …).
pub fn is_tracking_param(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with("utm_") || n.starts_with("mc_") || TRACKING_PARAMS.contains(&n.as_str())
}

/// Parse `input` (relative to `base` when given) and return its fetch form.
pub fn normalize(input: &str, base: Option<&Url>) -> Result<Url, UrlError> {
    let input = input.trim();
    let parsed = match base {
        Some(b) => b.join(input),
        None => Url::parse(input),
    }
    .map_err(|e| UrlError::Invalid(format!("{input} ({e})")))?;
    normalize_url(parsed)
}

/// The fetch form of an already parsed URL (see the module docs).
pub fn normalize_url(mut url: Url) -> Result<Url, UrlError> {
    match url.scheme() {
        "http" | "https" => {}
        other => return Err(UrlError::Scheme(other.to_owned())),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(UrlError::NoHost);
    }
    url.set_fragment(None);
    // The url crate already lower-cases scheme and host, drops default ports and turns an
    // empty path into "/"; user info never belongs in a crawled URL.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    if url.query().is_some() {
        let mut pairs: Vec<(String, String)> = url
            .query_pairs()
            .filter(|(k, _)| !is_tracking_param(k))
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        if pairs.is_empty() {
            url.set_query(None);
        } else {
            url.query_pairs_mut().clear().extend_pairs(pairs);
        }
    }
    Ok(url)
}

/// The host without one leading `www.`.
pub fn bare_host(host: &str) -> &str {
    host.strip_prefix("www.").unwrap_or(host)
}

/// Names of directory index files: `/docs/index.html` is the page `/docs/`.
pub const INDEX_FILES: &[&str] = &["index.html", "index.htm"];

/// The identity two URLs share when they are the same page (see the module docs).
pub fn dedupe_key(url: &Url) -> String {
    let host = bare_host(url.host_str().unwrap_or_default());
    let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
    let mut path = url.path();
    if let Some((dir, last)) = path.rsplit_once('/')
        && INDEX_FILES.iter().any(|f| last.eq_ignore_ascii_case(f))
    {
        path = &path[..dir.len() + 1];
    }
    if path.len() > 1 && path.ends_with('/') {
        path = path.trim_end_matches('/');
        if path.is_empty() {
            path = "/";
        }
    }
    match url.query() {
        Some(q) => format!("{}://{host}{port}{path}?{q}", url.scheme()),
        None => format!("{}://{host}{port}{path}", url.scheme()),
    }
}

/// An origin: scheme, host and port (the port made explicit).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    /// `http` or `https`.
    pub scheme: String,
    /// Lower-case host.
    pub host: String,
    /// Explicit port (80/443 when the URL had none).
    pub port: u16,
}

impl Origin {
    /// The origin of an http(s) URL; `None` for other schemes.
    pub fn of(url: &Url) -> Option<Origin> {
        if !matches!(url.scheme(), "http" | "https") {
            return None;
        }
        Some(Origin {
            scheme: url.scheme().to_owned(),
            host: url.host_str()?.to_ascii_lowercase(),
            port: url.port_or_known_default()?,
        })
    }

    /// `scheme://host[:port]/` as a URL (default ports omitted).
    pub fn root(&self) -> Url {
        let default = matches!((self.scheme.as_str(), self.port), ("http", 80) | ("https", 443));
        let s = if default {
            format!("{}://{}/", self.scheme, self.host)
        } else {
            format!("{}://{}:{}/", self.scheme, self.host, self.port)
        };
        Url::parse(&s).unwrap_or_else(|_| Url::parse("http://invalid/").unwrap())
    }
}

/// Whether two URLs have the same origin (scheme, host and port; strict, no `www.` folding).
pub fn same_origin(a: &Url, b: &Url) -> bool {
    match (Origin::of(a), Origin::of(b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// What a crawl may visit: the start URL's origin and its `www.` twin.
#[derive(Debug, Clone)]
pub struct Scope {
    origin: Origin,
}

impl Scope {
    /// The scope of a crawl starting at `start`.
    pub fn new(start: &Url) -> Result<Scope, UrlError> {
        let origin = Origin::of(start).ok_or_else(|| UrlError::Scheme(start.scheme().to_owned()))?;
        Ok(Scope { origin })
    }

    /// The start URL's origin.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Whether `url` is inside the scope.
    pub fn contains(&self, url: &Url) -> bool {
        let Some(o) = Origin::of(url) else { return false };
        o.scheme == self.origin.scheme
            && o.port == self.origin.port
            && bare_host(&o.host) == bare_host(&self.origin.host)
    }
}

/// File extensions that are never HTML pages (checked on the path's last segment).
pub const NON_HTML_EXTENSIONS: &[&str] = &[
    "7z", "aac", "apk", "atom", "avi", "avif", "bin", "bmp", "bz2", "css", "csv", "dmg", "doc", "docx", "eot", "epub",
    "exe", "flac", "gif", "gz", "heic", "ico", "iso", "jar", "jpeg", "jpg", "js", "json", "m4a", "m4v", "mjs", "mkv",
    "mov", "mp3", "mp4", "mpeg", "mpg", "msi", "odp", "ods", "odt", "ogg", "ogv", "otf", "pdf", "png", "ppt", "pptx",
    "psd", "rar", "rss", "rtf", "svg", "tar", "tgz", "tif", "tiff", "ttf", "txt", "wasm", "wav", "webm", "webp",
    "woff", "woff2", "xls", "xlsx", "xml", "xz", "zip",
];

/// Whether the URL's path names a file that is not a page (by extension).
pub fn looks_like_non_html(url: &Url) -> bool {
    let last = url.path().rsplit('/').next().unwrap_or_default();
    match last.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => NON_HTML_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()),
        _ => false,
    }
}

/// Whether a `Content-Type` header value is an HTML document.
pub fn is_html_content_type(value: &str) -> bool {
    let mime = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    mime == "text/html" || mime == "application/xhtml+xml"
}

/// A sign-out link (`/logout`, `/sign-out`, `/users/sign_out`, `?action=logout`…): a
/// signed-in crawl does not follow it.
pub fn is_sign_out(url: &Url) -> bool {
    const WORDS: [&str; 6] = ["logout", "log-out", "log_out", "signout", "sign-out", "sign_out"];
    let hit = |s: &str| {
        let s = s.to_ascii_lowercase();
        WORDS.iter().any(|w| s == *w || s.starts_with(&format!("{w}.")))
    };
    url.path_segments().is_some_and(|mut segs| segs.any(hit)) || url.query_pairs().any(|(_, v)| hit(&v))
}

#[cfg(test)]
mod tests {

    #[test]
    fn sign_out_links_are_known() {
        for u in [
            "https://a.com/logout",
            "https://a.com/users/sign_out",
            "https://a.com/Sign-Out",
            "https://a.com/logout.php",
            "https://a.com/?action=logout",
        ] {
            assert!(is_sign_out(&Url::parse(u).unwrap()), "{u}");
        }
        for u in ["https://a.com/login", "https://a.com/blog/logout-tips", "https://a.com/signouts"] {
            assert!(!is_sign_out(&Url::parse(u).unwrap()), "{u}");
        }
    }
    use super::*;

    fn n(s: &str) -> String {
        normalize(s, None).unwrap().to_string()
    }

    #[test]
    fn normalisation_drops_fragments_default_ports_and_tracking_and_sorts_the_query() {
        assert_eq!(n("HTTP://Example.COM:80/a#top"), "http://example.com/a");
        assert_eq!(n("https://example.com:443"), "https://example.com/");
        assert_eq!(n("https://example.com:8443/x"), "https://example.com:8443/x");
        assert_eq!(
            n("https://example.com/p?utm_source=x&b=2&a=1&gclid=z&fbclid=q&mc_cid=1&ref=hn"),
            "https://example.com/p?a=1&b=2"
        );
        assert_eq!(n("https://example.com/p?utm_source=x"), "https://example.com/p");
        assert_eq!(n("https://example.com/p?"), "https://example.com/p");
        assert_eq!(n("https://u:pw@example.com/"), "https://example.com/");
        // Repeated names keep their relative order.
        assert_eq!(n("https://e.com/?b=1&a=2&a=1"), "https://e.com/?a=2&a=1&b=1");
    }

    #[test]
    fn relative_links_resolve_against_the_page() {
        let base = Url::parse("https://example.com/blog/post").unwrap();
        assert_eq!(normalize("../about#x", Some(&base)).unwrap().as_str(), "https://example.com/about");
        assert_eq!(normalize("//cdn.example.net/a", Some(&base)).unwrap().as_str(), "https://cdn.example.net/a");
    }

    #[test]
    fn other_schemes_and_garbage_are_refused_with_a_reason() {
        assert_eq!(normalize("mailto:a@b.c", None), Err(UrlError::Scheme("mailto".into())));
        assert!(matches!(normalize("javascript:void(0)", None), Err(UrlError::Scheme(_))));
        assert!(matches!(normalize("not a url", None), Err(UrlError::Invalid(_))));
    }

    #[test]
    fn identity_folds_trailing_slash_and_www() {
        let k = |s: &str| dedupe_key(&normalize(s, None).unwrap());
        assert_eq!(k("https://example.com/a/"), k("https://www.example.com/a"));
        assert_eq!(k("https://example.com/"), "https://example.com/");
        assert_eq!(k("https://example.com//"), "https://example.com/");
        assert_eq!(k("https://example.com/a?utm_medium=x#f"), k("https://example.com/a"));
        assert_ne!(k("http://example.com/a"), k("https://example.com/a"));
        assert_ne!(k("https://example.com:8443/a"), k("https://example.com/a"));
        assert_ne!(k("https://example.com/a?p=1"), k("https://example.com/a?p=2"));
        // A directory's index file is the directory.
        assert_eq!(k("https://example.com/index.html"), k("https://example.com/"));
        assert_eq!(k("https://example.com/docs/INDEX.HTM"), k("https://example.com/docs"));
        assert_eq!(k("https://example.com/docs/index.html?x=1"), k("https://example.com/docs/?x=1"));
        assert_ne!(k("https://example.com/index.php"), k("https://example.com/"));
        assert_ne!(k("https://example.com/myindex.html"), k("https://example.com/"));
    }

    #[test]
    fn scope_is_the_origin_and_its_www_twin() {
        let scope = Scope::new(&Url::parse("https://example.com/start").unwrap()).unwrap();
        let yes = ["https://example.com/x", "https://www.example.com/y", "https://EXAMPLE.com:443/z"];
        let no =
            ["http://example.com/x", "https://example.com:8443/", "https://blog.example.com/", "https://example.org/"];
        for u in yes {
            assert!(scope.contains(&Url::parse(u).unwrap()), "{u}");
        }
        for u in no {
            assert!(!scope.contains(&Url::parse(u).unwrap()), "{u}");
        }
        assert!(same_origin(&Url::parse("http://a.com/").unwrap(), &Url::parse("http://a.com:80/x").unwrap()));
        assert!(!same_origin(&Url::parse("http://a.com/").unwrap(), &Url::parse("http://www.a.com/").unwrap()));
    }

    #[test]
    fn non_html_links_are_recognised_by_extension() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(looks_like_non_html(&u("https://e.com/files/report.PDF")));
        assert!(looks_like_non_html(&u("https://e.com/a/logo.png?v=2")));
        assert!(!looks_like_non_html(&u("https://e.com/about")));
        assert!(!looks_like_non_html(&u("https://e.com/page.html")));
        assert!(!looks_like_non_html(&u("https://e.com/v1.2/")));
        assert!(!looks_like_non_html(&u("https://e.com/.well-known")));
        assert!(is_html_content_type("text/html; charset=utf-8"));
        assert!(!is_html_content_type("application/pdf"));
    }
}
