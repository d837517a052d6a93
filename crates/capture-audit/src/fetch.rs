//! The only I/O of this crate: robots.txt, sitemaps and link checks, over a
//! `reqwest::Client` the caller configured (the server passes its egress-guarded client).
//!
//! Redirects are followed here, hop by hop, up to [`FetchOptions::max_redirects`], so a
//! client built with `redirect::Policy::none()` (which lets the caller's guard see every
//! hop) gets hop counts; a client that follows redirects itself works too (hops are then
//! invisible and counted as zero). Every request carries [`FetchOptions::user_agent`].
//!
//! Link checks ([`check_links`]): at most [`LinkCheckOptions::max_links`] distinct links per
//! page (default 50: up to 30 on the page's own site, the rest other sites, each side
//! filling what the other leaves), [`LinkCheckOptions::concurrency`] at once (6), each link
//! within [`LinkCheckOptions::per_link_timeout`] (10 s) and the whole page within
//! [`LinkCheckOptions::total_timeout`] (30 s); links not done by then are reported as
//! `unchecked`. Each link is asked with `HEAD`; any 4xx/5xx answer or failure of the HEAD
//! (servers that refuse or mishandle HEAD answer 405, 501, 403, 404 or reset the connection)
//! is confirmed with `GET` and `Range: bytes=0-0`, whose body is not read. Links on the page's
//! own site that its robots.txt disallows are not requested.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use reqwest::header::{LOCATION, RANGE, USER_AGENT};
use reqwest::{Client, Method};
use serde::{Deserialize, Serialize};
use url::Url;

use crate::robots::{MAX_ROBOTS_BYTES, RobotsSource, RobotsTxt};
use crate::sitemap::{MAX_INDEX_DEPTH, MAX_SITEMAP_BYTES, MAX_SITEMAP_FILES, SitemapDoc, parse_sitemap};
use crate::urls::{Scope, normalize};

/// How robots.txt and sitemaps are fetched.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// The `User-Agent` header ([`crate::robots::user_agent`]).
    pub user_agent: String,
    /// Per request (each hop).
    pub timeout: Duration,
    /// Redirect hops followed.
    pub max_redirects: u32,
}

impl FetchOptions {
    /// 10 s per request, 5 redirects.
    pub fn new(user_agent: impl Into<String>) -> FetchOptions {
        FetchOptions { user_agent: user_agent.into(), timeout: Duration::from_secs(10), max_redirects: 5 }
    }
}

/// One redirect hop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hop {
    /// The URL that answered with a redirect.
    pub url: String,
    /// Its status (301, 302, 303, 307, 308).
    pub status: u16,
}

/// A response after redirects, with its body read up to a bound.
#[derive(Debug)]
struct Fetched {
    url: Url,
    status: u16,
    body: Vec<u8>,
    truncated: bool,
}

fn short_error(e: &reqwest::Error) -> String {
    // reqwest's Display names the URL; the source chain says what went wrong.
    let mut msg = if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "connection failed".to_owned()
    } else if e.is_redirect() {
        "redirect error".to_owned()
    } else {
        "request failed".to_owned()
    };
    let mut src = std::error::Error::source(e);
    let mut depth = 0;
    while let Some(s) = src
        && depth < 3
    {
        let t = s.to_string();
        if !t.is_empty() && !msg.contains(&t) {
            msg.push_str(": ");
            msg.push_str(&t);
        }
        depth += 1;
        src = s.source();
    }
    msg.chars().take(300).collect()
}

