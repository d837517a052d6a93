//! The report: a typed model (the audit's JSON, camelCase) and its HTML page.
//!
//! [`build_report`] turns each page's facts (plus its screenshot URLs) and the site's facts
//! into a [`Report`]: checks run, scores computed, findings counted. [`render_html`] renders
//! it as one self-contained HTML document (inline CSS, no external assets besides the
//! screenshot URLs given), readable on a 390 px phone, with print CSS so Chromium's
//! `Page.printToPDF` of the same HTML makes the PDF. Every string from the audited site is
//! escaped (askama escapes by default); only http(s) URLs become links.

use std::collections::BTreeMap;

use askama::Template;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::checks::{Checked, Evidence, Finding, PageFacts, Severity, SiteFacts, Thresholds, check_page, check_site};
use crate::collect::TypeStats;
use crate::crawl::{CrawlSummary, SkipReason};
use crate::fetch::Hop;
use crate::score::{MetricScore, Scores, page_scores, performance, site_scores};

/// `single_page` or `full_site`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportType {
    /// One page.
    SinglePage,
    /// A same-origin crawl.
    FullSite,
}

impl ReportType {
    /// For humans.
    pub fn label(self) -> &'static str {
        match self {
            ReportType::SinglePage => "Single page",
            ReportType::FullSite => "Full site",
        }
    }
}

/// Screenshot URLs of a page (the server stores the files).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Screenshots {
    /// 1280×800.
    pub desktop_url: Option<String>,
    /// 390×844 at DPR 3.
    pub mobile_url: Option<String>,
}

/// Navigation timings, ms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    /// Time to first byte.
    pub ttfb_ms: Option<f64>,
    /// DOMContentLoaded.
    pub dom_content_loaded_ms: Option<f64>,
    /// Load.
    pub load_ms: Option<f64>,
}

/// Page metrics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metrics {
    /// First Contentful Paint, ms.
    pub fcp_ms: Option<f64>,
    /// Largest Contentful Paint, ms.
    pub lcp_ms: Option<f64>,
    /// Cumulative Layout Shift.
    pub cls: Option<f64>,
    /// Total Blocking Time, ms.
    pub tbt_ms: Option<f64>,
    /// All transfer bytes.
    pub transfer_bytes: Option<u64>,
    /// All requests.
    pub requests: Option<u32>,
    /// Per resource type.
    pub by_type: BTreeMap<String, TypeStats>,
    /// Each metric's score in the performance score.
    pub metric_scores: Vec<MetricScore>,
}

/// One audited page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageReport {
    /// The URL audited.
    pub url: String,
    /// After redirects.
    pub final_url: String,
    /// The page's `<title>` as loaded (None: none, or not loaded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Document status (None: not loaded).
    pub status: Option<u16>,
    /// Why it could not be loaded.
    pub error: Option<String>,
    /// The bot wall's vendor when the site answered with one instead of the page: the page is
    /// reported as blocked (`error` says by what), with no scores and no findings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
    /// Redirect hops.
    pub redirects: Vec<Hop>,
    /// Timings.
    pub timings: Timings,
    /// Metrics.
    pub metrics: Metrics,
    /// Scores of this page.
    pub scores: Scores,
    /// Screenshots.
    pub screenshots: Screenshots,
    /// Findings, most severe first.
    pub findings: Vec<Finding>,
    /// Links checked on the page.
    pub links_checked: u32,
}

/// A finding id and on how many pages it occurs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopIssue {
    /// Check id.
    pub id: String,
    /// Its title (from the first page it was found on).
    pub title: String,
    /// Its worst severity.
    pub severity: Severity,
    /// Pages affected.
    pub pages: u32,
}

/// Counts for the top of the report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Critical findings (pages and site).
    pub critical: u32,
    /// Warnings.
    pub warning: u32,
    /// Info.
    pub info: u32,
    /// The most important issues across pages (at most 8).
    pub top_issues: Vec<TopIssue>,
}

/// A whole audit report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The URL asked for.
    pub url: String,
    /// single_page or full_site.
    pub report_type: ReportType,
    /// Pages in `pages`.
    pub pages_audited: u32,
    /// Site scores (the mean of the pages').
    pub scores: Scores,
    /// Each page.
    pub pages: Vec<PageReport>,
    /// robots.txt, sitemap, HTTPS.
    pub site_findings: Vec<Finding>,
    /// Counts and top issues.
    pub summary: Summary,
    /// When built.
    pub generated_at: DateTime<Utc>,
    /// What the crawl discovered and skipped.
    pub crawl: CrawlSummary,
}

