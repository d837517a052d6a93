//! The capture options of issue 26 on a real Chromium, shown the way a user sees them: the
//! image's size and pixels, the page's own reading of where and who it is.

mod support;

use std::sync::Arc;

use capture_browser::{BrowserPool, CaptureError, CaptureOutput, ImageFormat};
use capture_core::options::{Clip, Geolocation, MediaType};
use support::*;

async fn pool() -> (Arc<BrowserPool>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path().to_path_buf(), true);
    cfg.browsers = 1;
    (BrowserPool::start(cfg).await.expect("pool starts"), dir)
}

async fn fixtures() -> Server {
    Server::start(Arc::new(|path: &str, _cookie: &str| match path {
        // A green 200×100 box far below the fold, on white.
        "/box" => html("<html><body style='margin:0;background:#fff'><div style='height:1500px'></div><div id='box' style='width:200px;height:100px;background:rgb(0,255,0)'></div><div style='height:800px'></div></body></html>"),
        // Red page, a blue 80×60 square at (100, 50), a magenta band at y 5000-5100 of 6000.
        "/regions" => html("<html><body style='margin:0;background:rgb(255,0,0)'><div style='position:absolute;left:100px;top:50px;width:80px;height:60px;background:rgb(0,0,255)'></div><div style='position:absolute;left:0;top:5000px;width:100%;height:100px;background:rgb(255,0,255)'></div><div style='height:6000px'></div></body></html>"),
        // Green page under a red ad banner and a blue chat bubble.
        "/covered" => html("<html><body style='margin:0;background:rgb(0,255,0)'><div class='ad' style='position:fixed;top:0;left:0;right:0;height:120px;background:rgb(255,0,0)'>Buy now</div><div id='chat' style='position:fixed;right:10px;bottom:10px;width:100px;height:100px;background:rgb(0,0,255)'></div></body></html>"),
        // No background of its own: a blue 100×100 box at the top left.
        "/bare" => html("<html><head><style>html,body{background:transparent;margin:0}</style></head><body><div style='width:100px;height:100px;background:rgb(0,0,255)'></div></body></html>"),
        // Fine detail that compresses worse at higher quality.
        "/detail" => html("<html><body style='margin:0;background:repeating-linear-gradient(45deg,#123 0 3px,#fe8 3px 5px,#3a7 5px 9px)'><h1 style='font-size:40px'>Quality test 1234567890</h1></body></html>"),
        // The page reports where and who it thinks it is in its title.
        "/whoami" => html("<html><head><title>-</title></head><body><script>document.title = [navigator.language, navigator.languages.join(' '), Intl.DateTimeFormat().resolvedOptions().timeZone, new Date(Date.UTC(2026, 0, 1, 12)).getHours(), new Intl.NumberFormat().format(1234.5)].join('|');</script></body></html>"),
        "/geo" => html("<html><head><title>waiting</title></head><body><script>navigator.geolocation.getCurrentPosition((p) => { document.title = p.coords.latitude + ',' + p.coords.longitude + ',' + p.coords.accuracy; const d = document.createElement('div'); d.id = 'geo'; document.body.appendChild(d); }, (e) => { document.title = 'error ' + e.code; const d = document.createElement('div'); d.id = 'geo'; document.body.appendChild(d); });</script></body></html>"),
        // Blue on screen, orange in print; grey when motion is reduced.
        "/media" => html("<html><head><style>body{margin:0;background:rgb(0,0,255)} @media print{body{background:rgb(255,128,0)}} @media (prefers-reduced-motion: reduce){body{background:rgb(128,128,128)}}</style></head><body></body></html>"),
        "/old" => Resp::Redirect("/moved"),
        "/moved" => Resp::Redirect("/meta"),
        "/meta" => html(concat!(
            "<!doctype html><html lang='en-GB'><head><title> Kettles &amp; more </title>",
            "<meta name='description' content='Every kettle we sell.'>",
            "<link rel='canonical' href='/meta?page=1'><link rel='shortcut icon' href='/static/icon.png'>",
            "<meta property='og:title' content='Kettles'><meta property='og:type' content='website'>",
            "<meta property='og:image' content='/img/og.png'><meta property='og:site_name' content='Kettle Shop'>",
            "<meta name='twitter:card' content='summary_large_image'><meta name='twitter:site' content='@kettles'>",
            "</head><body>Kettles</body></html>")),
        "/device" => html("<html><head><title>-</title><meta name='viewport' content='width=device-width'></head><body><script>document.title = [innerWidth, devicePixelRatio, navigator.maxTouchPoints, /iPhone/.test(navigator.userAgent)].join('|');</script></body></html>"),
        "/assets" => html("<html><head><title></title><link rel='stylesheet' href='/style.css'></head><body style='margin:0'><img src='/blue.png' width='50' height='50'><img src='/ads/red.png' width='50' height='50'><script>let ws = 'open'; try { new WebSocket('ws://127.0.0.1:9/'); } catch (e) { ws = 'refused'; } fetch('/api/data').then(() => 'fetched', () => 'blocked').then((f) => { document.title = ws + '|' + f; });</script></body></html>"),
        "/style.css" => Resp::Full(200, "text/css", b"body { background: rgb(0, 255, 0) !important }".to_vec(), 0),
        "/blue.png" => Resp::Full(200, "image/png", solid_png(50, 50, [0, 0, 255]), 0),
        "/ads/red.png" => Resp::Full(200, "image/png", solid_png(50, 50, [255, 0, 0]), 0),
        "/api/data" => Resp::Full(200, "application/json", b"{}".to_vec(), 0),
        "/stock" => html("<html><body><h1>Blue kettle</h1><p>Out of stock</p><p style='display:none'>In stock soon</p></body></html>"),
        _ => Resp::Full(404, "text/plain", b"no".to_vec(), 0),
    }))
    .await
}

