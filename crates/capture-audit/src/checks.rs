//! From a page's facts (and the site's) to findings with evidence.
//!
//! Every check has a stable id, a category and a weight ([`CHECKS`]); it either passes, fails
//! with one [`Finding`] (its first piece of evidence, up to nine more and the number of
//! occurrences), or does not apply (HSTS on an http page). The pass/fail outcomes feed the
//! SEO, accessibility and best-practices scores ([`crate::score`]); performance findings
//! explain the metric-based performance score and weigh nothing themselves. Security checks
//! count towards best practices, as in Lighthouse.
//!
//! A page that answered 4xx/5xx or could not be loaded gets the `http-status` finding and no
//! content checks: the error page's title says nothing about the page that should be there.

use serde::{Deserialize, Serialize};

use crate::collect::{AxeResults, ConsoleMessage, FailedRequest, PageCollection};
use crate::fetch::{Hop, LinkReport, LinkVerdict};

/// Report categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Speed and stability.
    Performance,
    /// Search engines and sharing.
    Seo,
    /// axe-core's rules.
    Accessibility,
    /// Errors, requests, redirects.
    BestPractices,
    /// HTTPS and security headers (scored with best practices).
    Security,
}

impl Category {
    /// A heading for the report.
    pub fn label(self) -> &'static str {
        match self {
            Category::Performance => "Performance",
            Category::Seo => "SEO",
            Category::Accessibility => "Accessibility",
            Category::BestPractices => "Best practices",
            Category::Security => "Security",
        }
    }
}

/// How urgent a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Broken for visitors or search engines; fix first.
    Critical,
    /// Costs visitors, rankings or safety.
    Warning,
    /// Worth knowing; often a quick win.
    Info,
}

impl Severity {
    /// A heading for the report.
    pub fn label(self) -> &'static str {
        match self {
            Severity::Critical => "Critical",
            Severity::Warning => "Warning",
            Severity::Info => "Info",
        }
    }
}

/// Where and what was measured.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// The page (or resource) the evidence is about.
    pub url: String,
    /// The element, as a CSS selector.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// What was measured or found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// What a good page has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
}

/// One problem, with evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// Stable check id (`title-missing`, `axe-color-contrast`, …).
    pub id: String,
    /// Category.
    pub category: Category,
    /// Severity.
    pub severity: Severity,
    /// One line.
    pub title: String,
    /// One or two sentences a site owner understands, with how to fix it.
    pub explanation: String,
    /// The first piece of evidence.
    pub evidence: Evidence,
    /// Up to nine more.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_evidence: Vec<Evidence>,
    /// How many times it occurs on the page (≥ 1).
    pub occurrences: u32,
}

/// A check's pass/fail result, for the scores.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckOutcome {
    /// Check id.
    pub id: String,
    /// Category it scores in.
    pub category: Category,
    /// Weight in its category.
    pub weight: u32,
    /// Passed.
    pub passed: bool,
}

/// A check's definition.
#[derive(Debug, Clone, Copy)]
pub struct CheckDef {
    /// Stable id.
    pub id: &'static str,
    /// Category.
    pub category: Category,
    /// Weight in the category's score (0: explains a metric, not scored).
    pub weight: u32,
}

const fn def(id: &'static str, category: Category, weight: u32) -> CheckDef {
    CheckDef { id, category, weight }
}

/// Every non-axe check, with its category and weight (the scoring table of `docs/audits.md`).
pub const CHECKS: &[CheckDef] = &[
    def("http-status", Category::Seo, 10),
    def("title-missing", Category::Seo, 10),
    def("title-too-short", Category::Seo, 2),
    def("title-too-long", Category::Seo, 2),
    def("meta-description-missing", Category::Seo, 7),
    def("meta-description-too-short", Category::Seo, 1),
    def("meta-description-too-long", Category::Seo, 1),
    def("h1-missing", Category::Seo, 5),
    def("h1-multiple", Category::Seo, 2),
    def("canonical-missing", Category::Seo, 2),
    def("canonical-conflict", Category::Seo, 3),
    def("html-lang-missing", Category::Seo, 3),
    def("viewport-missing", Category::Seo, 7),
    def("noindex", Category::Seo, 10),
    def("og-tags-missing", Category::Seo, 1),
    def("image-alt-missing", Category::Seo, 5),
    def("broken-links", Category::Seo, 5),
    def("robots-txt-missing", Category::Seo, 1),
    def("robots-txt-unreachable", Category::Seo, 5),
    def("sitemap-missing", Category::Seo, 1),
    def("slow-ttfb", Category::Performance, 0),
    def("slow-lcp", Category::Performance, 0),
    def("high-cls", Category::Performance, 0),
    def("high-tbt", Category::Performance, 0),
    def("heavy-page", Category::Performance, 0),
    def("many-requests", Category::Performance, 0),
    def("redirect-chain", Category::Performance, 0),
    def("console-errors", Category::BestPractices, 5),
    def("failed-requests", Category::BestPractices, 5),
    def("no-https", Category::Security, 10),
    def("mixed-content", Category::Security, 7),
    def("password-over-http", Category::Security, 10),
    def("hsts-missing", Category::Security, 3),
    def("csp-missing", Category::Security, 1),
    def("x-content-type-options-missing", Category::Security, 1),
    def("frame-protection-missing", Category::Security, 2),
    def("referrer-policy-missing", Category::Security, 1),
    def("axe-not-run", Category::Accessibility, 0),
];

/// The definition of a check id (axe rules are `axe-<rule>`, weighted by impact).
pub fn check_def(id: &str) -> Option<&'static CheckDef> {
    CHECKS.iter().find(|c| c.id == id)
}

/// The limits the checks use (documented in `docs/audits.md`).
#[derive(Debug, Clone)]
pub struct Thresholds {
    /// Title shorter than this is `title-too-short`.
    pub title_min: usize,
    /// Title longer than this is `title-too-long`.
    pub title_max: usize,
    /// Meta description shorter than this.
    pub description_min: usize,
    /// Meta description longer than this.
    pub description_max: usize,
    /// TTFB warning / critical, ms.
    pub ttfb_ms: (f64, f64),
    /// LCP warning / critical, ms.
    pub lcp_ms: (f64, f64),
    /// CLS warning / critical.
    pub cls: (f64, f64),
    /// TBT warning / critical, ms.
    pub tbt_ms: (f64, f64),
    /// Page weight warning / critical, bytes.
    pub page_bytes: (u64, u64),
    /// Requests warning.
    pub requests: u32,
    /// Redirect hops before the page that make a chain.
    pub redirect_hops: usize,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            title_min: 10,
            title_max: 60,
            description_min: 50,
            description_max: 160,
            ttfb_ms: (800.0, 1800.0),
            lcp_ms: (2500.0, 4000.0),
            cls: (0.1, 0.25),
            tbt_ms: (200.0, 600.0),
            page_bytes: (3 * 1024 * 1024, 6 * 1024 * 1024),
            requests: 100,
            redirect_hops: 2,
        }
    }
}

