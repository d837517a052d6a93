//! Full pages taller than one capture (16,384 output pixels): captured screen by screen and
//! written into one image as the screens arrive — the whole page, its fixed header once, its
//! lazy image loaded — up to 60,000 pixels (tagged past it), with the process's memory bounded.

mod support;

use std::sync::Arc;

use capture_browser::{BrowserPool, CaptureError, CaptureOutput, ImageFormat};
use support::*;

fn band(i: u32) -> [u8; 3] {
    [((i * 37) % 200 + 20) as u8, ((i * 91) % 200 + 20) as u8, 128]
}

/// A page `bands` × 1000 px tall: a band of its own colour every 1000 px, a fixed magenta
/// header, a lazy green image at 30,200 px (when the page is that tall).
fn tall_page(bands: u32) -> String {
    let mut s = String::from(
        "<!doctype html><html><head><style>body{margin:0} .b{height:1000px} \
         header{position:fixed;top:0;left:0;right:0;height:60px;background:rgb(255,0,255);z-index:9}</style></head><body><header></header>",
    );
    for i in 0..bands {
        let [r, g, b] = band(i);
        s.push_str(&format!("<div class=b style='background:rgb({r},{g},{b})'></div>"));
    }
    if bands > 31 {
        s.push_str("<img loading=lazy src='/lazy.png' style='position:absolute;top:30200px;left:100px;width:200px;height:200px'>");
    }
    s.push_str("</body></html>");
    s
}

fn hwm_kb() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)).unwrap().parse().unwrap()
}

fn ok(r: Result<CaptureOutput, CaptureError>) -> CaptureOutput {
    r.unwrap_or_else(|e| panic!("capture failed: {e:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_40000_px_page_is_captured_whole_with_its_header_once_and_memory_bounded() {
    let srv = Server::start(Arc::new(|path: &str, _: &str| match path {
        "/tall" => html(&tall_page(40)),
        "/taller" => html(&tall_page(70)),
        "/short" => html(&tall_page(20)),
        "/lazy.png" => Resp::Full(200, "image/png", solid_png(200, 200, [0, 200, 0]), 0),
        _ => Resp::Full(404, "text/plain", b"no".to_vec(), 0),
    }))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path().to_path_buf(), true);
    cfg.browsers = 1;
    let pool = BrowserPool::start(cfg).await.expect("pool starts");
    let full = |path: &str| {
        let mut r = url_req(srv.url(path));
        r.options.width = 1280;
        r.options.height = 800;
        r.options.full_page = true;
        r.options.wait_until = capture_core::WaitUntil::Load;
        r.options.cookie_consent = capture_core::options::CookieConsent::None;
        r
    };
    // Warm: the browser's own memory is not the encoder's.
    ok(pool.capture(full("/short")).await);
    let before = hwm_kb();
    let t = std::time::Instant::now();
    let out = ok(pool.capture(full("/tall")).await);
    let took = t.elapsed();
    let grew_mb = (hwm_kb() - before) as f64 / 1024.0;
    eprintln!(
        "40,000 px full page: {} bytes PNG in {took:?}; this process's peak RSS grew {grew_mb:.1} MB \
         (the whole image as RGBA would be {:.0} MB)",
        out.bytes.len(),
        1280.0 * 40000.0 * 4.0 / 1048576.0
    );
    assert!(grew_mb < 200.0, "peak RSS grew {grew_mb:.1} MB");
    assert_eq!((out.width, out.height), (Some(1280), Some(40000)));
    assert!(!out.tags.iter().any(|t| t == "fullpage-truncated"), "{:?}", out.tags);
    let img = decode(&out.bytes);
    assert_eq!((img.width(), img.height()), (1280, 40000));
    for i in 0..40 {
        assert_eq!(px(&img, 640, i * 1000 + 500), band(i), "band {i}");
    }
    // The fixed header once, at the top; every later screen shows the page under it.
    assert_eq!(px(&img, 640, 10), [255, 0, 255]);
    for y in [810, 1610, 16_410, 39_210] {
        assert_eq!(px(&img, 640, y), band(y / 1000), "no header at {y}");
    }
    // The lazy image, 30,200 px down, loaded.
    assert_eq!(px(&img, 150, 30_300), [0, 200, 0]);
    drop(img);
    let thumb = decode(out.thumbnail.as_ref().unwrap());
    assert_eq!(thumb.width(), 320);

    // Past 60,000 px: cut there, and said so.
    let out = ok(pool.capture(full("/taller")).await);
    assert_eq!(out.height, Some(60_000));
    assert!(out.tags.iter().any(|t| t == "fullpage-truncated"), "{:?}", out.tags);
    let img = decode(&out.bytes);
    assert_eq!(px(&img, 640, 59_500), band(59));
    drop(img);

    // JPEG the same way; WebP (its format stops at 16,383 px) keeps one capture and the cap.
    let mut r = full("/short");
    r.options.format = ImageFormat::Jpeg;
    let out = ok(pool.capture(r).await);
    assert_eq!((out.content_type, out.height), ("image/jpeg", Some(20_000)));
    let img = decode(&out.bytes);
    for i in [0u32, 7, 19] {
        assert_px(&img, 640, i * 1000 + 500, band(i), 6);
    }
    let mut r = full("/short");
    r.options.format = ImageFormat::Webp;
    let out = ok(pool.capture(r).await);
    assert_eq!(out.height, Some(16_383));
    assert!(out.tags.iter().any(|t| t == "fullpage-truncated"), "{:?}", out.tags);
    pool.shutdown().await;
}