fn ok(r: Result<CaptureOutput, CaptureError>) -> CaptureOutput {
    r.unwrap_or_else(|e| panic!("capture failed: {e:?}"))
}

/// Every pixel of `img` within `tol` of `rgb`.
#[track_caller]
fn all_px(img: &image::RgbaImage, rgb: [u8; 3], tol: u8) {
    for (x, y, p) in img.enumerate_pixels() {
        assert!((0..3).all(|i| p[i].abs_diff(rgb[i]) <= tol), "pixel ({x},{y}) is {:?}, expected {rgb:?}", p.0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selector_captures_just_the_element_and_a_missing_one_is_not_found() {
    let srv = fixtures().await;
    let (pool, _dir) = pool().await;
    let mut r = url_req(srv.url("/box"));
    r.options.selector = Some("#box".into());
    r.options.device_scale_factor = 2.0;
    let out = ok(pool.capture(r).await);
    assert_eq!((out.width, out.height), (Some(400), Some(200)));
    let img = decode(&out.bytes);
    assert_eq!(img.dimensions(), (400, 200));
    all_px(&img, [0, 255, 0], 2);
    assert_eq!(decode(out.thumbnail.as_ref().unwrap()).width(), 320);

    let mut r = url_req(srv.url("/box"));
    r.options.selector = Some("#nowhere".into());
    r.options.timeout_ms = 1000;
    match pool.capture(r).await {
        Err(CaptureError::NotFound(m)) => {
            assert_eq!(m, "selector: no element matches '#nowhere' after 1000 ms");
        }
        other => panic!("expected NotFound, got {:?}", other.map(|o| o.tags)),
    }
    let mut r = url_req(srv.url("/box"));
    r.options.selector = Some("div[".into());
    match pool.capture(r).await {
        Err(CaptureError::NotFound(m)) => assert_eq!(m, "selector: 'div[' is not a valid CSS selector"),
        other => panic!("expected NotFound, got {:?}", other.map(|o| o.tags)),
    }
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clip_captures_a_region_of_the_view_or_of_the_whole_page() {
    let srv = fixtures().await;
    let (pool, _dir) = pool().await;
    let mut r = url_req(srv.url("/regions"));
    r.options.clip = Some(Clip { x: 100.0, y: 50.0, width: 80.0, height: 60.0 });
    let out = ok(pool.capture(r).await);
    let img = decode(&out.bytes);
    assert_eq!(img.dimensions(), (80, 60));
    all_px(&img, [0, 0, 255], 2);

    // With fullPage, a region far below the fold; at deviceScaleFactor 2 it is twice as big.
    let mut r = url_req(srv.url("/regions"));
    r.options.full_page = true;
    r.options.device_scale_factor = 2.0;
    r.options.clip = Some(Clip { x: 0.0, y: 4950.0, width: 300.0, height: 200.0 });
    let out = ok(pool.capture(r).await);
    let img = decode(&out.bytes);
    assert_eq!(img.dimensions(), (600, 400));
    assert_px(&img, 300, 50, [255, 0, 0], 2);
    assert_px(&img, 300, 150, [255, 0, 255], 2);
    assert_px(&img, 300, 350, [255, 0, 0], 2);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_selectors_uncover_the_page_and_a_bad_one_is_named() {
    let srv = fixtures().await;
    let (pool, _dir) = pool().await;
    let covered = decode(&ok(pool.capture(url_req(srv.url("/covered"))).await).bytes);
    assert_px(&covered, 400, 60, [255, 0, 0], 2);
    assert_px(&covered, 740, 540, [0, 0, 255], 2);
    let mut r = url_req(srv.url("/covered"));
    r.options.hide_selectors = vec![".ad".into(), "#chat".into()];
    let img = decode(&ok(pool.capture(r).await).bytes);
    assert_px(&img, 400, 60, [0, 255, 0], 2);
    assert_px(&img, 740, 540, [0, 255, 0], 2);

    let mut r = url_req(srv.url("/covered"));
    r.options.hide_selectors = vec![".ad".into(), "[[nope".into()];
    match pool.capture(r).await {
        Err(CaptureError::Script(m)) => assert_eq!(m, "hideSelectors[1]: '[[nope' is not a valid CSS selector"),
        other => panic!("expected a script error, got {:?}", other.map(|o| o.tags)),
    }
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn omit_background_is_transparent_in_png_and_webp() {
    let srv = fixtures().await;
    let (pool, _dir) = pool().await;
    let opaque = decode(&ok(pool.capture(url_req(srv.url("/bare"))).await).bytes);
    assert_eq!(opaque.get_pixel(400, 300).0, [255, 255, 255, 255]);
    for format in [ImageFormat::Png, ImageFormat::Webp] {
        let mut r = url_req(srv.url("/bare"));
        r.options.format = format;
        r.options.omit_background = true;
        let img = decode(&ok(pool.capture(r).await).bytes);
        assert_eq!(img.get_pixel(400, 300).0[3], 0, "{format:?}: transparent where the page paints nothing");
        let blue = img.get_pixel(50, 50).0;
        assert_eq!(blue[3], 255, "{format:?}: the box stays opaque");
        assert_px(&img, 50, 50, [0, 0, 255], 4);
    }
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quality_trades_size_for_fidelity_and_image_width_renders_smaller() {
    let srv = fixtures().await;
    let (pool, _dir) = pool().await;
    let mut sizes = Vec::new();
    for format in [ImageFormat::Jpeg, ImageFormat::Webp] {
        for q in [10, 95] {
            let mut r = url_req(srv.url("/detail"));
            r.options.format = format;
            r.options.quality = Some(q);
            sizes.push((format, q, ok(pool.capture(r).await).bytes.len()));
        }
    }
    eprintln!("sizes by quality: {sizes:?}");
    assert!(sizes[0].2 * 2 < sizes[1].2, "JPEG q10 is far smaller than q95: {sizes:?}");
    assert!(sizes[2].2 * 2 < sizes[3].2, "WebP q10 is far smaller than q95: {sizes:?}");

    // imageWidth: the 800×600 view rendered 400 wide (and 300 high), pixels in place.
    let mut r = url_req(srv.url("/regions"));
    r.options.image_width = Some(400);
    let out = ok(pool.capture(r).await);
    assert_eq!((out.width, out.height), (Some(400), Some(300)));
    let img = decode(&out.bytes);
    assert_px(&img, 70, 40, [0, 0, 255], 2);
    assert_px(&img, 200, 200, [255, 0, 0], 2);
    // With fullPage: the whole 6000 px page at half size.
    let mut r = url_req(srv.url("/regions"));
    r.options.image_width = Some(400);
    r.options.full_page = true;
    let out = ok(pool.capture(r).await);
    assert_eq!((out.width, out.height), (Some(400), Some(3000)));
    assert_px(&decode(&out.bytes), 200, 2525, [255, 0, 255], 2);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_sees_the_time_zone_locale_and_position_asked_for() {
    let srv = fixtures().await;
    let (pool, _dir) = pool().await;
    let mut r = url_req(srv.url("/whoami"));
    r.options.locale = Some("de-DE".into());
    r.options.timezone = Some("Asia/Tokyo".into());
    let out = ok(pool.capture(r).await);
    assert_eq!(out.page_title, "de-DE|de-DE de|Asia/Tokyo|21|1.234,5");
    // The next job's context knows nothing of it.
    let mut r = url_req(srv.url("/whoami"));
    r.options.timezone = Some("America/New_York".into());
    let out = ok(pool.capture(r).await);
    let parts: Vec<&str> = out.page_title.split('|').collect();
    assert_eq!((parts[2], parts[3]), ("America/New_York", "7"));
    assert_ne!(parts[0], "de-DE");

    let mut r = url_req(srv.url("/geo"));
    r.options.geolocation = Some(Geolocation { latitude: 52.52, longitude: 13.405, accuracy: Some(25.0) });
    r.options.wait_for = Some("#geo".into());
    let out = ok(pool.capture(r).await);
    assert_eq!(out.page_title, "52.52,13.405,25");
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn media_type_and_reduced_motion_change_the_rendering_and_do_not_stick() {
    let srv = fixtures().await;
    let (pool, _dir) = pool().await;
    let mut r = url_req(srv.url("/media"));
    r.options.media_type = MediaType::Print;
    assert_px(&decode(&ok(pool.capture(r).await).bytes), 400, 300, [255, 128, 0], 2);
    // The spare page was set up for print; the next job is back on screen.
    assert_px(&decode(&ok(pool.capture(url_req(srv.url("/media"))).await).bytes), 400, 300, [0, 0, 255], 2);
    let mut r = url_req(srv.url("/media"));
    r.options.reduced_motion = true;
    assert_px(&decode(&ok(pool.capture(r).await).bytes), 400, 300, [128, 128, 128], 2);
    assert_px(&decode(&ok(pool.capture(url_req(srv.url("/media"))).await).bytes), 400, 300, [0, 0, 255], 2);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditions_on_the_page_fail_the_capture_with_the_reason() {
    let srv = fixtures().await;
    let (pool, _dir) = pool().await;
    // A 404 is captured as it looks, unless the request says otherwise.
    let out = ok(pool.capture(url_req(srv.url("/gone"))).await);
    assert!(out.tags.contains(&"http-404".to_string()), "{:?}", out.tags);
    let mut r = url_req(srv.url("/gone"));
    r.options.fail_on_http_error = true;
    match pool.capture(r).await {
        Err(CaptureError::Rejected(m)) => assert_eq!(m, "failOnHttpError: the page answered HTTP 404"),
        other => panic!("expected a rejection, got {:?}", other.map(|o| o.tags)),
    }
    let mut r = url_req(srv.url("/stock"));
    r.options.fail_on_http_error = true;
    r.options.fail_if_content_contains = vec!["Sold out".into(), "Out of stock".into()];
    match pool.capture(r).await {
        Err(CaptureError::Rejected(m)) => {
            assert_eq!(m, "failIfContentContains: the page's text contains 'Out of stock'")
        }
        other => panic!("expected a rejection, got {:?}", other.map(|o| o.tags)),
    }
    // Hidden text is not the page's visible text.
    let mut r = url_req(srv.url("/stock"));
    r.options.fail_if_content_missing = vec!["Blue kettle".into(), "In stock soon".into()];
    match pool.capture(r).await {
        Err(CaptureError::Rejected(m)) => assert_eq!(m, "failIfContentMissing: the page's text lacks 'In stock soon'"),
        other => panic!("expected a rejection, got {:?}", other.map(|o| o.tags)),
    }
    let mut r = url_req(srv.url("/stock"));
    r.options.fail_if_content_contains = vec!["In stock soon".into()];
    r.options.fail_if_content_missing = vec!["Blue kettle".into()];
    ok(pool.capture(r).await);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_says_what_it_is_through_its_tags() {
    let srv = fixtures().await;
    let (pool, _dir) = pool().await;
    let out = ok(pool.capture(url_req(srv.url("/old"))).await);
    let m = &out.metadata;
    assert_eq!(m.http_status, Some(200));
    assert_eq!(m.final_url, srv.url("/meta"));
    assert_eq!(m.redirects, vec![srv.url("/old"), srv.url("/moved")]);
    assert_eq!(m.title.as_deref(), Some("Kettles & more"));
    assert_eq!(m.description.as_deref(), Some("Every kettle we sell."));
    assert_eq!(m.canonical, Some(srv.url("/meta?page=1")));
    assert_eq!(m.lang.as_deref(), Some("en-GB"));
    assert_eq!(m.favicon, Some(srv.url("/static/icon.png")));
    assert_eq!(m.open_graph.title.as_deref(), Some("Kettles"));
    assert_eq!(m.open_graph.kind.as_deref(), Some("website"));
    assert_eq!(m.open_graph.image, Some(srv.url("/img/og.png")));
    assert_eq!(m.open_graph.site_name.as_deref(), Some("Kettle Shop"));
    assert_eq!((m.open_graph.description.as_deref(), m.open_graph.url.as_deref()), (None, None));
    assert_eq!(m.twitter.card.as_deref(), Some("summary_large_image"));
    assert_eq!(m.twitter.site.as_deref(), Some("@kettles"));
    assert_eq!(out.page_title, "Kettles & more");

    // A page without tags: the status, the URL and /favicon.ico; nothing made up.
    let out = ok(pool.capture(url_req(srv.url("/stock"))).await);
    let m = &out.metadata;
    assert_eq!((m.http_status, m.redirects.len()), (Some(200), 0));
    assert_eq!(m.favicon, Some(srv.url("/favicon.ico")));
    assert_eq!((m.title.as_deref(), m.description.as_deref(), m.canonical.as_deref()), (None, None, None));
    assert_eq!(m.open_graph, Default::default());
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_preset_is_a_phone_to_the_page() {
    let srv = fixtures().await;
    let (pool, _dir) = pool().await;
    let shaped: capture_core::options::ScreenshotIn =
        serde_json::from_value(serde_json::json!({"url": srv.url("/device"), "device": "iphone-se"})).unwrap();
    let mut r = url_req(srv.url("/device"));
    r.options = capture_core::options::CaptureOptions {
        wait_until: r.options.wait_until,
        ..shaped.into_options(true).unwrap()
    };
    let out = ok(pool.capture(r).await);
    assert_eq!(out.page_title, "375|2|5|true");
    assert_eq!((out.width, out.height), (Some(750), Some(1334)));
    // The next job is a desktop again.
    let out = ok(pool.capture(url_req(srv.url("/device"))).await);
    assert_eq!(out.page_title, "800|1|0|false");
    pool.shutdown().await;
}

/// `pdfinfo`'s answer for a PDF: (pages, width × height in points).
fn pdf_info(dir: &std::path::Path, bytes: &[u8]) -> (u32, (f64, f64)) {
    let file = dir.join(format!("p{}.pdf", bytes.len()));
    std::fs::write(&file, bytes).unwrap();
    let out = std::process::Command::new("pdfinfo").arg(&file).output().expect("pdfinfo (poppler-utils) runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let field = |k: &str| text.lines().find(|l| l.starts_with(k)).map(|l| l[k.len()..].trim().to_string()).unwrap();
    let pages: u32 = field("Pages:").parse().unwrap();
    let size = field("Page size:");
    let nums: Vec<f64> = size.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    (pages, (nums[0], nums[1]))
}

fn pdf_text(dir: &std::path::Path, bytes: &[u8]) -> String {
    let file = dir.join(format!("t{}.pdf", bytes.len()));
    std::fs::write(&file, bytes).unwrap();
    let out = std::process::Command::new("pdftotext").arg("-layout").arg(&file).arg("-").output().unwrap();
    String::from_utf8_lossy(&out.stdout).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdf_options_set_the_paper_the_pages_and_the_footer() {
    let srv = Server::start(Arc::new(|path: &str, _c: &str| match path {
        "/doc" => {
            let mut s = String::from("<html><head><title>Report</title></head><body style='margin:0'>");
            for i in 1..=6 {
                s.push_str(&format!(
                    "<section style='height:500px;break-after:page'><h1 style='margin:0'>Chapter {i} 中文 ✓</h1></section>"
                ));
            }
            s.push_str("</body></html>");
            html(&s)
        }
        _ => Resp::Full(404, "text/plain", b"no".to_vec(), 0),
    }))
    .await;
    let (pool, dir) = pool().await;
    let pdf = |opts: serde_json::Value| {
        let shaped: capture_core::options::ScreenshotIn =
            serde_json::from_value(serde_json::json!({"url": srv.url("/doc"), "pdf": true, "pdfOptions": opts}))
                .unwrap();
        let mut r = url_req(srv.url("/doc"));
        r.options = capture_core::options::CaptureOptions {
            width: 800,
            height: 600,
            wait_until: r.options.wait_until,
            cookie_consent: capture_core::options::CookieConsent::None,
            ..shaped.into_options(true).unwrap()
        };
        r
    };
    // Letter, landscape: 792 × 612 points.
    let out = ok(pool.capture(pdf(serde_json::json!({"paperFormat": "letter", "landscape": true}))).await);
    let (_, size) = pdf_info(dir.path(), &out.bytes);
    assert_eq!((size.0.round(), size.1.round()), (792.0, 612.0));
    // A5 with two pages of six, and a footer with the page number and total.
    let out = ok(pool
        .capture(pdf(serde_json::json!({"paperFormat": "a5", "pageRanges": "2-3",
            "margin": {"bottom": "2cm"},
            "footerTemplate": "<div style='font-size:10px;width:100%;text-align:center'>Page <span class='pageNumber'></span> of <span class='totalPages'></span></div>"})))
        .await);
    let (pages, size) = pdf_info(dir.path(), &out.bytes);
    assert_eq!(pages, 2);
    assert!((size.0 - 419.5).abs() <= 1.0 && (size.1 - 595.3).abs() <= 1.0, "A5 is 419.5 × 595.3 pt: {size:?}");
    let text = pdf_text(dir.path(), &out.bytes);
    assert!(text.contains("Chapter 2") && text.contains("Chapter 3") && !text.contains("Chapter 4"), "{text}");
    assert!(text.contains("Page 2 of 2") || text.contains("Page 2 of 6"), "the footer numbers the pages: {text}");
    assert!(text.contains("中文"), "CJK prints with the installed fonts: {text}");
    // The whole page on one sheet: six chapters, one page as tall as they are.
    let out = ok(pool
        .capture(pdf(serde_json::json!({"fitOnePage": true, "paperWidth": "800px", "paperHeight": "600px"})))
        .await);
    let (pages, size) = pdf_info(dir.path(), &out.bytes);
    assert_eq!(pages, 1, "one sheet, the page's own breaks ignored");
    assert_eq!(size.0.round(), 600.0, "800 px wide is 600 pt");
    assert!(size.1 >= 6.0 * 500.0 * 0.75 && size.1 <= 6.0 * 500.0 * 0.75 + 10.0, "as tall as the page: {size:?}");
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_requests_never_leave_the_browser() {
    let srv = fixtures().await;
    let (pool, _dir) = pool().await;
    let hits = |srv: &Server| ["/style.css", "/blue.png", "/ads/red.png", "/api/data"].map(|p| srv.hits(p));
    let mut r = url_req(srv.url("/assets"));
    r.options.wait_for = Some("title:not(:empty)".into());
    let out = ok(pool.capture(r).await);
    assert_eq!(hits(&srv), [1, 1, 1, 1]);
    assert_eq!(out.page_title, "open|fetched");
    let img = decode(&out.bytes);
    assert_px(&img, 25, 25, [0, 0, 255], 2);
    assert_px(&img, 75, 25, [255, 0, 0], 2);
    assert_px(&img, 400, 300, [0, 255, 0], 2);

    // A URL pattern: the ad image is never requested; the rest loads.
    let mut r = url_req(srv.url("/assets"));
    r.options.block_requests = vec!["*/ads/*".into()];
    let out = ok(pool.capture(r).await);
    assert_eq!(hits(&srv), [2, 2, 1, 2]);
    let img = decode(&out.bytes);
    assert_px(&img, 25, 25, [0, 0, 255], 2);
    assert_ne!(px(&img, 75, 25), [255, 0, 0], "no ad");

    // Kinds: no image, stylesheet, fetch or socket leaves the browser; the page itself loads.
    use capture_core::options::ResourceKind::*;
    let mut r = url_req(srv.url("/assets"));
    r.options.block_resources = vec![Image, Stylesheet, Fetch, Websocket];
    r.options.wait_for = Some("title:not(:empty)".into());
    let out = ok(pool.capture(r).await);
    assert_eq!(hits(&srv), [2, 2, 1, 2], "nothing more was requested");
    assert_eq!(out.page_title, "refused|blocked");
    let img = decode(&out.bytes);
    assert_px(&img, 400, 300, [255, 255, 255], 2);
    assert_ne!(px(&img, 25, 25), [0, 0, 255]);

    // With a filter list every request pauses: a kind is still told apart (fetch() is
    // `XHR` to the interceptor, `Fetch` to the page's network log, which decides).
    let mut r = url_req(srv.url("/assets"));
    r.options.block_resources = vec![Fetch];
    r.options.block_trackers = true;
    r.options.wait_for = Some("title:not(:empty)".into());
    let out = ok(pool.capture(r).await);
    assert_eq!(hits(&srv), [3, 3, 2, 2], "everything but the fetch loaded");
    assert_eq!(out.page_title, "open|blocked");
    pool.shutdown().await;
}