/// Everything known about one audited page.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageFacts {
    /// The URL audited.
    pub url: String,
    /// The URL after redirects.
    pub final_url: String,
    /// The document's status (None: no response).
    pub status: Option<u16>,
    /// Why the page could not be loaded.
    pub error: Option<String>,
    /// The bot wall's vendor when the site answered with a challenge or block page instead of
    /// the page (`cloudflare`, `datadome`, …): reported, not scored.
    #[serde(default)]
    pub blocked: Option<String>,
    /// Redirect hops before the document.
    #[serde(default)]
    pub redirects: Vec<Hop>,
    /// The document's response headers (any case; repeated names allowed).
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// [`crate::collect::COLLECT_JS`]'s result.
    pub collection: Option<PageCollection>,
    /// [`crate::collect::AXE_RUN_JS`]'s result.
    pub axe: Option<AxeResults>,
    /// Console errors (DevTools events).
    #[serde(default)]
    pub console_errors: Vec<ConsoleMessage>,
    /// Failed sub-requests (DevTools events).
    #[serde(default)]
    pub failed_requests: Vec<FailedRequest>,
    /// Link checks ([`crate::fetch::check_links`]).
    pub links: Option<LinkReport>,
}

impl PageFacts {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Every header named `name`, joined with `, `.
    pub fn header_all(&self, name: &str) -> Option<String> {
        let v: Vec<&str> =
            self.headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).collect();
        (!v.is_empty()).then(|| v.join(", "))
    }
}

/// Site-level facts.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SiteFacts {
    /// The start URL.
    pub start_url: String,
    /// The start page's URL after redirects (decides HTTPS).
    pub final_url: String,
    /// The robots.txt URL.
    pub robots_url: String,
    /// robots.txt status (None: network failure).
    pub robots_status: Option<u16>,
    /// robots.txt network failure.
    pub robots_error: Option<String>,
    /// A sitemap was read.
    pub sitemap_found: bool,
    /// The sitemap URLs tried.
    #[serde(default)]
    pub sitemap_urls: Vec<String>,
}

/// Findings and outcomes of one page (or of the site).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checked {
    /// Findings, most severe first.
    pub findings: Vec<Finding>,
    /// Pass/fail of each check that applied.
    pub outcomes: Vec<CheckOutcome>,
}

struct Ctx<'a> {
    url: &'a str,
    out: Checked,
}

/// At most this many pieces of evidence per finding.
pub const MAX_EVIDENCE: usize = 10;

impl Ctx<'_> {
    fn ev(&self) -> Evidence {
        Evidence { url: self.url.to_owned(), ..Evidence::default() }
    }

    fn outcome(&mut self, id: &str, passed: bool) {
        if let Some(d) = check_def(id) {
            self.out.outcomes.push(CheckOutcome { id: id.to_owned(), category: d.category, weight: d.weight, passed });
        }
    }

    fn pass(&mut self, id: &str) {
        self.outcome(id, true);
    }

    /// Pass when `failed` is None, else record the finding.
    fn check(&mut self, id: &str, failed: Option<(Severity, String, String, Vec<Evidence>, u32)>) {
        match failed {
            None => self.pass(id),
            Some((severity, title, explanation, evidence, occurrences)) => {
                self.fail(id, severity, title, explanation, evidence, occurrences)
            }
        }
    }

    fn fail(
        &mut self,
        id: &str,
        severity: Severity,
        title: String,
        explanation: String,
        mut evidence: Vec<Evidence>,
        occurrences: u32,
    ) {
        let category = check_def(id).map(|d| d.category).unwrap_or(Category::BestPractices);
        self.outcome(id, false);
        if evidence.is_empty() {
            evidence.push(self.ev());
        }
        evidence.truncate(MAX_EVIDENCE);
        let first = evidence.remove(0);
        self.out.findings.push(Finding {
            id: id.to_owned(),
            category,
            severity,
            title,
            explanation,
            evidence: first,
            more_evidence: evidence,
            occurrences: occurrences.max(1),
        });
    }
}

type Failure = Option<(Severity, String, String, Vec<Evidence>, u32)>;

fn kib(bytes: u64) -> String {
    if bytes >= 1024 * 1024 {
        format!("{:.1} MB", bytes as f64 / 1_048_576.0)
    } else {
        format!("{} KB", bytes.div_ceil(1024))
    }
}

fn count_chars(s: &str) -> usize {
    s.chars().count()
}

/// Check one page.
pub fn check_page(facts: &PageFacts, t: &Thresholds) -> Checked {
    let url = if facts.final_url.is_empty() { facts.url.as_str() } else { facts.final_url.as_str() };
    let mut cx = Ctx { url, out: Checked::default() };

    // Reachability first: an error page's content is not the page's.
    match (facts.status, &facts.error) {
        (None, err) => {
            let why = err.clone().unwrap_or_else(|| "no response".into());
            cx.fail(
                "http-status",
                Severity::Critical,
                "The page could not be loaded".into(),
                "Visitors and search engines cannot open this page. Check that the server is up and the address is right.".into(),
                vec![Evidence { url: facts.url.clone(), value: Some(why), expected: Some("HTTP 200".into()), ..Evidence::default() }],
                1,
            );
            return finish(cx);
        }
        (Some(s), _) if s >= 400 => {
            let (title, explanation) = if s >= 500 {
                (
                    format!("The page fails with a server error (HTTP {s})"),
                    "The server crashed or refused to build this page, so visitors see an error and search engines drop it. Check the server's logs.",
                )
            } else {
                (
                    format!("The page answers HTTP {s}"),
                    "Visitors get an error page instead of content and search engines will not index it. Restore the page or redirect the address to its replacement.",
                )
            };
            cx.fail(
                "http-status",
                Severity::Critical,
                title,
                explanation.into(),
                vec![Evidence {
                    url: url.to_owned(),
                    value: Some(format!("HTTP {s}")),
                    expected: Some("HTTP 200".into()),
                    ..Evidence::default()
                }],
                1,
            );
            return finish(cx);
        }
        _ => cx.pass("http-status"),
    }

    check_redirects(&mut cx, facts, t);
    check_headers(&mut cx, facts);
    if let Some(c) = &facts.collection {
        check_seo(&mut cx, facts, c, t);
        check_performance(&mut cx, c, t);
        check_page_security(&mut cx, c);
    }
    check_console_and_requests(&mut cx, facts);
    if let Some(l) = &facts.links {
        check_links(&mut cx, l);
    }
    check_axe(&mut cx, facts.axe.as_ref());
    finish(cx)
}

fn finish(mut cx: Ctx<'_>) -> Checked {
    cx.out.findings.sort_by_key(|f| f.severity);
    cx.out
}

fn check_redirects(cx: &mut Ctx<'_>, facts: &PageFacts, t: &Thresholds) {
    if facts.redirects.len() >= t.redirect_hops {
        let mut ev: Vec<Evidence> = facts
            .redirects
            .iter()
            .map(|h| Evidence { url: h.url.clone(), value: Some(format!("HTTP {}", h.status)), ..Evidence::default() })
            .collect();
        ev.push(Evidence { url: cx.url.to_owned(), value: Some("final page".into()), ..Evidence::default() });
        let n = facts.redirects.len();
        cx.fail(
            "redirect-chain",
            Severity::Warning,
            format!("{n} redirects before the page loads"),
            "Each redirect costs a round trip before anything shows. Link straight to the final address and make old addresses redirect there in one step.".into(),
            ev,
            n as u32,
        );
    } else {
        cx.pass("redirect-chain");
    }
}

