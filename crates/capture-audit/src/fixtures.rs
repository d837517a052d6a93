//! A local website with known defects, served on 127.0.0.1 for tests (feature `fixtures`).
//!
//! [`FixtureSite::start`] serves it on a random port; [`EXPECTED`] lists which findings each
//! page must produce and [`CLEAN_PAGE`] is the page that must produce no warning or critical
//! finding. Every HTML page sends the usual security headers, so only the defects a page is
//! built to show appear. The server's audit tests reuse it:
//!
//! | path | defect |
//! |---|---|
//! | `/` | none (links to every page) |
//! | `/clean` | none |
//! | `/no-title` | no `<title>` |
//! | `/images` | two images without `alt` (one with an id, one without) |
//! | `/links` | a link to a 404 page (and one to a page that refuses HEAD, which is fine) |
//! | `/console-error` | a console error, an uncaught exception, a missing image (404 request) |
//! | `/layout-shift` | a banner pushes the content down after load (CLS ≈ 0.3+) |
//! | `/noindex` | `<meta name=robots content=noindex>` |
//! | `/login` | a password form over http |
//! | `/redirect/1` | three redirects before `/landing` |
//! | `/hostile` | a title made of markup (`<script>…`), too long: the report must show it as text |
//! | `/private/…` | disallowed by robots.txt |
//! | `/cal/{year}/{month}` | an infinite calendar (each month links to the next) |
//! | `/robots.txt` | disallows `/private/`, names `/sitemap.xml` |
//! | `/sitemap.xml` | an index of `/sitemap-pages.xml` and `/sitemap-more.xml.gz` (gzip) |
//!
//! Pages whose defect appears after load (the layout shift) carry `data-fixture-pending` on
//! `<html>` until it has happened, so a test can poll for it instead of sleeping.
//!
//! [`TrapSite`] is a second, defect-free site of six pages with every way to reach a page
//! twice (an index file, a trailing slash, a redirect, a canonical copy) and a 404 link, for
//! the crawl's page budget.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

/// The page that must produce no warning or critical finding.
pub const CLEAN_PAGE: &str = "/clean";

/// Each defective page and the finding ids it must produce.
pub const EXPECTED: &[(&str, &[&str])] = &[
    ("/no-title", &["title-missing"]),
    ("/images", &["image-alt-missing", "axe-image-alt"]),
    ("/links", &["broken-links"]),
    ("/console-error", &["console-errors", "failed-requests"]),
    ("/layout-shift", &["high-cls"]),
    ("/noindex", &["noindex"]),
    ("/login", &["password-over-http"]),
    ("/redirect/1", &["redirect-chain"]),
    ("/hostile", &["title-too-long"]),
];

/// Site-level findings the fixture site produces (it is served over plain http).
pub const EXPECTED_SITE: &[&str] = &["no-https"];

/// A tiny valid PNG (1×1, grey).
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x00, 0x00, 0x00, 0x3a, 0x7e, 0x9b, 0x55, 0x00, 0x00, 0x00, 0x0a, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x68, 0x00, 0x00, 0x00, 0x82, 0x00, 0x81, 0x4c, 0x17, 0xd7, 0xdf, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

#[derive(Clone)]
struct Site {
    base: String,
    hits: Arc<Mutex<HashMap<String, u32>>>,
}

/// The fixture website, running until dropped.
pub struct FixtureSite {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Its address.
    pub addr: SocketAddr,
    hits: Arc<Mutex<HashMap<String, u32>>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl FixtureSite {
    /// Serve the site on 127.0.0.1 (random port).
    pub async fn start() -> std::io::Result<FixtureSite> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let base = format!("http://{addr}");
        let hits = Arc::new(Mutex::new(HashMap::new()));
        let app = router(Site { base: base.clone(), hits: hits.clone() });
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(FixtureSite { base, addr, hits, shutdown: Some(tx) })
    }

