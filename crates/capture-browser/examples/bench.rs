//! Capture timings on this machine: the raw DevTools floor, then the pool.
//!
//! `cargo run --release -p capture-browser --example bench -- [N] [browsers] [pages]`
//! (RUST_LOG=capture_browser::timing=debug shows per-phase timings.)

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use capture_browser::{BrowserPool, ImageFormat, WaitUntil};
use support::*;

fn stats(name: &str, mut v: Vec<Duration>, wall: Option<Duration>) {
    v.sort();
    let p = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    let rate = wall.map(|w| format!(", {:.1}/s", v.len() as f64 / w.as_secs_f64())).unwrap_or_default();
    println!(
        "{name:<34} n={:<3} p50={:>6.1}ms p90={:>6.1}ms max={:>6.1}ms{rate}",
        v.len(),
        p(0.5).as_secs_f64() * 1e3,
        p(0.9).as_secs_f64() * 1e3,
        v[v.len() - 1].as_secs_f64() * 1e3
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::from_default_env()).init();
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(40);
    let browsers: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2);
    let pages: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(2);
    let page = "<html><head><title>Bench</title><style>body{font-family:sans-serif;margin:40px;background:#f4f4f8}</style></head><body><h1>Simple page</h1><p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p></body></html>";
    let srv = Server::start(Arc::new(move |path: &str, _c: &str| match path {
        "/img.png" => Resp::Full(200, "image/png", solid_png(64, 64, [0, 150, 0]), 20),
        // Incompressible pixels: a full-page capture of it is tens of MB.
        "/noise" => html(NOISE_PAGE),
        "/lazy" => {
            let mut s = String::from("<html><body style='margin:0'>");
            for _ in 0..30 {
                s.push_str("<img loading='lazy' src='/img.png' style='display:block;width:100%;height:200px'>");
            }
            html(&(s + "</body></html>"))
        }
        _ => html(page),
    }))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let url = srv.url("/");

    // A 4th argument picks one part: "floor" or "seq" (for CPU accounting with `time`).
    let only = args.get(4).cloned().unwrap_or_default();
    if only == "transport" {
        // Big DevTools messages alone: a 48 MB string returned by value, then a small one.
        let mut b = capture_browser::floor::FloorBrowser::launch(&chromium_path(), dir.path()).await.unwrap();
        for (name, expr) in [("evaluate 48 MB string", "'x'.repeat(48 << 20)"), ("evaluate small", "'x'")] {
            b.evaluate_loop(expr, 1).await.unwrap();
            let (v, size) = b.evaluate_loop(expr, n).await.unwrap();
            stats(&format!("{name} ({size} B)"), v, None);
        }
        b.shutdown().await;
        return;
    }
    if only.is_empty() || only == "floor" {
        let floor =
            capture_browser::floor::bare_devtools_capture_loop(&chromium_path(), dir.path(), &url, n).await.unwrap();
        stats("raw DevTools floor (1 page)", floor, None);
        if only == "floor" {
            return;
        }
    }

    let mut cfg = config(dir.path().to_path_buf(), true);
    cfg.browsers = browsers;
    cfg.pages_per_browser = pages;
    let pool = BrowserPool::start(cfg).await.unwrap();
    let mk = |wait: WaitUntil| {
        let mut r = url_req(url.clone());
        r.options.width = 1280;
        r.options.height = 800;
        r.options.wait_until = wait;
        r
    };
    if only == "big" {
        // Big DevTools messages: full-page captures of a 1280x8000 noise page.
        for (name, fmt) in
            [("full page noise 1280x8000 jpeg", ImageFormat::Jpeg), ("full page noise 1280x8000 png", ImageFormat::Png)]
        {
            let mut v = Vec::new();
            let mut size = 0;
            for _ in 0..4 {
                let mut r = url_req(srv.url("/noise"));
                r.options.width = 1280;
                r.options.height = 800;
                r.options.full_page = true;
                r.options.format = fmt;
                r.deadline = Duration::from_secs(120);
                r.options.timeout_ms = 60_000;
                let t = Instant::now();
                let out = pool.capture(r).await.unwrap();
                v.push(t.elapsed());
                assert_eq!(out.height, Some(8000));
                size = out.bytes.len();
            }
            stats(&format!("{name} ({} MB)", size >> 20), v, None);
        }
        pool.shutdown().await;
        return;
    }
    if only == "idle" {
        // CPU of a pool that sits idle (with its spare pages) for 10 s.
        tokio::time::sleep(Duration::from_secs(10)).await;
        pool.shutdown().await;
        return;
    }
    // warm up
    for _ in 0..4 {
        pool.capture(mk(WaitUntil::Load)).await.unwrap();
    }
    let mut seq = Vec::new();
    for _ in 0..n / 2 {
        let t = Instant::now();
        pool.capture(mk(WaitUntil::Load)).await.unwrap();
        seq.push(t.elapsed());
    }
    stats("pool sequential load/png", seq, None);
    if only == "seq" {
        cpu_report();
        pool.shutdown().await;
        return;
    }

    for (name, wait, fmt) in [
        ("pool concurrent load/png", WaitUntil::Load, ImageFormat::Png),
        ("pool concurrent load/jpeg", WaitUntil::Load, ImageFormat::Jpeg),
        ("pool concurrent networkidle/png", WaitUntil::Networkidle, ImageFormat::Png),
    ] {
        let t = Instant::now();
        let mut tasks = Vec::new();
        let conc = browsers * pages;
        let per = n / conc;
        for _ in 0..conc {
            let pool = pool.clone();
            let mut r = mk(wait);
            r.options.format = fmt;
            tasks.push(tokio::spawn(async move {
                let mut v = Vec::new();
                for _ in 0..per {
                    let t = Instant::now();
                    pool.capture(r.clone()).await.unwrap();
                    v.push(t.elapsed());
                }
                v
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        stats(name, all, Some(t.elapsed()));
    }

    let t = Instant::now();
    let mut v = Vec::new();
    for _ in 0..6 {
        let mut r = url_req(srv.url("/lazy"));
        r.options.width = 1280;
        r.options.height = 800;
        r.options.full_page = true;
        let t = Instant::now();
        let out = pool.capture(r).await.unwrap();
        assert_eq!(out.height, Some(6000));
        v.push(t.elapsed());
    }
    stats("full page 6000px, 30 lazy imgs", v, Some(t.elapsed()));
    println!("restarts: {}", pool.restarts());
    pool.shutdown().await;
}

/// A 1280x8000 canvas of random pixels.
const NOISE_PAGE: &str = "<html><body style='margin:0'><canvas id=c width=1280 height=8000 style='display:block'></canvas><script>const c=document.getElementById('c').getContext('2d');const d=c.createImageData(1280,8000);const a=d.data;let x=12345;for(let i=0;i<a.length;i++){x^=x<<13;x^=x>>>17;x^=x<<5;x>>>=0;a[i]=(i&3)===3?255:x&255;}c.putImageData(d,0,0);</script></body></html>";

/// CPU seconds per process (own, and reaped children), from /proc (Linux).
fn cpu_report() {
    let tick = 100.0;
    let Ok(dir) = std::fs::read_dir("/proc") else { return };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|p| p.parse::<u32>().ok()) else { continue };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let kind = cmd
            .split_whitespace()
            .find(|a| a.starts_with("--type=") || a.starts_with("--utility-sub-type="))
            .unwrap_or_else(|| cmd.split_whitespace().next().unwrap_or("?"))
            .to_owned();
        let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else { continue };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / tick;
        // fields after ") ": state=0 ... utime=11 stime=12 cutime=13 cstime=14
        println!("cpu pid={pid:<6} own={:>6.2}s children={:>6.2}s {kind}", num(11) + num(12), num(13) + num(14));
    }
}
