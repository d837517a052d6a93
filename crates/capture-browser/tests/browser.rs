//! Integration tests: a real Chromium pool against fixture pages served on 127.0.0.1.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use capture_browser::{
    BrowserPool, CaptureError, CaptureRequest, ImageFormat, PageSource, WaitUntil,
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
        "/red" => html("<html><head><title>Red page</title></head><body style='margin:0;background:rgb(255,0,0)'>hello red</body></html>"),
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
    r.format = ImageFormat::Jpeg;
    let out = ok(f.pool.capture(r).await);
    assert!(out.bytes.starts_with(&[0xFF, 0xD8, 0xFF]));
    assert_eq!(out.content_type, "image/jpeg");
    assert_eq!((out.width, out.height), (Some(800), Some(600)));
    assert_px(&decode(&out.bytes), 10, 10, [255, 0, 0], 12);

    let mut r = url_req(srv.url("/red"));
    r.format = ImageFormat::Webp;
    let out = ok(f.pool.capture(r).await);
    assert_eq!(&out.bytes[..4], b"RIFF");
    assert_eq!(&out.bytes[8..12], b"WEBP");
    assert_eq!(out.content_type, "image/webp");
    assert_eq!((out.width, out.height), (Some(800), Some(600)));
    assert_eq!(decode(&out.bytes).dimensions(), (800, 600));

    let mut r = url_req(srv.url("/red"));
    r.device_scale_factor = 2.0;
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
