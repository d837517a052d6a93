//! `cookieConsent` against the real-web corpus (`capture_testkit::corpus`): pages that reproduce
//! the consent platforms' own markup, script objects and behaviour, and DuckDuckGo's autoconsent
//! rules run in every frame. What a viewer would see is asserted on the captured image (the
//! page's marker: green once refused, orange once accepted; the pop-up's area showing the page
//! behind it) and what the job reports in `metadata.consent`.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use capture_browser::{BrowserPool, CaptureError, CaptureOutput};
use capture_core::metadata::{ConsentAction, ConsentReport};
use capture_core::options::CookieConsent;
use capture_testkit::corpus::{self, ACCEPTED, CONSENT_PAGES, CONTENT, REJECTED, UNANSWERED};
use support::*;

async fn pool() -> (Arc<BrowserPool>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path().to_path_buf(), true);
    cfg.browsers = 1;
    cfg.pages_per_browser = 3;
    (BrowserPool::start(cfg).await.expect("pool starts"), dir)
}

async fn capture(pool: &BrowserPool, url: String, mode: CookieConsent) -> CaptureOutput {
    let mut r = url_req(url);
    r.options.width = 1280;
    r.options.height = 800;
    r.options.cookie_consent = mode;
    r.options.wait_until = capture_core::WaitUntil::Load;
    ok(pool.capture(r).await)
}

fn ok(r: Result<CaptureOutput, CaptureError>) -> CaptureOutput {
    r.unwrap_or_else(|e| panic!("capture failed: {e:?}"))
}