    /// The absolute URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// How many requests `path` received (any method).
    pub fn hits(&self, path: &str) -> u32 {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

impl Drop for FixtureSite {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

fn router(site: Site) -> Router {
    Router::new()
        .route("/", get(home))
        .route("/clean", get(clean))
        .route("/landing", get(landing))
        .route("/no-title", get(no_title))
        .route("/images", get(images))
        .route("/links", get(links))
        .route("/console-error", get(console_error))
        .route("/layout-shift", get(layout_shift))
        .route("/noindex", get(noindex))
        .route("/login", get(login))
        .route("/hostile", get(hostile))
        .route("/private/secret", get(private))
        .route("/cal/{year}/{month}", get(calendar))
        .route("/redirect/{n}", get(redirect))
        .route("/redirect-loop", get(|| async { Redirect::permanent("/redirect-loop") }))
        .route("/gone", get(gone))
        .route("/server-error", get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "boom") }))
        .route("/head-refused", get(head_refused).head(|| async { StatusCode::METHOD_NOT_ALLOWED }))
        .route("/slow", get(slow))
        .route("/img/photo.png", get(png))
        .route(
            "/files/brochure.pdf",
            get(|| async { ([(header::CONTENT_TYPE, "application/pdf")], "%PDF-1.4\n%%EOF\n") }),
        )
        .route("/robots.txt", get(robots))
        .route("/sitemap.xml", get(sitemap_index))
        .route("/sitemap-pages.xml", get(sitemap_pages))
        .route("/sitemap-more.xml.gz", get(sitemap_more))
        .fallback(|| async {
            (
                StatusCode::NOT_FOUND,
                html_headers(),
                page("Not found", "<h1>Not found</h1><p>Nothing lives at this address.</p>", ""),
            )
        })
        .layer(axum::middleware::from_fn_with_state(site.clone(), count_and_secure))
        .with_state(site)
}

/// Count hits per path and add the security headers a careful site sends.
async fn count_and_secure(State(site): State<Site>, req: Request, next: Next) -> Response {
    *site.hits.lock().unwrap().entry(req.uri().path().to_owned()).or_default() += 1;
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    let is_html = h.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("text/html"));
    if is_html {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'"),
        );
        h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        h.insert(header::REFERRER_POLICY, HeaderValue::from_static("strict-origin-when-cross-origin"));
    }
    resp
}

