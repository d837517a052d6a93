//! Integration tests: a real Chromium pool against fixture pages served on 127.0.0.1.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use capture_browser::{
    BrowserPool, CaptureError, EgressAllow, EgressPolicy, ImageFormat, MemoryLimit, PageSource, RestartReason,
    WaitUntil,
};
use support::*;

/// A pool plus its own work dir; shut down at the end of each test.
struct Fixture {
    pool: Arc<BrowserPool>,
    dir: tempfile::TempDir,
}

async fn pool_with(allow_private: bool, tweak: impl FnOnce(&mut capture_browser::BrowserConfig)) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path().to_path_buf(), allow_private);
    cfg.browsers = 1;
    tweak(&mut cfg);
    let pool = BrowserPool::start(cfg).await.expect("pool starts");
    Fixture { pool, dir }
}

async fn pool() -> Fixture {
    pool_with(true, |_| {}).await
}

async fn fixtures() -> Server {
    Server::start(Arc::new(|path: &str, cookie: &str| match path {
        "/red" => html("<html><head><title>Red page</title></head><body style='margin:0;background:rgb(255,0,0)'><p style='position:absolute;right:4px;bottom:4px;margin:0'>hello red</p></body></html>"),
        "/404" => Resp::Full(404, "text/html", b"<body style='background:rgb(0,0,255)'>not here</body>".to_vec(), 0),
        "/blue.png" => Resp::Full(200, "image/png", solid_png(50, 50, [0, 0, 255]), 0),
        "/green.png" => Resp::Full(200, "image/png", solid_png(64, 64, [0, 200, 0]), 30),
        "/redimg.png" => Resp::Full(200, "image/png", solid_png(50, 50, [255, 0, 0]), 0),
        "/slow" => Resp::Full(200, "text/plain", b"rgb(0, 128, 0)".to_vec(), 300),
        "/hang" => Resp::Hang,
        "/dark" => html("<html><head><style>body{margin:0;background:rgb(255,255,255)} @media (prefers-color-scheme: dark){body{background:rgb(0,0,0)}}</style></head><body></body></html>"),
        "/lazy" => {
            let mut s = String::from("<html><body style='margin:0;background:white'>");
            for _ in 0..30 {
                s.push_str("<img loading='lazy' src='/green.png' style='display:block;width:100%;height:200px'>");
            }
            s.push_str("</body></html>");
            html(&s)
        }
        "/tall" => html("<html><body style='margin:0'><div style='height:20000px;background:rgb(0,0,255)'></div></body></html>"),
        "/click" => html("<html><body style='margin:0;background:rgb(255,255,255);height:100vh'><div style='height:1500px'></div><button id='go' style='width:200px;height:80px' onclick=\"document.body.style.background='rgb(0,255,0)'\">Go</button></body></html>"),
        "/late" => html("<html><body style='margin:0;background:white'><script>setTimeout(()=>{const d=document.createElement('div');d.id='late';d.style.cssText='width:100%;height:300px;background:rgb(255,0,255)';document.body.appendChild(d)},300)</script></body></html>"),
        "/delayed-paint" => html("<html><body style='margin:0;background:white'><script>setTimeout(()=>{document.body.style.background='rgb(0,0,255)'},400)</script></body></html>"),
        "/netidle" => html("<html><body style='margin:0;background:rgb(255,0,0)'><script>addEventListener('load',()=>setTimeout(()=>fetch('/slow').then(r=>r.text()).then(t=>{document.body.style.background=t}),200))</script></body></html>"),
        "/consent" => html(concat!(
            "<html><body style='margin:0;background:rgb(255,255,255);overflow:hidden'>",
            "<div class='cookie-notice' style='position:fixed;top:0;left:0;right:0;height:100px;background:rgb(255,0,0)'>We use cookies.</div>",
            "<div id='onetrust-consent-sdk'><div id='onetrust-banner-sdk' style='position:fixed;bottom:0;left:0;right:0;height:150px;background:rgb(0,0,255)'>",
            "<button id='onetrust-accept-btn-handler' onclick=\"document.getElementById('onetrust-consent-sdk').remove();document.body.style.background='rgb(0,255,0)'\">Accept All</button>",
            "</div></div></body></html>")),
        "/state" => html(&format!(
            "<html><body style='margin:0'><script>const seen = document.cookie.includes('job=1') || localStorage.getItem('job') === '1' || {};document.cookie='job=1; path=/';localStorage.setItem('job','1');document.body.style.background = seen ? 'rgb(255,0,0)' : 'rgb(0,255,0)';</script></body></html>",
            if cookie.contains("job=1") { "true" } else { "false" })),
        "/pdf" => html("<html><head><title>Invoice</title></head><body><h1>Quarterly invoice 4711</h1><p>Pay within thirty days.</p></body></html>"),
        _ => Resp::Full(404, "text/plain", b"no".to_vec(), 0),
    }))
    .await
}

