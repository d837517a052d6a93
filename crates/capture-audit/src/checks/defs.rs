//! The check table (every non-axe check's id, category and weight) and the thresholds the
//! checks use.

use super::findings::Category;

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
