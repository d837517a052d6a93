//! One audit from start to report, with the browser left to the caller.
//!
//! [`run_audit`] fetches robots.txt and the sitemaps, walks the frontier (one page for
//! `single_page`), asks the caller's `audit_page` for each page's facts and screenshots (the
//! browser side: navigate, collect, axe, screenshots), checks each page's links, and builds
//! the [`Report`].
//!
//! **One page, one place in the budget.** In a `full_site` audit each candidate the frontier
//! hands out is first probed ([`crate::probe`], one GET) and only then may cost a place:
//! 1. an error status (4xx/5xx) is a broken link, not a page: it is listed as `broken` (and,
//!    when the page that links to it had not checked that link, added to that page's link
//!    checks, so the report's `broken-links` finding names it); no answer is `unreachable`;
//!    an answer that is not HTML is `not_html`;
//! 2. the final URL after redirects, when it is an address of a page already audited, makes
//!    the candidate a `duplicate` of it (a redirect leaving the site is `other_origin`);
//! 3. a `<link rel=canonical>` naming another address of the site: a page already audited
//!    there makes the candidate a `duplicate`; otherwise the canonical address is audited in
//!    the candidate's place, when it answers as a page (a canonical that is broken is ignored);
//! 4. after the browser: its final URL, its canonical address and the fingerprint of what it
//!    showed ([`crate::collect::PageCollection::fingerprint`]: title, text, images, links) are
//!    compared once more — a page that turns out to be a copy is dropped as a `duplicate`
//!    and costs nothing.
//!
//! Index files (`/index.html`) and trailing slashes are folded before any of this
//! ([`crate::urls::dedupe_key`]). Links come from the served HTML first (document order),
//! then from the browser (links scripts added), so the next candidates do not depend on how a
//! page's scripts behaved in one run: the same site gives the same pages in the same order. It stops handing out pages once `deadline` has passed (the report then
//! covers the pages audited so far and the rest count as `page_limit`), so an audit ends
//! within a known time whatever the site does: each page is bounded by the caller's own page
//! timeout plus the link-check budget ([`LinkCheckOptions::total_timeout`]).

use std::future::Future;

use chrono::Utc;
use reqwest::Client;
use url::Url;

