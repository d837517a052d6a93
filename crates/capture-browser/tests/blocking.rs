//! `blockAds`, `blockTrackers`, `blockChats` (EasyList and EasyPrivacy from Debian's uBlock
//! Origin package, and our chat-widget list, through Brave's adblock engine), the request's
//! credentials (`headers`, `cookies`, `httpAuth`) as the site sees them, and the bound on
//! `cookieConsent: auto` — on a real Chromium, against fixture servers on 127.0.0.1.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capture_browser::blocklists::{Blocklists, Verdict, Which, lists_dir};
use capture_browser::{BrowserPool, CaptureError, CaptureOutput};
use capture_core::credentials::{CookieIn, Credentials, HttpAuth};
use support::*;

async fn pool() -> (Arc<BrowserPool>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path().to_path_buf(), true);
    cfg.browsers = 1;
    (BrowserPool::start(cfg).await.expect("pool starts"), dir)
}

fn ok(r: Result<CaptureOutput, CaptureError>) -> CaptureOutput {
    r.unwrap_or_else(|e| panic!("capture failed: {e:?}"))
}

/// A green page with what the lists know: an ad frame and an ad image asked for first thing
/// in the head (EasyList `/banner-ad.`), an ad box
/// (EasyList `##.banner-ad`), a tracking script and pixel (EasyPrivacy `/beacon.js`,
/// `/pixel.gif?`), and a chat launcher (`#intercom-container`) with its widget script from
/// Intercom's host (our chat list).
const CLUTTERED: &str = "<html><head><link rel='preload' as='image' href='/img/banner-ad.png'><title>shop</title></head>\
<body style='margin:0;background:rgb(0,255,0)'>\
<iframe src='/f/banner-ad.html' style='position:absolute;left:400px;top:200px;width:100px;height:100px;border:0'></iframe>\
<img src='/img/banner-ad.png' width='100' height='100' style='position:absolute;left:0;top:0'>\
<div class='banner-ad' style='position:absolute;left:200px;top:0;width:100px;height:100px;background:rgb(255,0,0)'>Sale</div>\
<div id='intercom-container' style='position:fixed;right:0;bottom:0;width:100px;height:100px;background:rgb(0,0,255)'></div>\
<img src='/t/pixel.gif?id=1' width='1' height='1'>\
<script src='/js/beacon.js'></script>\
<script async src='http://widget.intercom.io/widget/abc123'></script>\
</body></html>";

