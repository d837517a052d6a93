//! A look at a crawled URL before it costs a place in a `full_site` audit's page budget.
//!
//! [`probe_page`] asks the URL with one `GET` (redirects followed hop by hop, like the link
//! checker) and reads at most [`MAX_PROBE_BYTES`] of an HTML answer. What it learns decides,
//! in [`crate::run`], whether the URL is audited: an error status makes it a broken link, no
//! answer an unreachable one, a non-HTML answer a file; the final URL and the page's
//! `<link rel=canonical>` name the page it really is, so a copy of an audited page is a
//! duplicate. The links of the served HTML ([`scan_html`], in document order) feed the
//! frontier before the browser's, so what the crawl finds next does not depend on how a
//! page's scripts behaved in one run.
//!
//! [`scan_html`] is a tolerant tag scanner, not a parser: it reads start tags and their
//! attributes, skips comments and the content of `<script>`, `<style>`, `<template>`,
//! `<noscript>`, `<textarea>` and `<title>`, and decodes the character references that
//! occur in URLs. That is all a crawler needs from the served HTML; the browser sees the rest.

use reqwest::header::CONTENT_TYPE;
use reqwest::{Client, Method};
use url::Url;

use crate::fetch::{FetchOptions, Hop, send_following};
use crate::urls::{is_html_content_type, normalize};

/// The most of a page's HTML read for its canonical address and links.
pub const MAX_PROBE_BYTES: usize = 2 * 1024 * 1024;
/// The most links taken from one page's HTML.
pub const MAX_SCANNED_LINKS: usize = 1000;

/// What a URL answered.
#[derive(Debug, Clone, Default)]
pub struct PageProbe {
    /// The status after redirects (None: no answer).
    pub status: Option<u16>,
    /// Where the redirects ended (None: no answer).
    pub final_url: Option<Url>,
    /// The redirect hops.
    pub redirects: Vec<Hop>,
    /// The answer's `Content-Type`.
    pub content_type: Option<String>,
    /// `<link rel=canonical>` addresses, resolved and normalised, in document order.
    pub canonical: Vec<Url>,
    /// `<a href>`/`<area href>` links, resolved against the document (absolute), in order.
    pub links: Vec<String>,
    /// Why there was no answer.
    pub error: Option<String>,
}

impl PageProbe {
    /// Whether the answer is a page (2xx or 3xx, HTML or no content type).
    pub fn is_page(&self) -> bool {
        self.status.is_some_and(|s| s < 400) && self.content_type.as_deref().is_none_or(is_html_content_type)
    }

    /// The one canonical address the page names, if it names exactly one (several that
    /// disagree are ignored, as search engines do).
    pub fn canonical(&self) -> Option<&Url> {
        let first = self.canonical.first()?;
        self.canonical.iter().all(|c| c == first).then_some(first)
    }
}

/// GET `url` (redirects followed up to `opts.max_redirects`) and read its HTML's canonical
/// address and links; never fails (no answer is [`PageProbe::error`]).
pub async fn probe_page(client: &Client, url: &Url, opts: &FetchOptions) -> PageProbe {
    let sent =
        send_following(client, Method::GET, url, &opts.user_agent, opts.timeout, opts.max_redirects, false).await;
    let (mut resp, hops) = match sent {
        Ok(r) => r,
        Err((e, hops)) => return PageProbe { redirects: hops, error: Some(e), ..PageProbe::default() },
    };
    let mut p = PageProbe {
        status: Some(resp.status().as_u16()),
        final_url: Some(resp.url().clone()),
        redirects: hops,
        content_type: resp.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned),
        ..PageProbe::default()
    };
    if !p.is_page() {
        return p;
    }
    let mut body = Vec::new();
    let read = async {
        while let Ok(Some(chunk)) = resp.chunk().await {
            let room = MAX_PROBE_BYTES - body.len();
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if body.len() >= MAX_PROBE_BYTES {
                break;
            }
        }
    };
    // What arrived within the time is used: a slow tail does not hide the head's canonical.
    let _ = tokio::time::timeout(opts.timeout, read).await;
    let doc = resp.url().clone();
    let scanned = scan_html(&String::from_utf8_lossy(&body));
    let base = scanned.base.as_deref().and_then(|b| doc.join(b).ok()).unwrap_or_else(|| doc.clone());
    p.canonical = scanned.canonical.iter().filter_map(|c| normalize(c, Some(&base)).ok()).collect();
    p.links = scanned
        .links
        .iter()
        .filter_map(|l| base.join(l.trim()).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .map(String::from)
        .collect();
    p
}