/// One page to put in the report.
#[derive(Debug, Clone, Default)]
pub struct PageInput {
    /// Everything measured.
    pub facts: PageFacts,
    /// Its screenshots.
    pub screenshots: Screenshots,
}

/// Run the checks and scores and assemble the report.
pub fn build_report(
    url: &str,
    report_type: ReportType,
    pages: Vec<PageInput>,
    site: &SiteFacts,
    crawl: CrawlSummary,
    generated_at: DateTime<Utc>,
    thresholds: &Thresholds,
) -> Report {
    let site_checked = check_site(site);
    let mut reports = Vec::with_capacity(pages.len());
    for p in pages {
        let Checked { mut findings, mut outcomes } = check_page(&p.facts, thresholds);
        // A bot wall says nothing of the site's page: not scored, nothing found.
        if p.facts.blocked.is_some() {
            findings.clear();
            outcomes.clear();
        }
        outcomes.extend(site_checked.outcomes.iter().cloned());
        let c = p.facts.collection.as_ref();
        // An error page's speed and accessibility say nothing about the page that should be
        // there: it is scored on its checks (SEO, best practices) only.
        let loaded = p.facts.status.is_some_and(|s| s < 400);
        let scores = match (p.facts.blocked.is_some(), loaded) {
            (true, _) => Scores::default(),
            (false, true) => page_scores(&outcomes, p.facts.axe.as_ref(), c),
            (false, false) => page_scores(&outcomes, None, None),
        };
        let metric_scores = c.map(|c| performance(c).1).unwrap_or_default();
        let nav = c.and_then(|c| c.navigation.as_ref());
        reports.push(PageReport {
            url: p.facts.url.clone(),
            final_url: if p.facts.final_url.is_empty() { p.facts.url.clone() } else { p.facts.final_url.clone() },
            title: c.and_then(|c| c.seo.title.clone()),
            status: p.facts.status,
            error: p.facts.error.clone(),
            blocked: p.facts.blocked.clone(),
            redirects: p.facts.redirects.clone(),
            timings: Timings {
                ttfb_ms: nav.map(|n| n.ttfb_ms),
                dom_content_loaded_ms: nav.and_then(|n| n.dom_content_loaded_ms),
                load_ms: nav.and_then(|n| n.load_ms),
            },
            metrics: Metrics {
                fcp_ms: c.and_then(|c| c.vitals.fcp_ms),
                lcp_ms: c.and_then(|c| c.vitals.lcp_ms),
                cls: c.and_then(|c| c.vitals.cls),
                tbt_ms: c.and_then(|c| c.vitals.tbt_ms),
                transfer_bytes: c.map(|c| c.resources.total_bytes),
                requests: c.map(|c| c.resources.total_requests),
                by_type: c.map(|c| c.resources.by_type.clone()).unwrap_or_default(),
                metric_scores,
            },
            scores,
            screenshots: p.screenshots,
            findings,
            links_checked: p.facts.links.as_ref().map(|l| l.links.len() as u32).unwrap_or(0),
        });
    }
    let scores = site_scores(&reports.iter().map(|p| p.scores).collect::<Vec<_>>());
    let summary = summarize(&reports, &site_checked.findings);
    Report {
        url: url.to_owned(),
        report_type,
        pages_audited: reports.len() as u32,
        scores,
        pages: reports,
        site_findings: site_checked.findings,
        summary,
        generated_at,
        crawl,
    }
}

fn summarize(pages: &[PageReport], site: &[Finding]) -> Summary {
    let mut s = Summary::default();
    let all = pages.iter().flat_map(|p| p.findings.iter()).chain(site.iter());
    for f in all {
        match f.severity {
            Severity::Critical => s.critical += 1,
            Severity::Warning => s.warning += 1,
            Severity::Info => s.info += 1,
        }
    }
    let mut by_id: BTreeMap<&str, TopIssue> = BTreeMap::new();
    for f in pages.iter().flat_map(|p| p.findings.iter()).chain(site.iter()) {
        let e = by_id.entry(&f.id).or_insert_with(|| TopIssue {
            id: f.id.clone(),
            title: f.title.clone(),
            severity: f.severity,
            pages: 0,
        });
        e.pages += 1;
        e.severity = e.severity.min(f.severity);
    }
    let mut top: Vec<TopIssue> = by_id.into_values().filter(|t| t.severity != Severity::Info).collect();
    top.sort_by(|a, b| a.severity.cmp(&b.severity).then(b.pages.cmp(&a.pages)).then(a.id.cmp(&b.id)));
    top.truncate(8);
    s.top_issues = top;
    s
}

