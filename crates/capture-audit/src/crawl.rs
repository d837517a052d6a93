//! The crawl policy of a `full_site` audit: a breadth-first frontier over the start URL's
//! scope, with crawl-trap defences.
//!
//! Order: the start URL (depth 0), then the sitemap's URLs and the start page's links
//! (depth 1, in the order they were added), then their links (depth 2), … Every URL passes,
//! in this order, and the first rule that refuses it is the reason recorded:
//! 1. it normalises ([`crate::urls::normalize`]) — else `invalid`;
//! 2. it is in the scope ([`crate::urls::Scope`]: the site the start URL lands on, see
//!    [`Frontier::new_scoped`]) — else `other_origin`;
//! 3. it is not a duplicate ([`crate::urls::dedupe_key`]) — duplicates are only counted;
//! 4. its path does not end in a non-page extension — else `not_html`;
//! 5. its path has at most [`CrawlConfig::max_path_depth`] segments — else `path_too_deep`;
//! 6. no path segment appears more than twice (`/a/b/a/b/a/…`) — else `repeated_segment`;
//! 7. at most [`CrawlConfig::max_query_variants`] URLs share a path with different queries
//!    — else `query_variants`;
//! 8. at most [`CrawlConfig::max_per_pattern`] URLs share a *pattern*: the path with every
//!    numeric or date-like segment replaced by `{n}` (`/cal/2026/11` → `/cal/{n}/{n}`,
//!    `/news/2026-11-05/x` → `/news/{n}/x`) and the query's values masked — else
//!    `trap_pattern`. An infinite calendar therefore yields a few months, then stops;
//!    an audit samples page templates rather than every article of a blog;
//! 9. robots.txt allows it — else `robots_disallowed` (the start URL is exempt: a person
//!    asked for it);
//! 10. the frontier holds at most [`CrawlConfig::max_frontier`] URLs — else `frontier_full`.
//!
//! A URL that passes is only a candidate: [`crate::run`] looks at what it answers before it
//! costs a place in the page budget (an error status is a `broken` link, no answer
//! `unreachable`, a copy of an audited page — by redirect, `<link rel=canonical>` or identical
//! content — a `duplicate`), and [`Frontier::accept`] counts the pages actually audited. Once
//! `max_pages` were accepted, [`Frontier::next_candidate`] hands out nothing more; what is
//! still queued then is reported as `page_limit` by [`Frontier::summary`].
//!
//! The order is stable: the same site gives the same candidates in the same order (the
//! start URL, then the sitemap's URLs in file order, then links breadth-first in document
//! order), so the same site gives the same report.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use serde::{Deserialize, Serialize};
use url::Url;

use crate::robots::RobotsTxt;
use crate::urls::{Scope, UrlError, dedupe_key, looks_like_non_html, normalize};

/// Pages audited when `maxPages` is not given.
pub const DEFAULT_MAX_PAGES: u32 = 10;
/// The largest `maxPages` accepted.
pub const MAX_PAGES: u32 = 50;
/// At most this many skipped URLs are listed in the report (all are counted).
pub const MAX_SKIPPED_LISTED: usize = 100;

/// `maxPages` as asked (None: the default), checked against 1..=[`MAX_PAGES`].
pub fn max_pages(asked: Option<u32>) -> Result<u32, String> {
    match asked {
        None => Ok(DEFAULT_MAX_PAGES),
        Some(n) if (1..=MAX_PAGES).contains(&n) => Ok(n),
        Some(n) => Err(format!("maxPages must be between 1 and {MAX_PAGES} (got {n})")),
    }
}

/// Bounds of one crawl.
#[derive(Debug, Clone)]
pub struct CrawlConfig {
    /// Pages handed out by [`Frontier::next_page`].
    pub max_pages: usize,
    /// Most path segments a URL may have.
    pub max_path_depth: usize,
    /// Most URLs with one path and different queries.
    pub max_query_variants: usize,
    /// Most URLs with one pattern (numbers and dates masked).
    pub max_per_pattern: usize,
    /// Most URLs waiting in the frontier.
    pub max_frontier: usize,
    /// A signed-in crawl (a browser profile): sign-out links are not followed
    /// ([`crate::urls::is_sign_out`]), so the crawl does not end the session it audits.
    pub skip_sign_out: bool,
}

