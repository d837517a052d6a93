//! What runs inside an audited page, and the types of what it returns.
//!
//! The browser side runs, for each audited page (desktop pass):
//!
//! | when | script | how |
//! |---|---|---|
//! | before any page script | [`OBSERVERS_JS`] | `Page.addScriptToEvaluateOnNewDocument {source}` before `Page.navigate` |
//! | after `load` | [`settle_js`] (e.g. `settle_js(3000, 300)`): resolves once the first paint was observed and LCP/layout shifts have rested | `Runtime.evaluate {expression, awaitPromise: true, returnByValue: true}` → [`Settled`] |
//! | after the settle | [`COLLECT_JS`] | `Runtime.evaluate {expression, returnByValue: true}` → [`PageCollection`] |
//! | after [`COLLECT_JS`] | axe-core's `axe.min.js` ([`crate::axe::AXE_JS`], vendored; `CAPTURE_AXE_PATH` may replace it) | `Runtime.evaluate {expression: <file>}` |
//! | after axe is loaded | [`AXE_RUN_JS`] | `Runtime.evaluate {expression, awaitPromise: true, returnByValue: true}` → [`AxeResults`] |
//!
//! Console errors and failed requests are **not** collected in the page: DevTools events are
//! complete where page hooks are not (errors thrown before any script, CSP reports, requests
//! the page never sees fail): `Runtime.exceptionThrown`, `Runtime.consoleAPICalled` with
//! `type: "error"` and `Log.entryAdded` with `level: "error"` become [`ConsoleMessage`]s;
//! `Network.responseReceived` with status ≥ 400 and `Network.loadingFailed` become
//! [`FailedRequest`]s. The main document's status, headers and redirect chain come from the
//! navigation's `Network.requestWillBeSent` (`redirectResponse`) and `Network.responseReceived`.
//!
//! Every list is bounded inside the script (counts are still reported in full), so a huge page
//! returns a small JSON value.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Installs PerformanceObservers (LCP, layout shifts with CLS session windows, paint, long
/// tasks) before any page script runs. Idempotent; defines `window.__captureAudit`.
pub const OBSERVERS_JS: &str =
    concat!("(() => {\n", include_str!("../js/selector.js"), include_str!("../js/observers.js"), "})();\n");

/// Collects navigation timing, resources, vitals and the SEO/security facts; evaluates to a
/// [`PageCollection`] (use `returnByValue: true`).
pub const COLLECT_JS: &str =
    concat!("(() => {\n", include_str!("../js/selector.js"), include_str!("../js/collect.js"), "})()\n");

/// The settle step after `load`: resolves when the first contentful paint has been observed
/// and no LCP candidate or layout shift came for `quiet_ms`, or after `max_ms` in all;
/// evaluates to a [`Settled`] (use `awaitPromise: true, returnByValue: true`).
pub fn settle_js(max_ms: u32, quiet_ms: u32) -> String {
    include_str!("../js/settle.js").replace("__MAX__", &max_ms.to_string()).replace("__QUIET__", &quiet_ms.to_string())
}

/// What [`settle_js`] returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settled {
    /// How long it waited, ms.
    pub waited_ms: f64,
    /// Whether a contentful paint was observed (false: blank page or the cap was hit).
    pub painted: bool,
}

/// Runs `axe.run(document, {resultTypes: ['violations']})` and evaluates to an [`AxeResults`]
/// (use `awaitPromise: true, returnByValue: true`).
pub const AXE_RUN_JS: &str = include_str!("../js/axe_run.js");

/// Navigation timing of the main document (milliseconds from navigation start).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NavigationTiming {
    /// Time to first byte (`responseStart`, redirects included, as web-vitals measures it).
    pub ttfb_ms: f64,
    /// `domContentLoadedEventEnd`.
    pub dom_content_loaded_ms: Option<f64>,
    /// `loadEventEnd` (or `loadEventStart` while the handler still runs).
    pub load_ms: Option<f64>,
    /// Bytes over the wire for the document.
    pub transfer_bytes: u64,
    /// The document body as sent (compressed).
    pub encoded_body_bytes: u64,
    /// The document body decompressed.
    pub decoded_body_bytes: u64,
    /// `h2`, `http/1.1`, `h3`.
    pub protocol: Option<String>,
    /// The document's status as the page saw it.
    pub response_status: Option<u16>,
}

/// One layout shift (the first 20).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LayoutShift {
    /// When, ms from navigation start.
    pub start_time: f64,
    /// Its score.
    pub value: f64,
    /// Selectors of up to three moved elements.
    pub sources: Vec<String>,
}

