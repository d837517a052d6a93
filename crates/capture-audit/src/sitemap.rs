//! Sitemaps (sitemaps.org protocol): `<urlset>` and `<sitemapindex>` documents, plain or
//! gzip-compressed (recognised by its magic bytes, whatever the URL or headers say).
//!
//! Bounds, so a hostile or huge sitemap costs little: at most [`MAX_SITEMAP_BYTES`] read
//! (compressed and decompressed alike) and [`MAX_LOCS_PER_FILE`] `<loc>`s kept per file; the
//! fetcher ([`crate::fetch::fetch_sitemaps`]) follows indexes [`MAX_INDEX_DEPTH`] levels deep
//! and reads at most [`MAX_SITEMAP_FILES`] files per audit. Element names are matched by
//! local name, so any namespace prefix works.

use std::io::Read;

use quick_xml::Reader;
use quick_xml::events::Event;

/// The most bytes of one sitemap read, before and after decompression.
pub const MAX_SITEMAP_BYTES: usize = 10 * 1024 * 1024;
/// The most `<loc>` entries kept from one file.
pub const MAX_LOCS_PER_FILE: usize = 5_000;
/// How many levels of sitemap indexes are followed (index → index → urlset is depth 2).
pub const MAX_INDEX_DEPTH: usize = 2;
/// The most sitemap files fetched for one audit.
pub const MAX_SITEMAP_FILES: usize = 10;

/// What a sitemap file lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SitemapDoc {
    /// `<urlset>`: page URLs.
    UrlSet(Vec<String>),
    /// `<sitemapindex>`: more sitemap URLs.
    Index(Vec<String>),
}

/// Why a sitemap could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SitemapError {
    /// The gzip stream is corrupt.
    #[error("the gzip data is corrupt: {0}")]
    Gzip(String),
    /// Over [`MAX_SITEMAP_BYTES`] once decompressed.
    #[error("the sitemap is larger than {} MiB", MAX_SITEMAP_BYTES >> 20)]
    TooLarge,
    /// Not well-formed XML.
    #[error("the sitemap is not valid XML: {0}")]
    Xml(String),
    /// Well-formed but neither `<urlset>` nor `<sitemapindex>`.
    #[error("the document is not a sitemap (root element <{0}>)")]
    NotASitemap(String),
}

/// Decompress `bytes` when they are gzip, with the size bound.
pub fn maybe_gunzip(bytes: &[u8]) -> Result<Vec<u8>, SitemapError> {
    if bytes.len() < 2 || bytes[0] != 0x1f || bytes[1] != 0x8b {
        if bytes.len() > MAX_SITEMAP_BYTES {
            return Err(SitemapError::TooLarge);
        }
        return Ok(bytes.to_vec());
    }
    let mut out = Vec::new();
    let mut dec = flate2::read::GzDecoder::new(bytes).take(MAX_SITEMAP_BYTES as u64 + 1);
    dec.read_to_end(&mut out).map_err(|e| SitemapError::Gzip(e.to_string()))?;
    if out.len() > MAX_SITEMAP_BYTES {
        return Err(SitemapError::TooLarge);
    }
    Ok(out)
}