/// What [`scan_html`] found, attribute values decoded and not yet resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scanned {
    /// The first `<base href>`.
    pub base: Option<String>,
    /// Every `<link rel=canonical href>` (in `<head>` or not: the browser sees them all).
    pub canonical: Vec<String>,
    /// Every `<a href>` and `<area href>`, at most [`MAX_SCANNED_LINKS`].
    pub links: Vec<String>,
}

/// Elements whose content is not markup.
const RAW_TEXT: &[&str] = &["script", "style", "template", "noscript", "textarea", "title", "xmp"];

/// Scan `html` for `<base>`, `<link rel=canonical>` and links (see the module docs).
pub fn scan_html(html: &str) -> Scanned {
    let mut out = Scanned::default();
    let bytes = html.as_bytes();
    let mut i = 0;
    while let Some(off) = html[i..].find('<') {
        i += off + 1;
        if html[i..].starts_with("!--") {
            i = html[i..].find("-->").map_or(html.len(), |e| i + e + 3);
            continue;
        }
        if !bytes.get(i).is_some_and(u8::is_ascii_alphabetic) {
            continue;
        }
        let name_end = html[i..].find(|c: char| !c.is_ascii_alphanumeric()).map_or(html.len(), |e| i + e);
        let name = html[i..name_end].to_ascii_lowercase();
        let (attrs, end) = attributes(html, name_end);
        i = end;
        let get = |n: &str| attrs.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        match name.as_str() {
            "a" | "area" => {
                if let Some(h) = get("href")
                    && out.links.len() < MAX_SCANNED_LINKS
                {
                    out.links.push(h);
                }
            }
            "link" => {
                let canonical =
                    get("rel").is_some_and(|r| r.split_ascii_whitespace().any(|t| t.eq_ignore_ascii_case("canonical")));
                if canonical && let Some(h) = get("href") {
                    out.canonical.push(h);
                }
            }
            "base" if out.base.is_none() => out.base = get("href"),
            n if RAW_TEXT.contains(&n) => {
                // Skip to the matching end tag (case-insensitive), or the end.
                i = find_end_tag(html, i, n).unwrap_or(html.len());
            }
            _ => {}
        }
    }
    out
}

/// The index just past `</name` (any case) at or after `from`.
fn find_end_tag(html: &str, from: usize, name: &str) -> Option<usize> {
    let b = html.as_bytes();
    let mut i = from;
    while let Some(off) = html[i..].find("</") {
        let at = i + off + 2;
        let end = at + name.len();
        if end <= b.len() && b[at..end].eq_ignore_ascii_case(name.as_bytes()) {
            return Some(end);
        }
        i = at;
    }
    None
}

/// The attributes of a start tag whose name ends at `from`: `(name lower-cased, decoded
/// value)` pairs, and the index just past the tag's `>`.
fn attributes(html: &str, from: usize) -> (Vec<(String, String)>, usize) {
    let b = html.as_bytes();
    let mut i = from;
    let mut out = Vec::new();
    loop {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b'/') {
            i += 1;
        }
        if i >= b.len() {
            return (out, b.len());
        }
        if b[i] == b'>' {
            return (out, i + 1);
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && !matches!(b[i], b'=' | b'>' | b'/') {
            i += 1;
        }
        let name = html[start..i].to_ascii_lowercase();
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value = String::new();
        if i < b.len() && b[i] == b'=' {
            i += 1;
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < b.len() && (b[i] == b'"' || b[i] == b'\'') {
                let q = b[i];
                let vstart = i + 1;
                let vend = b[vstart..].iter().position(|&c| c == q).map_or(b.len(), |e| vstart + e);
                value = decode_entities(&html[vstart..vend]);
                i = (vend + 1).min(b.len());
            } else {
                let vstart = i;
                while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'>' {
                    i += 1;
                }
                value = decode_entities(&html[vstart..i]);
            }
        }
        if !name.is_empty() && !out.iter().any(|(n, _)| *n == name) {
            out.push((name, value));
        }
    }
}