fn action(a: &str) -> ConsentAction {
    serde_json::from_value(serde_json::json!(a)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn auto_refuses_every_platform_it_knows_and_hides_what_it_does_not() {
    let site = corpus::serve().await;
    let (pool, _dir) = pool().await;
    let mut failures = Vec::new();
    for page in CONSENT_PAGES {
        let out = capture(&pool, site.url(page.path), CookieConsent::Auto).await;
        let img = decode(&out.bytes);
        let want = ConsentReport { cmp: page.cmp.map(str::to_string), action: action(page.auto) };
        let got = out.metadata.consent.clone();
        let marker = px(&img, 10, 10);
        let behind = px(&img, page.covered.0, page.covered.1);
        let marker_want = if page.auto == "rejected" { REJECTED } else { UNANSWERED };
        eprintln!("{}: {got:?}, marker {marker:?}, behind the pop-up {behind:?}, tags {:?}", page.path, out.tags);
        if got.as_ref() != Some(&want) || marker != marker_want || behind != CONTENT {
            failures.push(format!("{}: got {got:?} marker {marker:?} behind {behind:?}, want {want:?}", page.path));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn accept_hide_and_none_do_what_they_say() {
    let site = corpus::serve().await;
    let (pool, _dir) = pool().await;
    // accept: opted in, the marker orange, the pop-up gone.
    for page in CONSENT_PAGES.iter().filter(|p| p.accepts) {
        let out = capture(&pool, site.url(page.path), CookieConsent::Accept).await;
        let img = decode(&out.bytes);
        let got = out.metadata.consent.clone().unwrap();
        assert_eq!((got.cmp.as_deref(), got.action), (page.cmp, ConsentAction::Accepted), "{}", page.path);
        assert_eq!((px(&img, 10, 10), px(&img, page.covered.0, page.covered.1)), (ACCEPTED, CONTENT), "{}", page.path);
    }
    // hide: nothing answered, the pop-up not shown.
    let out = capture(&pool, site.url("/onetrust.html"), CookieConsent::Hide).await;
    let img = decode(&out.bytes);
    assert_eq!(
        out.metadata.consent,
        Some(ConsentReport { cmp: Some("Onetrust".into()), action: ConsentAction::Hidden })
    );
    assert_eq!((px(&img, 10, 10), px(&img, 640, 700)), (UNANSWERED, CONTENT));
    // reject: a banner no rule knows is left as it is, and said to be so.
    let out = capture(&pool, site.url("/generic-banner.html"), CookieConsent::Reject).await;
    let img = decode(&out.bytes);
    assert_eq!(out.metadata.consent, Some(ConsentReport { cmp: None, action: ConsentAction::NoneFound }));
    assert_eq!(px(&img, 640, 740), [0x11, 0x11, 0x11], "the banner is still there");
    // none: nothing runs; the banner stays and nothing is reported (waited for: the SDK adds
    // it a moment after the document is parsed, which may be after the load event).
    let mut r = url_req(site.url("/onetrust.html"));
    (r.options.width, r.options.height) = (1280, 800);
    r.options.cookie_consent = CookieConsent::None;
    r.options.wait_for = Some("#onetrust-banner-sdk".into());
    let out = ok(pool.capture(r).await);
    let img = decode(&out.bytes);
    assert_eq!(out.metadata.consent, None);
    assert_eq!(px(&img, 640, 700), [0x22, 0x22, 0x22], "the OneTrust banner shows");
    pool.shutdown().await;
}

/// On a page with no pop-up the step costs little: the engine has looked by the time the page
/// loaded and nothing looks like a pop-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_page_without_a_pop_up_is_not_held_up() {
    let site = corpus::serve().await;
    let (pool, _dir) = pool().await;
    // Warm the pool.
    capture(&pool, site.url("/plain.html"), CookieConsent::None).await;
    let mut times = Vec::new();
    for mode in [CookieConsent::None, CookieConsent::Auto, CookieConsent::None, CookieConsent::Auto] {
        let t = Instant::now();
        let out = capture(&pool, site.url("/plain.html"), mode).await;
        times.push((mode, t.elapsed()));
        if mode == CookieConsent::Auto {
            assert_eq!(out.metadata.consent, Some(ConsentReport { cmp: None, action: ConsentAction::NoneFound }));
        }
    }
    eprintln!("plain page, capture time by cookieConsent: {times:?}");
    for (mode, t) in &times {
        assert!(*t < Duration::from_millis(1500), "{mode:?} took {t:?}");
    }
    pool.shutdown().await;
}

/// The step's own look leaves out, with one query of their selectors, the rules whose first
/// required selector matches nothing: on a plain page nearly all of them; on a page holding one
/// rule's element none, and that rule finds its platform. The look is read from the page by the
/// job's own script, before the screenshot, into the title.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_steps_own_look_leaves_out_only_rules_whose_selector_is_absent() {
    let site = corpus::serve().await;
    let srv = Server::start(Arc::new(|path: &str, _cookie: &str| match path {
        // AdRoll's rule (one of the engine's generic rules) is found by its container alone.
        "/adroll" => html(
            "<html><head><title>t</title></head><body><p>An article.</p>\
             <div id='adroll_consent_container' style='display:none'></div></body></html>",
        ),
        _ => Resp::Full(404, "text/plain", b"no".to_vec(), 0),
    }))
    .await;
    let (pool, _dir) = pool().await;
    let look = |url: String| {
        let pool = pool.clone();
        async move {
            let mut r = url_req(url);
            r.options.cookie_consent = CookieConsent::Reject;
            r.options.wait_until = capture_core::WaitUntil::Load;
            r.options.pre_screenshot_js =
                Some("window.__captureConsentProbe().then((r) => { document.title = JSON.stringify(r); })".into());
            let out = ok(pool.capture(r).await);
            serde_json::from_str::<serde_json::Value>(&out.page_title)
                .unwrap_or_else(|e| panic!("{e}: {:?}", out.page_title))
        }
    };
    let plain = look(site.url("/plain.html")).await;
    eprintln!("plain page: {plain}");
    assert_eq!(plain["found"], false, "{plain}");
    let (rules, skipped) = (plain["rules"].as_u64().unwrap(), plain["skipped"].as_u64().unwrap());
    // 212 rules run on a page of no known site; 187 of them begin with one plain selector
    // (autoconsent 16.23.0).
    assert!(rules >= 150 && skipped * 10 >= rules * 8, "{plain}");
    let adroll = look(srv.url("/adroll")).await;
    eprintln!("a page with AdRoll's container: {adroll}");
    assert_eq!(adroll["found"], true, "{adroll}");
    assert_eq!(adroll["skipped"], 0, "{adroll}");
    pool.shutdown().await;
}

/// A top document is given the generic rules and the sites' own rules its job was given for the
/// URL it asked for ([`capture_browser::consent::site_script`], which the job adds beside the
/// engine), of which it keeps those matching where it is: read from the page by the job's own
/// script, which hands the page `hetzner.com`'s as a job for `https://www.hetzner.com/` would,
/// through the hook that names the rules a URL gets (what a URL gets beyond the page's own
/// list, which must come first and whole). A page at 127.0.0.1 was given none.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sites_own_rules_are_given_to_its_pages_only() {
    let site = corpus::serve().await;
    let (pool, _dir) = pool().await;
    assert!(capture_browser::consent::site_script(CookieConsent::Reject, &site.url("/plain.html")).is_none());
    let hetzner = capture_browser::consent::site_script(CookieConsent::Reject, "https://www.hetzner.com/").unwrap();
    let mut r = url_req(site.url("/plain.html"));
    r.options.cookie_consent = CookieConsent::Reject;
    r.options.wait_until = capture_core::WaitUntil::Load;
    r.options.pre_screenshot_js = Some(format!(
        "const f = window.__captureConsentRulesFor, base = f(location.href); \
         const extra = (u) => {{ const l = f(u); return base.every((n, i) => l[i] === n) ? l.slice(base.length) : ['not after the base']; }}; \
         const before = extra('https://www.hetzner.com/'); {hetzner}; \
         document.title = JSON.stringify({{ n: base.length, before, here: extra(location.href), news: extra('https://news.example/a'), \
           hetzner: extra('https://www.hetzner.com/'), reddit: extra('https://old.reddit.com/r/x') }})"
    ));
    let out = ok(pool.capture(r).await);
    let v: serde_json::Value =
        serde_json::from_str(&out.page_title).unwrap_or_else(|e| panic!("{e}: {:?}", out.page_title));
    assert!(v["n"].as_u64().unwrap() >= 150, "{v}");
    assert_eq!(v["before"], serde_json::json!([]), "a page at 127.0.0.1 was given no site's rules: {v}");
    assert_eq!(v["here"], serde_json::json!([]), "hetzner.com's rule is not this page's: {v}");
    assert_eq!(v["news"], serde_json::json!([]), "a site no rule names gets the generic rules: {v}");
    assert_eq!(v["hetzner"], serde_json::json!(["hetzner.com"]), "{v}");
    assert_eq!(v["reddit"], serde_json::json!([]), "only the rules given: {v}");
    pool.shutdown().await;
}

/// Where a redirect took the page to another site than its job was given rules for, the step
/// hands the engine that site's own rules (`late_site_script`): the page's top document keeps
/// those its URL matches and lacks, and its engine looks again and answers the pop-up. Here
/// the job's own script hands over, as the step would, a rule for this page (a house banner no
/// built-in rule knows) and one for another site, 1.5 s after the step found nothing (past the
/// engine's second look): the engine takes the first, finds the banner and refuses; the same
/// rule again is nothing new.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sites_rules_given_after_the_load_are_run_by_the_engine() {
    let srv = Server::start(Arc::new(|path: &str, _cookie: &str| match path {
        "/house" => html(
            "<html><head><title>house</title></head><body style='margin:0'><p>An article.</p>\
             <div id='house-banner' style='position:fixed;bottom:0;left:0;right:0;height:120px;background:#036'>\
             We keep a few things <button id='house-reject' \
             onclick=\"document.body.dataset.answer='rejected';document.getElementById('house-banner').remove()\">No thanks</button>\
             </div></body></html>",
        ),
        _ => Resp::Full(404, "text/plain", b"no".to_vec(), 0),
    }))
    .await;
    let (pool, _dir) = pool().await;
    let mut r = url_req(srv.url("/house"));
    r.options.cookie_consent = CookieConsent::Reject;
    r.options.wait_until = capture_core::WaitUntil::Load;
    // Past the engine's second look, after which it looks again only once the page changed.
    r.options.delay = 1500;
    r.options.pre_screenshot_js = Some(
        "await (async () => { try { \
           const rule = { name: 'house-rules', runContext: { urlPattern: '^http://127\\\\.0\\\\.0\\\\.1:\\\\d+/house' }, \
             prehideSelectors: [], detectCmp: [{ exists: '#house-banner' }], detectPopup: [{ visible: '#house-banner' }], \
             optIn: [], optOut: [{ waitForThenClick: '#house-reject' }] }; \
           const other = { ...rule, name: 'elsewhere', runContext: { urlPattern: '^https://elsewhere\\\\.example/' } }; \
           const before = document.body.dataset.answer || null; \
           const added = window.__captureConsentAddSite([rule, other]); \
           const again = window.__captureConsentAddSite([rule]); \
           const t0 = performance.now(); \
           while (!document.body.dataset.answer && performance.now() - t0 < 4000) await new Promise((r) => setTimeout(r, 50)); \
           document.title = JSON.stringify({ before, added, again, answer: document.body.dataset.answer || null }); \
         } catch (e) { document.title = JSON.stringify({ error: String(e) }); } })()"
            .into(),
    );
    let out = ok(pool.capture(r).await);
    let v: serde_json::Value =
        serde_json::from_str(&out.page_title).unwrap_or_else(|e| panic!("{e}: {:?}", out.page_title));
    assert_eq!(v, serde_json::json!({"before": null, "added": 1, "again": 0, "answer": "rejected"}));
    // The step itself had found nothing it knew.
    assert_eq!(
        out.metadata.consent.as_ref().map(|c| c.action),
        Some(ConsentAction::NoneFound),
        "{:?}",
        out.metadata.consent
    );
    pool.shutdown().await;
}

/// A banner no rule knows but one of the engine's pre-hiding selectors covers (`#cookie-banner`,
/// opacity 0 for up to 2 s): `auto` hides it for good and says so, rather than pass it for gone
/// while the pre-hiding lasts and let it come back when the engine takes it away (here the
/// capture waits 2.5 s, past the pre-hiding's end).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_banner_the_engine_only_pre_hides_is_hidden_for_good() {
    let srv = Server::start(Arc::new(|path: &str, _cookie: &str| match path {
        "/note" => html(
            "<html><head><title>note</title></head><body style='margin:0;background:rgb(0,255,0)'>\
             <div id='cookie-banner' style='position:fixed;bottom:0;left:0;right:0;height:150px;background:rgb(0,0,255)'>\
             We use cookies <button>OK</button></div></body></html>",
        ),
        _ => Resp::Full(404, "text/plain", b"no".to_vec(), 0),
    }))
    .await;
    let (pool, _dir) = pool().await;
    let mut r = url_req(srv.url("/note"));
    r.options.cookie_consent = CookieConsent::Auto;
    r.options.wait_until = capture_core::WaitUntil::Load;
    r.options.delay = 2500;
    let out = ok(pool.capture(r).await);
    assert!(out.tags.iter().any(|t| t == "consent-hidden"), "{:?}", out.tags);
    assert_eq!(out.metadata.consent, Some(ConsentReport { cmp: None, action: ConsentAction::Hidden }));
    let img = decode(&out.bytes);
    assert_px(&img, 640, img.height() - 20, [0, 255, 0], 2);
    pool.shutdown().await;
}
