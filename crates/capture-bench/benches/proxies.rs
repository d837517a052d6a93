//! What a customer's proxy costs a capture: `cargo bench -p capture-bench --bench proxies`.
//!
//! The engine (`capture_browser::BrowserPool`, one browser, one page slot) captures a realistic
//! local page (text, a stylesheet and a 600×400 photo-like PNG of a few hundred KB) directly and
//! through local proxies that speak the real protocols (`capture_testkit::proxies`: an HTTP
//! proxy answering CONNECT, a SOCKS5 proxy), the three interleaved round by round so a noisy
//! machine slows all of them alike. Prints each one's median and p90 and the overhead of the
//! proxied ones over the direct one (the goal: under 10 % through a local CONNECT proxy).
//! `BENCH_PROXY_ROUNDS` rounds (default 30). Loopback only, bounded.

use std::time::{Duration, Instant};

use capture_browser::{
    BrowserConfig, BrowserPool, CaptureOptions, CaptureRequest, EgressAllow, EgressPolicy, PageSource, WaitUntil,
};
use capture_core::egress::UpstreamProxy;
use capture_testkit::proxies::TestProxy;

fn photo_png() -> Vec<u8> {
    // Smooth gradients with noise: compresses like a photo (a few hundred KB).
    let mut seed: u32 = 0x1234_5678;
    let img = image::RgbImage::from_fn(600, 400, |x, y| {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let n = (seed & 0x3f) as u8;
        image::Rgb([(x / 3) as u8 ^ n, (y / 2) as u8 ^ (n >> 1), ((x + y) / 4) as u8 ^ (n << 1)])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

async fn site() -> String {
    use axum::http::header::CONTENT_TYPE;
    let png = photo_png();
    println!("page: html + css + a {} KB PNG", png.len() / 1024);
    let text = "<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.</p>".repeat(30);
    let html = format!(
        "<!doctype html><html><head><title>Bench</title><link rel=stylesheet href=/s.css></head>\
         <body><h1>Products</h1><img src=/photo.png width=600 height=400>{text}</body></html>"
    );
    let router = axum::Router::new()
        .route("/", axum::routing::get(move || async move { ([(CONTENT_TYPE, "text/html")], html) }))
        .route(
            "/s.css",
            axum::routing::get(|| async {
                ([(CONTENT_TYPE, "text/css")], "body{font-family:sans-serif;margin:24px;color:#223} h1{color:#a33}")
            }),
        )
        .route("/photo.png", axum::routing::get(move || async move { ([(CONTENT_TYPE, "image/png")], png) }));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, router).await.unwrap() });
    base
}

fn request(url: &str, proxy: Option<UpstreamProxy>) -> CaptureRequest {
    let options = CaptureOptions {
        url: Some(url.to_string()),
        wait_until: WaitUntil::Load,
        full_page: true,
        ..CaptureOptions::default()
    };
    CaptureRequest { source: PageSource::Url(url.to_string()), options, deadline: Duration::from_secs(30), proxy }
}

fn stats(v: &mut [Duration]) -> (f64, f64) {
    v.sort();
    let at = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1000.0;
    (at(0.5), at(0.9))
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::var("BENCH_PROXY_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(30);
    let url = site().await;
    let http = TestProxy::http("bench", None).await;
    let socks = TestProxy::socks5(None).await;
    let work = tempfile::tempdir().unwrap();
    let pool = BrowserPool::start(BrowserConfig {
        chromium_path: std::env::var_os("CAPTURE_CHROMIUM_PATH")
            .map_or_else(capture_browser::default_chromium_path, Into::into),
        browsers: 1,
        pages_per_browser: 1,
        recycle_after: 100_000,
        memory_limit: None,
        egress: EgressPolicy::new(EgressAllow::parse("127.0.0.1").unwrap(), Vec::new()),
        work_dir: work.path().to_path_buf(),
    })
    .await
    .expect("a browser");
    let kinds: [(&str, Option<UpstreamProxy>); 3] = [
        ("direct", None),
        ("http CONNECT proxy", Some(UpstreamProxy::parse(&http.url("http", None), "bench").unwrap())),
        ("socks5 proxy", Some(UpstreamProxy::parse(&socks.url("socks5", None), "bench").unwrap())),
    ];
    // Warm up each way (fonts, the image decoder, the first route).
    for (_, p) in &kinds {
        for _ in 0..3 {
            pool.capture(request(&url, p.clone())).await.expect("a capture");
        }
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); kinds.len()];
    let mut bytes = 0;
    for _ in 0..rounds {
        for (i, (_, p)) in kinds.iter().enumerate() {
            let t = Instant::now();
            let out = pool.capture(request(&url, p.clone())).await.expect("a capture");
            times[i].push(t.elapsed());
            bytes = out.bytes.len();
        }
    }
    println!("{rounds} rounds, full-page PNG of {} KB each", bytes / 1024);
    let (direct_p50, direct_p90) = stats(&mut times[0]);
    println!("{:<20} p50 {direct_p50:7.1} ms   p90 {direct_p90:7.1} ms", kinds[0].0);
    for (i, (name, _)) in kinds.iter().enumerate().skip(1) {
        let (p50, p90) = stats(&mut times[i]);
        println!(
            "{name:<20} p50 {p50:7.1} ms   p90 {p90:7.1} ms   overhead p50 {:+.1} %",
            (p50 / direct_p50 - 1.0) * 100.0
        );
    }
    println!(
        "the proxies saw {} CONNECTs and {} SOCKS5 connects",
        http.seen().iter().filter(|s| s.allowed).count(),
        socks.passed()
    );
    pool.shutdown().await;
}
