//! What a finished capture read from its page (`metadata` on the job, its webhooks and its
//! `done` event): the HTTP answer and the tags a link preview uses. Every string is the
//! page's to choose, so each is capped ([`PageMetadata::capped`]) before it is stored.

use serde::{Deserialize, Serialize};

use crate::limits::{PAGE_TITLE_MAX, truncate_chars};

/// Longest text value kept (a description, an Open Graph title), in characters.
pub const TEXT_MAX: usize = 1024;
/// Longest URL kept (canonical, favicon, images), in characters.
pub const URL_MAX: usize = 2048;
/// Most redirects listed.
pub const REDIRECTS_MAX: usize = 20;

/// The page a capture saw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PageMetadata {
    /// The HTTP status of the main document (None for an uploaded HTML document).
    pub http_status: Option<u16>,
    /// The URL the page ended on, after redirects and scripts.
    pub final_url: String,
    /// The URLs that redirected, in order (the requested URL first), at most 20.
    pub redirects: Vec<String>,
    /// `document.title`.
    pub title: Option<String>,
    /// `<meta name="description">`.
    pub description: Option<String>,
    /// `<link rel="canonical">`, absolute.
    pub canonical: Option<String>,
    /// `<html lang>`.
    pub lang: Option<String>,
    /// The page's icon (`<link rel="icon">`, else `/favicon.ico`), absolute.
    pub favicon: Option<String>,
    /// Open Graph tags (`og:…`).
    pub open_graph: OpenGraph,
    /// Twitter card tags (`twitter:…`).
    pub twitter: TwitterCard,
    /// What `cookieConsent` did with the page's consent pop-up (absent with `none`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consent: Option<ConsentReport>,
    /// A fixed or sticky element still covering more than a quarter of the viewport when the
    /// page was captured (tag `overlay-remaining`): what to hide (`hideSelectors`) or why the
    /// capture looks covered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlay: Option<OverlayReport>,
    /// The page as text, when the job asked for it (`format` markdown, text or html, or
    /// `content`): how long it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ContentReport>,
    /// The fields `extract` read (the job shows them as `data` and `sources`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract: Option<Extracted>,
    /// The boxes of the elements a monitor leaves out of its comparison (`ignoreSelectors`),
    /// in the image's pixels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub masked: Vec<PixelBox>,
}

/// A box in an image's pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
pub struct PixelBox {
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
}

/// What `extract` read from the page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Extracted {
    /// One value per field (null where nothing matched; a list with `all`).
    #[cfg_attr(feature = "schema", schema(value_type = Object))]
    pub data: serde_json::Value,
    /// Where each field came from: the selector that matched (a fallback's when the rule's
    /// own matched nothing), `model:<name>` for the language model's, null where nothing did.
    pub sources: std::collections::BTreeMap<String, Option<String>>,
}

/// How long the page's text is, and what it kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ContentReport {
    /// Characters (Unicode scalar values) of the job's text: the Markdown (front matter
    /// included) for `markdown`, else the text, else the HTML.
    pub chars: u64,
    /// An estimate of the tokens a language model reads for it: one per four characters,
    /// rounded up (the rule of thumb for English with OpenAI's and Llama's tokenizers; other
    /// languages and code take more).
    pub tokens: u64,
    /// `mainContent` found an article (false: it kept the whole page).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub article: bool,
    /// Characters of the whole text (front matter aside), of which the job holds the part
    /// from `from` (`maxChars`).
    pub total_chars: u64,
    /// Where the job's part of the text starts (0 unless the request gave `from`).
    #[serde(default)]
    pub from: u64,
    /// Where the rest starts, when `maxChars` left some out: pass it as `from` to read on;
    /// null when the job's part reaches the end.
    #[serde(default)]
    pub next_from: Option<u64>,
}

impl ContentReport {
    /// The report for a text of `chars` characters, the part of a whole text that `page`
    /// describes.
    pub fn of(chars: u64, article: bool, page: &crate::options::TextPage<'_>) -> ContentReport {
        ContentReport {
            chars,
            tokens: chars.div_ceil(4),
            article,
            total_chars: page.total_chars,
            from: page.from,
            next_from: page.next_from,
        }
    }
}

