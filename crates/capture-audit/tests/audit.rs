//! Integration tests: robots.txt, sitemaps and link checks against the fixture site over
//! real HTTP, and a whole audit of the fixture site with the collection scripts and axe-core
//! running in a real headless Chromium.

mod support;

use std::time::{Duration, Instant};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use capture_audit::checks::{Severity, check_page};
use capture_audit::crawl::{SkipReason, max_pages};
use capture_audit::fetch::{FetchOptions, LinkCheckOptions, LinkVerdict, check_links, fetch_robots, fetch_sitemaps};
use capture_audit::fixtures::{CLEAN_PAGE, EXPECTED, EXPECTED_SITE, FixtureSite, TRAP_SITE_PAGES, TrapSite};
use capture_audit::report::{HtmlOptions, PageInput, ReportType, render_html};
use capture_audit::robots::{RobotsSource, user_agent};
use capture_audit::run::{AuditPlan, Progress, run_audit};
use capture_audit::urls::Scope;
use url::Url;

fn client() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

fn ua() -> String {
    user_agent("http://capture.test")
}

#[tokio::test]
async fn robots_txt_and_sitemaps_of_the_fixture_site_are_read() {
    let site = FixtureSite::start().await.unwrap();
    let start = Url::parse(&site.url("/")).unwrap();
    let opts = FetchOptions::new(ua());
    let robots = fetch_robots(&client(), &start, &opts).await;
    assert!(robots.found());
    assert_eq!(robots.status, Some(200));
    assert!(!robots.robots.allowed(&Url::parse(&site.url("/private/secret")).unwrap()));
    assert!(robots.robots.allowed(&Url::parse(&site.url("/clean")).unwrap()));
    let seeds = robots.robots.sitemaps(&robots.url);
    assert_eq!(seeds, vec![Url::parse(&site.url("/sitemap.xml")).unwrap()]);

    let sm = fetch_sitemaps(&client(), &seeds, &Scope::new(&start).unwrap(), &opts).await;
    assert!(sm.found);
    let kinds: Vec<_> = sm.files.iter().map(|f| f.kind.as_deref()).collect();
    assert_eq!(kinds, [Some("index"), Some("urlset"), Some("urlset")], "{:?}", sm.files);
    // The gzip one was read, the other origin dropped, the tracking duplicate folded.
    assert!(sm.urls.contains(&site.url("/layout-shift")));
    assert!(sm.urls.contains(&site.url("/clean")));
    assert_eq!(sm.other_origin, 1);
    assert_eq!(sm.urls.iter().filter(|u| u.contains("/clean")).count(), 1, "{:?}", sm.urls);
    // Every fetch named the crawler.
    assert_eq!(site.hits("/robots.txt"), 1);
}