fn check_seo(cx: &mut Ctx<'_>, facts: &PageFacts, c: &PageCollection, t: &Thresholds) {
    let seo = &c.seo;
    let ev = |value: Option<String>, selector: Option<&str>, expected: &str| Evidence {
        url: cx.url.to_owned(),
        selector: selector.map(str::to_owned),
        value,
        expected: Some(expected.to_owned()),
    };

    // Title.
    let title = seo.title.as_deref().map(str::trim).filter(|s| !s.is_empty());
    match title {
        None => {
            cx.fail(
                "title-missing",
                Severity::Critical,
                "The page has no title".into(),
                "Search results and browser tabs show the title first; without one, search engines make one up. Add a <title> that says what the page offers.".into(),
                vec![ev(None, Some("head > title"), &format!("a <title> of {}–{} characters", t.title_min, t.title_max))],
                1,
            );
        }
        Some(tt) => {
            cx.pass("title-missing");
            let n = count_chars(tt);
            let short: Failure = (n < t.title_min).then(|| {
                (
                    Severity::Warning,
                    format!("The title is too short ({n} characters)"),
                    "A very short title wastes the most visible line in search results. Describe the page in a few words, with your brand.".into(),
                    vec![ev(Some(tt.to_owned()), Some("head > title"), &format!("at least {} characters", t.title_min))],
                    1,
                )
            });
            cx.check("title-too-short", short);
            let long: Failure = (n > t.title_max).then(|| {
                (
                    Severity::Warning,
                    format!("The title is too long ({n} characters)"),
                    "Search engines cut titles after about 60 characters, so the end is lost. Put the important words first and shorten it.".into(),
                    vec![ev(Some(tt.to_owned()), Some("head > title"), &format!("at most {} characters", t.title_max))],
                    1,
                )
            });
            cx.check("title-too-long", long);
        }
    }

    // Meta description.
    let desc = seo.meta_description.as_deref().map(str::trim).filter(|s| !s.is_empty());
    match desc {
        None => {
            cx.fail(
                "meta-description-missing",
                Severity::Warning,
                "The page has no meta description".into(),
                "Search engines show the description under the title; without one they pick a random snippet. Add <meta name=\"description\"> summing up the page in one or two sentences.".into(),
                vec![ev(None, Some("meta[name=\"description\"]"), &format!("{}–{} characters", t.description_min, t.description_max))],
                1,
            );
        }
        Some(d) => {
            cx.pass("meta-description-missing");
            let n = count_chars(d);
            let short: Failure = (n < t.description_min).then(|| {
                (
                    Severity::Info,
                    format!("The meta description is short ({n} characters)"),
                    "A fuller description (one or two sentences) earns more clicks from search results.".into(),
                    vec![ev(
                        Some(d.to_owned()),
                        Some("meta[name=\"description\"]"),
                        &format!("at least {} characters", t.description_min),
                    )],
                    1,
                )
            });
            cx.check("meta-description-too-short", short);
            let long: Failure = (n > t.description_max).then(|| {
                (
                    Severity::Info,
                    format!("The meta description is long ({n} characters)"),
                    "Search engines cut descriptions after about 160 characters. Keep the key message in the first sentence.".into(),
                    vec![ev(Some(d.to_owned()), Some("meta[name=\"description\"]"), &format!("at most {} characters", t.description_max))],
                    1,
                )
            });
            cx.check("meta-description-too-long", long);
        }
    }

    // Headings.
    let h1_missing: Failure = (seo.h1_count == 0).then(|| {
        (
            Severity::Warning,
            "The page has no main heading (h1)".into(),
            "The h1 tells visitors and search engines what the page is about. Mark the page's main heading up as <h1>."
                .into(),
            vec![ev(Some("0 h1 elements".into()), Some("h1"), "exactly one <h1>")],
            1,
        )
    });
    cx.check("h1-missing", h1_missing);
    let h1_multi: Failure = (seo.h1_count > 1).then(|| {
        let ev1: Vec<Evidence> = seo.h1.iter().map(|h| ev(Some(h.clone()), Some("h1"), "exactly one <h1>")).collect();
        (
            Severity::Warning,
            format!("The page has {} main headings (h1)", seo.h1_count),
            "Several h1 headings blur what the page is about. Keep one h1 for the page's topic and make the others h2."
                .into(),
            ev1,
            seo.h1_count,
        )
    });
    cx.check("h1-multiple", h1_multi);

    // Canonical.
    let mut canon: Vec<&String> = seo.canonical.iter().collect();
    canon.dedup();
    if canon.is_empty() {
        cx.fail(
            "canonical-missing",
            Severity::Info,
            "The page does not name its canonical address".into(),
            "A canonical link tells search engines which address to rank when the page is reachable under several (with tracking parameters, with or without www). Add <link rel=\"canonical\" href=\"…\">.".into(),
            vec![ev(None, Some("link[rel=\"canonical\"]"), "one <link rel=\"canonical\">")],
            1,
        );
    } else {
        cx.pass("canonical-missing");
        let distinct: std::collections::BTreeSet<&String> = canon.iter().copied().collect();
        let conflict: Failure = (distinct.len() > 1).then(|| {
            (
                Severity::Warning,
                "The page names several canonical addresses".into(),
                "Conflicting canonical links make search engines ignore them all. Keep exactly one.".into(),
                distinct
                    .iter()
                    .map(|c| ev(Some((*c).clone()), Some("link[rel=\"canonical\"]"), "one canonical address"))
                    .collect(),
                distinct.len() as u32,
            )
        });
        cx.check("canonical-conflict", conflict);
    }

    let lang: Failure = seo.lang.as_deref().map(str::trim).is_none_or(str::is_empty).then(|| {
        (
            Severity::Warning,
            "The page does not declare its language".into(),
            "Without <html lang>, screen readers may read the page with the wrong voice and search engines guess the language. Add lang=\"en\" (or your language) to the <html> element.".into(),
            vec![ev(None, Some("html"), "<html lang=\"…\">")],
            1,
        )
    });
    cx.check("html-lang-missing", lang);

    let vp_ok = seo.viewport.as_deref().is_some_and(|v| v.to_ascii_lowercase().contains("width="));
    let viewport: Failure = (!vp_ok).then(|| {
        (
            Severity::Warning,
            "The page is not set up for phones (no viewport)".into(),
            "Without a viewport meta tag phones show a shrunken desktop page, and search engines rank it lower on mobile. Add <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">.".into(),
            vec![ev(seo.viewport.clone(), Some("meta[name=\"viewport\"]"), "width=device-width, initial-scale=1")],
            1,
        )
    });
    cx.check("viewport-missing", viewport);

    // noindex: robots meta or X-Robots-Tag.
    let header = facts.header_all("x-robots-tag");
    let header_noindex = header.as_deref().is_some_and(|h| {
        let h = h.to_ascii_lowercase();
        h.contains("noindex") || h.split([',', ':', ' ']).any(|p| p.trim() == "none")
    });
    let noindex: Failure = (seo.noindex || header_noindex).then(|| {
        let mut e = Vec::new();
        if seo.noindex {
            e.push(ev(Some(seo.robots_meta.join(", ")), Some("meta[name=\"robots\"]"), "index (or no robots meta)"));
        }
        if header_noindex {
            e.push(Evidence { url: cx.url.to_owned(), value: Some(format!("X-Robots-Tag: {}", header.clone().unwrap_or_default())), expected: Some("no noindex".into()), selector: None });
        }
        (
            Severity::Warning,
            "Search engines are told not to index this page".into(),
            "A noindex directive keeps the page out of search results. If the page should be found, remove noindex from the robots meta tag or the X-Robots-Tag header.".into(),
            e,
            1,
        )
    });
    cx.check("noindex", noindex);

    let missing_og: Vec<&str> =
        ["og:title", "og:description", "og:image"].into_iter().filter(|k| !seo.open_graph.contains_key(*k)).collect();
    let og: Failure = (!missing_og.is_empty()).then(|| {
        (
            Severity::Info,
            "Open Graph tags are missing".into(),
            "Shared on social networks and chats, the page shows without a proper title, text or picture. Add og:title, og:description and og:image meta tags.".into(),
            vec![ev(Some(format!("missing {}", missing_og.join(", "))), Some("meta[property^=\"og:\"]"), "og:title, og:description, og:image")],
            missing_og.len() as u32,
        )
    });
    cx.check("og-tags-missing", og);

    let imgs = &c.images;
    let alt: Failure = (imgs.without_alt_count > 0).then(|| {
        (
            Severity::Warning,
            format!("{} image{} without alt text", imgs.without_alt_count, if imgs.without_alt_count == 1 { "" } else { "s" }),
            "Alt text describes an image to blind visitors and to image search. Add an alt attribute to each image (alt=\"\" for purely decorative ones).".into(),
            imgs.without_alt
                .iter()
                .map(|i| Evidence { url: cx.url.to_owned(), selector: i.selector.clone(), value: Some(i.src.clone()), expected: Some("an alt attribute".into()) })
                .collect(),
            imgs.without_alt_count,
        )
    });
    cx.check("image-alt-missing", alt);
}