/// An element left covering the page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OverlayReport {
    /// A CSS selector for it (its id, else a short path of tags and classes).
    pub selector: String,
    /// The share of the viewport it covers (0.25–1).
    pub coverage: f64,
}

/// What `cookieConsent` did: the consent platform found (its rule's name in DuckDuckGo's
/// autoconsent, e.g. `Onetrust`, `Cookiebot`), and the outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ConsentReport {
    /// The consent platform, when one was recognised.
    pub cmp: Option<String>,
    pub action: ConsentAction,
}

/// The outcome of `cookieConsent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum ConsentAction {
    /// Opted out (every purpose refused).
    Rejected,
    /// Opted in.
    Accepted,
    /// The pop-up was hidden without being answered.
    Hidden,
    /// No consent pop-up was found.
    NoneFound,
    /// A pop-up was found but could not be answered as asked (it may still show).
    Failed,
}

/// The Open Graph tags of a page.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OpenGraph {
    pub title: Option<String>,
    pub description: Option<String>,
    pub image: Option<String>,
    pub url: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub site_name: Option<String>,
}

/// The Twitter card tags of a page.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct TwitterCard {
    pub card: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    pub image: Option<String>,
    pub site: Option<String>,
    pub creator: Option<String>,
}

fn text(v: &mut Option<String>, max: usize) {
    *v = v.take().map(|s| truncate_chars(s.trim(), max)).filter(|s| !s.is_empty());
}

impl PageMetadata {
    /// Every value cut to its documented length, blank ones dropped.
    pub fn capped(mut self) -> PageMetadata {
        self.final_url = truncate_chars(&self.final_url, URL_MAX);
        self.redirects.truncate(REDIRECTS_MAX);
        for r in &mut self.redirects {
            *r = truncate_chars(r, URL_MAX);
        }
        text(&mut self.title, PAGE_TITLE_MAX);
        text(&mut self.description, TEXT_MAX);
        text(&mut self.lang, 64);
        for u in [&mut self.canonical, &mut self.favicon, &mut self.open_graph.image, &mut self.open_graph.url] {
            text(u, URL_MAX);
        }
        let og = &mut self.open_graph;
        for t in [&mut og.title, &mut og.description, &mut og.kind, &mut og.site_name] {
            text(t, TEXT_MAX);
        }
        if let Some(c) = &mut self.consent {
            text(&mut c.cmp, 128);
        }
        if let Some(o) = &mut self.overlay {
            o.selector = truncate_chars(&o.selector, 512);
        }
        let tw = &mut self.twitter;
        text(&mut tw.image, URL_MAX);
        for t in [&mut tw.card, &mut tw.title, &mut tw.description, &mut tw.site, &mut tw.creator] {
            text(t, TEXT_MAX);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_is_capped_and_blank_ones_dropped() {
        let m = PageMetadata {
            http_status: Some(200),
            final_url: "https://x.com/".into(),
            redirects: (0..30).map(|i| format!("https://x.com/{i}")).collect(),
            title: Some("t".repeat(600)),
            description: Some("   ".into()),
            open_graph: OpenGraph { title: Some("d".repeat(2000)), ..Default::default() },
            twitter: TwitterCard { image: Some(format!("https://x.com/{}", "i".repeat(3000))), ..Default::default() },
            ..Default::default()
        }
        .capped();
        assert_eq!(m.redirects.len(), 20);
        assert_eq!(m.title.as_ref().map(|t| t.chars().count()), Some(PAGE_TITLE_MAX));
        assert_eq!(m.description, None);
        assert_eq!(m.open_graph.title.as_ref().map(|t| t.chars().count()), Some(TEXT_MAX));
        assert_eq!(m.twitter.image.as_ref().map(|t| t.chars().count()), Some(URL_MAX));
        let v = serde_json::to_value(&m).unwrap();
        assert!(v["openGraph"]["type"].is_null() && v["twitter"]["card"].is_null() && v["httpStatus"] == 200);
    }
}
