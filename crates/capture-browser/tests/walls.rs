//! Bot walls and what is left covering a page, against the real-web corpus
//! (`capture_testkit::corpus`): a vendor's challenge or block page fails the capture as
//! `blocked: <vendor>` (never a done image of the wall), an ordinary page that talks about
//! captchas or carries a captcha widget among its content is captured; a newsletter pop-up that
//! locks scrolling is reported (`overlay-remaining`, `metadata.overlay`) or, with `hidePopups`,
//! hidden with the page's scrolling given back.

mod support;

use std::sync::Arc;

use capture_browser::{BrowserPool, CaptureError, CaptureOutput};
use capture_core::metadata::OverlayReport;
use capture_core::options::CookieConsent;
use capture_testkit::corpus::{self, CONTENT, NOT_WALLS, WALL_PAGES};
use support::*;

async fn pool() -> (Arc<BrowserPool>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path().to_path_buf(), true);
    cfg.browsers = 1;
    (BrowserPool::start(cfg).await.expect("pool starts"), dir)
}

fn req(url: String) -> capture_browser::CaptureRequest {
    let mut r = url_req(url);
    r.options.width = 1280;
    r.options.height = 800;
    r.options.wait_until = capture_core::WaitUntil::Load;
    r
}

fn ok(r: Result<CaptureOutput, CaptureError>) -> CaptureOutput {
    r.unwrap_or_else(|e| panic!("capture failed: {e:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_vendors_wall_fails_as_blocked_and_a_page_about_captchas_does_not() {
    let site = corpus::serve().await;
    let (pool, _dir) = pool().await;
    for wall in WALL_PAGES {
        let t = std::time::Instant::now();
        let r = pool.capture(req(site.url(wall.path))).await;
        let took = t.elapsed();
        match r {
            Err(CaptureError::Blocked(m)) => {
                eprintln!("{} ({:?}): {m}", wall.path, took);
                let want = format!("blocked: {}: ", wall.vendor);
                assert_eq!(&m[..want.len().min(m.len())], want, "{}", wall.path);
                assert!(
                    m.ends_with(
                        "A profile signed in to the site (profile), a later retry, or another network may get through."
                    ),
                    "{m}"
                );
            }
            other => panic!("{}: expected blocked, got {:?}", wall.path, other.map(|o| o.tags)),
        }
    }
    for path in NOT_WALLS {
        let out = ok(pool.capture(req(site.url(path))).await);
        assert_eq!(out.metadata.http_status, Some(200), "{path}");
        assert_eq!(px(&decode(&out.bytes), 640, 30), CONTENT, "{path} is captured as the page it is");
    }
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pop_up_left_over_the_page_is_reported_and_hide_popups_removes_it() {
    let site = corpus::serve().await;
    let (pool, _dir) = pool().await;
    // Reported, never silently: the pop-up (a full-view dialog with its backdrop) is named.
    let out = ok(pool.capture(req(site.url("/newsletter.html"))).await);
    assert_eq!(out.tags.iter().filter(|t| *t == "overlay-remaining").count(), 1, "{:?}", out.tags);
    assert_eq!(out.metadata.overlay, Some(OverlayReport { selector: "#newsletter-popup".into(), coverage: 1.0 }));
    let img = decode(&out.bytes);
    assert_eq!(px(&img, 640, 400), [0xff, 0xff, 0xff], "the pop-up's form");
    // hidePopups: gone, the page's own content and header seen, nothing left to report.
    let mut r = req(site.url("/newsletter.html"));
    r.options.hide_popups = true;
    let out = ok(pool.capture(r).await);
    assert!(
        out.tags.contains(&"popups-hidden".to_string()) && !out.tags.contains(&"overlay-remaining".to_string()),
        "{:?}",
        out.tags
    );
    assert_eq!(out.metadata.overlay, None);
    let img = decode(&out.bytes);
    assert_eq!((px(&img, 640, 400), px(&img, 640, 30)), (CONTENT, [0x22, 0x22, 0x22]));
    // ... and its scroll lock undone: a full page is the whole article, not one screen.
    let mut r = req(site.url("/newsletter.html"));
    r.options.hide_popups = true;
    r.options.full_page = true;
    let out = ok(pool.capture(r).await);
    let img = decode(&out.bytes);
    assert!(img.height() >= 3000, "full page of a scroll-locked page: {}", img.height());
    // A fixed header and a small marker are not overlays; nor is a consent banner once refused.
    for path in ["/plain.html", "/onetrust.html", "/contact-captcha.html"] {
        let mut r = req(site.url(path));
        r.options.cookie_consent = CookieConsent::Auto;
        let out = ok(pool.capture(r).await);
        assert_eq!(
            (out.metadata.overlay.clone(), out.tags.contains(&"overlay-remaining".to_string())),
            (None, false),
            "{path}"
        );
    }
    // With the consent banner left (none), its backdrop is what covers the page.
    let mut r = req(site.url("/onetrust.html"));
    r.options.cookie_consent = CookieConsent::None;
    r.options.wait_for = Some("#onetrust-banner-sdk".into());
    let out = ok(pool.capture(r).await);
    assert_eq!(
        out.metadata.overlay.map(|o| o.selector),
        Some("#onetrust-consent-sdk > div.onetrust-pc-dark-filter.ot-fade-in:nth-of-type(1)".to_string())
    );
    pool.shutdown().await;
}

/// blockAnnoyances: a Klaviyo sign-up form (with its backdrop and scroll lock), an app banner,
/// OneSignal's notification prompt and a back-to-top button, each by its tool's own markup, are
/// gone; the page's content shows where each was, and nothing is left to report.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn block_annoyances_removes_pop_ups_banners_prompts_and_buttons() {
    let site = corpus::serve().await;
    let (pool, _dir) = pool().await;
    let out = ok(pool.capture(req(site.url("/annoyances.html"))).await);
    let img = decode(&out.bytes);
    // Without: the form's white box, the app banner, the prompt's box, the button.
    assert_eq!(px(&img, 640, 400), [0xff, 0xff, 0xff]);
    assert!(out.tags.contains(&"overlay-remaining".to_string()), "{:?}", out.tags);
    let mut r = req(site.url("/annoyances.html"));
    r.options.block_annoyances = true;
    r.options.hide_popups = true; // what the service's default is with blockAnnoyances
    let out = ok(pool.capture(r).await);
    let img = decode(&out.bytes);
    for (x, y, what) in [
        (640, 400, "the sign-up form"),
        (640, 40, "the app banner"),
        (640, 120, "the prompt"),
        (1230, 750, "back to top"),
    ] {
        assert_eq!(px(&img, x, y), CONTENT, "{what}: {:?}", out.tags);
    }
    assert_eq!(out.metadata.overlay, None);
    assert!(!out.tags.contains(&"overlay-remaining".to_string()), "{:?}", out.tags);
    // The list did it, not the overlay check: without hidePopups it is clean too.
    let mut r = req(site.url("/annoyances.html"));
    r.options.block_annoyances = true;
    let out = ok(pool.capture(r).await);
    assert_eq!((px(&decode(&out.bytes), 640, 400), out.metadata.overlay), (CONTENT, None), "{:?}", out.tags);
    // With hidePopups, the form's scroll lock is undone too: the full page is the article.
    let mut r = req(site.url("/annoyances.html"));
    (r.options.block_annoyances, r.options.hide_popups, r.options.full_page) = (true, true, true);
    let out = ok(pool.capture(r).await);
    assert!(out.height.unwrap() >= 2400, "{:?}", out.height);
    pool.shutdown().await;
}