fn check_performance(cx: &mut Ctx<'_>, c: &PageCollection, t: &Thresholds) {
    let url = cx.url.to_owned();
    let grade = |v: f64, (warn, crit): (f64, f64)| {
        if v > crit {
            Some(Severity::Critical)
        } else if v > warn {
            Some(Severity::Warning)
        } else {
            None
        }
    };
    if let Some(n) = &c.navigation {
        let f: Failure = grade(n.ttfb_ms, t.ttfb_ms).map(|s| {
            (
                s,
                format!("The server is slow to answer ({:.0} ms to first byte)", n.ttfb_ms),
                "Nothing can show until the server starts answering. Cache pages, use a CDN or speed up the code that builds the page.".into(),
                vec![Evidence { url: url.clone(), selector: None, value: Some(format!("{:.0} ms", n.ttfb_ms)), expected: Some(format!("under {:.0} ms", t.ttfb_ms.0)) }],
                1,
            )
        });
        cx.check("slow-ttfb", f);
    }
    let v = &c.vitals;
    if let Some(lcp) = v.lcp_ms {
        let f: Failure = grade(lcp, t.lcp_ms).map(|s| {
            (
                s,
                format!("The main content appears late (LCP {:.1} s)", lcp / 1000.0),
                "Largest Contentful Paint is when the biggest text or image shows; visitors leave when it takes long. Shrink and preload the hero image, and cut render-blocking scripts and styles.".into(),
                vec![Evidence { url: url.clone(), selector: v.lcp_selector.clone(), value: Some(format!("{:.0} ms", lcp)), expected: Some(format!("under {:.0} ms", t.lcp_ms.0)) }],
                1,
            )
        });
        cx.check("slow-lcp", f);
    }
    if let Some(cls) = v.cls {
        let f: Failure = grade(cls, t.cls).map(|s| {
            let mut ev: Vec<Evidence> = v
                .layout_shifts
                .iter()
                .flat_map(|sh| {
                    let value = format!("shift {:.3} at {:.0} ms", sh.value, sh.start_time);
                    let url = url.clone();
                    let sel: Vec<Option<String>> = if sh.sources.is_empty() { vec![None] } else { sh.sources.iter().cloned().map(Some).collect() };
                    sel.into_iter().map(move |selector| Evidence { url: url.clone(), selector, value: Some(value.clone()), expected: None })
                })
                .collect();
            ev.insert(0, Evidence { url: url.clone(), selector: None, value: Some(format!("CLS {:.3}", cls)), expected: Some(format!("under {}", t.cls.0)) });
            (
                s,
                format!("Content jumps around while loading (CLS {:.2})", cls),
                "Elements move after they appear, so visitors lose their place or click the wrong thing. Reserve space for images, ads and banners (width/height or aspect-ratio).".into(),
                ev,
                v.layout_shifts.len().max(1) as u32,
            )
        });
        cx.check("high-cls", f);
    }
    if let Some(tbt) = v.tbt_ms {
        let f: Failure = grade(tbt, t.tbt_ms).map(|s| {
            (
                s,
                format!("Scripts block the page ({:.0} ms of blocking time)", tbt),
                "Long-running JavaScript freezes the page so taps and clicks wait. Split or defer heavy scripts and remove unused ones.".into(),
                vec![Evidence { url: url.clone(), selector: None, value: Some(format!("{:.0} ms, {} long tasks", tbt, v.long_tasks.unwrap_or(0))), expected: Some(format!("under {:.0} ms", t.tbt_ms.0)) }],
                v.long_tasks.unwrap_or(1),
            )
        });
        cx.check("high-tbt", f);
    }
    let r = &c.resources;
    let heavy: Failure = (r.total_bytes > t.page_bytes.0).then(|| {
        let s = if r.total_bytes > t.page_bytes.1 { Severity::Critical } else { Severity::Warning };
        let mut ev = vec![Evidence { url: url.clone(), selector: None, value: Some(kib(r.total_bytes)), expected: Some(format!("under {}", kib(t.page_bytes.0))) }];
        ev.extend(r.largest.iter().take(5).map(|x| Evidence { url: x.url.clone(), selector: None, value: Some(format!("{} {}", x.kind, kib(x.bytes))), expected: None }));
        (
            s,
            format!("The page is heavy ({})", kib(r.total_bytes)),
            "Every byte costs load time and mobile data. Compress images (WebP/AVIF at the displayed size), and drop unused scripts and fonts.".into(),
            ev,
            1,
        )
    });
    cx.check("heavy-page", heavy);
    let many: Failure = (r.total_requests > t.requests).then(|| {
        (
            Severity::Warning,
            format!("The page makes {} requests", r.total_requests),
            "Many small files slow loading, above all on mobile networks. Bundle scripts and styles, and lazy-load images below the fold.".into(),
            vec![Evidence { url: url.clone(), selector: None, value: Some(r.total_requests.to_string()), expected: Some(format!("at most {}", t.requests)) }],
            r.total_requests,
        )
    });
    cx.check("many-requests", many);
}

fn check_page_security(cx: &mut Ctx<'_>, c: &PageCollection) {
    let url = cx.url.to_owned();
    if c.https {
        let mixed: Failure = (!c.mixed_content.is_empty()).then(|| {
            (
                Severity::Warning,
                format!("{} insecure (http:) resource{} on a secure page", c.mixed_content.len(), if c.mixed_content.len() == 1 { "" } else { "s" }),
                "Browsers block or flag http: files on an https page, which breaks images or scripts and shows a 'not secure' warning. Load them over https:.".into(),
                c.mixed_content
                    .iter()
                    .map(|m| Evidence { url: url.clone(), selector: m.selector.clone(), value: Some(format!("{} {}", m.kind, m.url)), expected: Some("https:".into()) })
                    .collect(),
                c.mixed_content.len() as u32,
            )
        });
        cx.check("mixed-content", mixed);
    }
    let pw: Failure = (!c.insecure_password_forms.is_empty()).then(|| {
        (
            Severity::Critical,
            "A password form is sent over an insecure connection".into(),
            "Passwords typed here travel unencrypted and can be read on the network; browsers warn visitors. Serve the page and the form's target over https.".into(),
            c.insecure_password_forms
                .iter()
                .map(|f| Evidence { url: url.clone(), selector: f.selector.clone(), value: Some(f.action.clone()), expected: Some("an https: page and action".into()) })
                .collect(),
            c.insecure_password_forms.len() as u32,
        )
    });
    cx.check("password-over-http", pw);
}