fn ok(r: Result<capture_browser::CaptureOutput, CaptureError>) -> capture_browser::CaptureOutput {
    match r {
        Ok(o) => o,
        Err(e) => panic!("capture failed: {e:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn png_of_a_red_page_with_thumbnail_title_and_url() {
    let srv = fixtures().await;
    let f = pool().await;
    let t = Instant::now();
    let out = ok(f.pool.capture(url_req(srv.url("/red"))).await);
    eprintln!("first capture {:?}", t.elapsed());
    assert_eq!(out.content_type, "image/png");
    assert_eq!((out.width, out.height), (Some(800), Some(600)));
    let img = decode(&out.bytes);
    assert_eq!(img.dimensions(), (800, 600));
    assert_px(&img, 400, 300, [255, 0, 0], 2);
    assert_eq!(out.page_title, "Red page");
    assert_eq!(out.final_url, srv.url("/red"));
    let thumb = decode(out.thumbnail.as_ref().unwrap());
    assert_eq!(thumb.width(), 320);
    assert!((239..=241).contains(&thumb.height()), "{:?}", thumb.dimensions());
    assert_px(&thumb, 160, 120, [255, 0, 0], 2);
    assert!(out.tags.is_empty(), "{:?}", out.tags);
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        ok(f.pool.capture(url_req(srv.url("/red"))).await);
        times.push(t.elapsed());
    }
    eprintln!("sequential png captures: {times:?}");
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jpeg_webp_dsf_and_http_status() {
    let srv = fixtures().await;
    let f = pool().await;
    let mut r = url_req(srv.url("/red"));
    r.options.format = ImageFormat::Jpeg;
    let out = ok(f.pool.capture(r).await);
    assert!(out.bytes.starts_with(&[0xFF, 0xD8, 0xFF]));
    assert_eq!(out.content_type, "image/jpeg");
    assert_eq!((out.width, out.height), (Some(800), Some(600)));
    assert_px(&decode(&out.bytes), 10, 10, [255, 0, 0], 12);

    let mut r = url_req(srv.url("/red"));
    r.options.format = ImageFormat::Webp;
    let out = ok(f.pool.capture(r).await);
    assert_eq!(&out.bytes[..4], b"RIFF");
    assert_eq!(&out.bytes[8..12], b"WEBP");
    assert_eq!(out.content_type, "image/webp");
    assert_eq!((out.width, out.height), (Some(800), Some(600)));
    assert_eq!(decode(&out.bytes).dimensions(), (800, 600));

    let mut r = url_req(srv.url("/red"));
    r.options.device_scale_factor = 2.0;
    let out = ok(f.pool.capture(r).await);
    assert_eq!((out.width, out.height), (Some(1600), Some(1200)));
    let img = decode(&out.bytes);
    assert_eq!(img.dimensions(), (1600, 1200));
    assert_px(&img, 1500, 1100, [255, 0, 0], 2);
    assert_eq!(decode(out.thumbnail.as_ref().unwrap()).width(), 320);

    let out = ok(f.pool.capture(url_req(srv.url("/404"))).await);
    assert!(out.tags.contains(&"http-404".to_string()), "{:?}", out.tags);
    assert_px(&decode(&out.bytes), 400, 300, [0, 0, 255], 2);
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn html_source_and_dark_mode() {
    let srv = fixtures().await;
    let f = pool().await;
    let out = ok(f
        .pool
        .capture(req(PageSource::Html(
            "<html><head><title>Inline</title></head><body style='margin:0;background:rgb(0,255,0)'>hi</body></html>"
                .into(),
        )))
        .await);
    assert_px(&decode(&out.bytes), 400, 300, [0, 255, 0], 2);
    assert_eq!(out.page_title, "Inline");

    let light = ok(f.pool.capture(url_req(srv.url("/dark"))).await);
    assert_px(&decode(&light.bytes), 400, 300, [255, 255, 255], 2);
    let mut r = url_req(srv.url("/dark"));
    r.options.dark_mode = true;
    let dark = ok(f.pool.capture(r).await);
    assert_px(&decode(&dark.bytes), 400, 300, [0, 0, 0], 2);
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdf_has_the_page_text_and_a_thumbnail() {
    let srv = fixtures().await;
    let f = pool().await;
    let mut r = url_req(srv.url("/pdf"));
    r.options.pdf = true;
    let out = ok(f.pool.capture(r).await);
    assert_eq!(out.content_type, "application/pdf");
    assert!(out.bytes.starts_with(b"%PDF-"));
    assert_eq!((out.width, out.height), (None, None));
    assert_eq!(decode(out.thumbnail.as_ref().unwrap()).width(), 320);
    assert_eq!(out.page_title, "Invoice");
    let file = f.dir.path().join("out.pdf");
    std::fs::write(&file, &out.bytes).unwrap();
    match std::process::Command::new("pdftotext").arg(&file).arg("-").output() {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(text.contains("Quarterly invoice 4711"), "pdf text: {text}");
        }
        _ => eprintln!("note: pdftotext not available; PDF text not checked"),
    }
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_page_loads_lazy_images_and_tiles_tall_pages() {
    let srv = fixtures().await;
    let f = pool().await;
    let mut r = url_req(srv.url("/lazy"));
    r.options.width = 1280;
    r.options.height = 800;
    r.options.full_page = true;
    let t = Instant::now();
    let out = ok(f.pool.capture(r).await);
    eprintln!("full page 6000 px with 30 lazy images: {:?}", t.elapsed());
    assert_eq!((out.width, out.height), (Some(1280), Some(6000)));
    let img = decode(&out.bytes);
    assert_eq!(img.dimensions(), (1280, 6000));
    for i in 0..30 {
        assert_px(&img, 640, i * 200 + 100, [0, 200, 0], 3);
    }
    assert!(!out.tags.iter().any(|t| t == "fullpage-truncated"));
    let thumb = decode(out.thumbnail.as_ref().unwrap());
    assert_eq!(thumb.width(), 320);
    assert!(thumb.height() <= 201, "thumbnail is the top of the page: {:?}", thumb.dimensions());

    // Taller than one capture: whole, screen by screen (tests/tall.rs has the rest).
    let mut r = url_req(srv.url("/tall"));
    r.options.full_page = true;
    let out = ok(f.pool.capture(r).await);
    assert_eq!((out.width, out.height), (Some(800), Some(20000)));
    let img = decode(&out.bytes);
    assert_eq!(img.height(), 20000);
    assert_px(&img, 400, 19_990, [0, 0, 255], 2);
    assert!(!out.tags.contains(&"fullpage-truncated".to_string()), "{:?}", out.tags);

    let mut r = url_req(srv.url("/tall"));
    r.options.full_page = true;
    r.options.device_scale_factor = 2.0;
    let out = ok(f.pool.capture(r).await);
    assert_eq!((out.width, out.height), (Some(1600), Some(40000)));
    assert!(!out.tags.contains(&"fullpage-truncated".to_string()));
    // WebP stops at its format's 16,383 pixels, and says so.
    let mut r = url_req(srv.url("/tall"));
    r.options.full_page = true;
    r.options.format = capture_browser::ImageFormat::Webp;
    let out = ok(f.pool.capture(r).await);
    assert_eq!((out.width, out.height), (Some(800), Some(16383)));
    assert!(out.tags.contains(&"fullpage-truncated".to_string()));
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn click_before_and_wait_for() {
    let srv = fixtures().await;
    let f = pool().await;
    let mut r = url_req(srv.url("/click"));
    r.options.click_before = Some("#go".into());
    let out = ok(f.pool.capture(r).await);
    assert_px(&decode(&out.bytes), 5, 5, [0, 255, 0], 2);

    let plain = ok(f.pool.capture(url_req(srv.url("/click"))).await);
    assert_px(&decode(&plain.bytes), 5, 5, [255, 255, 255], 2);

    let mut r = url_req(srv.url("/click"));
    r.options.click_before = Some("#nope".into());
    r.options.timeout_ms = 1000;
    match f.pool.capture(r).await {
        Err(CaptureError::Script(m)) => {
            assert_eq!(m, "clickBefore: no element matches '#nope' after 1000 ms")
        }
        other => panic!("expected a script error, got {:?}", other.map(|o| o.tags)),
    }

    let mut r = url_req(srv.url("/late"));
    r.options.wait_for = Some("#late".into());
    let out = ok(f.pool.capture(r).await);
    assert_px(&decode(&out.bytes), 10, 10, [255, 0, 255], 2);
    assert!(out.tags.is_empty(), "{:?}", out.tags);

    let mut r = url_req(srv.url("/red"));
    r.options.wait_for = Some("#never".into());
    r.options.timeout_ms = 1000;
    let t = Instant::now();
    let out = ok(f.pool.capture(r).await);
    assert!(t.elapsed() >= Duration::from_millis(900));
    assert!(out.tags.contains(&"wait-for-timeout".to_string()), "{:?}", out.tags);
    assert_px(&decode(&out.bytes), 10, 10, [255, 0, 0], 2);
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delay_and_pre_screenshot_js() {
    let srv = fixtures().await;
    let f = pool().await;
    let mut r = url_req(srv.url("/delayed-paint"));
    r.options.delay = 900;
    let out = ok(f.pool.capture(r).await);
    assert_px(&decode(&out.bytes), 10, 10, [0, 0, 255], 2);

    let mut r = url_req(srv.url("/red"));
    r.options.pre_screenshot_js = Some("document.body.style.background = 'rgb(0,0,255)'".into());
    let out = ok(f.pool.capture(r).await);
    assert_px(&decode(&out.bytes), 10, 10, [0, 0, 255], 2);

    let mut r = url_req(srv.url("/red"));
    r.options.pre_screenshot_js =
        Some("await new Promise(r => setTimeout(r, 150)); document.body.style.background = 'rgb(0,255,0)';".into());
    let out = ok(f.pool.capture(r).await);
    assert_px(&decode(&out.bytes), 10, 10, [0, 255, 0], 2);

    let mut r = url_req(srv.url("/red"));
    r.options.pre_screenshot_js = Some("throw new Error('boom')".into());
    match f.pool.capture(r).await {
        Err(CaptureError::Script(m)) => {
            assert!(m.starts_with("preScreenshotJs threw: ") && m.contains("boom"), "{m}")
        }
        other => panic!("expected a script error, got {:?}", other.map(|o| o.tags)),
    }

    // A script that never settles is bounded by timeoutMs, not by the job's whole deadline,
    // and the page it held serves the next capture.
    let mut r = url_req(srv.url("/red"));
    r.options.timeout_ms = 800;
    r.deadline = Duration::from_secs(60);
    r.options.pre_screenshot_js = Some("await new Promise(() => {})".into());
    let t = Instant::now();
    match f.pool.capture(r).await {
        Err(CaptureError::Timeout(m)) => {
            assert_eq!(m, "preScreenshotJs did not settle within 800 ms (timeoutMs)")
        }
        other => panic!("expected a timeout, got {:?}", other.map(|o| o.tags)),
    }
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(800) && took < Duration::from_secs(5), "{took:?}");
    let out = ok(f.pool.capture(url_req(srv.url("/red"))).await);
    assert_px(&decode(&out.bytes), 10, 10, [255, 0, 0], 2);
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_idle_waits_for_a_late_fetch() {
    let srv = fixtures().await;
    let f = pool().await;
    let mut r = url_req(srv.url("/netidle"));
    r.options.wait_until = WaitUntil::Networkidle;
    let t = Instant::now();
    let out = ok(f.pool.capture(r).await);
    eprintln!("networkidle with a late fetch: {:?}", t.elapsed());
    assert_px(&decode(&out.bytes), 10, 10, [0, 128, 0], 2);
    assert_eq!(srv.hits("/slow"), 1);

    let mut times = Vec::new();
    for _ in 0..3 {
        let mut r = url_req(srv.url("/red"));
        r.options.wait_until = WaitUntil::Networkidle;
        let t = Instant::now();
        ok(f.pool.capture(r).await);
        times.push(t.elapsed());
    }
    eprintln!("networkidle on a page without late requests: {times:?}");

    let mut r = url_req(srv.url("/red"));
    r.options.wait_until = WaitUntil::Domcontentloaded;
    ok(f.pool.capture(r).await);
    let mut r = url_req(srv.url("/red"));
    r.options.wait_until = WaitUntil::None;
    ok(f.pool.capture(r).await);
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_errors_and_timeouts() {
    let srv = fixtures().await;
    let f = pool().await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    match f.pool.capture(url_req(format!("http://127.0.0.1:{port}/"))).await {
        Err(CaptureError::Navigation(m)) => assert!(m.contains("refused"), "{m}"),
        other => panic!("expected a navigation error, got {:?}", other.map(|o| o.tags)),
    }
    match f.pool.capture(url_req("http://host.invalid/".into())).await {
        Err(CaptureError::Navigation(m)) => {
            assert!(m.contains("DNS lookup failed for host.invalid"), "{m}")
        }
        other => panic!("expected a navigation error, got {:?}", other.map(|o| o.tags)),
    }

    let mut r = url_req(srv.url("/hang"));
    r.options.timeout_ms = 1500;
    let t = Instant::now();
    match f.pool.capture(r).await {
        Err(CaptureError::Timeout(m)) => assert_eq!(m, "navigation timed out after 1500 ms"),
        other => panic!("expected a timeout, got {:?}", other.map(|o| o.tags)),
    }
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());

    let mut r = url_req(srv.url("/hang"));
    r.options.timeout_ms = 20_000;
    r.deadline = Duration::from_millis(2000);
    let t = Instant::now();
    match f.pool.capture(r).await {
        Err(CaptureError::Deadline(m)) => assert_eq!(m, "capture exceeded the 2000 ms deadline"),
        other => panic!("expected a timeout, got {:?}", other.map(|o| o.tags)),
    }
    assert!(t.elapsed() < Duration::from_millis(3000), "{:?}", t.elapsed());
    // The pool still works afterwards.
    ok(f.pool.capture(url_req(srv.url("/red"))).await);
    assert!(f.pool.check().await.is_ok());
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn egress_guard_blocks_private_addresses() {
    let srv = fixtures().await;
    let f = pool_with(false, |_| {}).await;
    match f.pool.capture(url_req(srv.url("/red"))).await {
        Err(CaptureError::Navigation(m)) => {
            assert!(m.contains("blocked by egress policy"), "{m}");
            assert!(m.contains("127.0.0.1 is a loopback address"), "{m}");
        }
        other => panic!("expected a blocked navigation, got {:?}", other.map(|o| o.tags)),
    }
    let port = srv.addr.port();
    match f.pool.capture(url_req(format!("http://localhost:{port}/red"))).await {
        Err(CaptureError::Navigation(m)) => assert!(m.contains("blocked by egress policy"), "{m}"),
        other => panic!("expected a blocked navigation, got {:?}", other.map(|o| o.tags)),
    }
    match f.pool.capture(url_req(format!("https://127.0.0.1:{port}/red"))).await {
        Err(CaptureError::Navigation(m)) => assert!(m.contains("blocked by egress policy"), "{m}"),
        other => panic!("expected a blocked navigation, got {:?}", other.map(|o| o.tags)),
    }
    assert_eq!(srv.hits("/red"), 0);
    // A "public" page (uploaded HTML) whose sub-resource points at loopback.
    let page = format!(
        "<html><body style='margin:0;background:rgb(0,255,0)'><img src='{}' style='display:block;width:800px;height:600px'></body></html>",
        srv.url("/redimg.png")
    );
    let out = ok(f.pool.capture(req(PageSource::Html(page))).await);
    assert_px(&decode(&out.bytes), 400, 300, [0, 255, 0], 2);
    assert_eq!(srv.hits("/redimg.png"), 0);
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_job_gets_a_fresh_context() {
    let srv = fixtures().await;
    let f = pool_with(true, |c| c.pages_per_browser = 1).await;
    for _ in 0..2 {
        let out = ok(f.pool.capture(url_req(srv.url("/state"))).await);
        // Green = no cookie / localStorage from an earlier job was visible.
        assert_px(&decode(&out.bytes), 10, 10, [0, 255, 0], 2);
    }
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browsers_are_recycled() {
    let srv = fixtures().await;
    let f = pool_with(true, |c| {
        c.recycle_after = 2;
        c.pages_per_browser = 1;
    })
    .await;
    for _ in 0..5 {
        let out = ok(f.pool.capture(url_req(srv.url("/red"))).await);
        assert_px(&decode(&out.bytes), 10, 10, [255, 0, 0], 2);
    }
    assert!(f.pool.restarts() >= 2, "restarts {}", f.pool.restarts());
    assert_eq!(f.pool.restarts_for(RestartReason::Recycle), f.pool.restarts());
    f.pool.shutdown().await;
}

/// Far below what any Chromium holds, so the guard trips at its first sample.
const TINY: u64 = 30 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_over_its_memory_limit_is_restarted_once_its_capture_finishes() {
    let srv = fixtures().await;
    // Only the drain threshold: nothing is killed mid-capture, so every capture must succeed.
    let f = pool_with(true, |c| {
        c.pages_per_browser = 1;
        c.memory_limit = Some(MemoryLimit { drain_above: TINY, kill_above: u64::MAX });
    })
    .await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut captures = 0;
    while f.pool.restarts_for(RestartReason::Memory) < 2 {
        assert!(Instant::now() < deadline, "no memory restarts after {captures} captures");
        let out = ok(f.pool.capture(url_req(srv.url("/red"))).await);
        assert_px(&decode(&out.bytes), 10, 10, [255, 0, 0], 2);
        captures += 1;
    }
    let stats = f.pool.stats();
    eprintln!("{captures} captures, 2 memory restarts");
    assert_eq!(stats.memory_limit, Some(TINY));
    assert_eq!(stats.restarts(RestartReason::Memory), f.pool.restarts_for(RestartReason::Memory));
    // Killing a browser on purpose is not counted as a crash as well.
    assert_eq!(f.pool.restarts_for(RestartReason::Crash), 0);
    assert_eq!(f.pool.restarts(), f.pool.restarts_for(RestartReason::Memory));
    // A browser after a restart serves captures too.
    ok(f.pool.capture(url_req(srv.url("/red"))).await);
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_far_over_its_memory_limit_is_restarted_during_its_capture() {
    let srv = fixtures().await;
    let f = pool_with(true, |c| c.memory_limit = Some(MemoryLimit::new(TINY))).await;
    let t = Instant::now();
    let mut r = url_req(srv.url("/hang"));
    r.options.timeout_ms = 30_000;
    // Killed at the next sample (every 2 s), long before the page's own timeout.
    match f.pool.capture(r).await {
        Err(e @ CaptureError::Browser(_)) => {
            assert!(e.is_transient(), "callers retry it");
            eprintln!("after {:?}: {e}", t.elapsed());
            let m = e.to_string();
            assert!(m.starts_with("the page exceeded the browser memory limit: the browser used "), "{m}");
            assert!(m.ends_with(" MB (limit 30 MB) and was restarted"), "{m}");
        }
        other => panic!("expected a browser error, got {:?}", other.map(|o| o.tags)),
    }
    assert!(t.elapsed() < Duration::from_secs(15), "took {:?}", t.elapsed());
    while f.pool.restarts_for(RestartReason::Memory) < 1 {
        assert!(t.elapsed() < Duration::from_secs(30), "the browser was not restarted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_memory_is_sampled_without_a_limit() {
    let f = pool_with(true, |_| {}).await;
    let t = Instant::now();
    let bytes = loop {
        if let Some(b) = f.pool.stats().memory[0] {
            break b;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "no memory sample");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // A running Chromium tree holds tens of megabytes at least, and far less than 4 GB idle.
    eprintln!("an idle browser: {} MB", bytes >> 20);
    assert!((20 << 20..4 << 30).contains(&bytes), "{bytes} bytes");
    assert_eq!(f.pool.stats().memory_limit, None);
    f.pool.shutdown().await;
}

fn pgrep(pattern: &str) -> Vec<String> {
    let out = std::process::Command::new("pgrep").arg("-f").arg("--").arg(pattern).output().expect("pgrep runs");
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_browser_fails_its_job_and_is_restarted() {
    let srv = fixtures().await;
    let f = pool().await;
    let work = f.dir.path().display().to_string();
    let pool2 = f.pool.clone();
    let url = srv.url("/hang");
    let job = tokio::spawn(async move {
        let mut r = url_req(url);
        r.options.timeout_ms = 20_000;
        pool2.capture(r).await
    });
    // The page is loading once the browser asked for it (the server then hangs).
    let t = Instant::now();
    while srv.hits("/hang") == 0 {
        assert!(t.elapsed() < Duration::from_secs(20), "the browser never asked for /hang");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Kill the browser's main process (not its helpers, not the watchdog shell).
    let main: Vec<String> = pgrep(&work)
        .into_iter()
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            cmd.contains("chromium")
                && !cmd.contains("--type=")
                && !cmd.starts_with("/bin/sh")
                && !cmd.starts_with("unshare")
        })
        .collect();
    assert_eq!(main.len(), 1, "browser processes: {main:?}");
    let status = std::process::Command::new("kill").args(["-9", &main[0]]).status().unwrap();
    assert!(status.success());
    match tokio::time::timeout(Duration::from_secs(10), job).await.unwrap().unwrap() {
        Err(CaptureError::Browser(m)) => eprintln!("killed browser: {m}"),
        other => panic!("expected a browser error, got {:?}", other.map(|o| o.tags)),
    }
    let out = ok(f.pool.capture(url_req(srv.url("/red"))).await);
    assert_px(&decode(&out.bytes), 10, 10, [255, 0, 0], 2);
    assert!(f.pool.restarts_for(RestartReason::Crash) >= 1);

    // A renderer crash fails only that job.
    match f.pool.capture(url_req("chrome://crash".into())).await {
        Err(CaptureError::Browser(m)) => eprintln!("crashed tab: {m}"),
        Err(e) => eprintln!("chrome://crash gave {e:?}"),
        Ok(_) => panic!("chrome://crash captured"),
    }
    ok(f.pool.capture(url_req(srv.url("/red"))).await);
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_and_drop_leave_no_processes_or_profiles() {
    let srv = fixtures().await;
    let f = pool_with(true, |c| c.browsers = 2).await;
    let work = f.dir.path().display().to_string();
    let mut jobs = Vec::new();
    for _ in 0..6 {
        let pool = f.pool.clone();
        let url = srv.url("/red");
        jobs.push(tokio::spawn(async move { pool.capture(url_req(url)).await }));
    }
    for j in jobs {
        ok(j.await.unwrap());
    }
    assert!(f.pool.check().await.is_ok());
    let dirs = f.pool.profile_dirs();
    assert_eq!(dirs.len(), 2);
    assert!(!pgrep(&work).is_empty());
    f.pool.shutdown().await;
    assert!(pgrep(&work).is_empty(), "left over: {:?}", pgrep(&work));
    for d in &dirs {
        assert!(!d.exists(), "{} still exists", d.display());
    }
    assert!(f.pool.capture(url_req(srv.url("/red"))).await.is_err());

    // Dropping the last handle kills the browsers too.
    let g = pool().await;
    let work = g.dir.path().display().to_string();
    ok(g.pool.capture(url_req(srv.url("/red"))).await);
    let dirs = g.pool.profile_dirs();
    drop(g.pool);
    let t = Instant::now();
    while !pgrep(&work).is_empty() && t.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(pgrep(&work).is_empty(), "left over after drop: {:?}", pgrep(&work));
    for d in &dirs {
        assert!(!d.exists(), "{} still exists", d.display());
    }
}

/// The browser's whole process tree: every process naming the pool's work folder, and
/// their descendants.
fn browser_tree(work: &str) -> Vec<u32> {
    let mut all = Vec::new();
    for root in pids_naming(work) {
        for p in process_tree(root) {
            if !all.contains(&p) {
                all.push(p);
            }
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devtools_has_no_port_a_page_could_reach() {
    let srv = fixtures().await;
    let f = pool().await;
    // A capture first, so every helper process (network service, renderers) is running.
    ok(f.pool.capture(url_req(srv.url("/red"))).await);
    let work = f.dir.path().display().to_string();
    let tree = browser_tree(&work);
    let main: Vec<u32> = tree
        .iter()
        .copied()
        .filter(|p| {
            let cmd = String::from_utf8_lossy(&std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default())
                .replace('\0', " ");
            cmd.contains("chromium")
                && !cmd.contains("--type=")
                && !cmd.starts_with("/bin/sh")
                && !cmd.starts_with("unshare")
        })
        .collect();
    assert_eq!(main.len(), 1, "main browser process in {tree:?}");
    let mut inodes = Vec::new();
    let mut readable = 0;
    for p in &tree {
        if let Some(i) = socket_inodes(*p) {
            readable += 1;
            inodes.extend(i);
        }
    }
    // The main process's fds were read (it holds IPC sockets), so an empty answer below
    // is not a blind one.
    assert!(socket_inodes(main[0]).is_some_and(|i| !i.is_empty()), "cannot read the browser's fds");
    assert!(readable >= 3, "read the fds of {readable} of {} processes", tree.len());
    let listening: Vec<u16> =
        tcp_listeners().into_iter().filter(|(_, inode)| inodes.contains(inode)).map(|(port, _)| port).collect();
    // A page would ask every port the browser listens on for its DevTools targets.
    let mut probes = String::new();
    for port in &listening {
        for path in ["/json/list", "/json/version"] {
            probes.push_str(&format!("fetch('http://127.0.0.1:{port}{path}').then(r=>r.text()).then(t=>{{document.title+=t.length}},()=>{{}});"));
        }
    }
    let page = format!("<html><head><title></title></head><body><script>{probes}</script></body></html>");
    let mut r = req(PageSource::Html(page));
    r.options.delay = 300;
    let out = ok(f.pool.capture(r).await);
    assert_eq!(out.page_title, "", "a page read a DevTools endpoint");
    assert!(listening.is_empty(), "the browser listens on TCP ports {listening:?}");
    let cmd = String::from_utf8_lossy(&std::fs::read(format!("/proc/{}/cmdline", main[0])).unwrap()).replace('\0', " ");
    assert!(cmd.contains("--remote-debugging-pipe"), "{cmd}");
    assert!(!cmd.contains("--remote-debugging-port"), "{cmd}");
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_listeners_and_the_proxy_are_refused_even_when_loopback_is_allowed() {
    let srv = fixtures().await;
    // Stands in for the API: allowed by the allowlist's 127.0.0.1, refused as a listener.
    let service = fixtures().await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path().to_path_buf(), true);
    cfg.browsers = 1;
    cfg.egress = EgressPolicy::new(EgressAllow::parse("127.0.0.1,localhost").unwrap(), vec![service.addr]);
    let pool = BrowserPool::start(cfg).await.expect("pool starts");
    let proxy = pool.egress_addr();
    let sport = service.addr.port();

    // The page itself.
    match pool.capture(url_req(service.url("/red"))).await {
        Err(CaptureError::Navigation(m)) => {
            assert_eq!(m, format!("blocked by egress policy: 127.0.0.1:{sport} is this service's own listener"))
        }
        other => panic!("expected a refusal, got {:?}", other.map(|o| o.tags)),
    }
    match pool.capture(url_req(format!("http://127.0.0.1:{}/", proxy.port()))).await {
        Err(CaptureError::Navigation(m)) => assert!(m.contains("own listener"), "{m}"),
        other => panic!("expected a refusal, got {:?}", other.map(|o| o.tags)),
    }
    // Sub-requests of an allowed page, in every spelling that reaches the listener.
    // Each spelling also asks the allowed fixture (a control: the same request to a port
    // that is no listener goes through, so a refusal below is the policy's).
    let hosts = ["127.0.0.1", "localhost", "0.0.0.0", "[::ffff:127.0.0.1]", "2130706433", "0x7f.1", "127.1"];
    let mut targets = Vec::new();
    for host in hosts {
        targets.push(format!("http://{host}:{sport}/red"));
        targets.push(format!("http://{host}:{}/", proxy.port()));
        targets.push(format!("http://{host}:{}/control/{}", srv.addr.port(), host.replace(['[', ']', ':'], "")));
    }
    let fetches: String = targets
        .iter()
        .map(|t| format!("fetch('{t}',{{mode:'no-cors'}}).catch(()=>{{}});new Image().src='{t}';"))
        .collect();
    let page = format!(
        "<html><body style='margin:0;background:rgb(0,255,0)'><img src='{}' style='width:10px;height:10px'><script>{fetches}</script></body></html>",
        srv.url("/blue.png")
    );
    let mut r = url_req(srv.url("/red"));
    r.source = PageSource::Html(page);
    r.options.wait_until = WaitUntil::Networkidle;
    let out = ok(pool.capture(r).await);
    assert_px(&decode(&out.bytes), 400, 300, [0, 255, 0], 2);
    // The allowed fixture was reached (so the page did run), the service never was.
    assert_eq!(srv.hits("/blue.png"), 1);
    for host in hosts {
        let control = srv.hits(&format!("/control/{}", host.replace(['[', ']', ':'], "")));
        // 0.0.0.0 needs an exact allowlist entry; every other spelling is 127.0.0.1.
        if host == "0.0.0.0" {
            assert_eq!(control, 0, "{host}");
        } else {
            assert!(control >= 1, "the control request through {host} did not arrive");
        }
    }
    assert_eq!(service.hits("/red"), 0);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_urls_are_refused_as_pages_frames_and_redirects() {
    let srv = Server::start(Arc::new(|path: &str, _c: &str| match path {
        "/frame" => html("<html><body style='margin:0;background:rgb(255,255,255)'><iframe src='file:///etc/passwd' style='display:block;width:800px;height:600px;border:0'></iframe></body></html>"),
        "/jump" => html("<html><body style='margin:0;background:rgb(255,0,0)'><script>location.href='file:///etc/passwd'</script></body></html>"),
        "/open" => html("<html><body style='margin:0;background:rgb(255,0,0)'><script>window.open('file:///etc/passwd')</script></body></html>"),
        _ => Resp::Full(404, "text/plain", b"no".to_vec(), 0),
    }))
    .await;
    let f = pool().await;
    for url in [
        "file:///etc/passwd",
        "FILE:///etc/passwd",
        "file://localhost/etc/passwd",
        "chrome://version",
        "data:text/html,hi",
    ] {
        match f.pool.capture(url_req(url.into())).await {
            Err(CaptureError::Navigation(m)) => assert!(m.contains("only http and https URLs"), "{url}: {m}"),
            other => panic!("{url}: expected a refusal, got {:?}", other.map(|o| o.final_url)),
        }
    }
    // A frame: the file is not shown (its text would be dark pixels on white).
    let white_frame = |out: &capture_browser::CaptureOutput| {
        let img = decode(&out.bytes);
        let dark = img.pixels().filter(|p| p.0[0] < 128 && p.0[1] < 128 && p.0[2] < 128).count();
        assert_eq!(dark, 0, "the frame shows something");
    };
    white_frame(&ok(f.pool.capture(url_req(srv.url("/frame"))).await));
    let page = "<html><body style='margin:0;background:rgb(255,255,255)'><iframe src='file:///etc/passwd' style='display:block;width:800px;height:600px;border:0'></iframe></body></html>";
    white_frame(&ok(f.pool.capture(req(PageSource::Html(page.into()))).await));
    // A page that sends itself or a popup to a file stays where it was.
    for path in ["/jump", "/open"] {
        let mut r = url_req(srv.url(path));
        r.options.delay = 300;
        let out = ok(f.pool.capture(r).await);
        assert_eq!(out.final_url, srv.url(path));
        assert_px(&decode(&out.bytes), 400, 300, [255, 0, 0], 2);
    }
    f.pool.shutdown().await;
}

/// A 1280x8000 canvas of pseudo-random pixels (incompressible: its PNG is tens of MB).
const NOISE_PAGE: &str = "<html><body style='margin:0'><canvas id=c width=1280 height=8000 style='display:block'></canvas><script>const c=document.getElementById('c').getContext('2d');const d=c.createImageData(1280,8000);const a=d.data;let x=12345;for(let i=0;i<a.length;i++){x^=x<<13;x^=x>>>17;x^=x<<5;x>>>=0;a[i]=(i&3)===3?255:x&255;}c.putImageData(d,0,0);</script></body></html>";

/// The pixel NOISE_PAGE draws at (x, y).
fn noise_px(x: u32, y: u32) -> [u8; 3] {
    let want = (y as usize * 1280 + x as usize) * 4;
    let mut v: u32 = 12345;
    let mut out = [0u8; 3];
    for i in 0..want + 3 {
        v ^= v << 13;
        v ^= v >> 17;
        v ^= v << 5;
        if i >= want {
            out[i - want] = v as u8;
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_page_capture_of_tens_of_megabytes_comes_through_the_pipe() {
    let f = pool().await;
    let mut r = req(PageSource::Html(NOISE_PAGE.into()));
    r.options.width = 1280;
    r.options.height = 800;
    r.options.full_page = true;
    // Drawing 10 million random pixels takes seconds on a busy machine.
    r.options.timeout_ms = 90_000;
    r.deadline = Duration::from_secs(120);
    let t = Instant::now();
    let out = ok(f.pool.capture(r).await);
    eprintln!("{} MB in {:?}", out.bytes.len() >> 20, t.elapsed());
    assert!(out.bytes.len() > 20 << 20, "{} bytes", out.bytes.len());
    assert_eq!((out.width, out.height), (Some(1280), Some(8000)));
    let img = decode(&out.bytes);
    for (x, y) in [(0, 0), (1279, 0), (640, 4000), (17, 7999)] {
        assert_px(&img, x, y, noise_px(x, y), 2);
    }
    // The pool goes on with ordinary captures.
    let out = ok(f.pool.capture(req(PageSource::Html("<body style='margin:0;background:rgb(255,0,0)'>".into()))).await);
    assert_px(&decode(&out.bytes), 10, 10, [255, 0, 0], 2);
    f.pool.shutdown().await;
}