fn html_headers() -> [(header::HeaderName, &'static str); 1] {
    [(header::CONTENT_TYPE, "text/html; charset=utf-8")]
}

/// A complete, well-formed page; `head_extra` goes into `<head>`.
fn page_with(title: Option<&str>, body: &str, head_extra: &str, html_attrs: &str) -> String {
    let title = title.map(|t| format!("<title>{t}</title>\n")).unwrap_or_default();
    format!(
        r##"<!DOCTYPE html>
<html lang="en"{html_attrs}>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{title}<meta name="description" content="A page of the Capture audit fixture site, built to show exactly one kind of problem to the audit engine.">
<link rel="canonical" href="">
<link rel="icon" href="data:,">
<meta property="og:title" content="Audit fixture">
<meta property="og:description" content="A page of the Capture audit fixture site.">
<meta property="og:image" content="/img/photo.png">
<meta name="theme-color" content="#ffffff">
<style>body{{font-family:sans-serif;margin:0;color:#111;background:#fff}}main,header,footer{{padding:16px}}</style>
{head_extra}
</head>
<body>
<header><p>Fixture site</p></header>
<main>
{body}
</main>
<footer><p><a href="/">Home</a></p></footer>
</body>
</html>
"##
    )
}

fn page(title: &str, body: &str, head_extra: &str) -> String {
    page_with(Some(title), body, head_extra, "")
}

async fn home() -> impl IntoResponse {
    let body = r#"<h1>Audit fixture site</h1>
<p>Each page below shows one problem the audit must find.</p>
<ul>
<li><a href="/clean">A clean page</a></li>
<li><a href="/no-title">A page without a title</a></li>
<li><a href="/images">Images</a></li>
<li><a href="/links">Links</a></li>
<li><a href="/console-error">Console errors</a></li>
<li><a href="/layout-shift">Layout shift</a></li>
<li><a href="/noindex">Not for search engines</a></li>
<li><a href="/login">Sign in</a></li>
<li><a href="/private/secret">Private area</a></li>
<li><a href="/cal/2026/11">Calendar</a></li>
<li><a href="/redirect/1">Old address</a></li>
<li><a href="/hostile">A hostile title</a></li>
<li><a href="/files/brochure.pdf">Brochure (PDF)</a></li>
</ul>"#;
    (html_headers(), page("Audit fixture site — home", body, ""))
}

async fn clean() -> impl IntoResponse {
    let body = r#"<h1>A clean page</h1>
<p>This page follows every rule the audit checks: a title of the right length, a description, one main heading,
a canonical address, a language, a viewport, Open Graph tags, images with alternative text and working links.</p>
<p><img src="/img/photo.png" alt="A grey square" width="64" height="64"></p>
<p><a href="/">Back to the home page</a></p>"#;
    (html_headers(), page("A clean page — audit fixture", body, ""))
}

async fn landing() -> impl IntoResponse {
    (
        html_headers(),
        page("Landing page — audit fixture", "<h1>Landing page</h1><p>The end of a redirect chain.</p>", ""),
    )
}

async fn no_title() -> impl IntoResponse {
    (html_headers(), page_with(None, "<h1>No title here</h1><p>This page has no title element.</p>", "", ""))
}

async fn images() -> impl IntoResponse {
    let body = r#"<h1>Images</h1>
<p><img src="/img/photo.png" alt="A described picture" width="64" height="64"></p>
<p><img id="hero" src="/img/photo.png?v=2" width="64" height="64"></p>
<p><img src="/img/photo.png?v=3" width="32" height="32"> <img src="/img/photo.png?v=4" alt="" width="32" height="32"></p>"#;
    (html_headers(), page("Images — audit fixture site", body, ""))
}

async fn links() -> impl IntoResponse {
    let body = r#"<h1>Links</h1>
<p><a href="/clean">A working link</a>, <a href="/gone">a link to a page that is gone</a>
and <a href="/head-refused">a link whose server refuses HEAD</a>.</p>"#;
    (html_headers(), page("Links — audit fixture site", body, ""))
}

async fn console_error() -> impl IntoResponse {
    let body = r#"<h1>Console errors</h1>
<p>The script below logs an error and throws; the image below is missing.</p>
<p><img src="/img/missing.png" alt="A missing picture" width="64" height="64"></p>
<script>console.error('fixture: something broke'); throw new Error('fixture: uncaught exception');</script>"#;
    (html_headers(), page("Console errors — audit fixture site", body, ""))
}

async fn layout_shift() -> impl IntoResponse {
    // After load, a tall banner is inserted above the content (no user input): a layout
    // shift of most of the viewport. The pending marker is removed once it was laid out.
    let body = r#"<h1>Layout shift</h1>
<div id="content"><p>This paragraph moves down when the late banner arrives.</p>
<p style="height:600px">Long content.</p></div>
<script>
addEventListener('load', () => {
  setTimeout(() => {
    const b = document.createElement('div');
    b.id = 'late-banner';
    b.style.height = '400px';
    b.style.background = '#eee';
    b.textContent = 'A late banner';
    document.querySelector('main').insertBefore(b, document.querySelector('main').firstChild);
    requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => document.documentElement.removeAttribute('data-fixture-pending'), 50)));
  }, 150);
});
</script>"#;
    (html_headers(), page_with(Some("Layout shift — audit fixture site"), body, "", " data-fixture-pending"))
}

async fn noindex() -> impl IntoResponse {
    (
        html_headers(),
        page(
            "Not for search engines — audit fixture",
            "<h1>Hidden from search</h1><p>This page asks not to be indexed.</p>",
            r#"<meta name="robots" content="noindex, follow">"#,
        ),
    )
}

async fn login() -> impl IntoResponse {
    let body = r#"<h1>Sign in</h1>
<form id="login" method="post" action="/login">
<p><label for="user">Name</label> <input id="user" name="user" autocomplete="username"></p>
<p><label for="pw">Password</label> <input id="pw" name="pw" type="password" autocomplete="current-password"></p>
<p><button type="submit">Sign in</button></p>
</form>"#;
    (html_headers(), page("Sign in — audit fixture site", body, ""))
}

async fn hostile() -> impl IntoResponse {
    let title = "&lt;script&gt;alert(\"pwned\")&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; a title far too long for search results";
    (
        html_headers(),
        page(
            title,
            "<h1>Hostile title</h1><p>The title of this page is markup, which a report must show as text.</p>",
            "",
        ),
    )
}

async fn private() -> impl IntoResponse {
    (html_headers(), page("Private — audit fixture site", "<h1>Private</h1><p>robots.txt disallows this.</p>", ""))
}