impl Default for CrawlConfig {
    fn default() -> Self {
        CrawlConfig {
            max_pages: DEFAULT_MAX_PAGES as usize,
            max_path_depth: 8,
            max_query_variants: 5,
            max_per_pattern: 5,
            max_frontier: 2_000,
            skip_sign_out: false,
        }
    }
}

/// Why a discovered URL is not audited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Not a valid http(s) URL.
    Invalid,
    /// Another origin.
    OtherOrigin,
    /// A file, not a page (by extension, or by the response's content type).
    NotHtml,
    /// Too many path segments.
    PathTooDeep,
    /// A path segment repeats (a relative-link loop).
    RepeatedSegment,
    /// Too many query variants of one path.
    QueryVariants,
    /// Too many URLs of one numeric/date pattern (a calendar or pager trap).
    TrapPattern,
    /// robots.txt disallows it for `CaptureAudit`.
    RobotsDisallowed,
    /// The frontier is full.
    FrontierFull,
    /// Discovered, but the page limit was reached first.
    PageLimit,
    /// It answers with an error status (4xx/5xx): a broken link, not a page to audit.
    Broken,
    /// It did not answer (connection refused, timeout, too many redirects).
    Unreachable,
    /// The same page as one audited (a redirect to it, its canonical address or identical content).
    Duplicate,
    /// A sign-out link, not followed in a signed-in crawl.
    SignOut,
}

/// One skipped URL in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedUrl {
    /// The URL as found (normalised when it could be).
    pub url: String,
    /// Why it was skipped.
    pub reason: SkipReason,
    /// The status it answered with (`broken`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The audited page it is a copy of (`duplicate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<String>,
    /// The page that links to it (None: the sitemap or the start URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_on: Option<String>,
}

impl SkippedUrl {
    /// A skipped URL with nothing more to say than its reason.
    pub fn new(url: &str, reason: SkipReason) -> SkippedUrl {
        SkippedUrl { url: url.chars().take(2048).collect(), reason, status: None, duplicate_of: None, found_on: None }
    }
}

/// What the crawl found, for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrawlSummary {
    /// Distinct in-scope page URLs discovered (audited, queued or skipped by a trap rule).
    pub discovered: u32,
    /// Links and sitemap entries that were duplicates of a known URL (same identity, see
    /// [`crate::urls::dedupe_key`]), plus the candidates found to be copies of an audited page.
    pub duplicates: u32,
    /// How many URLs each rule skipped.
    pub skipped_counts: BTreeMap<SkipReason, u32>,
    /// The first [`MAX_SKIPPED_LISTED`] skipped URLs.
    pub skipped: Vec<SkippedUrl>,
}

/// A URL handed out to audit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedUrl {
    /// The fetch form.
    pub url: Url,
    /// Link depth from the start URL (sitemap entries count as depth 1).
    pub depth: u32,
    /// The page whose link it is (None: the start URL or a sitemap entry).
    pub found_on: Option<Url>,
}

/// The breadth-first frontier of one crawl.
#[derive(Debug)]
pub struct Frontier {
    config: CrawlConfig,
    scope: Scope,
    robots: Option<RobotsTxt>,
    start_key: String,
    seen: HashSet<String>,
    /// Identity of every audited page and its aliases → the URL it was audited under.
    audited: HashMap<String, String>,
    /// Content fingerprint of every audited page → the URL it was audited under.
    contents: HashMap<String, String>,
    queue: VecDeque<QueuedUrl>,
    accepted: usize,
    query_variants: HashMap<String, usize>,
    patterns: HashMap<String, usize>,
    discovered: u32,
    duplicates: u32,
    counts: HashMap<SkipReason, u32>,
    skipped: Vec<SkippedUrl>,
}