#[tokio::test]
async fn a_robots_txt_failing_with_5xx_disallows_and_a_404_allows_everything() {
    for (status, allowed) in [(StatusCode::SERVICE_UNAVAILABLE, false), (StatusCode::NOT_FOUND, true)] {
        let app = Router::new().route("/robots.txt", get(move || async move { (status, "no") }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let start = Url::parse(&format!("http://{addr}/")).unwrap();
        let r = fetch_robots(&client(), &start, &FetchOptions::new(ua())).await;
        assert_eq!(r.status, Some(status.as_u16()));
        assert_eq!(r.robots.allowed(&start.join("/page").unwrap()), allowed, "{status}");
    }
    // Nothing listening: unreachable, everything disallowed.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
    let start = Url::parse(&format!("http://{closed}/")).unwrap();
    let r = fetch_robots(&client(), &start, &FetchOptions::new(ua())).await;
    assert!(matches!(r.robots.source(), RobotsSource::Unreachable(_)), "{:?}", r.robots.source());
    assert!(r.error.is_some());
    assert!(!r.robots.allowed(&start.join("/x").unwrap()));
}

#[tokio::test]
async fn links_are_checked_with_head_falling_back_to_get_within_bounds() {
    let site = FixtureSite::start().await.unwrap();
    let page = Url::parse(&site.url("/links")).unwrap();
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
    let refused = format!("http://{closed}/nothing");
    let hrefs = vec![
        "/clean".to_owned(),
        "/clean#section".to_owned(),
        "/gone".to_owned(),
        "/head-refused".to_owned(),
        "/redirect/1".to_owned(),
        "/redirect-loop".to_owned(),
        "/server-error".to_owned(),
        "mailto:someone@example.com".to_owned(),
        refused.clone(),
    ];
    let mut opts = LinkCheckOptions::new(ua());
    opts.per_link_timeout = Duration::from_secs(5);
    let report = check_links(&client(), &page, &hrefs, &opts, None).await;
    assert_eq!(report.found, 7, "mailto is not a link to check, #section is /clean");
    let by = |path: &str| {
        report.links.iter().find(|l| l.url.ends_with(path)).unwrap_or_else(|| panic!("{path} in {report:?}"))
    };
    assert_eq!(
        (by("/clean").verdict, by("/clean").status, by("/clean").method.as_str()),
        (LinkVerdict::Ok, Some(200), "HEAD")
    );
    let gone = by("/gone");
    assert_eq!((gone.verdict, gone.status, gone.method.as_str()), (LinkVerdict::Broken, Some(404), "GET"));
    let hr = by("/head-refused");
    assert_eq!((hr.verdict, hr.status, hr.method.as_str()), (LinkVerdict::Ok, Some(200), "GET"));
    let redir = by("/redirect/1");
    assert_eq!((redir.verdict, redir.redirects), (LinkVerdict::Ok, 3));
    assert_eq!(redir.final_url.as_deref(), Some(site.url("/landing").as_str()));
    let lp = by("/redirect-loop");
    assert_eq!(lp.verdict, LinkVerdict::Broken);
    assert!(lp.error.as_deref().unwrap().contains("more than 5 redirects"), "{lp:?}");
    assert_eq!(by("/server-error").verdict, LinkVerdict::Broken);
    let r = by("/nothing");
    assert_eq!((r.verdict, r.status), (LinkVerdict::Unreachable, None));
    assert!(!r.same_site);
    assert_eq!(report.broken().count(), 4);

    // Bounds: a slow link hits the per-link timeout; the page budget leaves the rest unchecked.
    let mut tight = LinkCheckOptions::new(ua());
    tight.per_link_timeout = Duration::from_millis(300);
    tight.total_timeout = Duration::from_millis(1200);
    tight.concurrency = 1;
    let slow: Vec<String> = (0..10).map(|i| format!("/slow?n={i}")).collect();
    let t0 = Instant::now();
    let r = check_links(&client(), &page, &slow, &tight, None).await;
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert_eq!(r.links.len(), 10);
    assert!(
        r.links
            .iter()
            .any(|l| l.verdict == LinkVerdict::Unreachable && l.error.as_deref().unwrap().contains("no answer"))
    );
    assert!(r.links.iter().filter(|l| l.verdict == LinkVerdict::Unchecked).count() >= 5, "{:?}", r.links);

    // At most max_links, same-site links capped while other sites wait.
    let mut many: Vec<String> = (0..60).map(|i| format!("/clean?p={i}")).collect();
    many.extend((0..30).map(|i| format!("http://{closed}/o{i}")));
    let mut small = LinkCheckOptions::new(ua());
    small.max_links = 10;
    small.max_same_site = 6;
    small.per_link_timeout = Duration::from_secs(2);
    let r = check_links(&client(), &page, &many, &small, None).await;
    assert_eq!(r.links.len(), 10);
    assert_eq!(r.links.iter().filter(|l| l.same_site).count(), 6);
    assert_eq!(r.over_limit, 80);
}

/// The whole pipeline on the fixture site: robots.txt → sitemaps → frontier → Chromium
/// (observers, collection, axe-core) → link checks → checks → scores → report → HTML.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_site_audit_of_the_fixture_site_finds_every_planted_defect() {
    let site = FixtureSite::start().await.unwrap();
    let chrome = support::chrome::Chrome::launch().await;
    let client = client();
    let mut plan = AuditPlan::new(&site.url("/"), ReportType::FullSite, max_pages(Some(40)).unwrap(), &ua());
    plan.links.per_link_timeout = Duration::from_secs(3);
    let mut progress: Vec<Progress> = Vec::new();
    let t0 = Instant::now();
    let report = run_audit(
        &client,
        &plan,
        |url| {
            let chrome = &chrome;
            async move {
                let (facts, screenshots) = chrome.audit_page(url.as_str()).await;
                PageInput { facts, screenshots }
            }
        },
        |p| progress.push(p),
    )
    .await
    .unwrap();
    let took = t0.elapsed();
    eprintln!(
        "audited {} pages in {:.1} s ({:.2} s/page)",
        report.pages_audited,
        took.as_secs_f64(),
        took.as_secs_f64() / report.pages_audited as f64
    );

    let page = |path: &str| {
        let want = site.url(path);
        report.pages.iter().find(|p| p.url == want).unwrap_or_else(|| {
            panic!("{path} audited; pages: {:?}", report.pages.iter().map(|p| &p.url).collect::<Vec<_>>())
        })
    };
    for (path, ids) in EXPECTED {
        let p = page(path);
        let found: Vec<&str> = p.findings.iter().map(|f| f.id.as_str()).collect();
        for id in *ids {
            assert!(found.contains(id), "{path}: expected {id}, found {found:?}");
        }
    }
    // The clean page: no warning or critical finding, full scores where it matters.
    let clean = page(CLEAN_PAGE);
    let bad: Vec<_> = clean.findings.iter().filter(|f| f.severity != Severity::Info).collect();
    assert!(bad.is_empty(), "clean page has findings: {bad:#?}");
    assert_eq!(clean.scores.accessibility, Some(100), "{:?}", clean.findings);
    assert!(clean.scores.performance.unwrap() >= 90, "{:?}", clean.metrics);
    assert_eq!(clean.status, Some(200));
    // Facts measured for real on the defect pages.
    let shift = page("/layout-shift");
    assert!(shift.metrics.cls.unwrap() > 0.1, "{:?}", shift.metrics);
    let f = shift.findings.iter().find(|f| f.id == "high-cls").unwrap();
    assert!(f.more_evidence.iter().any(|e| e.selector.is_some()), "the shifted elements are named: {f:?}");
    let images = page("/images");
    let alt = images.findings.iter().find(|f| f.id == "image-alt-missing").unwrap();
    assert_eq!((alt.occurrences, alt.evidence.selector.as_deref()), (2, Some("#hero")));
    // Each selector names exactly its image on the live page (alt="" is not a defect).
    let selectors: Vec<String> =
        std::iter::once(&alt.evidence).chain(&alt.more_evidence).filter_map(|e| e.selector.clone()).collect();
    assert_eq!(selectors.len(), 2);
    let js = format!(
        "{}.map((s) => {{ const m = document.querySelectorAll(s); return m.length === 1 && m[0].localName === 'img' && !m[0].hasAttribute('alt'); }})",
        serde_json::to_string(&selectors).unwrap()
    );
    assert_eq!(chrome.eval_at(&site.url("/images"), &js).await, serde_json::json!([true, true]), "{selectors:?}");
    let console = page("/console-error");
    let ce = console.findings.iter().find(|f| f.id == "console-errors").unwrap();
    let texts: Vec<_> =
        std::iter::once(&ce.evidence).chain(&ce.more_evidence).filter_map(|e| e.value.clone()).collect();
    assert!(texts.iter().any(|t| t.contains("fixture: something broke")), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("fixture: uncaught exception")), "{texts:?}");
    let fr = console.findings.iter().find(|f| f.id == "failed-requests").unwrap();
    assert!(
        fr.evidence.url.ends_with("/img/missing.png") && fr.evidence.value.as_deref() == Some("HTTP 404"),
        "{fr:?}"
    );
    let links = page("/links");
    let bl = links.findings.iter().find(|f| f.id == "broken-links").unwrap();
    assert_eq!(bl.occurrences, 1, "only /gone is broken (HEAD-refusing link passes on GET): {bl:?}");
    assert!(bl.evidence.value.as_deref().unwrap().contains("/gone"));
    let redirect = page("/redirect/1");
    assert_eq!(redirect.final_url, site.url("/landing"));
    assert_eq!(redirect.redirects.len(), 3);
    assert!(report.pages.iter().all(|p| p.url != site.url("/landing")), "the redirect target is not audited twice");
    assert!(
        page("/").metrics.lcp_ms.is_some() && page("/").timings.load_ms.is_some(),
        "{:?} {:?}",
        page("/").metrics,
        page("/").timings
    );

    // The crawl obeyed robots.txt, stopped the calendar and skipped the PDF.
    assert_eq!(site.hits("/private/secret"), 0);
    let counts = &report.crawl.skipped_counts;
    assert!(counts.iter().any(|(r, _)| *r == SkipReason::RobotsDisallowed), "{counts:?}");
    assert!(counts.iter().any(|(r, _)| *r == SkipReason::TrapPattern), "{counts:?}");
    assert!(counts.iter().any(|(r, _)| *r == SkipReason::NotHtml), "{counts:?}");
    let calendar = report.pages.iter().filter(|p| p.url.contains("/cal/")).count();
    assert!((1..=6).contains(&calendar), "{calendar} calendar pages");
    // Site findings.
    let site_ids: Vec<&str> = report.site_findings.iter().map(|f| f.id.as_str()).collect();
    for id in EXPECTED_SITE {
        assert!(site_ids.contains(id), "{site_ids:?}");
    }
    assert!(!site_ids.contains(&"robots-txt-missing") && !site_ids.contains(&"sitemap-missing"), "{site_ids:?}");
    // Progress was reported after each page and ends complete.
    assert_eq!(progress.len() as u32, report.pages_audited);
    let last = progress.last().unwrap();
    assert_eq!(last.pages_done, last.pages_total);
    assert!(
        report.scores.seo.is_some() && report.scores.performance.is_some() && report.scores.accessibility.is_some()
    );

    // The report's JSON is camelCase and round-trips.
    let json = serde_json::to_value(&report).unwrap();
    assert!(json["crawl"]["skippedCounts"]["robots_disallowed"].is_u64(), "{}", json["crawl"]);
    assert!(json["pagesAudited"].is_u64() && json["siteFindings"].is_array() && json["generatedAt"].is_string());
    assert!(json["pages"][0]["screenshots"]["desktopUrl"].as_str().unwrap().starts_with("data:image/jpeg;base64,"));
    let back: capture_audit::report::Report = serde_json::from_value(json).unwrap();
    assert_eq!(back.pages.len(), report.pages.len());

    // The HTML page, loaded in Chromium: it parses, shows every finding, and the hostile title
    // of /hostile stays text.
    let html =
        render_html(&report, &HtmlOptions { brand: None, pdf_url: Some("/v1/audits/aud_x.pdf".into()) }).unwrap();
    // To look at it: CAPTURE_AUDIT_REPORT_OUT=/tmp/report cargo test … (writes .html and .json).
    if let Some(out) = std::env::var_os("CAPTURE_AUDIT_REPORT_OUT") {
        let out = std::path::PathBuf::from(out);
        std::fs::write(out.with_extension("html"), &html).unwrap();
        std::fs::write(out.with_extension("json"), serde_json::to_vec_pretty(&report).unwrap()).unwrap();
    }
    let total = report.pages.iter().map(|p| p.findings.len()).sum::<usize>() + report.site_findings.len();
    let dom = chrome
        .eval_in_html(
            &html,
            r#"Promise.all(Array.from(document.images).map((i) => i.decode().catch(() => null))).then(() => ({
                shots: document.images.length,
                shotsLoaded: Array.from(document.images).filter((i) => i.naturalWidth > 0).length,
                findings: document.querySelectorAll('article.finding').length,
                scripts: document.scripts.length,
                injectedImages: document.querySelectorAll('img[src="x"]').length,
                text: document.body.innerText,
                landmarks: !!document.querySelector('main') && !!document.querySelector('header') && !!document.querySelector('footer'),
                h1: document.querySelectorAll('h1').length,
                imgsWithoutAlt: Array.from(document.images).filter((i) => !i.alt).length,
                wide: document.documentElement.scrollWidth,
            }))"#,
        )
        .await;
    assert_eq!(dom["findings"].as_u64().unwrap() as usize, total);
    assert_eq!(dom["scripts"], 0);
    let with_shots = report.pages.iter().filter(|p| p.screenshots.desktop_url.is_some()).count() as u64;
    assert_eq!(dom["shots"].as_u64().unwrap(), 2 * with_shots);
    assert_eq!(dom["shotsLoaded"], dom["shots"]);
    assert_eq!(dom["injectedImages"], 0);
    assert!(
        dom["text"].as_str().unwrap().contains("<script>alert(\"pwned\")</script>"),
        "the hostile title is shown as text"
    );
    assert_eq!(dom["landmarks"], true);
    assert_eq!(dom["h1"], 1);
    assert_eq!(dom["imgsWithoutAlt"], 0);
    for p in &report.pages {
        for f in &p.findings {
            assert!(dom["text"].as_str().unwrap().contains(f.title.as_str()), "{} shown", f.title);
        }
    }
    drop(chrome);
}