async fn calendar(Path((year, month)): Path<(u32, u32)>) -> impl IntoResponse {
    let (ny, nm) = if month >= 12 { (year + 1, 1) } else { (year, month + 1) };
    let (py, pm) = if month <= 1 { (year.saturating_sub(1), 12) } else { (year, month - 1) };
    let body = format!(
        r#"<h1>Calendar {year}-{month:02}</h1>
<p><a href="/cal/{py}/{pm}">Previous month</a> · <a href="/cal/{ny}/{nm}">Next month</a></p>"#
    );
    (html_headers(), page(&format!("Calendar {year}-{month:02} — audit fixture"), &body, ""))
}

async fn redirect(Path(n): Path<u32>) -> Response {
    match n {
        1 => Redirect::permanent("/redirect/2").into_response(),
        2 => Redirect::temporary("/redirect/3").into_response(),
        _ => (StatusCode::MOVED_PERMANENTLY, [(header::LOCATION, "/landing")]).into_response(),
    }
}

async fn gone() -> impl IntoResponse {
    (
        StatusCode::NOT_FOUND,
        html_headers(),
        page("Gone — audit fixture site", "<h1>Gone</h1><p>This page was removed.</p>", ""),
    )
}

async fn head_refused(method: Method) -> impl IntoResponse {
    // axum answers HEAD with the GET handler unless a HEAD route exists: this one exists.
    debug_assert_eq!(method, Method::GET);
    (html_headers(), page("HEAD refused — audit fixture", "<h1>GET works</h1><p>HEAD is refused here.</p>", ""))
}

async fn slow() -> impl IntoResponse {
    tokio::time::sleep(Duration::from_secs(5)).await;
    (html_headers(), page("Slow — audit fixture", "<h1>Slow</h1><p>Answers after five seconds.</p>", ""))
}

async fn png() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "image/png")], PNG)
}

async fn robots(State(site): State<Site>) -> impl IntoResponse {
    let body = format!(
        "# Audit fixture\nUser-agent: *\nDisallow: /private/\n\nUser-agent: BadBot\nDisallow: /\n\nSitemap: {}/sitemap.xml\n",
        site.base
    );
    ([(header::CONTENT_TYPE, "text/plain")], body)
}

async fn sitemap_index(State(site): State<Site>) -> impl IntoResponse {
    let b = &site.base;
    let body = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>{b}/sitemap-pages.xml</loc></sitemap>
  <sitemap><loc>{b}/sitemap-more.xml.gz</loc></sitemap>
</sitemapindex>"#
    );
    ([(header::CONTENT_TYPE, "application/xml")], body)
}

fn urlset(base: &str, paths: &[&str]) -> String {
    let mut s = String::from(
        r#"<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#,
    );
    for p in paths {
        if p.starts_with("http") {
            s.push_str(&format!("<url><loc>{p}</loc></url>"));
        } else {
            s.push_str(&format!("<url><loc>{base}{p}</loc></url>"));
        }
    }
    s.push_str("</urlset>");
    s
}

async fn sitemap_pages(State(site): State<Site>) -> impl IntoResponse {
    let body = urlset(
        &site.base,
        &[
            "/",
            "/clean",
            "/no-title",
            "/images",
            "/links",
            "/clean?utm_source=sitemap",
            "https://elsewhere.example/page",
        ],
    );
    ([(header::CONTENT_TYPE, "application/xml")], body)
}