/// Options of the HTML page.
#[derive(Debug, Clone, Default)]
pub struct HtmlOptions {
    /// The service's name in the footer (default "Capture").
    pub brand: Option<String>,
    /// The report's PDF URL, linked from the page when given.
    pub pdf_url: Option<String>,
}

/// Why rendering failed.
#[derive(Debug, thiserror::Error)]
#[error("rendering the report failed: {0}")]
pub struct RenderError(#[from] askama::Error);

struct DialView {
    label: &'static str,
    score: Option<u8>,
    class: &'static str,
    dash: String,
}

struct EvidenceView {
    url: String,
    href: Option<String>,
    selector: Option<String>,
    value: Option<String>,
    expected: Option<String>,
}

struct FindingView {
    title: String,
    id: String,
    category: &'static str,
    explanation: String,
    occurrences: u32,
    evidence: Vec<EvidenceView>,
    more_hidden: u32,
}

struct GroupView {
    label: &'static str,
    class: &'static str,
    findings: Vec<FindingView>,
}

struct MetricView {
    label: &'static str,
    value: String,
    class: &'static str,
}

struct PageView {
    anchor: String,
    url: String,
    href: Option<String>,
    final_url: Option<String>,
    status: String,
    error: Option<String>,
    dials: Vec<DialView>,
    metrics: Vec<MetricView>,
    by_type: Vec<(String, u32, String)>,
    desktop: Option<String>,
    mobile: Option<String>,
    groups: Vec<GroupView>,
    finding_count: usize,
}

#[derive(Template)]
#[template(path = "report.html")]
struct ReportPage {
    title: String,
    url: String,
    href: Option<String>,
    report_type: &'static str,
    generated: String,
    pages_audited: u32,
    dials: Vec<DialView>,
    critical: u32,
    warning: u32,
    info: u32,
    top: Vec<(String, &'static str, &'static str, u32)>,
    site_groups: Vec<GroupView>,
    pages: Vec<PageView>,
    show_index: bool,
    crawl_discovered: u32,
    crawl_skipped: Vec<(String, u32)>,
    skipped_list: Vec<(String, String)>,
    brand: String,
    pdf_url: Option<String>,
}

fn http_href(u: &str) -> Option<String> {
    let l = u.trim_start().to_ascii_lowercase();
    (l.starts_with("http://") || l.starts_with("https://")).then(|| u.trim().to_owned())
}

fn image_src(u: &Option<String>) -> Option<String> {
    let u = u.as_deref()?.trim();
    let l = u.to_ascii_lowercase();
    (l.starts_with("http://") || l.starts_with("https://") || l.starts_with('/') || l.starts_with("data:image/"))
        .then(|| u.to_owned())
}

fn score_class(s: Option<u8>) -> &'static str {
    match s {
        None => "na",
        Some(90..) => "good",
        Some(50..=89) => "ok",
        Some(_) => "bad",
    }
}

fn dials(s: &Scores) -> Vec<DialView> {
    [
        ("Performance", s.performance),
        ("Accessibility", s.accessibility),
        ("Best practices", s.best_practices),
        ("SEO", s.seo),
    ]
    .into_iter()
    .map(|(label, score)| DialView {
        label,
        score,
        class: score_class(score),
        // Circumference of r=42 is 263.9.
        dash: format!("{:.1} 263.9", score.map(|v| f64::from(v) * 2.639).unwrap_or(0.0)),
    })
    .collect()
}

fn evidence_view(e: &Evidence) -> EvidenceView {
    EvidenceView {
        url: e.url.clone(),
        href: http_href(&e.url),
        selector: e.selector.clone(),
        value: e.value.clone(),
        expected: e.expected.clone(),
    }
}

fn groups(findings: &[Finding]) -> Vec<GroupView> {
    [(Severity::Critical, "critical"), (Severity::Warning, "warning"), (Severity::Info, "info")]
        .into_iter()
        .filter_map(|(sev, class)| {
            let fs: Vec<FindingView> = findings
                .iter()
                .filter(|f| f.severity == sev)
                .map(|f| {
                    let mut evidence = vec![evidence_view(&f.evidence)];
                    evidence.extend(f.more_evidence.iter().map(evidence_view));
                    FindingView {
                        title: f.title.clone(),
                        id: f.id.clone(),
                        category: f.category.label(),
                        explanation: f.explanation.clone(),
                        occurrences: f.occurrences,
                        more_hidden: f.occurrences.saturating_sub(evidence.len() as u32),
                        evidence,
                    }
                })
                .collect();
            (!fs.is_empty()).then_some(GroupView { label: sev.label(), class, findings: fs })
        })
        .collect()
}