impl Frontier {
    /// A frontier holding the start URL; `robots` (when known) filters what is discovered.
    pub fn new(start: &str, config: CrawlConfig, robots: Option<RobotsTxt>) -> Result<Frontier, UrlError> {
        Frontier::new_scoped(start, start, config, robots)
    }

    /// A frontier holding the start URL whose scope is the site of `site` — where the start
    /// URL redirects to (`http://example.com` → `https://www.example.com/`). The start URL is
    /// queued whatever its own origin.
    pub fn new_scoped(
        start: &str,
        site: &str,
        config: CrawlConfig,
        robots: Option<RobotsTxt>,
    ) -> Result<Frontier, UrlError> {
        let start = normalize(start, None)?;
        let scope = Scope::new(&normalize(site, None)?)?;
        let mut f = Frontier {
            config,
            scope,
            robots,
            start_key: dedupe_key(&start),
            seen: HashSet::new(),
            audited: HashMap::new(),
            contents: HashMap::new(),
            queue: VecDeque::new(),
            accepted: 0,
            query_variants: HashMap::new(),
            patterns: HashMap::new(),
            discovered: 0,
            duplicates: 0,
            counts: HashMap::new(),
            skipped: Vec::new(),
        };
        f.seen.insert(f.start_key.clone());
        f.discovered = 1;
        f.queue.push_back(QueuedUrl { url: start, depth: 0, found_on: None });
        Ok(f)
    }

    /// Set (or replace) the robots.txt policy; URLs already queued are not re-checked.
    pub fn set_robots(&mut self, robots: RobotsTxt) {
        self.robots = Some(robots);
    }