use crate::checks::{SiteFacts, Thresholds};
use crate::crawl::{CrawlConfig, Frontier, QueuedUrl, SkipReason};
use crate::fetch::{
    FetchOptions, LinkCheck, LinkCheckOptions, LinkVerdict, check_links, fetch_robots, fetch_sitemaps,
    resolve_redirects,
};
use crate::probe::{PageProbe, probe_page};
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

    let full = plan.report_type == ReportType::FullSite;
    let mut pages: Vec<PageInput> = Vec::new();
    let mut first_final: Option<String> = None;
    while plan.deadline.is_none_or(|d| tokio::time::Instant::now() < d) {
        let Some(mut q) = frontier.next_candidate() else { break };
        let is_start = pages.is_empty() && q.depth == 0;
        let mut aliases: Vec<Url> = Vec::new();
        let mut static_links: Vec<String> = Vec::new();
        if full {
            let probe = probe_page(client, &q.url, &plan.fetch).await;
            match screen(client, plan, &frontier, &probe, is_start).await {
                Screened::Audit => {}
                Screened::AuditInstead(canonical, canonical_probe) => {
                    aliases.push(q.url.clone());
                    aliases.extend(final_of(&probe));
                    aliases.extend(final_of(&canonical_probe));
                    q.url = canonical;
                    static_links = canonical_probe.links;
                }
                Screened::Skip { reason, status } => {
                    if reason == SkipReason::Broken {
                        note_broken_link(&mut pages, &q, status);
                    }
                    frontier.reject(&q, reason, status);
                    continue;
                }
                Screened::Duplicate(of) => {
                    frontier.duplicate(&q, &of);
                    continue;
                }
            }
            if static_links.is_empty() {
                aliases.extend(final_of(&probe));
                aliases.extend(probe.canonical().filter(|c| frontier.scope().contains(c)).cloned());
                static_links = probe.links;
            }
        }

        let mut input = audit_page(q.url.clone()).await;
        let facts = &mut input.facts;
        if first_final.is_none() {
            first_final = Some(if facts.final_url.is_empty() { facts.url.clone() } else { facts.final_url.clone() });
        }
        let content_type = facts.header("content-type").map(str::to_owned);
        // A file linked from a page is dropped; the start URL is reported whatever it is.
        if !is_start
            && facts.status.is_some_and(|s| s < 400)
            && content_type.as_deref().is_some_and(|c| !is_html_content_type(c))
        {
            frontier.record_not_html(&q.url);
            continue;
        }
        let base = normalize(&facts.final_url, None).unwrap_or_else(|_| q.url.clone());
        let collection = facts.collection.as_ref();
        let browser_canonical = collection
            .and_then(|c| match c.seo.canonical.as_slice() {
                [one] => normalize(one, Some(&base)).ok(),
                _ => None,
            })
            .filter(|c| frontier.scope().contains(c));
        let fingerprint = collection.and_then(|c| c.fingerprint.clone());
        // What the browser saw may still make it a copy (a script's redirect, a canonical
        // address set by a script, the same content under another address).
        if full && !is_start {
            let copy_of = [Some(&base), browser_canonical.as_ref()]
                .into_iter()
                .flatten()
                .find_map(|u| frontier.audited_as(u))
                .or_else(|| fingerprint.as_deref().and_then(|f| frontier.same_content_as(f)))
                .map(str::to_owned);
            if let Some(of) = copy_of {
                frontier.duplicate(&q, &of);
                continue;
            }
        }
        aliases.push(base.clone());
        aliases.extend(browser_canonical);
        let alias_refs: Vec<&Url> = aliases.iter().collect();
        frontier.accept(&q, &q.url, &alias_refs, fingerprint.as_deref());

        let hrefs: Vec<String> =
            facts.collection.as_ref().map(|c| c.links.iter().map(|l| l.href.clone()).collect()).unwrap_or_default();
        if full {
            // The served HTML's links first, then those only the browser saw (each link once,
            // so `duplicates` counts copies on the site, not the two readings of one page).
            let mut seen: std::collections::HashSet<&str> = static_links.iter().map(String::as_str).collect();
            let only_browser = hrefs.iter().map(String::as_str).filter(|h| seen.insert(h)).collect::<Vec<_>>();
            frontier.add_links(&base, q.depth, static_links.iter().map(String::as_str).chain(only_browser));
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

/// What a probe decided about a candidate.
enum Screened {
    /// Audit it.
    Audit,
    /// Audit its canonical address instead (with what that answered).
    AuditInstead(Url, PageProbe),
    /// Not a page.
    Skip { reason: SkipReason, status: Option<u16> },
    /// An address of the page audited as this URL.
    Duplicate(String),
}

/// Rules 1–3 of the module docs. The start URL is always audited (a person asked for it).
async fn screen(client: &Client, plan: &AuditPlan, frontier: &Frontier, probe: &PageProbe, is_start: bool) -> Screened {
    if is_start {
        return Screened::Audit;
    }
    let Some(status) = probe.status else {
        // Too many redirects is the site's error, like a 404; silence is unreachable.
        let broken = probe.error.as_deref().is_some_and(|e| e.starts_with("more than") || e.starts_with("redirect to"));
        let reason = if broken { SkipReason::Broken } else { SkipReason::Unreachable };
        return Screened::Skip { reason, status: None };
    };
    if status >= 400 {
        return Screened::Skip { reason: SkipReason::Broken, status: Some(status) };
    }
    if !probe.is_page() {
        return Screened::Skip { reason: SkipReason::NotHtml, status: None };
    }
    if let Some(fin) = final_of(probe) {
        if !frontier.scope().contains(&fin) {
            return Screened::Skip { reason: SkipReason::OtherOrigin, status: None };
        }
        if let Some(of) = frontier.audited_as(&fin) {
            return Screened::Duplicate(of.to_owned());
        }
    }
    let Some(canonical) = probe.canonical().filter(|c| frontier.scope().contains(c)) else {
        return Screened::Audit;
    };
    if let Some(of) = frontier.audited_as(canonical) {
        return Screened::Duplicate(of.to_owned());
    }
    if final_of(probe).as_ref() == Some(canonical) {
        return Screened::Audit;
    }
    // The page says it is another address: audit that one, if it is a page.
    let target = probe_page(client, canonical, &plan.fetch).await;
    match final_of(&target) {
        Some(t) if target.is_page() && frontier.scope().contains(&t) => match frontier.audited_as(&t) {
            Some(of) => Screened::Duplicate(of.to_owned()),
            None => Screened::AuditInstead(canonical.clone(), target),
        },
        _ => Screened::Audit,
    }
}

/// Where a probe's redirects ended, normalised.
fn final_of(probe: &PageProbe) -> Option<Url> {
    probe.final_url.clone().and_then(|u| normalize_url(u).ok())
}

/// A candidate that answered with an error is a broken link of the page it was found on:
/// when that page's link checks did not include it (beyond their limit), add it.
fn note_broken_link(pages: &mut [PageInput], q: &QueuedUrl, status: Option<u16>) {
    let Some(from) = q.found_on.as_ref() else { return };
    let Some(page) = pages.iter_mut().find(|p| {
        let f = &p.facts;
        normalize(if f.final_url.is_empty() { &f.url } else { &f.final_url }, None).is_ok_and(|u| &u == from)
    }) else {
        return;
    };
    let Some(links) = page.facts.links.as_mut() else { return };
    let url = q.url.to_string();
    if links.links.iter().any(|l| l.url == url) {
        return;
    }
    links.over_limit = links.over_limit.saturating_sub(1);
    links.links.push(LinkCheck {
        url,
        same_site: true,
        status,
        final_url: None,
        redirects: 0,
        method: "GET".into(),
        verdict: LinkVerdict::Broken,
        error: Some(status.map_or_else(|| "too many redirects".to_owned(), |s| format!("HTTP {s}"))),
        elapsed_ms: 0,
    });
}