fn ms(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(x) if x >= 1000.0 => format!("{:.2} s", x / 1000.0),
        Some(x) => format!("{x:.0} ms"),
    }
}

fn bytes(v: u64) -> String {
    if v >= 1024 * 1024 { format!("{:.1} MB", v as f64 / 1_048_576.0) } else { format!("{} KB", v.div_ceil(1024)) }
}

fn metric_class(id: &str, p: &PageReport) -> &'static str {
    match p.metrics.metric_scores.iter().find(|m| m.id == id) {
        None => "na",
        Some(m) => score_class(Some(m.score)),
    }
}

fn skip_label(r: SkipReason) -> &'static str {
    match r {
        SkipReason::Invalid => "invalid address",
        SkipReason::OtherOrigin => "another site",
        SkipReason::NotHtml => "not a page (file)",
        SkipReason::PathTooDeep => "path too deep",
        SkipReason::RepeatedSegment => "repeating path (link loop)",
        SkipReason::QueryVariants => "too many query variants",
        SkipReason::TrapPattern => "endless pattern (calendar or pager)",
        SkipReason::RobotsDisallowed => "disallowed by robots.txt",
        SkipReason::FrontierFull => "crawl queue full",
        SkipReason::PageLimit => "page limit reached",
        SkipReason::Broken => "broken link (an error answer)",
        SkipReason::Unreachable => "no answer",
        SkipReason::Duplicate => "a copy of an audited page",
        SkipReason::SignOut => "a sign-out link (signed-in audit)",
    }
}

/// A skipped URL's reason with what it answered or what it copies.
fn skipped_label(s: &crate::crawl::SkippedUrl) -> String {
    match (s.reason, s.status, s.duplicate_of.as_deref()) {
        (SkipReason::Broken, Some(status), _) => format!("broken link (HTTP {status})"),
        (SkipReason::Duplicate, _, Some(of)) => format!("the same page as {of}"),
        (r, _, _) => skip_label(r).to_owned(),
    }
}

