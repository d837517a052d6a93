//! `blockAds` runs the lists' scriptlet rules (`##+js(...)`, with uBlock Origin's scriptlets from
//! Debian's package) before the page's own scripts, and their procedural and action rules
//! (`:has-text()`, `:upward()`, `:remove()`) once it is loaded: on the corpus's ad-heavy
//! article, with its rules in a list folder of the test's own (`blocklists::use_dir`, set
//! before this process first reads the lists).

mod support;

use capture_browser::{BrowserPool, CaptureError, CaptureOutput};
use capture_testkit::corpus::{self, CONTENT};
use support::*;

fn ok(r: Result<CaptureOutput, CaptureError>) -> CaptureOutput {
    r.unwrap_or_else(|e| panic!("capture failed: {e:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scriptlet_and_procedural_rules_remove_what_only_they_can() {
    let lists = tempfile::tempdir().unwrap();
    std::fs::write(lists.path().join("easylist.txt"), corpus::ad_article_rules("127.0.0.1")).unwrap();
    std::fs::write(lists.path().join("easyprivacy.txt"), "! nothing\n").unwrap();
    assert!(capture_browser::blocklists::use_dir(lists.path().to_path_buf()), "the lists were read before");
    let site = corpus::serve().await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path().to_path_buf(), true);
    cfg.browsers = 1;
    let pool = BrowserPool::start(cfg).await.expect("pool starts");
    let req = |ads: bool| {
        let mut r = url_req(site.url("/ad-article.html"));
        (r.options.width, r.options.height) = (1280, 800);
        r.options.wait_until = capture_core::WaitUntil::Load;
        r.options.cookie_consent = capture_core::options::CookieConsent::None;
        r.options.block_ads = ads;
        r
    };
    let red = [0xee, 0, 0];
    // Without: the interstitial covers everything.
    let out = ok(pool.capture(req(false)).await);
    assert_eq!(px(&decode(&out.bytes), 640, 700), red);
    // With: each ad gone, the page's content where it was; the ordinary card stays.
    let out = ok(pool.capture(req(true)).await);
    let img = decode(&out.bytes);
    for (x, y, what) in [
        (640, 700, "the interstitial (abort-on-property-read)"),
        (100, 560, "the scripted ad (set-constant)"),
        (100, 340, "the sponsored card (:has-text)"),
        (460, 340, "the partner offer's box (:upward(2))"),
        (820, 340, "the teaser (:remove())"),
    ] {
        assert_eq!(px(&img, x, y), CONTENT, "{what}: tags {:?}", out.tags);
    }
    assert!(out.tags.contains(&"procedural-applied".to_string()), "{:?}", out.tags);
    pool.shutdown().await;
}