/// Send `method` to `url`, following redirects by hand; `range0` asks for the first byte.
pub(crate) async fn send_following(
    client: &Client,
    method: Method,
    url: &Url,
    ua: &str,
    timeout: Duration,
    max_redirects: u32,
    range0: bool,
) -> Result<(reqwest::Response, Vec<Hop>), (String, Vec<Hop>)> {
    let mut hops = Vec::new();
    let mut current = url.clone();
    loop {
        let mut req = client.request(method.clone(), current.clone()).header(USER_AGENT, ua).timeout(timeout);
        if range0 {
            req = req.header(RANGE, "bytes=0-0");
        }
        let resp = req.send().await.map_err(|e| (short_error(&e), hops.clone()))?;
        let status = resp.status().as_u16();
        if !(300..400).contains(&status) || status == 304 {
            return Ok((resp, hops));
        }
        let Some(loc) = resp.headers().get(LOCATION).and_then(|v| v.to_str().ok()) else {
            return Ok((resp, hops));
        };
        let next = match resp.url().join(loc) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => u,
            _ => {
                return Err((
                    format!("redirect to an invalid location: {}", loc.chars().take(200).collect::<String>()),
                    hops,
                ));
            }
        };
        hops.push(Hop { url: resp.url().to_string(), status });
        if hops.len() as u32 > max_redirects {
            return Err((format!("more than {max_redirects} redirects"), hops));
        }
        current = next;
    }
}

async fn get_bounded(client: &Client, url: &Url, opts: &FetchOptions, max_bytes: usize) -> Result<Fetched, String> {
    let (mut resp, _hops) =
        send_following(client, Method::GET, url, &opts.user_agent, opts.timeout, opts.max_redirects, false)
            .await
            .map_err(|(e, _)| e)?;
    let status = resp.status().as_u16();
    let final_url = resp.url().clone();
    let mut body = Vec::new();
    let mut truncated = false;
    let read = async {
        while let Some(chunk) = resp.chunk().await.map_err(|e| short_error(&e))? {
            let room = max_bytes - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        Ok::<(), String>(())
    };
    tokio::time::timeout(opts.timeout, read).await.map_err(|_| "timed out reading the body".to_owned())??;
    Ok(Fetched { url: final_url, status, body, truncated })
}

/// Where `url` ends up after redirects (HEAD, else GET), or None when it cannot be reached:
/// the crawl's site is the site the start URL lands on.
pub async fn resolve_redirects(client: &Client, url: &Url, opts: &FetchOptions) -> Option<Url> {
    for method in [Method::HEAD, Method::GET] {
        let sent = send_following(client, method, url, &opts.user_agent, opts.timeout, opts.max_redirects, false).await;
        if let Ok((resp, _)) = sent
            && resp.status().as_u16() < 400
        {
            return Some(resp.url().clone());
        }
    }
    None
}

/// The outcome of fetching `/robots.txt`.
#[derive(Debug, Clone)]
pub struct RobotsFetch {
    /// The robots.txt URL asked for.
    pub url: Url,
    /// The final status (None: network failure).
    pub status: Option<u16>,
    /// The network failure, if any.
    pub error: Option<String>,
    /// The policy ([`RobotsTxt::from_status`]).
    pub robots: RobotsTxt,
}

impl RobotsFetch {
    /// Whether a robots.txt was found (2xx).
    pub fn found(&self) -> bool {
        matches!(self.robots.source(), RobotsSource::Parsed)
    }
}

/// Fetch `/robots.txt` of the site of `site` (any URL on it).
pub async fn fetch_robots(client: &Client, site: &Url, opts: &FetchOptions) -> RobotsFetch {
    let url = site.join("/robots.txt").unwrap_or_else(|_| site.clone());
    match get_bounded(client, &url, opts, MAX_ROBOTS_BYTES).await {
        Ok(f) => {
            let body = String::from_utf8_lossy(&f.body);
            RobotsFetch {
                robots: RobotsTxt::from_status(Some(f.status), &body, None),
                url,
                status: Some(f.status),
                error: None,
            }
        }
        Err(e) => RobotsFetch { robots: RobotsTxt::from_status(None, "", Some(&e)), url, status: None, error: Some(e) },
    }
}

/// One sitemap file read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SitemapFile {
    /// Its URL.
    pub url: String,
    /// HTTP status (None: network failure).
    pub status: Option<u16>,
    /// `urlset`, `index`, or None when unreadable.
    pub kind: Option<String>,
    /// `<loc>`s listed.
    pub entries: u32,
    /// Why it could not be read.
    pub error: Option<String>,
}