async fn cluttered_site() -> Server {
    Server::start(Arc::new(|path: &str, _cookie: &str| match path {
        "/shop" => html(CLUTTERED),
        "/img/banner-ad.png" => Resp::Full(200, "image/png", solid_png(100, 100, [255, 0, 0]), 0),
        "/f/banner-ad.html" => html("<body style='margin:0;background:rgb(255,0,255)'>ad</body>"),
        "/t/pixel.gif" => Resp::Full(200, "image/gif", b"GIF89a".to_vec(), 0),
        "/js/beacon.js" => Resp::Full(200, "text/javascript", b"document.title += '+beacon';".to_vec(), 0),
        _ => Resp::Full(404, "text/plain", b"no".to_vec(), 0),
    }))
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ads_trackers_and_chats_are_refused_by_the_lists_and_their_boxes_hidden() {
    let srv = cluttered_site().await;
    let (pool, _dir) = pool().await;
    let hits = |srv: &Server| {
        ["/img/banner-ad.png", "/t/pixel.gif", "/js/beacon.js", "/f/banner-ad.html"].map(|p| srv.hits(p))
    };

    // Nothing blocked: the ad, the box, the launcher and the tracker are all there.
    let out = ok(pool.capture(url_req(srv.url("/shop"))).await);
    assert_eq!(hits(&srv), [1, 1, 1, 1]);
    assert_eq!(out.page_title, "shop+beacon");
    let img = decode(&out.bytes);
    assert_px(&img, 50, 50, [255, 0, 0], 2);
    assert_px(&img, 450, 250, [255, 0, 255], 2);
    assert_px(&img, 250, 50, [255, 0, 0], 2);
    assert_px(&img, 750, 550, [0, 0, 255], 2);
    for tag in ["ads-blocked", "trackers-blocked", "chats-blocked"] {
        assert!(!out.tags.iter().any(|t| t == tag), "{tag} in {:?}", out.tags);
    }

    // Ads only: the ad image (preloaded from the head, the page's first request after its
    // own) and the ad frame are never requested and collapse; the tracker and the
    // chat launcher stay. The `.banner-ad` box stays too: EasyList turns its generic element
    // rules off on local addresses (`@@://127.0.0.1$generichide`, for router pages), which
    // `easylist_element_rules_apply_to_public_sites_only` shows on a public host.
    let mut r = url_req(srv.url("/shop"));
    r.options.block_ads = true;
    let out = ok(pool.capture(r).await);
    assert_eq!(hits(&srv), [1, 2, 2, 1]);
    assert_eq!(out.page_title, "shop+beacon");
    let img = decode(&out.bytes);
    assert_px(&img, 50, 50, [0, 255, 0], 2);
    assert_px(&img, 450, 250, [0, 255, 0], 2);
    assert_px(&img, 250, 50, [255, 0, 0], 2);
    assert_px(&img, 750, 550, [0, 0, 255], 2);
    assert!(out.tags.iter().any(|t| t == "ads-blocked"), "{:?}", out.tags);

    // All three: the tracking script and pixel never load, the launcher is hidden and the
    // widget's own request was refused by the chat list.
    let mut r = url_req(srv.url("/shop"));
    (r.options.block_ads, r.options.block_trackers, r.options.block_chats) = (true, true, true);
    let out = ok(pool.capture(r).await);
    assert_eq!(hits(&srv), [1, 2, 2, 1], "nothing the lists name was requested");
    assert_eq!(out.page_title, "shop");
    let img = decode(&out.bytes);
    for (x, y) in [(50, 50), (750, 550), (400, 300)] {
        assert_px(&img, x, y, [0, 255, 0], 2);
    }
    let mut tags: Vec<&str> = out.tags.iter().map(String::as_str).filter(|t| t.ends_with("-blocked")).collect();
    tags.sort();
    assert_eq!(tags, ["ads-blocked", "chats-blocked", "trackers-blocked"]);
    pool.shutdown().await;
}

/// The lists a default install reads (Debian's uBlock Origin package, which the set-up
/// script installs): present, and as large as EasyList and EasyPrivacy are.
fn installed_lists() -> Blocklists {
    let lists = Blocklists::load(&lists_dir());
    let all = Which { ads: true, trackers: true, chats: true, annoyances: true };
    assert_eq!(lists.unavailable(all), None, "run scripts/setup.sh: the filter lists are missing");
    lists
}

#[test]
fn easylist_element_rules_apply_to_public_sites_only() {
    let lists = installed_lists();
    let [ads, trackers, chats, _annoyances] = lists.rules;
    println!("filter rules: EasyList {ads}, EasyPrivacy {trackers}, chat widgets {chats}");
    assert!(ads > 30_000 && trackers > 20_000 && chats > 100, "{:?}", lists.rules);
    let ads = Which { ads: true, ..Which::default() };
    let classes = ["banner-ad".to_string(), "article".to_string()];
    // A generic rule (`##.banner-ad`) for a class the page has; none for one it lacks.
    let public = lists.hide_selectors(ads, "https://shop.example/", &classes, &[]);
    assert!(public.contains(&".banner-ad".to_string()), "{} selectors", public.len());
    assert!(!public.contains(&".article".to_string()));
    // A site's own rule (`advfn.com###APS_BILLBOARD`) on that site only.
    let on_site = lists.hide_selectors(ads, "https://www.advfn.com/", &[], &[]);
    assert!(on_site.contains(&"#APS_BILLBOARD".to_string()));
    assert!(!public.contains(&"#APS_BILLBOARD".to_string()));
    // The list's own exception for local addresses: no generic element rules there.
    let local = lists.hide_selectors(ads, "http://127.0.0.1:8080/", &classes, &[]);
    assert!(!local.contains(&".banner-ad".to_string()));
    // Network rules: a third-party ad server and a tracker, and an ordinary script.
    let page = "https://news.example/story";
    let all = Which { ads: true, trackers: true, chats: true, annoyances: true };
    let check = |url: &str, kind: &str| lists.check(all, url, page, kind, false);
    assert_eq!(check("https://securepubads.g.doubleclick.net/tag/js/gpt.js", "Script"), Some(Verdict::Ads));
    assert_eq!(check("https://www.google-analytics.com/analytics.js", "Script"), Some(Verdict::Trackers));
    assert_eq!(check("https://news.example/static/app.js", "Script"), None);
}

/// What the credentials fixture saw on each path: the `X-Api-Key`, `Authorization` and
/// `Cookie` headers of each request.
type Seen = Arc<Mutex<HashMap<String, Vec<[Option<String>; 3]>>>>;

/// `/members` on 127.0.0.1 needs HTTP Basic `ann:s3cret` (a green page; red 401 page
/// otherwise) and loads `/badge.png` from its own origin and `/third.png` from `localhost`
/// (another origin of the same server).
async fn members_site() -> (SocketAddr, Seen) {
    use axum::http::{HeaderMap, StatusCode, header};
    use axum::response::IntoResponse;
    let seen: Seen = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let s = seen.clone();
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let s = s.clone();
        async move {
            let h: &HeaderMap = req.headers();
            let get = |n: &str| h.get(n).and_then(|v| v.to_str().ok()).map(str::to_owned);
            let path = req.uri().path().to_owned();
            let auth = get("authorization");
            s.lock().unwrap().entry(path.clone()).or_default().push([get("x-api-key"), auth.clone(), get("cookie")]);
            // base64("ann:s3cret")
            let good = auth.as_deref() == Some("Basic YW5uOnMzY3JldA==");
            match path.as_str() {
                "/members" if good => {
                    let page = format!(
                        "<html><head><title>members</title></head><body style='margin:0;background:rgb(0,255,0)'>\
                         <img src='/badge.png'><img src='http://localhost:{}/third.png'></body></html>",
                        addr.port()
                    );
                    ([(header::CONTENT_TYPE, "text/html")], page).into_response()
                }
                "/members" => (
                    StatusCode::UNAUTHORIZED,
                    [(header::WWW_AUTHENTICATE, "Basic realm=\"members\""), (header::CONTENT_TYPE, "text/html")],
                    "<html><head><title>sign in</title></head><body style='margin:0;background:rgb(255,0,0)'></body></html>",
                )
                    .into_response(),
                "/third.png" => (
                    StatusCode::UNAUTHORIZED,
                    [(header::WWW_AUTHENTICATE, "Basic realm=\"third\""), (header::CONTENT_TYPE, "text/plain")],
                    "no",
                )
                    .into_response(),
                _ => ([(header::CONTENT_TYPE, "image/png")], solid_png(4, 4, [0, 0, 255])).into_response(),
            }
        }
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, seen)
}