fn check_headers(cx: &mut Ctx<'_>, facts: &PageFacts) {
    let url = cx.url.to_owned();
    let https = url.starts_with("https:");
    let hev = |name: &str, value: Option<String>, expected: &str| Evidence {
        url: url.clone(),
        selector: None,
        value: Some(match value {
            Some(v) => format!("{name}: {v}"),
            None => format!("no {name} header"),
        }),
        expected: Some(expected.to_owned()),
    };
    if https {
        let hsts = facts.header("strict-transport-security");
        let max_age = hsts.and_then(|h| {
            h.split(';').find_map(|p| {
                p.trim()
                    .to_ascii_lowercase()
                    .strip_prefix("max-age=")
                    .and_then(|v| v.trim_matches('"').parse::<u64>().ok())
            })
        });
        let f: Failure = max_age.is_none_or(|a| a == 0).then(|| {
            (
                Severity::Warning,
                "HTTPS is not enforced (no HSTS)".into(),
                "Without Strict-Transport-Security a visitor's first request can be downgraded to plain http. Send Strict-Transport-Security: max-age=31536000; includeSubDomains.".into(),
                vec![hev("Strict-Transport-Security", hsts.map(str::to_owned), "max-age=31536000")],
                1,
            )
        });
        cx.check("hsts-missing", f);
    }
    let csp = facts.header_all("content-security-policy");
    let f: Failure = csp.is_none().then(|| {
        (
            Severity::Info,
            "No Content-Security-Policy".into(),
            "A Content-Security-Policy limits where scripts may come from, which blunts cross-site scripting. Start with a report-only policy and tighten it.".into(),
            vec![hev("Content-Security-Policy", None, "a policy")],
            1,
        )
    });
    cx.check("csp-missing", f);
    let xcto = facts.header("x-content-type-options");
    let f: Failure = (!xcto.is_some_and(|v| v.trim().eq_ignore_ascii_case("nosniff"))).then(|| {
        (
            Severity::Info,
            "No X-Content-Type-Options: nosniff".into(),
            "Without it browsers may guess file types and run an upload as a script. Send X-Content-Type-Options: nosniff.".into(),
            vec![hev("X-Content-Type-Options", xcto.map(str::to_owned), "nosniff")],
            1,
        )
    });
    cx.check("x-content-type-options-missing", f);
    let xfo = facts.header("x-frame-options");
    let xfo_ok = xfo.is_some_and(|v| {
        let v = v.trim().to_ascii_lowercase();
        v == "deny" || v == "sameorigin"
    });
    let fa_ok = csp.as_deref().is_some_and(|c| c.to_ascii_lowercase().contains("frame-ancestors"));
    let f: Failure = (!xfo_ok && !fa_ok).then(|| {
        (
            Severity::Warning,
            "Other sites can embed this page (clickjacking)".into(),
            "A hostile site can show this page in an invisible frame and trick visitors into clicking. Send X-Frame-Options: SAMEORIGIN or a Content-Security-Policy with frame-ancestors.".into(),
            vec![hev("X-Frame-Options", xfo.map(str::to_owned), "SAMEORIGIN, DENY, or CSP frame-ancestors")],
            1,
        )
    });
    cx.check("frame-protection-missing", f);
    let rp = facts.header("referrer-policy");
    let f: Failure = rp.is_none().then(|| {
        (
            Severity::Info,
            "No Referrer-Policy".into(),
            "Without a Referrer-Policy, full addresses (which may hold private data) can leak to other sites. Send Referrer-Policy: strict-origin-when-cross-origin.".into(),
            vec![hev("Referrer-Policy", None, "strict-origin-when-cross-origin")],
            1,
        )
    });
    cx.check("referrer-policy-missing", f);
}

fn check_console_and_requests(cx: &mut Ctx<'_>, facts: &PageFacts) {
    let url = cx.url.to_owned();
    // Network errors logged to the console are the failed requests below: counted there.
    let errors: Vec<&ConsoleMessage> = facts.console_errors.iter().filter(|m| m.source != "network").collect();
    let f: Failure = (!errors.is_empty()).then(|| {
        (
            Severity::Warning,
            format!("{} error{} in the browser console", errors.len(), if errors.len() == 1 { "" } else { "s" }),
            "Script errors often mean a feature of the page is broken for visitors. Open the browser's developer console on this page and fix the errors listed.".into(),
            errors
                .iter()
                .map(|m| Evidence {
                    url: m.url.clone().filter(|u| !u.is_empty()).unwrap_or_else(|| url.clone()),
                    selector: None,
                    value: Some(match m.line {
                        Some(l) => format!("{} (line {l})", m.text),
                        None => m.text.clone(),
                    }),
                    expected: None,
                })
                .collect(),
            errors.len() as u32,
        )
    });
    cx.check("console-errors", f);
    let failed = &facts.failed_requests;
    let f: Failure = (!failed.is_empty()).then(|| {
        (
            Severity::Warning,
            format!("{} request{} failed while loading", failed.len(), if failed.len() == 1 { "" } else { "s" }),
            "Files the page asked for did not arrive (missing images, scripts or styles), so parts of it may look or work broken. Fix or remove the references.".into(),
            failed
                .iter()
                .map(|r| Evidence {
                    url: r.url.clone(),
                    selector: None,
                    value: Some(match (r.status, &r.error) {
                        (Some(s), _) => format!("HTTP {s}"),
                        (None, Some(e)) => e.clone(),
                        (None, None) => "failed".into(),
                    }),
                    expected: Some("HTTP 200".into()),
                })
                .collect(),
            failed.len() as u32,
        )
    });
    cx.check("failed-requests", f);
}

fn check_links(cx: &mut Ctx<'_>, links: &LinkReport) {
    let url = cx.url.to_owned();
    let broken: Vec<_> = links.broken().collect();
    let f: Failure = (!broken.is_empty()).then(|| {
        (
            Severity::Warning,
            format!("{} broken link{}", broken.len(), if broken.len() == 1 { "" } else { "s" }),
            "Links that lead to errors frustrate visitors and waste search engines' attention. Update or remove them."
                .into(),
            broken
                .iter()
                .map(|l| Evidence {
                    url: url.clone(),
                    selector: None,
                    value: Some(format!(
                        "{} → {}",
                        l.url,
                        match (l.status, &l.error) {
                            (Some(s), _) if l.verdict == LinkVerdict::Broken => format!("HTTP {s}"),
                            (_, Some(e)) => e.clone(),
                            _ => "failed".into(),
                        }
                    )),
                    expected: Some("a working link".into()),
                })
                .collect(),
            broken.len() as u32,
        )
    });
    cx.check("broken-links", f);
}

/// Weight of an axe rule by impact (Lighthouse's accessibility weights).
pub fn axe_weight(impact: Option<&str>) -> u32 {
    match impact {
        Some("critical") => 10,
        Some("serious") => 7,
        Some("moderate") => 3,
        Some("minor") => 1,
        _ => 3,
    }
}