/// What the sitemaps of a site list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SitemapFetch {
    /// Whether at least one sitemap was read.
    pub found: bool,
    /// Page URLs in the crawl's scope, in order, de-duplicated.
    pub urls: Vec<String>,
    /// Page URLs dropped because another origin.
    pub other_origin: u32,
    /// Every file tried.
    pub files: Vec<SitemapFile>,
}

/// The most page URLs taken from all sitemaps together.
pub const MAX_SITEMAP_URLS: usize = 1_000;

/// Read the sitemaps `seeds` names (robots.txt's `Sitemap:` lines, else `/sitemap.xml`),
/// following indexes; keep the page URLs inside `scope`.
pub async fn fetch_sitemaps(client: &Client, seeds: &[Url], scope: &Scope, opts: &FetchOptions) -> SitemapFetch {
    let mut out = SitemapFetch::default();
    let mut seen_files = std::collections::HashSet::new();
    let mut seen_urls = std::collections::HashSet::new();
    let mut queue: std::collections::VecDeque<(Url, usize)> = seeds.iter().map(|u| (u.clone(), 0)).collect();
    while let Some((url, depth)) = queue.pop_front() {
        if out.files.len() >= MAX_SITEMAP_FILES {
            break;
        }
        if !seen_files.insert(url.to_string()) {
            continue;
        }
        let mut file = SitemapFile { url: url.to_string(), status: None, kind: None, entries: 0, error: None };
        match get_bounded(client, &url, opts, MAX_SITEMAP_BYTES + 1).await {
            Err(e) => file.error = Some(e),
            Ok(f) if !(200..300).contains(&f.status) => {
                file.status = Some(f.status);
                file.error = Some(format!("HTTP {}", f.status));
            }
            Ok(f) if f.truncated => {
                file.status = Some(f.status);
                file.error = Some(crate::sitemap::SitemapError::TooLarge.to_string());
            }
            Ok(f) => {
                file.status = Some(f.status);
                match parse_sitemap(&f.body) {
                    Err(e) => file.error = Some(e.to_string()),
                    Ok(SitemapDoc::UrlSet(locs)) => {
                        out.found = true;
                        file.kind = Some("urlset".into());
                        file.entries = locs.len() as u32;
                        for loc in locs {
                            let Ok(u) = normalize(&loc, Some(&f.url)) else { continue };
                            if !scope.contains(&u) {
                                out.other_origin += 1;
                                continue;
                            }
                            if out.urls.len() < MAX_SITEMAP_URLS && seen_urls.insert(u.to_string()) {
                                out.urls.push(u.to_string());
                            }
                        }
                    }
                    Ok(SitemapDoc::Index(locs)) => {
                        out.found = true;
                        file.kind = Some("index".into());
                        file.entries = locs.len() as u32;
                        if depth < MAX_INDEX_DEPTH {
                            for loc in locs {
                                if let Ok(u) = f.url.join(loc.trim()) {
                                    queue.push_back((u, depth + 1));
                                }
                            }
                        }
                    }
                }
            }
        }
        out.files.push(file);
    }
    out
}

/// Bounds of the link checks of one page.
#[derive(Debug, Clone)]
pub struct LinkCheckOptions {
    /// The `User-Agent` header.
    pub user_agent: String,
    /// Distinct links checked per page.
    pub max_links: usize,
    /// Of which at most this many on the page's own site while other links wait.
    pub max_same_site: usize,
    /// Checks in flight at once.
    pub concurrency: usize,
    /// Per link (both requests and every hop together).
    pub per_link_timeout: Duration,
    /// All links of the page together.
    pub total_timeout: Duration,
    /// Redirect hops followed.
    pub max_redirects: u32,
    /// A signed-in audit: sign-out links are not requested (a GET of one would end the
    /// session the audit runs in).
    pub skip_sign_out: bool,
}