fn cookie(name: &str, value: &str, domain: Option<&str>) -> CookieIn {
    CookieIn {
        name: name.into(),
        value: value.into(),
        domain: domain.map(str::to_owned),
        path: None,
        secure: None,
        http_only: Some(true),
        same_site: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_cookies_and_basic_auth_reach_the_site_and_auth_only_its_origin() {
    let (addr, seen) = members_site().await;
    let (pool, _dir) = pool().await;
    let page = format!("http://{addr}/members");

    // Without credentials: the sign-in page.
    let out = ok(pool.capture(url_req(page.clone())).await);
    assert_eq!(out.page_title, "sign in");
    assert_px(&decode(&out.bytes), 400, 300, [255, 0, 0], 2);
    seen.lock().unwrap().clear();

    let headers: BTreeMap<String, String> = [("X-Api-Key".to_string(), "key-123".to_string())].into();
    let creds = Credentials::check(
        Some(headers),
        Some(vec![cookie("session", "abc", None)]),
        Some(HttpAuth { username: "ann".into(), password: "s3cret".into() }),
        Some(&page),
    )
    .unwrap();
    let mut r = url_req(page.clone());
    r.options.url = Some(page.clone());
    r.options.credentials = creds;
    let out = ok(pool.capture(r).await);
    assert_eq!(out.page_title, "members");
    assert_px(&decode(&out.bytes), 400, 300, [0, 255, 0], 2);

    let seen = seen.lock().unwrap().clone();
    let basic = Some("Basic YW5uOnMzY3JldA==".to_string());
    let (key, cookie_sent) = (Some("key-123".to_string()), Some("session=abc".to_string()));
    // The page: asked, then answered with the credentials; the header and cookie each time.
    let members = &seen["/members"];
    assert_eq!(members.last().unwrap(), &[key.clone(), basic.clone(), cookie_sent.clone()]);
    assert!(members.iter().all(|[k, _, c]| k == &key && c == &cookie_sent), "{members:?}");
    // Its own origin's image: the browser reuses the origin's credentials.
    assert_eq!(seen["/badge.png"].last().unwrap()[2], cookie_sent);
    // Another origin that asks gets no password and no cookie (the header goes everywhere,
    // as documented).
    let third = &seen["/third.png"];
    assert!(!third.is_empty());
    assert!(third.iter().all(|[k, a, c]| k == &key && a.is_none() && c.is_none()), "{third:?}");

    // Wrong password: asked a few times, then the 401 page, not a hang.
    let mut r = url_req(page.clone());
    r.options.url = Some(page.clone());
    r.options.credentials = Credentials::check(
        None,
        None,
        Some(HttpAuth { username: "ann".into(), password: "wrong".into() }),
        Some(&page),
    )
    .unwrap();
    let t0 = Instant::now();
    let out = ok(pool.capture(r).await);
    assert_eq!(out.page_title, "sign in");
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consent_handling_is_bounded_on_a_page_that_keeps_the_browser_busy() {
    // After load, the page's main thread is busy for 12 s in 3 s stretches: every look the
    // consent step takes waits for one, and the step gives up at its 2 s budget. The banner is
    // one no rule knows nor pre-hides (the engine's pre-hiding of `#cookie-banner` let a look
    // made in the first 100 ms pass it for gone), so the step keeps looking until one waits.
    let srv = Server::start(Arc::new(|path: &str, _cookie: &str| match path {
        "/busy" => html("<html><head><title>busy</title></head><body style='margin:0;background:rgb(0,255,0)'>\
            <div id='site-cookie-note' style='position:fixed;bottom:0;left:0;right:0;height:100px;background:#111'>We use cookies <button>Accept</button></div>\
            <script>addEventListener('load', () => { const end = Date.now() + 12000; \
            const spin = () => { const t = Date.now(); while (Date.now() - t < 3000) {} if (Date.now() < end) setTimeout(spin, 5); }; \
            setTimeout(spin, 100); });</script>\
            </body></html>"),
        _ => Resp::Full(404, "text/plain", b"no".to_vec(), 0),
    }))
    .await;
    let (pool, _dir) = pool().await;
    let mut r = url_req(srv.url("/busy"));
    r.options.cookie_consent = capture_core::options::CookieConsent::Auto;
    r.options.wait_until = capture_core::WaitUntil::Networkidle;
    let t0 = Instant::now();
    let out = ok(pool.capture(r).await);
    assert!(out.tags.iter().any(|t| t == "consent-timeout"), "{:?}", out.tags);
    assert_eq!(out.page_title, "busy");
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    pool.shutdown().await;
}

/// A spare page is set up for the most recent job (with `auto`, the consent engine armed; the
/// lists' interception is the job's own, never left on a spare page). After a job with the
/// lists, one that asks for neither (a plain capture), then a session: each gets a page that
/// loads everything and runs no consent engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_set_up_for_the_lists_serves_a_plain_capture_and_a_session_after_it() {
    let srv = cluttered_site().await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path().to_path_buf(), true);
    cfg.browsers = 1;
    cfg.pages_per_browser = 1;
    let pool = BrowserPool::start(cfg).await.expect("pool starts");
    for _ in 0..2 {
        let mut r = url_req(srv.url("/shop"));
        (r.options.block_ads, r.options.block_trackers) = (true, true);
        r.options.cookie_consent = capture_core::options::CookieConsent::Auto;
        let out = ok(pool.capture(r).await);
        assert!(out.tags.iter().any(|t| t == "ads-blocked"), "{:?}", out.tags);
    }
    let before = srv.hits("/img/banner-ad.png");
    // The plain capture: the ad image loads and shows, nothing is refused.
    let out = ok(pool.capture(url_req(srv.url("/shop"))).await);
    assert_eq!(srv.hits("/img/banner-ad.png"), before + 1);
    assert!(!out.tags.iter().any(|t| t.ends_with("-blocked")), "{:?}", out.tags);
    assert_px(&decode(&out.bytes), 50, 50, [255, 0, 0], 2);
    // Then the lists again (the spare is set up for them), then a session.
    let mut r = url_req(srv.url("/shop"));
    r.options.block_ads = true;
    ok(pool.capture(r).await);
    let s = pool.open_session(capture_browser::session::SessionOptions::default()).await.expect("session");
    let t = Duration::from_secs(10);
    s.goto(&srv.url("/shop"), capture_core::WaitUntil::Load, t).await.expect("goto");
    let loaded =
        s.evaluate("document.images[0].complete && document.images[0].naturalWidth", true, t).await.expect("evaluate");
    assert_eq!(loaded, serde_json::json!(100));
    assert_eq!(s.evaluate("typeof window.__captureConsent", true, t).await.unwrap(), serde_json::json!("undefined"));
    s.close().await;
    pool.shutdown().await;
}