/// The clean page alone, checked straight from one real collection (no crawl): the checks see
/// no warning or critical problem, and a dirty copy of the same facts does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clean_fixture_page_has_no_warning_and_tampered_facts_do() {
    let site = FixtureSite::start().await.unwrap();
    let chrome = support::chrome::Chrome::launch().await;
    let (facts, _) = chrome.audit_page(&site.url(CLEAN_PAGE)).await;
    let checked = check_page(&facts, &Default::default());
    let bad: Vec<_> = checked.findings.iter().filter(|f| f.severity != Severity::Info).collect();
    assert!(bad.is_empty(), "{bad:#?}");
    let c = facts.collection.as_ref().unwrap();
    assert_eq!(c.seo.h1_count, 1);
    assert_eq!(c.seo.lang.as_deref(), Some("en"));
    assert_eq!(c.seo.canonical, vec![site.url(CLEAN_PAGE)]);
    assert!(
        c.resources.by_type.contains_key("document") && c.resources.by_type.contains_key("image"),
        "{:?}",
        c.resources
    );
    assert!(c.vitals.observers_installed && c.vitals.fcp_ms.is_some());
    let axe = facts.axe.as_ref().unwrap();
    assert!(axe.error.is_none() && axe.passes > 10 && axe.violations.is_empty(), "{axe:?}");

    let mut dirty = facts.clone();
    dirty.headers.retain(|(k, _)| {
        !k.eq_ignore_ascii_case("x-frame-options") && !k.eq_ignore_ascii_case("content-security-policy")
    });
    let col = dirty.collection.as_mut().unwrap();
    col.seo.title = Some("x".repeat(80));
    col.seo.viewport = None;
    let ids: Vec<String> = check_page(&dirty, &Default::default()).findings.into_iter().map(|f| f.id).collect();
    for id in ["title-too-long", "viewport-missing", "frame-protection-missing", "csp-missing"] {
        assert!(ids.iter().any(|i| i == id), "{id} in {ids:?}");
    }
}