/// Render the report as a self-contained HTML page.
pub fn render_html(report: &Report, opts: &HtmlOptions) -> Result<String, RenderError> {
    let pages = report
        .pages
        .iter()
        .enumerate()
        .map(|(i, p)| PageView {
            anchor: format!("page-{}", i + 1),
            url: p.url.clone(),
            href: http_href(&p.url),
            final_url: (p.final_url != p.url).then(|| p.final_url.clone()),
            status: match p.status {
                Some(s) => format!("HTTP {s}"),
                None => "not loaded".into(),
            },
            error: p.error.clone(),
            dials: dials(&p.scores),
            metrics: vec![
                MetricView {
                    label: "Time to first byte",
                    value: ms(p.timings.ttfb_ms),
                    class: metric_class("ttfb", p),
                },
                MetricView {
                    label: "First contentful paint",
                    value: ms(p.metrics.fcp_ms),
                    class: metric_class("fcp", p),
                },
                MetricView {
                    label: "Largest contentful paint",
                    value: ms(p.metrics.lcp_ms),
                    class: metric_class("lcp", p),
                },
                MetricView {
                    label: "Cumulative layout shift",
                    value: p.metrics.cls.map(|c| format!("{c:.3}")).unwrap_or_else(|| "–".into()),
                    class: metric_class("cls", p),
                },
                MetricView { label: "Total blocking time", value: ms(p.metrics.tbt_ms), class: metric_class("tbt", p) },
                MetricView { label: "DOMContentLoaded", value: ms(p.timings.dom_content_loaded_ms), class: "na" },
                MetricView { label: "Load", value: ms(p.timings.load_ms), class: "na" },
                MetricView {
                    label: "Page weight",
                    value: format!(
                        "{} in {} requests",
                        p.metrics.transfer_bytes.map(bytes).unwrap_or_else(|| "–".into()),
                        p.metrics.requests.map(|r| r.to_string()).unwrap_or_else(|| "–".into())
                    ),
                    class: "na",
                },
            ],
            by_type: p.metrics.by_type.iter().map(|(k, v)| (k.clone(), v.count, bytes(v.bytes))).collect(),
            desktop: image_src(&p.screenshots.desktop_url),
            mobile: image_src(&p.screenshots.mobile_url),
            finding_count: p.findings.len(),
            groups: groups(&p.findings),
        })
        .collect();
    let page = ReportPage {
        title: format!("Website audit of {}", report.url),
        url: report.url.clone(),
        href: http_href(&report.url),
        report_type: report.report_type.label(),
        generated: report.generated_at.format("%Y-%m-%d %H:%M UTC").to_string(),
        pages_audited: report.pages_audited,
        dials: dials(&report.scores),
        critical: report.summary.critical,
        warning: report.summary.warning,
        info: report.summary.info,
        top: report
            .summary
            .top_issues
            .iter()
            .map(|t| {
                let (label, class) = match t.severity {
                    Severity::Critical => ("Critical", "critical"),
                    Severity::Warning => ("Warning", "warning"),
                    Severity::Info => ("Info", "info"),
                };
                (t.title.clone(), label, class, t.pages)
            })
            .collect(),
        site_groups: groups(&report.site_findings),
        show_index: report.pages.len() > 1,
        pages,
        crawl_discovered: report.crawl.discovered,
        crawl_skipped: report.crawl.skipped_counts.iter().map(|(r, n)| (skip_label(*r).to_owned(), *n)).collect(),
        skipped_list: report.crawl.skipped.iter().take(30).map(|s| (s.url.clone(), skipped_label(s))).collect(),
        brand: opts.brand.clone().unwrap_or_else(|| "Capture".into()),
        pdf_url: opts.pdf_url.as_deref().and_then(|u| {
            let l = u.to_ascii_lowercase();
            (l.starts_with("http://") || l.starts_with("https://") || l.starts_with('/')).then(|| u.to_owned())
        }),
    };
    Ok(page.render()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::{PageCollection, SeoFacts};

    fn hostile_report() -> Report {
        let facts = PageFacts {
            url: "https://example.com/a".into(),
            final_url: "https://example.com/a".into(),
            status: Some(200),
            collection: Some(PageCollection {
                url: "https://example.com/a".into(),
                https: true,
                seo: SeoFacts {
                    title: Some(
                        "<script>alert(1)</script> and a title that is far too long for any search result".into(),
                    ),
                    ..SeoFacts::default()
                },
                ..PageCollection::default()
            }),
            ..PageFacts::default()
        };
        let site =
            SiteFacts { start_url: "https://example.com/a".into(), robots_status: Some(404), ..SiteFacts::default() };
        let shots =
            Screenshots { desktop_url: Some("javascript:alert(1)".into()), mobile_url: Some("/files/m.png".into()) };
        build_report(
            "https://example.com/a",
            ReportType::SinglePage,
            vec![PageInput { facts, screenshots: shots }],
            &site,
            CrawlSummary::default(),
            Utc::now(),
            &Thresholds::default(),
        )
    }

    #[test]
    fn hostile_strings_are_escaped_and_only_safe_urls_are_used() {
        let r = hostile_report();
        let html = render_html(&r, &HtmlOptions::default()).unwrap();
        assert!(!html.contains("<script>alert(1)"), "raw markup leaked");
        assert!(
            html.contains("&#60;script&#62;alert(1)&#60;/script&#62;")
                || html.contains("&lt;script&gt;alert(1)&lt;/script&gt;")
        );
        assert!(!html.contains("javascript:alert"), "a javascript: screenshot URL is dropped");
        assert!(html.contains("src=\"/files/m.png\""));
        // Every finding is in the page.
        for f in r.pages[0].findings.iter().chain(&r.site_findings) {
            assert!(html.contains(&format!("{} · {}", f.category.label(), f.id)) || html.contains(&f.id), "{}", f.id);
        }
        assert_eq!(html.matches("class=\"finding ").count(), r.pages[0].findings.len() + r.site_findings.len());
    }

    #[test]
    fn summary_counts_findings_and_ranks_top_issues() {
        let r = hostile_report();
        let s = &r.summary;
        let all: Vec<&Finding> = r.pages[0].findings.iter().chain(&r.site_findings).collect();
        assert_eq!((s.critical + s.warning + s.info) as usize, all.len());
        assert!(s.top_issues.iter().all(|t| t.severity != Severity::Info));
        assert!(s.top_issues.windows(2).all(|w| w[0].severity <= w[1].severity));
        assert_eq!(r.pages_audited, 1);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["reportType"], "single_page");
        assert!(json["pages"][0]["findings"][0]["evidence"]["url"].is_string());
    }
}
