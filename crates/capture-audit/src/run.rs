//! One audit from start to report, with the browser left to the caller.
//!
//! [`run_audit`] fetches robots.txt and the sitemaps, walks the frontier (one page for
//! `single_page`), asks the caller's `audit_page` for each page's facts and screenshots (the
//! browser side: navigate, collect, axe, screenshots), checks each page's links, and builds
//! the [`Report`]. It stops handing out pages once `deadline` has passed (the report then
//! covers the pages audited so far and the rest count as `page_limit`), so an audit ends
//! within a known time whatever the site does: each page is bounded by the caller's own page
//! timeout plus the link-check budget ([`LinkCheckOptions::total_timeout`]).

use std::future::Future;

use chrono::Utc;
use reqwest::Client;
use url::Url;

use crate::checks::{SiteFacts, Thresholds};
use crate::crawl::{CrawlConfig, Frontier};
use crate::fetch::{FetchOptions, LinkCheckOptions, check_links, fetch_robots, fetch_sitemaps, resolve_redirects};
use crate::report::{PageInput, Report, ReportType, build_report};
use crate::urls::{UrlError, is_html_content_type, normalize, normalize_url};

/// What to audit and how.
#[derive(Debug, Clone)]
pub struct AuditPlan {
    /// The URL asked for.
    pub url: String,
    /// single_page or full_site.
    pub report_type: ReportType,
    /// Crawl bounds (`max_pages` is forced to 1 for `single_page`).
    pub crawl: CrawlConfig,
    /// robots.txt and sitemap fetches.
    pub fetch: FetchOptions,
    /// Link checks of each page.
    pub links: LinkCheckOptions,
    /// Check thresholds.
    pub thresholds: Thresholds,
    /// No page is started after this instant.
    pub deadline: Option<tokio::time::Instant>,
}

impl AuditPlan {
    /// A plan with the documented defaults for `user_agent` ([`crate::robots::user_agent`]).
    pub fn new(url: &str, report_type: ReportType, max_pages: u32, user_agent: &str) -> AuditPlan {
        AuditPlan {
            url: url.to_owned(),
            report_type,
            crawl: CrawlConfig { max_pages: max_pages as usize, ..CrawlConfig::default() },
            fetch: FetchOptions::new(user_agent),
            links: LinkCheckOptions::new(user_agent),
            thresholds: Thresholds::default(),
            deadline: None,
        }
    }
}

/// Progress of a running audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Pages audited.
    pub pages_done: u32,
    /// Pages audited plus pages waiting (capped by `max_pages`).
    pub pages_total: u32,
}

/// Run the audit; `audit_page` loads one URL in the browser and returns its facts (links
/// unchecked) and screenshots; `progress` hears after each page.
pub async fn run_audit<F, Fut>(
    client: &Client,
    plan: &AuditPlan,
    mut audit_page: F,
    mut progress: impl FnMut(Progress),
) -> Result<Report, UrlError>
where
    F: FnMut(Url) -> Fut,
    Fut: Future<Output = PageInput>,
{
    let start = normalize(&plan.url, None)?;
    // The site is where the start URL lands (http → https, a bare domain → www): its
    // robots.txt and sitemaps apply and its links are followed.
    let site_url = match plan.report_type {
        ReportType::FullSite => resolve_redirects(client, &start, &plan.fetch)
            .await
            .and_then(|u| normalize_url(u).ok())
            .unwrap_or_else(|| start.clone()),
        ReportType::SinglePage => start.clone(),
    };
    let robots = fetch_robots(client, &site_url, &plan.fetch).await;
    let mut seeds = robots.robots.sitemaps(&robots.url);
    if seeds.is_empty() {
        seeds.push(site_url.join("/sitemap.xml").map_err(|e| UrlError::Invalid(e.to_string()))?);
    }
    let mut crawl = plan.crawl.clone();
    if plan.report_type == ReportType::SinglePage {
        crawl.max_pages = 1;
    }
    let mut frontier =
        Frontier::new_scoped(start.as_str(), site_url.as_str(), crawl.clone(), Some(robots.robots.clone()))?;
    let sitemaps = fetch_sitemaps(client, &seeds, frontier.scope(), &plan.fetch).await;
    if plan.report_type == ReportType::FullSite {
        frontier.add_sitemap_urls(sitemaps.urls.iter().map(String::as_str));
    }

    let mut pages: Vec<PageInput> = Vec::new();
    let mut first_final: Option<String> = None;
    while plan.deadline.is_none_or(|d| tokio::time::Instant::now() < d) {
        let Some(q) = frontier.next_page() else { break };
        let mut input = audit_page(q.url.clone()).await;
        let facts = &mut input.facts;
        if first_final.is_none() {
            first_final = Some(if facts.final_url.is_empty() { facts.url.clone() } else { facts.final_url.clone() });
        }
        let content_type = facts.header("content-type").map(str::to_owned);
        // A file linked from a page is dropped; the start URL is reported whatever it is.
        if !pages.is_empty()
            && facts.status.is_some_and(|s| s < 400)
            && content_type.as_deref().is_some_and(|c| !is_html_content_type(c))
        {
            frontier.record_not_html(&q.url);
            continue;
        }
        let base = Url::parse(&facts.final_url).unwrap_or_else(|_| q.url.clone());
        if base != q.url {
            frontier.mark_audited(&base);
        }
        let hrefs: Vec<String> =
            facts.collection.as_ref().map(|c| c.links.iter().map(|l| l.href.clone()).collect()).unwrap_or_default();
        if plan.report_type == ReportType::FullSite {
            frontier.add_links(&base, q.depth, hrefs.iter().map(String::as_str));
        }
        if facts.collection.is_some() {
            facts.links = Some(check_links(client, &base, &hrefs, &plan.links, Some(&robots.robots)).await);
        }
        pages.push(input);
        let total = (frontier.handed_out() + frontier.queued()).min(crawl.max_pages);
        progress(Progress { pages_done: pages.len() as u32, pages_total: total.max(pages.len()) as u32 });
    }

    let site = SiteFacts {
        start_url: start.to_string(),
        final_url: first_final.unwrap_or_else(|| start.to_string()),
        robots_url: robots.url.to_string(),
        robots_status: robots.status,
        robots_error: robots.error.clone(),
        sitemap_found: sitemaps.found,
        sitemap_urls: seeds.iter().map(Url::to_string).collect(),
    };
    Ok(build_report(&plan.url, plan.report_type, pages, &site, frontier.summary(), Utc::now(), &plan.thresholds))
}