/// Web vitals from the observers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Vitals {
    /// Whether [`OBSERVERS_JS`] ran before the page (false: LCP/CLS/TBT are missing).
    pub observers_installed: bool,
    /// Largest Contentful Paint, ms.
    pub lcp_ms: Option<f64>,
    /// The LCP element.
    pub lcp_selector: Option<String>,
    /// The LCP image's URL, if an image.
    pub lcp_url: Option<String>,
    /// Cumulative Layout Shift (largest session window).
    pub cls: Option<f64>,
    /// The first layout shifts, for evidence.
    #[serde(default)]
    pub layout_shifts: Vec<LayoutShift>,
    /// First Contentful Paint, ms.
    pub fcp_ms: Option<f64>,
    /// Total Blocking Time: Σ (long task − 50 ms) after FCP, until collection.
    pub tbt_ms: Option<f64>,
    /// Long tasks seen.
    pub long_tasks: Option<u32>,
}

/// Count and bytes of one resource type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeStats {
    /// Requests.
    pub count: u32,
    /// Transfer bytes (0 for cache hits and cross-origin responses without Timing-Allow-Origin).
    pub bytes: u64,
}

/// One of the largest resources.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SizedResource {
    /// Its URL.
    pub url: String,
    /// `document`, `script`, `stylesheet`, `image`, `font`, `xhr` or `other`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Transfer bytes.
    pub bytes: u64,
}

/// Requests and bytes of the page, from Resource Timing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSummary {
    /// All bytes.
    pub total_bytes: u64,
    /// All requests, the document included.
    pub total_requests: u32,
    /// Per type: `document`, `script`, `stylesheet`, `image`, `font`, `xhr`, `other`.
    pub by_type: BTreeMap<String, TypeStats>,
    /// The ten largest.
    #[serde(default)]
    pub largest: Vec<SizedResource>,
    /// Requests whose size the page could not see.
    #[serde(default)]
    pub without_size: u32,
}

/// The SEO facts of a page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeoFacts {
    /// `<title>` text (None: no title element).
    pub title: Option<String>,
    /// `<meta name=description>` content (None: absent).
    pub meta_description: Option<String>,
    /// How many `<h1>`.
    pub h1_count: u32,
    /// Their texts (the first ten).
    #[serde(default)]
    pub h1: Vec<String>,
    /// `<link rel=canonical>` hrefs, resolved.
    #[serde(default)]
    pub canonical: Vec<String>,
    /// `<html lang>`.
    pub lang: Option<String>,
    /// `<meta name=viewport>` content.
    pub viewport: Option<String>,
    /// `<meta name=robots>` contents, lower-case.
    #[serde(default)]
    pub robots_meta: Vec<String>,
    /// A robots meta says `noindex` (or `none`).
    pub noindex: bool,
    /// A robots meta says `nofollow` (or `none`).
    pub nofollow: bool,
    /// `og:*` properties and their content.
    #[serde(default)]
    pub open_graph: BTreeMap<String, String>,
    /// `<meta name=theme-color>` content.
    pub theme_color: Option<String>,
}

/// An image without `alt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageFact {
    /// A unique CSS selector.
    pub selector: Option<String>,
    /// Its source URL.
    pub src: String,
    /// Its start tag.
    pub html: String,
}

/// Images of the page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageFacts {
    /// `<img>` elements.
    pub total: u32,
    /// Images with no `alt` attribute (decorative ones marked `role=presentation`/`aria-hidden` excepted).
    pub without_alt_count: u32,
    /// The first 50 of them.
    #[serde(default)]
    pub without_alt: Vec<ImageFact>,
}

/// A link on the page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LinkFact {
    /// Absolute http(s) URL.
    pub href: String,
    /// Its text (clipped).
    pub text: String,
    /// `rel=nofollow`.
    pub nofollow: bool,
    /// Same origin as the page.
    pub same_origin: bool,
}

/// An `http:` resource on an `https:` page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MixedContent {
    /// The insecure URL.
    pub url: String,
    /// Resource type or element name.
    pub kind: String,
    /// The element, when found in the DOM.
    pub selector: Option<String>,
}

/// A password field that would be sent over plain HTTP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InsecureForm {
    /// The form (or the field when outside a form).
    pub selector: Option<String>,
    /// Where it submits.
    pub action: String,
}