fn check_axe(cx: &mut Ctx<'_>, axe: Option<&AxeResults>) {
    let Some(axe) = axe else { return };
    if let Some(e) = &axe.error {
        cx.fail(
            "axe-not-run",
            Severity::Info,
            "The accessibility check could not run".into(),
            "axe-core could not check this page, so accessibility is not scored for it.".into(),
            vec![Evidence { url: cx.url.to_owned(), value: Some(e.clone()), ..Evidence::default() }],
            1,
        );
        return;
    }
    let url = cx.url.to_owned();
    for v in &axe.violations {
        let severity = match v.impact.as_deref() {
            Some("critical") => Severity::Critical,
            Some("serious") | Some("moderate") => Severity::Warning,
            _ => Severity::Info,
        };
        let evidence: Vec<Evidence> = v
            .nodes
            .iter()
            .map(|n| Evidence {
                url: url.clone(),
                selector: Some(n.target.join(" ")).filter(|s| !s.is_empty()),
                value: Some(n.html.clone()).filter(|s| !s.is_empty()),
                expected: None,
            })
            .collect();
        let id = format!("axe-{}", v.id);
        cx.out.outcomes.push(CheckOutcome {
            id: id.clone(),
            category: Category::Accessibility,
            weight: axe_weight(v.impact.as_deref()),
            passed: false,
        });
        let mut evidence =
            if evidence.is_empty() { vec![Evidence { url: url.clone(), ..Evidence::default() }] } else { evidence };
        evidence.truncate(MAX_EVIDENCE);
        let first = evidence.remove(0);
        let explanation = match v.nodes.first().map(|n| n.failure_summary.trim()).filter(|s| !s.is_empty()) {
            Some(fix) => format!("{} {}", ensure_period(&v.description), clip_words(fix, 300)),
            None => ensure_period(&v.description),
        };
        cx.out.findings.push(Finding {
            id,
            category: Category::Accessibility,
            severity,
            title: v.help.clone(),
            explanation,
            evidence: first,
            more_evidence: evidence,
            occurrences: v.node_count.max(1),
        });
    }
}

fn ensure_period(s: &str) -> String {
    let s = s.trim();
    if s.ends_with(['.', '!', '?']) { s.to_owned() } else { format!("{s}.") }
}

fn clip_words(s: &str, max: usize) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::collect::clip(&s, max)
}

/// Check the site as a whole (robots.txt, sitemap, HTTPS).
pub fn check_site(site: &SiteFacts) -> Checked {
    let url = if site.final_url.is_empty() { site.start_url.as_str() } else { site.final_url.as_str() };
    let mut cx = Ctx { url, out: Checked::default() };
    let robots = Evidence { url: site.robots_url.clone(), ..Evidence::default() };
    match (site.robots_status, &site.robots_error) {
        (Some(s), _) if (200..300).contains(&s) => {
            cx.pass("robots-txt-missing");
            cx.pass("robots-txt-unreachable");
        }
        (Some(s), _) if (400..500).contains(&s) && s != 429 => {
            cx.pass("robots-txt-unreachable");
            cx.fail(
                "robots-txt-missing",
                Severity::Info,
                "The site has no robots.txt".into(),
                "robots.txt tells search engines what to crawl and where the sitemap is. Add one at the site's root, even if it allows everything.".into(),
                vec![Evidence { value: Some(format!("HTTP {s}")), expected: Some("HTTP 200".into()), ..robots.clone() }],
                1,
            );
        }
        (status, err) => {
            cx.pass("robots-txt-missing");
            let value = match (status, err) {
                (Some(s), _) => format!("HTTP {s}"),
                (None, Some(e)) => e.clone(),
                (None, None) => "no response".into(),
            };
            cx.fail(
                "robots-txt-unreachable",
                Severity::Warning,
                "robots.txt fails to load".into(),
                "When robots.txt answers with a server error, search engines stop crawling the whole site, and so did this audit. Make /robots.txt answer 200 (or 404 if you have none).".into(),
                vec![Evidence { value: Some(value), expected: Some("HTTP 200 or 404".into()), ..robots.clone() }],
                1,
            );
        }
    }
    let sm: Failure = (!site.sitemap_found).then(|| {
        (
            Severity::Info,
            "No sitemap found".into(),
            "A sitemap lists the pages you want found, so search engines discover new ones sooner. Publish /sitemap.xml and name it in robots.txt.".into(),
            vec![Evidence {
                url: site.sitemap_urls.first().cloned().unwrap_or_else(|| format!("{}sitemap.xml", root_of(url))),
                value: Some("not found".into()),
                expected: Some("a sitemap.xml".into()),
                selector: None,
            }],
            1,
        )
    });
    cx.check("sitemap-missing", sm);
    let https: Failure = (!url.starts_with("https:")).then(|| {
        (
            Severity::Critical,
            "The site is not served over HTTPS".into(),
            "Browsers mark http sites 'Not secure', search engines rank them lower, and anything typed can be read on the way. Get a certificate (free from Let's Encrypt) and redirect http to https.".into(),
            vec![Evidence { url: url.to_owned(), value: Some(url.split(':').next().unwrap_or_default().to_owned()), expected: Some("https".into()), selector: None }],
            1,
        )
    });
    cx.check("no-https", https);
    finish(cx)
}