/// `single_page` audits one page (robots.txt and sitemap still read for the site findings);
/// an audit whose deadline has passed starts no page and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_page_audit_loads_one_page_and_a_passed_deadline_none() {
    let site = FixtureSite::start().await.unwrap();
    let chrome = support::chrome::Chrome::launch().await;
    let client = client();
    let audit = |url: Url| {
        let chrome = &chrome;
        async move {
            let (facts, screenshots) = chrome.audit_page(url.as_str()).await;
            PageInput { facts, screenshots }
        }
    };
    let plan = AuditPlan::new(&site.url("/links"), ReportType::SinglePage, 10, &ua());
    let t0 = Instant::now();
    let report = run_audit(&client, &plan, audit, |_| {}).await.unwrap();
    eprintln!("single-page audit in {:.2} s", t0.elapsed().as_secs_f64());
    assert_eq!(report.pages_audited, 1);
    assert_eq!(site.hits("/clean"), 1, "only the link check touched /clean");
    assert!(report.pages[0].findings.iter().any(|f| f.id == "broken-links"));
    assert_eq!(report.crawl.discovered, 1);
    assert_eq!(site.hits("/sitemap.xml"), 1);

    // A start URL that redirects to another origin (like http → https): the crawl follows the
    // site it lands on, with that site's robots.txt and sitemaps.
    let target = site.url("/");
    let app = Router::new().route("/", get(move || async move { axum::response::Redirect::permanent(&target) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let robots_before = site.hits("/robots.txt");
    let moved = AuditPlan::new(&format!("http://{addr}/"), ReportType::FullSite, 4, &ua());
    let report = run_audit(&client, &moved, audit, |_| {}).await.unwrap();
    assert_eq!(report.pages_audited, 4, "{:?}", report.crawl);
    assert_eq!(report.pages[0].url, format!("http://{addr}/"));
    assert_eq!(report.pages[0].final_url, site.url("/"));
    assert!(
        report.pages[1..].iter().all(|p| p.url.starts_with(&site.base)),
        "{:?}",
        report.pages.iter().map(|p| &p.url).collect::<Vec<_>>()
    );
    assert!(report.pages.iter().all(|p| p.url != site.url("/")), "the landing page is not audited twice");
    assert_eq!(site.hits("/robots.txt"), robots_before + 1);

    let home_hits = site.hits("/");
    let mut late = AuditPlan::new(&site.url("/"), ReportType::FullSite, 10, &ua());
    late.deadline = Some(tokio::time::Instant::now());
    let report = run_audit(&client, &late, audit, |_| {}).await.unwrap();
    assert_eq!(report.pages_audited, 0);
    assert!(report.crawl.skipped_counts.get(&SkipReason::PageLimit).is_some_and(|n| *n >= 1), "{:?}", report.crawl);
    // One HEAD finds where the start URL lands; the browser loaded nothing.
    assert_eq!(site.hits("/"), home_hits + 1);
    render_html(&report, &HtmlOptions::default()).unwrap();
}

/// A full-site audit spends `maxPages` on distinct pages only: on the trap site (an index
/// file, a trailing-slash twin, a redirecting alias, a canonical copy, a 404 link before the
/// six real pages) five places go to five real pages, the same five in the same order on
/// every run; with room for all, exactly the six real pages are audited and the 404 is a
/// broken link, not a page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_site_audit_spends_its_budget_on_distinct_pages_in_a_stable_order() {
    let site = TrapSite::start().await.unwrap();
    let chrome = support::chrome::Chrome::launch().await;
    let client = client();
    let audit = |url: Url| {
        let chrome = &chrome;
        async move {
            let (facts, screenshots) = chrome.audit_page(url.as_str()).await;
            PageInput { facts, screenshots }
        }
    };
    let finals = |r: &capture_audit::report::Report| -> Vec<String> {
        r.pages.iter().map(|p| p.final_url.trim_start_matches(&site.base).to_owned()).collect()
    };
    let five = AuditPlan::new(&site.url("/"), ReportType::FullSite, 5, &ua());
    let first = run_audit(&client, &five, audit, |_| {}).await.unwrap();
    // Start page, the sitemap's page, then the start page's links in document order, each
    // under the address it really is.
    assert_eq!(finals(&first), ["/", "/contact", "/about", "/pricing", "/services"], "{:#?}", first.crawl);
    let urls: Vec<&str> = first.pages.iter().map(|p| p.url.trim_start_matches(&site.base)).collect();
    assert_eq!(urls, ["/", "/contact", "/about", "/old-pricing", "/services"]);
    // The start page's link check (HEAD, then GET to confirm the 404), and nothing else.
    assert_eq!(site.hits("/missing"), 2, "only the start page's link check asked for the 404");
    let home = &first.pages[0];
    let broken = home.findings.iter().find(|f| f.id == "broken-links").expect("the 404 is a broken link");
    assert_eq!(broken.occurrences, 1);
    assert!(broken.evidence.value.as_deref().is_some_and(|v| v.contains("/missing")), "{broken:?}");
    let second = run_audit(&client, &five, audit, |_| {}).await.unwrap();
    assert_eq!(finals(&second), finals(&first), "the same site gives the same pages in the same order");

    let all = AuditPlan::new(&site.url("/"), ReportType::FullSite, 10, &ua());
    let report = run_audit(&client, &all, audit, |_| {}).await.unwrap();
    let mut got = finals(&report);
    got.sort();
    let mut want: Vec<String> = TRAP_SITE_PAGES.iter().map(|p| (*p).to_owned()).collect();
    want.sort();
    assert_eq!(got, want, "exactly the six real pages: {:#?}", report.crawl);
    let missing = report.crawl.skipped.iter().find(|s| s.url == site.url("/missing")).expect("/missing listed");
    assert_eq!((missing.reason, missing.status), (SkipReason::Broken, Some(404)));
    assert_eq!(missing.found_on.as_deref(), Some(site.url("/").as_str()));
    let print = report.crawl.skipped.iter().find(|s| s.url == site.url("/services/print"));
    // The print copy named /services, which was audited in its place.
    assert!(print.is_none_or(|p| p.reason == SkipReason::Duplicate), "{print:?}");
    assert!(report.pages.iter().all(|p| p.status == Some(200)), "no error page was audited");
    let html = render_html(&report, &HtmlOptions::default()).unwrap();
    assert!(html.contains("broken link (HTTP 404)"), "the report says why /missing is not a page");
}

/// Identical content under two addresses (no redirect, no canonical) is one page — the
/// crawl's last de-duplication rule — but a single-page app's routes, one HTML file that
/// renders different content per address, are distinct pages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_content_is_one_page_but_an_apps_routes_are_not() {
    let page = |body: &'static str| {
        format!(
            "<!doctype html><html lang=en><head><title>Copies</title></head><body>{body}\
             <p><a href=\"/a\">a</a> <a href=\"/b\">b</a> <a href=\"/app/x\">x</a> <a href=\"/app/y\">y</a></p></body></html>"
        )
    };
    let same = page("<h1>The same words</h1><p>Served at two addresses.</p>");
    let (s1, s2) = (same.clone(), same.clone());
    let app_shell = page(
        "<h1 id=h>Loading</h1><script>document.getElementById('h').textContent = 'Route ' + location.pathname;</script>",
    );
    let (a1, a2) = (app_shell.clone(), app_shell.clone());
    let home = page("<h1>Home</h1>");
    let html = |b: String| ([(axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8")], b);
    let app = Router::new()
        .route("/", get(move || async move { html(home) }))
        .route("/a", get(move || async move { html(s1) }))
        .route("/b", get(move || async move { html(s2) }))
        .route("/app/x", get(move || async move { html(a1) }))
        .route("/app/y", get(move || async move { html(a2) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let chrome = support::chrome::Chrome::launch().await;
    let plan = AuditPlan::new(&format!("{base}/"), ReportType::FullSite, 10, &ua());
    let report = run_audit(
        &client(),
        &plan,
        |url: Url| {
            let chrome = &chrome;
            async move {
                let (facts, screenshots) = chrome.audit_page(url.as_str()).await;
                PageInput { facts, screenshots }
            }
        },
        |_| {},
    )
    .await
    .unwrap();
    let urls: Vec<&str> = report.pages.iter().map(|p| p.url.trim_start_matches(&base)).collect();
    assert_eq!(urls, ["/", "/a", "/app/x", "/app/y"], "{:#?}", report.crawl);
    let b = report.crawl.skipped.iter().find(|s| s.url == format!("{base}/b")).expect("/b listed");
    assert_eq!((b.reason, b.duplicate_of.as_deref()), (SkipReason::Duplicate, Some(format!("{base}/a").as_str())));
}