impl LinkCheckOptions {
    /// The documented defaults: 50 links (30 same-site), 6 at once, 10 s each, 30 s in all, 5 redirects.
    pub fn new(user_agent: impl Into<String>) -> LinkCheckOptions {
        LinkCheckOptions {
            user_agent: user_agent.into(),
            max_links: 50,
            max_same_site: 30,
            concurrency: 6,
            per_link_timeout: Duration::from_secs(10),
            total_timeout: Duration::from_secs(30),
            max_redirects: 5,
            skip_sign_out: false,
        }
    }
}

/// What a link check concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkVerdict {
    /// 2xx (or a 3xx that was not followed further, like 304).
    Ok,
    /// 404, 410, other 4xx (except the restricted ones), 5xx, or too many redirects.
    Broken,
    /// 401, 403, 429 or 999: the server refuses robots; not counted as broken.
    Restricted,
    /// DNS, connection, TLS failure or timeout.
    Unreachable,
    /// Not checked: the page's time budget ran out.
    Unchecked,
}

/// The result of checking one link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LinkCheck {
    /// The link (normalised, fragment dropped).
    pub url: String,
    /// Whether it is on the page's own site.
    pub same_site: bool,
    /// The final status (None when no response came).
    pub status: Option<u16>,
    /// The URL after redirects.
    pub final_url: Option<String>,
    /// Redirect hops.
    pub redirects: u32,
    /// `HEAD` or `GET` (the request whose answer decided).
    pub method: String,
    /// The verdict.
    pub verdict: LinkVerdict,
    /// What failed, in words.
    pub error: Option<String>,
    /// Time spent on this link, milliseconds.
    pub elapsed_ms: u64,
}

/// The link checks of one page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LinkReport {
    /// One entry per link checked (or left unchecked by the time budget).
    pub links: Vec<LinkCheck>,
    /// Distinct http(s) links found on the page.
    pub found: u32,
    /// Links beyond [`LinkCheckOptions::max_links`], not checked.
    pub over_limit: u32,
}

impl LinkReport {
    /// The links that are broken or unreachable.
    pub fn broken(&self) -> impl Iterator<Item = &LinkCheck> {
        self.links.iter().filter(|l| matches!(l.verdict, LinkVerdict::Broken | LinkVerdict::Unreachable))
    }
}

fn verdict_for(status: u16) -> LinkVerdict {
    match status {
        200..=399 => LinkVerdict::Ok,
        401 | 403 | 429 | 999 => LinkVerdict::Restricted,
        _ => LinkVerdict::Broken,
    }
}

async fn check_one(client: &Client, url: Url, same_site: bool, opts: &LinkCheckOptions) -> LinkCheck {
    let t0 = Instant::now();
    let mut result = LinkCheck {
        url: url.to_string(),
        same_site,
        status: None,
        final_url: None,
        redirects: 0,
        method: "HEAD".into(),
        verdict: LinkVerdict::Unreachable,
        error: None,
        elapsed_ms: 0,
    };
    let ua = opts.user_agent.as_str();
    let work = async {
        let head =
            send_following(client, Method::HEAD, &url, ua, opts.per_link_timeout, opts.max_redirects, false).await;
        let needs_get = match &head {
            Ok((resp, _)) => resp.status().as_u16() >= 400,
            Err((e, _)) => !e.starts_with("more than"),
        };
        let answer = if needs_get {
            result.method = "GET".into();
            send_following(client, Method::GET, &url, ua, opts.per_link_timeout, opts.max_redirects, true).await
        } else {
            head
        };
        match answer {
            Ok((resp, hops)) => {
                let status = resp.status().as_u16();
                result.status = Some(status);
                result.final_url = Some(resp.url().to_string());
                result.redirects = hops.len() as u32;
                // 416: the resource exists but is empty.
                result.verdict = if status == 416 { LinkVerdict::Ok } else { verdict_for(status) };
                if result.verdict != LinkVerdict::Ok {
                    result.error = Some(format!("HTTP {status}"));
                }
                // Dropping the response closes it without reading the body.
            }
            Err((e, hops)) => {
                result.redirects = hops.len() as u32;
                result.verdict = if e.starts_with("more than") || e.starts_with("redirect to") {
                    LinkVerdict::Broken
                } else {
                    LinkVerdict::Unreachable
                };
                result.error = Some(e);
            }
        }
    };
    if tokio::time::timeout(opts.per_link_timeout, work).await.is_err() {
        result.verdict = LinkVerdict::Unreachable;
        result.error = Some(format!("no answer within {} s", opts.per_link_timeout.as_secs()));
    }
    result.elapsed_ms = t0.elapsed().as_millis() as u64;
    result
}