/// Everything [`COLLECT_JS`] returns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageCollection {
    /// `location.href` when collected.
    pub url: String,
    /// Served over https.
    pub https: bool,
    /// Navigation timing (None when the browser had no navigation entry).
    pub navigation: Option<NavigationTiming>,
    /// LCP, CLS, FCP, TBT.
    pub vitals: Vitals,
    /// Requests and bytes.
    pub resources: ResourceSummary,
    /// SEO facts.
    pub seo: SeoFacts,
    /// Images.
    pub images: ImageFacts,
    /// `<a href>`/`<area href>` elements (all schemes).
    pub links_total: u32,
    /// The first 300 http(s) links.
    #[serde(default)]
    pub links: Vec<LinkFact>,
    /// Mixed content candidates (https pages only).
    #[serde(default)]
    pub mixed_content: Vec<MixedContent>,
    /// Password forms submitted over http.
    #[serde(default)]
    pub insecure_password_forms: Vec<InsecureForm>,
    /// A hash of what the page shows (title, text, images, link targets); None when it shows
    /// no text. Two addresses with one fingerprint are one page to the crawl.
    #[serde(default)]
    pub fingerprint: Option<String>,
}

/// One element an axe rule flagged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AxeNode {
    /// Selectors (one per frame level).
    pub target: Vec<String>,
    /// The element's HTML, clipped.
    pub html: String,
    /// What to fix, in axe's words.
    #[serde(default)]
    pub failure_summary: String,
}

/// One violated axe rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AxeViolation {
    /// Rule id (`image-alt`, `color-contrast`, …).
    pub id: String,
    /// `minor`, `moderate`, `serious` or `critical`.
    pub impact: Option<String>,
    /// One-line help.
    pub help: String,
    /// What the rule checks.
    #[serde(default)]
    pub description: String,
    /// Deque's page about the rule.
    pub help_url: String,
    /// Tags (`wcag2a`, `best-practice`, …).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Elements flagged in all.
    pub node_count: u32,
    /// The first ten.
    pub nodes: Vec<AxeNode>,
}

/// Rule counts by axe impact.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImpactCounts {
    /// `critical` rules.
    #[serde(default)]
    pub critical: u32,
    /// `serious` rules.
    #[serde(default)]
    pub serious: u32,
    /// `moderate` rules.
    #[serde(default)]
    pub moderate: u32,
    /// `minor` rules.
    #[serde(default)]
    pub minor: u32,
}

/// What [`AXE_RUN_JS`] returns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AxeResults {
    /// axe-core's version.
    pub version: Option<String>,
    /// Rules that passed.
    #[serde(default)]
    pub passes: u32,
    /// Passed rules by the impact a failure would have had.
    #[serde(default)]
    pub passed_impacts: ImpactCounts,
    /// Rules axe could not decide.
    #[serde(default)]
    pub incomplete: u32,
    /// Violated rules (the first 100).
    #[serde(default)]
    pub violations: Vec<AxeViolation>,
    /// Why axe did not run.
    pub error: Option<String>,
}

/// A console error, from DevTools events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsoleMessage {
    /// `exception`, `console` or the `Log` source (`network`, `security`, …).
    pub source: String,
    /// The message (clipped).
    pub text: String,
    /// Script URL, when known.
    pub url: Option<String>,
    /// Line, when known.
    pub line: Option<u32>,
}

/// A sub-request that failed, from DevTools events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedRequest {
    /// Its URL.
    pub url: String,
    /// DevTools resource type (`Script`, `Image`, `Fetch`, …).
    pub resource_type: Option<String>,
    /// HTTP status when a response came.
    pub status: Option<u16>,
    /// DevTools' `errorText` when none did (`net::ERR_NAME_NOT_RESOLVED`, …).
    pub error: Option<String>,
}

/// Clip `s` to `max` characters (for strings taken from DevTools events).
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max { s.to_owned() } else { s.chars().take(max).collect::<String>() + "…" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_are_wrapped_expressions() {
        assert!(OBSERVERS_JS.starts_with("(() => {") && OBSERVERS_JS.contains("layout-shift"));
        assert!(COLLECT_JS.trim_end().ends_with("})()") && COLLECT_JS.contains("cssSelector"));
        assert!(AXE_RUN_JS.contains("resultTypes: ['violations']"));
    }

    #[test]
    fn a_minimal_collection_parses_with_defaults() {
        let v = serde_json::json!({
            "url": "https://e.com/", "https": true, "navigation": null,
            "vitals": {"observersInstalled": false, "lcpMs": null, "lcpSelector": null, "lcpUrl": null, "cls": null, "fcpMs": null, "tbtMs": null, "longTasks": null},
            "resources": {"totalBytes": 0, "totalRequests": 0, "byType": {}},
            "seo": {"title": null, "metaDescription": null, "h1Count": 0, "lang": null, "viewport": null, "noindex": false, "nofollow": false, "themeColor": null},
            "images": {"total": 0, "withoutAltCount": 0},
            "linksTotal": 0
        });
        let c: PageCollection = serde_json::from_value(v).unwrap();
        assert!(c.links.is_empty() && c.seo.open_graph.is_empty());
        assert_eq!(clip("abcdef", 3), "abc…");
    }
}
