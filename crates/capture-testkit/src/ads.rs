//! Helpers of the ad tests, shared by the in-process suite
//! (`crates/capture-server/tests/service/api/ads.rs`) and the multi-process one
//! (`crates/capture-cli/tests/api/ads.rs`).

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common::*;
use crate::sse::{json_events, read_sse};

pub const BRAND: [u8; 3] = [0xE4, 0x57, 0x2E];

pub fn bakery_page() -> String {
    r##"<!doctype html><html lang="en"><head>
<title>Fresh sourdough every morning | Crumb &amp; Co</title>
<meta name="theme-color" content="#E4572E">
<meta name="description" content="Handmade bread from a small bakery in Leeds, baked before sunrise.">
<style>
 body { margin: 0; font-family: sans-serif; background: #fffaf3; color: #222; }
 header { padding: 24px 48px; }
 .hero { padding: 120px 48px; background: #f6e7d8; }
 h1 { font-size: 64px; margin: 0 0 24px; }
 .btn { display: inline-block; padding: 16px 32px; background: #E4572E; color: #fff; text-decoration: none; font-size: 24px; }
 section { padding: 80px 48px; height: 900px; }
 section:nth-child(odd) { background: #fde2d6; }
</style></head><body>
<header><strong>Crumb &amp; Co</strong></header>
<div class="hero"><h1>Fresh sourdough every morning</h1>
<p>Order by 8pm tonight and collect a warm loaf at 7am tomorrow.</p>
<a class="btn" href="/order">Order now</a></div>
<main>
<section><h2>Flour from a mill twenty miles away</h2><p>We use nothing but flour, water and salt, and forty-eight hours of patience.</p></section>
<section><h2>Baked before sunrise</h2><p>Every loaf comes out of the oven less than three hours before you pick it up.</p></section>
<section><h2>Delivered across Leeds</h2><p>Our bakers cycle your bread to your door before breakfast, every day of the week.</p></section>
</main></body></html>"##
        .to_string()
}

pub async fn post(app: &impl Api, key: &str, path: &str, body: &Value, idem: Option<&str>) -> (u16, Value, bool) {
    let r = app.post_idem(key, path, body, idem).await;
    let status = r.status().as_u16();
    let replayed = r.headers().get("idempotency-replayed").is_some();
    (status, r.json().await.unwrap(), replayed)
}

pub async fn get_ad(app: &impl Api, key: &str, id: &str) -> Value {
    app.get(key, &format!("/v1/adshot/{id}")).await.json().await.unwrap()
}

pub async fn wait_ad(app: &impl Api, key: &str, id: &str, limit: Duration) -> Value {
    eventually(&format!("ad {id} finishes"), limit, || async move {
        let v = get_ad(app, key, id).await;
        if v["status"] == "done" || v["status"] == "failed" { Ok(v) } else { Err(v) }
    })
    .await
}

/// The ad's event stream to its end: `(event, data)`.
pub async fn ad_stream(app: &impl Api, key: &str, id: &str, limit: Duration) -> Vec<(String, Value)> {
    json_events(read_sse(app.client(), &app.url(&format!("/v1/adshot/{id}/stream")), key, limit).await)
}

pub fn ffprobe(path: &std::path::Path) -> Value {
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-print_format", "json", "-show_streams", "-show_format"])
        .arg(path)
        .output()
        .expect("ffprobe runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Mean volume in dBFS of `dur` seconds from `start`.
pub fn mean_volume(path: &std::path::Path, start: f64, dur: f64) -> f64 {
    let out = Command::new("ffmpeg")
        .args(["-hide_banner", "-nostats", "-ss", &start.to_string(), "-t", &dur.to_string(), "-i"])
        .arg(path)
        .args(["-vn", "-af", "volumedetect", "-f", "null", "-"])
        .output()
        .expect("ffmpeg runs");
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().find(|l| l.contains("mean_volume:")).unwrap_or_else(|| panic!("no volume: {err}"));
    line.split("mean_volume:").nth(1).unwrap().trim().trim_end_matches(" dB").parse().unwrap()
}

/// The frame at `t` seconds, decoded.
pub fn frame(path: &std::path::Path, t: f64) -> image::RgbImage {
    let out = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-ss", &t.to_string(), "-i"])
        .arg(path)
        .args(["-frames:v", "1", "-f", "image2pipe", "-vcodec", "png", "-"])
        .output()
        .expect("ffmpeg runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    image::load_from_memory(&out.stdout).unwrap().to_rgb8()
}

pub fn brand_pixels(img: &image::RgbImage) -> usize {
    img.pixels().filter(|p| (0..3).all(|i| (p[i] as i32 - BRAND[i] as i32).abs() <= 24)).count()
}

/// A server of binary files: `(path, content type, bytes)`.
pub async fn serve_files(files: Vec<(&'static str, &'static str, Vec<u8>)>) -> String {
    let mut router = axum::Router::new();
    for (path, ct, body) in files {
        router = router.route(
            path,
            axum::routing::get(move || {
                let body = body.clone();
                async move { ([(axum::http::header::CONTENT_TYPE, ct)], body) }
            }),
        );
    }
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, router).await.unwrap() });
    base
}

pub fn png(w: u32, h: u32, f: impl Fn(u32, u32) -> [u8; 3]) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb(f(x, y)));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

pub fn capture_media_hex(s: &str) -> [u8; 3] {
    let v = u32::from_str_radix(s.trim_start_matches('#'), 16).unwrap();
    [(v >> 16) as u8, (v >> 8) as u8, v as u8]
}