/// Check the links found on `page` (absolute or relative hrefs, in document order).
/// `robots` is the page's site's robots.txt: its links that it disallows are not requested
/// (reported `unchecked`). Other sites' robots.txt files are not consulted: a link check is
/// one HEAD, what a visitor following the link would cause.
pub async fn check_links<S: AsRef<str>>(
    client: &Client,
    page: &Url,
    hrefs: &[S],
    opts: &LinkCheckOptions,
    robots: Option<&RobotsTxt>,
) -> LinkReport {
    let scope = Scope::new(page).ok();
    let mut seen = std::collections::HashSet::new();
    let (mut same, mut other) = (Vec::new(), Vec::new());
    for h in hrefs {
        let Ok(u) = normalize(h.as_ref(), Some(page)) else { continue };
        if opts.skip_sign_out && crate::urls::is_sign_out(&u) {
            continue;
        }
        if !seen.insert(u.to_string()) {
            continue;
        }
        if scope.as_ref().is_some_and(|s| s.contains(&u)) {
            same.push(u);
        } else {
            other.push(u);
        }
    }
    let found = (same.len() + other.len()) as u32;
    let other_quota = other.len().min(opts.max_links.saturating_sub(same.len().min(opts.max_same_site)));
    let same_quota = same.len().min(opts.max_links - other_quota);
    let over_limit = found - (same_quota + other_quota) as u32;
    let picked: Vec<(Url, bool)> = same
        .into_iter()
        .take(same_quota)
        .map(|u| (u, true))
        .chain(other.into_iter().take(other_quota).map(|u| (u, false)))
        .collect();

    let mut slots: Vec<Option<LinkCheck>> = picked
        .iter()
        .map(|(u, same_site)| {
            (*same_site && robots.is_some_and(|r| !r.allowed(u))).then(|| LinkCheck {
                url: u.to_string(),
                same_site: true,
                status: None,
                final_url: None,
                redirects: 0,
                method: "HEAD".into(),
                verdict: LinkVerdict::Unchecked,
                error: Some("not checked: robots.txt disallows it".into()),
                elapsed_ms: 0,
            })
        })
        .collect();
    let todo: Vec<(usize, (Url, bool))> =
        picked.clone().into_iter().enumerate().filter(|(i, _)| slots[*i].is_none()).collect();
    let deadline = tokio::time::Instant::now() + opts.total_timeout;
    let mut stream = futures_util::stream::iter(todo)
        .map(|(i, (u, s))| async move { (i, check_one(client, u, s, opts).await) })
        .buffer_unordered(opts.concurrency.max(1));
    while let Ok(Some((i, r))) = tokio::time::timeout_at(deadline, stream.next()).await {
        slots[i] = Some(r);
    }
    let links = slots
        .into_iter()
        .zip(picked)
        .map(|(r, (u, s))| {
            r.unwrap_or_else(|| LinkCheck {
                url: u.to_string(),
                same_site: s,
                status: None,
                final_url: None,
                redirects: 0,
                method: "HEAD".into(),
                verdict: LinkVerdict::Unchecked,
                error: Some(format!("not checked within the page's {} s budget", opts.total_timeout.as_secs())),
                elapsed_ms: 0,
            })
        })
        .collect();
    LinkReport { links, found, over_limit }
}