fn root_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => u.join("/").map(|r| r.to_string()).unwrap_or_default(),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::{
        AxeNode, AxeViolation, ImageFact, ImageFacts, InsecureForm, LayoutShift, MixedContent, NavigationTiming,
        ResourceSummary, SeoFacts, SizedResource, Vitals,
    };
    use crate::fetch::LinkCheck;

    /// Facts of a page that passes every check (https, all headers).
    fn good() -> PageFacts {
        let og = [("og:title", "T"), ("og:description", "D"), ("og:image", "/i.png")];
        PageFacts {
            url: "https://example.com/".into(),
            final_url: "https://example.com/".into(),
            status: Some(200),
            headers: vec![
                ("Content-Type".into(), "text/html".into()),
                ("Strict-Transport-Security".into(), "max-age=31536000".into()),
                ("Content-Security-Policy".into(), "default-src 'self'".into()),
                ("X-Content-Type-Options".into(), "nosniff".into()),
                ("X-Frame-Options".into(), "SAMEORIGIN".into()),
                ("Referrer-Policy".into(), "no-referrer".into()),
            ],
            collection: Some(PageCollection {
                url: "https://example.com/".into(),
                https: true,
                navigation: Some(NavigationTiming { ttfb_ms: 120.0, ..NavigationTiming::default() }),
                vitals: Vitals {
                    observers_installed: true,
                    lcp_ms: Some(900.0),
                    cls: Some(0.01),
                    fcp_ms: Some(500.0),
                    tbt_ms: Some(0.0),
                    ..Vitals::default()
                },
                resources: ResourceSummary { total_bytes: 300_000, total_requests: 20, ..ResourceSummary::default() },
                seo: SeoFacts {
                    title: Some("Example shop — handmade shoes".into()),
                    meta_description: Some(
                        "Handmade leather shoes from our workshop, shipped across Europe within three days.".into(),
                    ),
                    h1_count: 1,
                    h1: vec!["Handmade shoes".into()],
                    canonical: vec!["https://example.com/".into()],
                    lang: Some("en".into()),
                    viewport: Some("width=device-width, initial-scale=1".into()),
                    open_graph: og.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
                    ..SeoFacts::default()
                },
                images: ImageFacts { total: 3, ..ImageFacts::default() },
                ..PageCollection::default()
            }),
            axe: Some(AxeResults { passes: 20, ..AxeResults::default() }),
            links: Some(LinkReport::default()),
            ..PageFacts::default()
        }
    }

    fn ids(facts: &PageFacts) -> Vec<String> {
        check_page(facts, &Thresholds::default()).findings.into_iter().map(|f| f.id).collect()
    }

    fn col(f: &mut PageFacts) -> &mut PageCollection {
        f.collection.as_mut().unwrap()
    }

    #[test]
    fn a_good_page_has_no_finding_and_passes_every_applicable_check() {
        let c = check_page(&good(), &Thresholds::default());
        assert!(c.findings.is_empty(), "{:#?}", c.findings);
        assert!(c.outcomes.iter().all(|o| o.passed));
        assert!(c.outcomes.iter().any(|o| o.id == "hsts-missing"), "HSTS applies on https");
    }

    #[test]
    fn title_and_description_lengths_have_bounds() {
        let mut f = good();
        col(&mut f).seo.title = Some("Shoes".into());
        col(&mut f).seo.meta_description = Some("Short.".into());
        assert_eq!(ids(&f), ["title-too-short", "meta-description-too-short"]);
        col(&mut f).seo.title = Some("x".repeat(61));
        col(&mut f).seo.meta_description = Some("y".repeat(161));
        assert_eq!(ids(&f), ["title-too-long", "meta-description-too-long"]);
        col(&mut f).seo.title = Some("   ".into());
        col(&mut f).seo.meta_description = None;
        let c = check_page(&f, &Thresholds::default());
        assert_eq!(c.findings[0].id, "title-missing");
        assert_eq!(c.findings[0].severity, Severity::Critical);
        assert!(c.findings.iter().any(|x| x.id == "meta-description-missing"));
    }

    #[test]
    fn headings_canonical_lang_viewport_og_and_alt() {
        let mut f = good();
        let c = col(&mut f);
        c.seo.h1_count = 0;
        c.seo.h1.clear();
        c.seo.canonical.clear();
        c.seo.lang = Some(String::new());
        c.seo.viewport = Some("initial-scale=1".into());
        c.seo.open_graph.remove("og:image");
        c.images = ImageFacts {
            total: 4,
            without_alt_count: 2,
            without_alt: vec![ImageFact {
                selector: Some("#a".into()),
                src: "https://example.com/a.png".into(),
                html: "<img id=a>".into(),
            }],
        };
        let got = ids(&f);
        for id in [
            "h1-missing",
            "canonical-missing",
            "html-lang-missing",
            "viewport-missing",
            "og-tags-missing",
            "image-alt-missing",
        ] {
            assert!(got.iter().any(|g| g == id), "{id} in {got:?}");
        }
        let checked = check_page(&f, &Thresholds::default());
        let alt = checked.findings.iter().find(|x| x.id == "image-alt-missing").unwrap();
        assert_eq!((alt.occurrences, alt.evidence.selector.as_deref()), (2, Some("#a")));

        let mut f = good();
        col(&mut f).seo.h1_count = 3;
        col(&mut f).seo.h1 = vec!["a".into(), "b".into(), "c".into()];
        col(&mut f).seo.canonical = vec!["https://example.com/".into(), "https://example.com/other".into()];
        assert_eq!(ids(&f), ["h1-multiple", "canonical-conflict"]);
    }

    #[test]
    fn noindex_comes_from_the_robots_meta_or_the_header() {
        let mut f = good();
        col(&mut f).seo.noindex = true;
        col(&mut f).seo.robots_meta = vec!["noindex, follow".into()];
        assert_eq!(ids(&f), ["noindex"]);
        let mut f = good();
        f.headers.push(("x-robots-tag".into(), "googlebot: noindex".into()));
        assert_eq!(ids(&f), ["noindex"]);
        let mut f = good();
        f.headers.push(("X-Robots-Tag".into(), "none".into()));
        assert_eq!(ids(&f), ["noindex"]);
        let mut f = good();
        f.headers.push(("X-Robots-Tag".into(), "noarchive".into()));
        assert!(ids(&f).is_empty());
    }

    #[test]
    fn error_pages_get_one_critical_finding_and_no_content_checks() {
        for (status, error, title) in [
            (Some(503), None, "server error"),
            (Some(404), None, "HTTP 404"),
            (None, Some("net::ERR_CONNECTION_REFUSED"), "could not be loaded"),
        ] {
            let mut f = good();
            f.status = status;
            f.error = error.map(str::to_owned);
            col(&mut f).seo.title = None;
            let c = check_page(&f, &Thresholds::default());
            assert_eq!(c.findings.len(), 1, "{:?}", c.findings);
            assert_eq!((c.findings[0].id.as_str(), c.findings[0].severity), ("http-status", Severity::Critical));
            assert!(c.findings[0].title.contains(title), "{}", c.findings[0].title);
            assert_eq!(c.outcomes.len(), 1);
        }
    }

    #[test]
    fn performance_findings_grade_by_threshold() {
        let mut f = good();
        let c = col(&mut f);
        c.navigation.as_mut().unwrap().ttfb_ms = 900.0;
        c.vitals.lcp_ms = Some(4500.0);
        c.vitals.cls = Some(0.3);
        c.vitals.layout_shifts = vec![LayoutShift { start_time: 800.0, value: 0.3, sources: vec!["#banner".into()] }];
        c.vitals.tbt_ms = Some(250.0);
        c.vitals.long_tasks = Some(2);
        c.resources.total_bytes = 4 * 1024 * 1024;
        c.resources.total_requests = 150;
        c.resources.largest =
            vec![SizedResource { url: "https://example.com/hero.jpg".into(), kind: "image".into(), bytes: 3_000_000 }];
        f.redirects = vec![
            Hop { url: "http://example.com/".into(), status: 301 },
            Hop { url: "https://example.com".into(), status: 301 },
        ];
        let got = check_page(&f, &Thresholds::default()).findings;
        let sev = |id: &str| got.iter().find(|x| x.id == id).map(|x| x.severity);
        assert_eq!(sev("slow-ttfb"), Some(Severity::Warning));
        assert_eq!(sev("slow-lcp"), Some(Severity::Critical));
        assert_eq!(sev("high-cls"), Some(Severity::Critical));
        assert_eq!(sev("high-tbt"), Some(Severity::Warning));
        assert_eq!(sev("heavy-page"), Some(Severity::Warning));
        assert_eq!(sev("many-requests"), Some(Severity::Warning));
        assert_eq!(sev("redirect-chain"), Some(Severity::Warning));
        let cls = got.iter().find(|x| x.id == "high-cls").unwrap();
        assert_eq!(cls.more_evidence[0].selector.as_deref(), Some("#banner"));
        // Performance checks do not weigh in the pass/fail scores.
        let checked = check_page(&f, &Thresholds::default());
        assert!(checked.outcomes.iter().filter(|o| o.category == Category::Performance).all(|o| o.weight == 0));
        // One redirect (http → https) is normal.
        let mut f = good();
        f.redirects.truncate(0);
        f.redirects.push(Hop { url: "http://example.com/".into(), status: 301 });
        assert!(ids(&f).is_empty());
    }

    #[test]
    fn security_headers_mixed_content_and_passwords() {
        let mut f = good();
        f.headers.retain(|(k, _)| k == "Content-Type");
        let got = ids(&f);
        for id in [
            "hsts-missing",
            "csp-missing",
            "x-content-type-options-missing",
            "frame-protection-missing",
            "referrer-policy-missing",
        ] {
            assert!(got.iter().any(|g| g == id), "{id} in {got:?}");
        }
        // frame-ancestors in a CSP protects too; HSTS with max-age=0 is none.
        let mut f = good();
        f.headers.retain(|(k, _)| k != "X-Frame-Options");
        f.headers.push(("content-security-policy".into(), "frame-ancestors 'self'".into()));
        f.headers.retain(|(k, _)| k != "Strict-Transport-Security");
        f.headers.push(("strict-transport-security".into(), "max-age=0".into()));
        assert_eq!(ids(&f), ["hsts-missing"]);
        // Plain http: no HSTS check, a password form is critical.
        let mut f = good();
        f.url = "http://example.com/login".into();
        f.final_url = f.url.clone();
        f.headers.retain(|(k, _)| k != "Strict-Transport-Security");
        col(&mut f).https = false;
        col(&mut f).insecure_password_forms =
            vec![InsecureForm { selector: Some("#login".into()), action: "http://example.com/login".into() }];
        let c = check_page(&f, &Thresholds::default());
        assert_eq!(c.findings.iter().map(|x| x.id.as_str()).collect::<Vec<_>>(), ["password-over-http"]);
        assert!(!c.outcomes.iter().any(|o| o.id == "hsts-missing"));
        let mut f = good();
        col(&mut f).mixed_content = vec![MixedContent {
            url: "http://cdn.example.com/a.js".into(),
            kind: "script".into(),
            selector: Some("script:nth-of-type(2)".into()),
        }];
        assert_eq!(ids(&f), ["mixed-content"]);
    }

    #[test]
    fn console_errors_failed_requests_and_broken_links() {
        let mut f = good();
        f.console_errors = vec![
            ConsoleMessage {
                source: "network".into(),
                text: "Failed to load resource: 404".into(),
                url: None,
                line: None,
            },
            ConsoleMessage {
                source: "exception".into(),
                text: "TypeError: x is undefined".into(),
                url: Some("https://example.com/app.js".into()),
                line: Some(3),
            },
        ];
        f.failed_requests = vec![FailedRequest {
            url: "https://example.com/a.png".into(),
            resource_type: Some("Image".into()),
            status: Some(404),
            error: None,
        }];
        f.links = Some(LinkReport {
            links: vec![
                LinkCheck {
                    url: "https://example.com/gone".into(),
                    same_site: true,
                    status: Some(404),
                    final_url: None,
                    redirects: 0,
                    method: "GET".into(),
                    verdict: LinkVerdict::Broken,
                    error: Some("HTTP 404".into()),
                    elapsed_ms: 5,
                },
                LinkCheck {
                    url: "https://x.example/".into(),
                    same_site: false,
                    status: Some(403),
                    final_url: None,
                    redirects: 0,
                    method: "GET".into(),
                    verdict: LinkVerdict::Restricted,
                    error: Some("HTTP 403".into()),
                    elapsed_ms: 5,
                },
            ],
            found: 2,
            over_limit: 0,
        });
        let c = check_page(&f, &Thresholds::default());
        let find = |id: &str| c.findings.iter().find(|x| x.id == id).unwrap();
        assert_eq!(find("console-errors").occurrences, 1, "network errors count as failed requests");
        assert_eq!(find("console-errors").evidence.value.as_deref(), Some("TypeError: x is undefined (line 3)"));
        assert_eq!(find("failed-requests").evidence.url, "https://example.com/a.png");
        assert_eq!(find("broken-links").occurrences, 1, "a 403 is restricted, not broken");
        assert!(find("broken-links").evidence.value.as_deref().unwrap().contains("/gone → HTTP 404"));
    }

    #[test]
    fn axe_violations_become_findings_by_impact() {
        let v = |id: &str, impact: &str, nodes: u32| AxeViolation {
            id: id.into(),
            impact: Some(impact.into()),
            help: format!("{id} help"),
            description: format!("{id} description"),
            help_url: String::new(),
            tags: vec![],
            node_count: nodes,
            nodes: (0..nodes.min(10))
                .map(|i| AxeNode {
                    target: vec![format!("#n{i}")],
                    html: "<img>".into(),
                    failure_summary: "Fix this".into(),
                })
                .collect(),
        };
        let mut f = good();
        f.axe = Some(AxeResults {
            passes: 10,
            violations: vec![
                v("image-alt", "critical", 12),
                v("color-contrast", "serious", 1),
                v("region", "moderate", 1),
                v("x", "minor", 1),
            ],
            ..AxeResults::default()
        });
        let c = check_page(&f, &Thresholds::default());
        let sev: Vec<(&str, Severity)> = c.findings.iter().map(|x| (x.id.as_str(), x.severity)).collect();
        assert_eq!(
            sev,
            [
                ("axe-image-alt", Severity::Critical),
                ("axe-color-contrast", Severity::Warning),
                ("axe-region", Severity::Warning),
                ("axe-x", Severity::Info)
            ]
        );
        let alt = &c.findings[0];
        assert_eq!((alt.occurrences, alt.more_evidence.len()), (12, 9));
        assert_eq!(alt.evidence.selector.as_deref(), Some("#n0"));
        assert_eq!(alt.explanation, "image-alt description. Fix this");
        f.axe = Some(AxeResults { error: Some("axe-core is not loaded in the page".into()), ..AxeResults::default() });
        assert_eq!(ids(&f), ["axe-not-run"]);
    }

    #[test]
    fn site_checks_cover_robots_sitemap_and_https() {
        let base = SiteFacts {
            start_url: "https://example.com/".into(),
            final_url: "https://example.com/".into(),
            robots_url: "https://example.com/robots.txt".into(),
            robots_status: Some(200),
            sitemap_found: true,
            ..SiteFacts::default()
        };
        assert!(check_site(&base).findings.is_empty());
        let site_ids =
            |s: &SiteFacts| check_site(s).findings.into_iter().map(|f| (f.id, f.severity)).collect::<Vec<_>>();
        let s = SiteFacts { robots_status: Some(404), sitemap_found: false, ..base.clone() };
        assert_eq!(
            site_ids(&s),
            [("robots-txt-missing".to_owned(), Severity::Info), ("sitemap-missing".to_owned(), Severity::Info)]
        );
        let s = SiteFacts { robots_status: Some(503), ..base.clone() };
        assert_eq!(site_ids(&s), [("robots-txt-unreachable".to_owned(), Severity::Warning)]);
        let s = SiteFacts { robots_status: None, robots_error: Some("timed out".into()), ..base.clone() };
        assert_eq!(site_ids(&s), [("robots-txt-unreachable".to_owned(), Severity::Warning)]);
        // http → https redirect of the start page counts as https.
        let s = SiteFacts { start_url: "http://example.com/".into(), ..base.clone() };
        assert!(check_site(&s).findings.is_empty());
        let s = SiteFacts { final_url: "http://example.com/".into(), ..base };
        assert_eq!(site_ids(&s), [("no-https".to_owned(), Severity::Critical)]);
    }

    #[test]
    fn every_check_id_is_defined_once() {
        let mut seen = std::collections::HashSet::new();
        for c in CHECKS {
            assert!(seen.insert(c.id), "{} twice", c.id);
        }
    }
}