    /// The crawl's scope.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// Add sitemap entries (depth 1).
    pub fn add_sitemap_urls<'a>(&mut self, urls: impl IntoIterator<Item = &'a str>) {
        for u in urls {
            self.offer(u, None, 1);
        }
    }

    /// Add the links found on `page` (audited at `page_depth`), resolved against it.
    pub fn add_links<'a>(&mut self, page: &Url, page_depth: u32, links: impl IntoIterator<Item = &'a str>) {
        for l in links {
            self.offer(l, Some(page), page_depth + 1);
        }
    }

    /// Record that `alias` is the page audited as `page` (the target of a redirect, its
    /// canonical address, the address it was found under): it is not queued again, and a copy
    /// already queued is dropped when its turn comes.
    pub fn mark_audited(&mut self, alias: &Url, page: &Url) {
        let key = dedupe_key(alias);
        self.seen.insert(key.clone());
        self.audited.entry(key).or_insert_with(|| page.to_string());
    }

    /// The URL of the audited page `url` is an address of, if any.
    pub fn audited_as(&self, url: &Url) -> Option<&str> {
        self.audited.get(&dedupe_key(url)).map(String::as_str)
    }

    /// The URL of the audited page with this content fingerprint, if any.
    pub fn same_content_as(&self, fingerprint: &str) -> Option<&str> {
        self.contents.get(fingerprint).map(String::as_str)
    }

    /// Count `page` as audited (one place of the page budget), under the address `q` was
    /// queued as and every alias (final URL, canonical address), with its content fingerprint.
    pub fn accept(&mut self, q: &QueuedUrl, page: &Url, aliases: &[&Url], fingerprint: Option<&str>) {
        self.accepted += 1;
        self.mark_audited(page, page);
        self.mark_audited(&q.url, page);
        for a in aliases {
            self.mark_audited(a, page);
        }
        if let Some(fp) = fingerprint {
            self.contents.entry(fp.to_owned()).or_insert_with(|| page.to_string());
        }
    }

    /// Record that a candidate is not audited: `reason`, with the status it answered (broken).
    pub fn reject(&mut self, q: &QueuedUrl, reason: SkipReason, status: Option<u16>) {
        let mut s = SkippedUrl::new(q.url.as_str(), reason);
        s.status = status;
        s.found_on = q.found_on.as_ref().map(Url::to_string);
        self.push_skipped(s);
    }

    /// Record that a candidate is the page audited as `of`.
    pub fn duplicate(&mut self, q: &QueuedUrl, of: &str) {
        self.duplicates += 1;
        let mut s = SkippedUrl::new(q.url.as_str(), SkipReason::Duplicate);
        s.duplicate_of = Some(of.to_owned());
        s.found_on = q.found_on.as_ref().map(Url::to_string);
        self.push_skipped(s);
    }

    /// Record that an audited URL turned out not to be HTML (its content type).
    pub fn record_not_html(&mut self, url: &Url) {
        self.skip(url.as_str(), SkipReason::NotHtml);
    }

    /// The next URL to consider, or None when done (queue empty or `max_pages` accepted).
    /// Addresses of pages already audited are dropped on the way (counted as duplicates).
    pub fn next_candidate(&mut self) -> Option<QueuedUrl> {
        if self.accepted >= self.config.max_pages {
            return None;
        }
        loop {
            let q = self.queue.pop_front()?;
            if self.audited.contains_key(&dedupe_key(&q.url)) {
                self.duplicates += 1;
                continue;
            }
            return Some(q);
        }
    }

    /// The next candidate, accepted at once (for callers that look at nothing first).
    pub fn next_page(&mut self) -> Option<QueuedUrl> {
        let q = self.next_candidate()?;
        let url = q.url.clone();
        self.accept(&q, &url, &[], None);
        Some(q)
    }

    /// How many pages were accepted (audited).
    pub fn handed_out(&self) -> usize {
        self.accepted
    }

    /// How many URLs are waiting (some may turn out to be copies or errors).
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// The crawl summary; URLs still queued count as `page_limit` (those that turned out to
    /// be addresses of audited pages are left out).
    pub fn summary(&self) -> CrawlSummary {
        let mut counts = self.counts.clone();
        let mut skipped = self.skipped.clone();
        for q in self.queue.iter().filter(|q| !self.audited.contains_key(&dedupe_key(&q.url))) {
            *counts.entry(SkipReason::PageLimit).or_default() += 1;
            if skipped.len() < MAX_SKIPPED_LISTED {
                let mut s = SkippedUrl::new(q.url.as_str(), SkipReason::PageLimit);
                s.found_on = q.found_on.as_ref().map(Url::to_string);
                skipped.push(s);
            }
        }
        let skipped_counts: BTreeMap<SkipReason, u32> = counts.into_iter().collect();
        CrawlSummary { discovered: self.discovered, duplicates: self.duplicates, skipped_counts, skipped }
    }

    fn skip(&mut self, url: &str, reason: SkipReason) {
        self.push_skipped(SkippedUrl::new(url, reason));
    }

    fn push_skipped(&mut self, s: SkippedUrl) {
        *self.counts.entry(s.reason).or_default() += 1;
        if self.skipped.len() < MAX_SKIPPED_LISTED {
            self.skipped.push(s);
        }
    }

    fn offer(&mut self, raw: &str, base: Option<&Url>, depth: u32) {
        let url = match normalize(raw, base) {
            Ok(u) => u,
            // Links to mail, phone or script are not pages: not worth a line in the report.
            Err(UrlError::Scheme(_)) => return,
            Err(_) => return self.skip(raw, SkipReason::Invalid),
        };
        if !self.scope.contains(&url) {
            return self.skip(url.as_str(), SkipReason::OtherOrigin);
        }
        let key = dedupe_key(&url);
        if !self.seen.insert(key.clone()) {
            self.duplicates += 1;
            return;
        }
        if self.config.skip_sign_out && crate::urls::is_sign_out(&url) {
            return self.skip(url.as_str(), SkipReason::SignOut);
        }
        self.discovered += 1;
        let is_start = key == self.start_key;
        if looks_like_non_html(&url) && !is_start {
            self.discovered -= 1;
            return self.skip(url.as_str(), SkipReason::NotHtml);
        }
        let segments: Vec<&str> = url.path().split('/').filter(|s| !s.is_empty()).collect();
        if segments.len() > self.config.max_path_depth && !is_start {
            return self.skip(url.as_str(), SkipReason::PathTooDeep);
        }
        let mut per_segment: HashMap<&str, usize> = HashMap::new();
        for s in &segments {
            *per_segment.entry(s).or_default() += 1;
        }
        if per_segment.values().any(|&n| n > 2) && !is_start {
            return self.skip(url.as_str(), SkipReason::RepeatedSegment);
        }
        if url.query().is_some() && !is_start {
            let n = self.query_variants.entry(path_key(&url)).or_default();
            if *n >= self.config.max_query_variants {
                return self.skip(url.as_str(), SkipReason::QueryVariants);
            }
            *n += 1;
        }
        if let Some(pattern) = pattern_key(&url)
            && !is_start
        {
            let n = self.patterns.entry(pattern).or_default();
            if *n >= self.config.max_per_pattern {
                return self.skip(url.as_str(), SkipReason::TrapPattern);
            }
            *n += 1;
        }
        if !is_start
            && let Some(r) = &self.robots
            && !r.allowed(&url)
        {
            return self.skip(url.as_str(), SkipReason::RobotsDisallowed);
        }
        if self.queue.len() >= self.config.max_frontier {
            return self.skip(url.as_str(), SkipReason::FrontierFull);
        }
        self.queue.push_back(QueuedUrl { url, depth, found_on: base.cloned() });
    }
}