/// Decode the character references found in URLs: `&amp;`, `&quot;`, `&apos;`, `&lt;`,
/// `&gt;`, `&#NN;` and `&#xHH;` (others are left as written).
fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(p) = rest.find('&') {
        out.push_str(&rest[..p]);
        rest = &rest[p..];
        let end = rest[1..].find(';').map(|e| e + 1).filter(|&e| e <= 10);
        let decoded = end.and_then(|e| {
            let name = &rest[1..e];
            let c = match name {
                "amp" => Some('&'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "lt" => Some('<'),
                "gt" => Some('>'),
                n if n.starts_with("#x") || n.starts_with("#X") => {
                    u32::from_str_radix(&n[2..], 16).ok().and_then(char::from_u32)
                }
                n if n.starts_with('#') => n[1..].parse().ok().and_then(char::from_u32),
                _ => None,
            };
            c.map(|c| (c, e + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_canonical_and_base_in_document_order() {
        let html = r#"<!doctype html><html><head>
<BASE href="/docs/"><link rel="stylesheet" href="/s.css">
<link REL="Canonical" href='https://example.com/a?x=1&amp;y=2'>
<title>A <a href="/not-a-link"> title</title>
<script>document.write('<a href="/from-script">')</script>
<!-- <a href="/commented"> -->
</head><body>
<a href=/one>1</a> <a class=x href = "two" >2</a><area shape=rect href="/map">
<a name="no-href">anchor</a><a href="/&#x41;&#66;?q=a&lt;b">3</a>
<template><a href="/in-template"></a></template><a href="/after-template">
<A HREF="/upper">
</body></html>"#;
        let s = scan_html(html);
        assert_eq!(s.base.as_deref(), Some("/docs/"));
        assert_eq!(s.canonical, ["https://example.com/a?x=1&y=2"]);
        assert_eq!(s.links, ["/one", "two", "/map", "/AB?q=a<b", "/after-template", "/upper"]);
    }

    #[test]
    fn broken_markup_never_panics_or_loops() {
        for html in ["<", "<a", "<a href", "<a href=\"unterminated", "<!--", "<script>", "<a href=x", "&#xFFFFFFFF;"] {
            let _ = scan_html(html);
        }
        assert_eq!(decode_entities("a&b&amp;c&#0;&#xZZ;&unknown;"), "a&b&c\u{0}&#xZZ;&unknown;");
        assert_eq!(scan_html("<a href=/x><a href=/x>").links, ["/x", "/x"], "duplicates are the frontier's to count");
    }

    #[test]
    fn a_page_names_its_canonical_address_once_or_not_at_all() {
        let u = |s: &str| Url::parse(s).unwrap();
        let mut p = PageProbe { status: Some(200), ..PageProbe::default() };
        assert!(p.is_page() && p.canonical().is_none());
        p.canonical = vec![u("https://e.com/a"), u("https://e.com/a")];
        assert_eq!(p.canonical(), Some(&u("https://e.com/a")));
        p.canonical.push(u("https://e.com/b"));
        assert_eq!(p.canonical(), None, "disagreeing canonicals are ignored");
        p.content_type = Some("application/pdf".into());
        assert!(!p.is_page());
        let gone = PageProbe { status: Some(404), ..PageProbe::default() };
        assert!(!gone.is_page());
    }
}