/// Parse a sitemap file (plain or gzip).
pub fn parse_sitemap(bytes: &[u8]) -> Result<SitemapDoc, SitemapError> {
    let xml = maybe_gunzip(bytes)?;
    let mut reader = Reader::from_reader(xml.as_slice());
    reader.config_mut().trim_text(true);
    let mut buf = Vec::new();
    let mut root: Option<String> = None;
    let mut locs = Vec::new();
    let mut in_loc = false;
    let mut text = String::new();
    // Only a <loc> directly inside <url> or <sitemap> counts: the image extension's
    // <image:loc> sits deeper, inside <image:image>.
    let mut stack: Vec<String> = Vec::new();
    loop {
        let ev = reader.read_event_into(&mut buf).map_err(|e| SitemapError::Xml(e.to_string()))?;
        match ev {
            Event::Start(e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).to_ascii_lowercase();
                if root.is_none() {
                    root = Some(name.clone());
                }
                let parent_ok = stack.last().is_some_and(|p| p == "url" || p == "sitemap");
                if name == "loc" && parent_ok {
                    in_loc = true;
                    text.clear();
                }
                stack.push(name);
            }
            Event::Empty(e) if root.is_none() => {
                root = Some(String::from_utf8_lossy(e.local_name().as_ref()).to_ascii_lowercase());
            }
            Event::Text(t) if in_loc => {
                text.push_str(&t.decode().map_err(|e| SitemapError::Xml(e.to_string()))?);
            }
            Event::CData(t) if in_loc => {
                text.push_str(&t.decode().map_err(|e| SitemapError::Xml(e.to_string()))?);
            }
            Event::GeneralRef(r) if in_loc => {
                if let Ok(Some(c)) = r.resolve_char_ref() {
                    text.push(c);
                } else {
                    let name = r.decode().map_err(|e| SitemapError::Xml(e.to_string()))?;
                    text.push_str(match name.as_ref() {
                        "amp" => "&",
                        "lt" => "<",
                        "gt" => ">",
                        "quot" => "\"",
                        "apos" => "'",
                        _ => "",
                    });
                }
            }
            Event::End(e) => {
                stack.pop();
                if in_loc && e.local_name().as_ref().eq_ignore_ascii_case(b"loc") {
                    in_loc = false;
                    let loc = text.trim();
                    if !loc.is_empty() && locs.len() < MAX_LOCS_PER_FILE {
                        locs.push(loc.to_owned());
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    match root.as_deref() {
        Some("urlset") => Ok(SitemapDoc::UrlSet(locs)),
        Some("sitemapindex") => Ok(SitemapDoc::Index(locs)),
        Some(other) => Err(SitemapError::NotASitemap(other.to_owned())),
        None => Err(SitemapError::Xml("empty document".into())),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const URLSET: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>https://example.com/</loc><lastmod>2026-01-01</lastmod></url>
  <url><loc> https://example.com/a?x=1&amp;y=2 </loc></url>
  <url><loc><![CDATA[https://example.com/b]]></loc></url>
</urlset>"#;

    #[test]
    fn a_urlset_lists_its_locs_with_entities_and_cdata() {
        let doc = parse_sitemap(URLSET.as_bytes()).unwrap();
        assert_eq!(
            doc,
            SitemapDoc::UrlSet(vec![
                "https://example.com/".into(),
                "https://example.com/a?x=1&y=2".into(),
                "https://example.com/b".into()
            ])
        );
    }

    #[test]
    fn an_index_with_a_prefix_lists_sitemaps() {
        let xml = r#"<sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9"><sm:sitemap><sm:loc>https://e.com/s1.xml</sm:loc></sm:sitemap></sm:sitemapindex>"#;
        assert_eq!(parse_sitemap(xml.as_bytes()).unwrap(), SitemapDoc::Index(vec!["https://e.com/s1.xml".into()]));
    }

    #[test]
    fn image_extension_locs_are_not_pages() {
        let xml = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
<url><loc>https://e.com/p</loc><image:image><image:loc>https://e.com/i.jpg</image:loc></image:image></url></urlset>"#;
        assert_eq!(parse_sitemap(xml.as_bytes()).unwrap(), SitemapDoc::UrlSet(vec!["https://e.com/p".into()]));
    }

    #[test]
    fn gzip_is_recognised_by_its_magic_bytes() {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(URLSET.as_bytes()).unwrap();
        let gz = enc.finish().unwrap();
        assert!(matches!(parse_sitemap(&gz).unwrap(), SitemapDoc::UrlSet(v) if v.len() == 3));
        let mut broken = gz.clone();
        broken.truncate(20);
        assert!(matches!(parse_sitemap(&broken), Err(SitemapError::Gzip(_))));
    }

    #[test]
    fn a_gzip_bomb_stops_at_the_bound() {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![b' '; 1 << 20];
        for _ in 0..11 {
            enc.write_all(&zeros).unwrap();
        }
        let gz = enc.finish().unwrap();
        assert!(gz.len() < 100_000);
        assert_eq!(parse_sitemap(&gz), Err(SitemapError::TooLarge));
    }

    #[test]
    fn html_and_garbage_are_clear_errors() {
        assert_eq!(parse_sitemap(b"<html><body>hi</body></html>"), Err(SitemapError::NotASitemap("html".into())));
        assert!(matches!(parse_sitemap(b"<urlset><url><loc>x</url>"), Err(SitemapError::Xml(_))));
        assert!(matches!(parse_sitemap(b""), Err(SitemapError::Xml(_))));
    }

    #[test]
    fn locs_per_file_are_bounded() {
        let mut xml = String::from("<urlset>");
        for i in 0..(MAX_LOCS_PER_FILE + 10) {
            xml.push_str(&format!("<url><loc>https://e.com/{i}</loc></url>"));
        }
        xml.push_str("</urlset>");
        assert!(
            matches!(parse_sitemap(xml.as_bytes()).unwrap(), SitemapDoc::UrlSet(v) if v.len() == MAX_LOCS_PER_FILE)
        );
    }
}