fn path_key(url: &Url) -> String {
    format!("{}{}", crate::urls::bare_host(url.host_str().unwrap_or_default()), url.path().trim_end_matches('/'))
}

/// Whether a path segment is a number or a date (`2026`, `11`, `2026-11-05`, `20261105`).
fn is_numeric_segment(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_digit() || c == '-' || c == '_' || c == '.')
        && s.chars().any(|c| c.is_ascii_digit())
}

/// The pattern of a URL whose path has a numeric/date segment or whose query has values;
/// None when it has neither (such URLs are not capped by pattern).
fn pattern_key(url: &Url) -> Option<String> {
    let mut masked = false;
    let path: Vec<&str> = url
        .path()
        .split('/')
        .map(|s| {
            if is_numeric_segment(s) {
                masked = true;
                "{n}"
            } else {
                s
            }
        })
        .collect();
    let mut query_keys: Vec<String> = url.query_pairs().map(|(k, _)| k.into_owned()).collect();
    if !query_keys.is_empty() {
        masked = true;
    }
    query_keys.sort();
    query_keys.dedup();
    masked.then(|| {
        format!(
            "{}{}?{}",
            crate::urls::bare_host(url.host_str().unwrap_or_default()),
            path.join("/").trim_end_matches('/'),
            query_keys.join("&")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(f: &mut Frontier) -> Vec<String> {
        std::iter::from_fn(|| f.next_page())
            .map(|q| q.url.path().to_owned() + q.url.query().map(|q| format!("?{q}")).as_deref().unwrap_or(""))
            .collect()
    }

    fn cfg(max_pages: usize) -> CrawlConfig {
        CrawlConfig { max_pages, ..CrawlConfig::default() }
    }

    #[test]
    fn max_pages_defaults_to_ten_and_refuses_out_of_range() {
        assert_eq!(max_pages(None), Ok(10));
        assert_eq!(max_pages(Some(50)), Ok(50));
        assert!(max_pages(Some(0)).is_err());
        assert!(max_pages(Some(51)).unwrap_err().contains("between 1 and 50"));
    }

    #[test]
    fn breadth_first_with_duplicates_counted_once() {
        let mut f = Frontier::new("https://example.com/", cfg(50), None).unwrap();
        let start = f.next_page().unwrap();
        assert_eq!(start.depth, 0);
        f.add_sitemap_urls([
            "https://example.com/about",
            "https://www.example.com/about/",
            "https://example.com/?utm_source=x",
        ]);
        f.add_links(
            &start.url,
            0,
            ["/a", "/a#top", "b", "https://example.com/a?utm_campaign=z", "mailto:x@y.z", "https://other.org/"],
        );
        let a = f.next_page().unwrap();
        assert_eq!((a.url.path(), a.depth), ("/about", 1));
        let next = f.next_page().unwrap();
        f.add_links(&next.url, next.depth, ["/deep"]);
        assert_eq!(drain(&mut f), ["/b", "/deep"]);
        let s = f.summary();
        assert_eq!(s.discovered, 5);
        assert_eq!(s.duplicates, 4);
        assert_eq!(s.skipped, vec![SkippedUrl::new("https://other.org/", SkipReason::OtherOrigin)]);
    }

    #[test]
    fn the_page_limit_stops_the_crawl_and_the_rest_is_reported() {
        let mut f = Frontier::new("https://example.com/", cfg(2), None).unwrap();
        let s = f.next_page().unwrap();
        f.add_links(&s.url, 0, ["/1a", "/2b", "/3c"]);
        assert_eq!(drain(&mut f), ["/1a"]);
        assert_eq!(f.handed_out(), 2);
        let sum = f.summary();
        assert_eq!(sum.skipped_counts, BTreeMap::from([(SkipReason::PageLimit, 2)]));
        assert_eq!(sum.skipped.len(), 2);
    }

    #[test]
    fn an_infinite_calendar_is_capped_per_pattern() {
        let mut f = Frontier::new("https://example.com/cal/2026/1", cfg(50), None).unwrap();
        let mut audited = 0;
        // Each month links to the next, forever.
        while let Some(q) = f.next_page() {
            audited += 1;
            let segs: Vec<u32> = q.url.path().split('/').filter_map(|s| s.parse().ok()).collect();
            let (y, m) = (segs[0], segs[1]);
            let next = if m == 12 { format!("/cal/{}/1", y + 1) } else { format!("/cal/{y}/{}", m + 1) };
            f.add_links(&q.url, q.depth, [next.as_str(), "/cal/2026/1?view=week", "/cal/2026/1?view=day"]);
        }
        // The start plus five more months, then the trap rule.
        assert_eq!(audited, 1 + 5 + 2);
        let s = f.summary();
        assert_eq!(s.skipped_counts.get(&SkipReason::TrapPattern), Some(&1), "{:?}", s.skipped_counts);
    }

    #[test]
    fn deep_repeated_and_query_variant_paths_are_refused() {
        let mut f = Frontier::new("https://example.com/", cfg(50), None).unwrap();
        let s = f.next_page().unwrap();
        let mut links =
            vec!["/a/b/c/d/e/f/g/h/i".to_owned(), "/x/y/x/y/x".to_owned(), "/x/y/x".to_owned(), "/doc.pdf".to_owned()];
        for i in 0..8 {
            links.push(format!("/search?q=w{i}"));
        }
        f.add_links(&s.url, 0, links.iter().map(String::as_str));
        let got = drain(&mut f);
        assert_eq!(got.len(), 1 + 5, "{got:?}");
        let c = f.summary().skipped_counts;
        for want in [
            (SkipReason::PathTooDeep, 1),
            (SkipReason::RepeatedSegment, 1),
            (SkipReason::NotHtml, 1),
            (SkipReason::QueryVariants, 3),
        ] {
            assert_eq!(c.get(&want.0), Some(&want.1), "{want:?} in {c:?}");
        }
    }

    #[test]
    fn robots_disallowed_urls_are_skipped_but_the_start_url_is_audited() {
        let robots = RobotsTxt::parse("User-agent: *\nDisallow: /\nAllow: /$\nAllow: /public");
        let mut f = Frontier::new("https://example.com/private/start", cfg(50), Some(robots)).unwrap();
        let s = f.next_page().unwrap();
        f.add_links(&s.url, 0, ["/", "/private/a", "/public/b"]);
        assert_eq!(drain(&mut f), ["/", "/public/b"]);
        assert_eq!(f.summary().skipped_counts, BTreeMap::from([(SkipReason::RobotsDisallowed, 1)]));
    }

    #[test]
    fn patterns_mask_numbers_dates_and_query_values() {
        let p = |s: &str| pattern_key(&Url::parse(s).unwrap());
        assert_eq!(p("https://e.com/cal/2026/11"), p("https://www.e.com/cal/2031/3/"));
        assert_eq!(p("https://e.com/news/2026-11-05/x"), Some("e.com/news/{n}/x?".into()));
        assert_eq!(p("https://e.com/about"), None);
        assert_eq!(p("https://e.com/s?a=1&b=2"), p("https://e.com/s?b=9&a=7"));
        assert_ne!(p("https://e.com/s?a=1"), p("https://e.com/s?b=1"));
    }

    #[test]
    fn the_scope_follows_the_start_urls_redirect() {
        let mut f = Frontier::new_scoped("http://example.com/", "https://www.example.com/", cfg(50), None).unwrap();
        let s = f.next_page().unwrap();
        assert_eq!(s.url.as_str(), "http://example.com/");
        // The sitemap lists the landing page before the start page was audited.
        f.add_sitemap_urls(["https://example.com/"]);
        let landed = Url::parse("https://www.example.com/").unwrap();
        f.mark_audited(&landed, &s.url);
        f.add_links(&landed, 0, ["/a", "https://example.com/b", "http://example.com/c", "/"]);
        assert_eq!(drain(&mut f), ["/a", "/b"]);
        assert_eq!(f.summary().skipped_counts, BTreeMap::from([(SkipReason::OtherOrigin, 1)]));
    }

    #[test]
    fn only_accepted_pages_count_and_copies_errors_are_listed_with_why() {
        let mut f = Frontier::new("https://example.com/", cfg(2), None).unwrap();
        let start = f.next_candidate().unwrap();
        f.accept(&start, &start.url, &[], Some("fp-home"));
        f.add_links(&start.url, 0, ["/index.html", "/gone", "/alias", "/a", "/b", "/c"]);
        let u = |p: &str| Url::parse(&format!("https://example.com{p}")).unwrap();
        // The index file is the start page: never a candidate.
        let gone = f.next_candidate().unwrap();
        assert_eq!(gone.url.path(), "/gone");
        assert_eq!(gone.found_on.as_ref(), Some(&start.url));
        f.reject(&gone, SkipReason::Broken, Some(404));
        let alias = f.next_candidate().unwrap();
        f.duplicate(&alias, "https://example.com/");
        // Neither cost a place: the budget of 2 still has one.
        let a = f.next_candidate().unwrap();
        assert_eq!(a.url.path(), "/a");
        f.accept(&a, &u("/a"), &[&u("/b/")], Some("fp-a"));
        assert_eq!(f.handed_out(), 2);
        assert!(f.next_candidate().is_none(), "the budget is spent");
        assert_eq!(f.audited_as(&u("/b")), Some("https://example.com/a"));
        assert_eq!(f.same_content_as("fp-home"), Some("https://example.com/"));
        let s = f.summary();
        // /b is an address of /a: not listed as left over; /c is.
        let listed: Vec<(&str, SkipReason)> = s.skipped.iter().map(|x| (x.url.as_str(), x.reason)).collect();
        assert_eq!(
            listed,
            [
                ("https://example.com/gone", SkipReason::Broken),
                ("https://example.com/alias", SkipReason::Duplicate),
                ("https://example.com/c", SkipReason::PageLimit),
            ]
        );
        assert_eq!((s.skipped[0].status, s.skipped[0].found_on.as_deref()), (Some(404), Some("https://example.com/")));
        assert_eq!(s.skipped[1].duplicate_of.as_deref(), Some("https://example.com/"));
        assert_eq!(s.duplicates, 2, "the index file and the alias");
        let json = serde_json::to_value(&s.skipped[2]).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"url": "https://example.com/c", "reason": "page_limit", "foundOn": "https://example.com/"})
        );
    }

    #[test]
    fn a_start_url_that_is_not_http_is_refused() {
        assert!(Frontier::new("ftp://example.com/", cfg(5), None).is_err());
        assert!(Frontier::new("nonsense", cfg(5), None).is_err());
    }
}