async fn sitemap_more(State(site): State<Site>) -> Response {
    use std::io::Write;
    let xml = urlset(
        &site.base,
        &["/console-error", "/layout-shift", "/noindex", "/login", "/redirect/1", "/private/secret"],
    );
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    if enc.write_all(xml.as_bytes()).is_err() {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    match enc.finish() {
        Ok(gz) => ([(header::CONTENT_TYPE, "application/gzip")], Body::from(gz)).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// The real pages of [`TrapSite`], start page first.
pub const TRAP_SITE_PAGES: &[&str] = &["/", "/about", "/services", "/pricing", "/blog", "/contact"];

/// A six-page site with the traps that made full-site audits spend their page budget on
/// copies and errors, each linked from the start page before the real pages:
///
/// | path | trap |
/// |---|---|
/// | `/index.html` | the start page again |
/// | `/about/` | a trailing-slash twin of `/about` (both answer 200 with the same page) |
/// | `/old-pricing` | a redirecting alias (301 → `/pricing`) |
/// | `/services/print` | a printable copy of `/services` whose `<link rel=canonical>` names `/services` |
/// | `/missing` | a link to a page that does not exist (404) |
/// | `/sitemap.xml` | lists `/contact` and `/index.html` (the crawl takes sitemap entries before links) |
///
/// Every real page names itself as canonical, links home and to the next page.
pub struct TrapSite {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    hits: Arc<Mutex<HashMap<String, u32>>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl TrapSite {
    /// Serve the site on 127.0.0.1 (random port).
    pub async fn start() -> std::io::Result<TrapSite> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let hits = Arc::new(Mutex::new(HashMap::new()));
        let site = Site { base: base.clone(), hits: hits.clone() };
        let serve = |path: &'static str| get(move || async move { (html_headers(), trap_page(path)) });
        let app = Router::new()
            .route("/", serve("/"))
            .route("/index.html", serve("/"))
            .route("/about", serve("/about"))
            .route("/about/", serve("/about"))
            .route("/services", serve("/services"))
            .route("/services/print", serve("/services/print"))
            .route("/pricing", serve("/pricing"))
            .route("/old-pricing", get(|| async { Redirect::permanent("/pricing") }))
            .route("/blog", serve("/blog"))
            .route("/contact", serve("/contact"))
            .route(
                "/sitemap.xml",
                get(|State(site): State<Site>| async move {
                    ([(header::CONTENT_TYPE, "application/xml")], urlset(&site.base, &["/contact", "/index.html"]))
                }),
            )
            .fallback(|| async {
                (StatusCode::NOT_FOUND, html_headers(), page("Not found", "<h1>Not found</h1><p>Nothing here.</p>", ""))
            })
            .layer(axum::middleware::from_fn_with_state(site.clone(), count_and_secure))
            .with_state(site);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(TrapSite { base, hits, shutdown: Some(tx) })
    }

    /// The absolute URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// How many requests `path` received (any method).
    pub fn hits(&self, path: &str) -> u32 {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

impl Drop for TrapSite {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// A page of [`TrapSite`]: `/services/print` is the copy of `/services`.
fn trap_page(path: &str) -> String {
    let (title, canonical, body) = match path {
        "/" => (
            "Trap site — home",
            "/",
            r#"<h1>Welcome</h1><p>A small site with six pages and every way to reach them twice.</p><ul>
<li><a href="/index.html">Home again</a></li>
<li><a href="/about/">About (with a slash)</a></li>
<li><a href="/old-pricing">Pricing (old address)</a></li>
<li><a href="/services/print">Services, printable</a></li>
<li><a href="/missing">A page that is gone</a></li>
<li><a href="/about">About</a></li>
<li><a href="/services">Services</a></li>
<li><a href="/pricing">Pricing</a></li>
<li><a href="/blog">Blog</a></li>
<li><a href="/contact">Contact</a></li>
</ul>"#,
        ),
        "/about" => {
            ("About us — trap site", "/about", "<h1>About us</h1><p>Who we are. <a href=\"/services\">Next</a></p>")
        }
        "/services" => (
            "Our services — trap site",
            "/services",
            "<h1>Services</h1><p>What we do. <a href=\"/pricing\">Next</a></p>",
        ),
        "/services/print" => (
            "Our services (print) — trap site",
            "/services",
            "<h1>Services</h1><p>What we do, in a layout for paper. <a href=\"/pricing\">Next</a></p>",
        ),
        "/pricing" => {
            ("Pricing — trap site", "/pricing", "<h1>Pricing</h1><p>What it costs. <a href=\"/blog\">Next</a></p>")
        }
        "/blog" => {
            ("Our blog — trap site", "/blog", "<h1>Blog</h1><p>What we wrote. <a href=\"/contact\">Next</a></p>")
        }
        _ => ("Contact — trap site", "/contact", "<h1>Contact</h1><p>How to reach us. <a href=\"/\">Home</a></p>"),
    };
    // The fixture pages' `<link rel=canonical href="">` stands for "this page"; here each
    // page names its address (the print copy names the page it copies).
    page(title, body, "")
        .replace("<link rel=\"canonical\" href=\"\">", &format!("<link rel=\"canonical\" href=\"{canonical}\">"))
}
