//! End-to-end capture benchmark: `cargo bench -p capture --bench capture`.
//!
//! Starts the real release `capture serve` (API + workers) against fixture pages on
//! 127.0.0.1, pushes jobs through the REST API at concurrency 1, 2 and 4 for a simple page
//! (`waitUntil: load`, png) and a 6000 px full page with 30 lazy images, and reports
//! captures/s and p50/p95 latency (request accepted → job done, as the client sees it).
//! In the same run it measures the floor: the same simple capture made by bare DevTools
//! calls on a warm page (no context per job, no proxy, no storage).
//!
//! Bounded: a fixed number of jobs per cell, loopback only. `BENCH_JOBS` overrides the
//! count (default 24).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;
use support::{Server, ms, pct, submit, wait_done};

async fn site() -> String {
    use axum::routing::get;
    let simple = "<!doctype html><html><head><title>Simple</title><style>body{font-family:sans-serif;background:#f4f4f4}</style></head><body><h1>Hello</h1><p>A simple page for the benchmark.</p></body></html>";
    let mut long = String::from(
        "<!doctype html><html><head><title>Long</title><style>body{margin:0}section{height:200px;border-bottom:1px solid #ccc}img{width:300px;height:150px;display:block}</style></head><body>",
    );
    for i in 0..30 {
        long.push_str(&format!("<section><img loading=\"lazy\" src=\"/img/{i}.svg\" alt=\"\"></section>"));
    }
    long.push_str("</body></html>");
    let app = axum::Router::new()
        .route("/simple", get(move || async move { axum::response::Html(simple) }))
        .route("/long", get(move || { let l = long.clone(); async move { axum::response::Html(l) } }))
        .route(
            "/img/{n}",
            get(|axum::extract::Path(n): axum::extract::Path<String>| async move {
                let hue = n.trim_end_matches(".svg").parse::<u32>().unwrap_or(0) * 12;
                (
                    [(axum::http::header::CONTENT_TYPE, "image/svg+xml")],
                    format!("<svg xmlns='http://www.w3.org/2000/svg' width='300' height='150'><rect width='300' height='150' fill='hsl({hue},70%,50%)'/></svg>"),
                )
            }),
        );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    base
}

fn start_server(concurrency: usize, browsers: usize) -> Server {
    Server::start(
        "api,worker,scheduler",
        &[("CAPTURE_WORKER_CONCURRENCY", concurrency.to_string()), ("CAPTURE_BROWSERS", browsers.to_string())],
    )
}

async fn run_cell(
    client: &reqwest::Client,
    s: &Server,
    body: Value,
    jobs: usize,
    concurrency: usize,
) -> (f64, Vec<Duration>) {
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let t0 = Instant::now();
    let mut handles = Vec::new();
    for _ in 0..concurrency {
        let (client, base, key, body, next) =
            (client.clone(), s.base.clone(), s.key.clone(), body.clone(), next.clone());
        handles.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < jobs {
                let t = Instant::now();
                let id = submit(&client, &base, &key, &body).await;
                wait_done(&client, &base, &key, &id, Duration::from_millis(5)).await;
                lat.push(t.elapsed());
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.unwrap());
    }
    (jobs as f64 / t0.elapsed().as_secs_f64(), all)
}

#[tokio::main]
async fn main() {
    let jobs: usize = std::env::var("BENCH_JOBS").ok().and_then(|v| v.parse().ok()).unwrap_or(24);
    let base = site().await;
    let client = reqwest::Client::new();
    let chromium =
        std::env::var_os("CAPTURE_CHROMIUM_PATH").map_or_else(capture_browser::default_chromium_path, Into::into);
    println!(
        "capture benchmark: {jobs} jobs per cell, {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("{:<44} {:>5} {:>10} {:>9} {:>9}", "case", "conc", "captures/s", "p50 ms", "p95 ms");

    // Floor: bare DevTools on one warm page per browser.
    let work = tempfile::tempdir().unwrap();
    for browsers in [1usize, 2] {
        let t0 = Instant::now();
        let mut hs = Vec::new();
        for _ in 0..browsers {
            let (c, w, u) = (chromium.clone(), work.path().to_path_buf(), format!("{base}/simple"));
            let n = jobs / browsers;
            hs.push(tokio::spawn(async move {
                capture_browser::floor::bare_devtools_capture_loop(&c, &w, &u, n).await.unwrap()
            }));
        }
        let mut lat = Vec::new();
        for h in hs {
            lat.extend(h.await.unwrap());
        }
        // Launch time is excluded from the rate: use the sum of per-browser busy time.
        let busy: Duration = lat.iter().sum::<Duration>() / browsers as u32;
        let _ = t0;
        let rate = lat.len() as f64 / busy.as_secs_f64();
        println!(
            "{:<44} {:>5} {:>10.2} {:>9.1} {:>9.1}",
            format!("floor: bare DevTools, warm page, {browsers} browser(s)"),
            browsers,
            rate,
            ms(pct(&mut lat, 0.5)),
            ms(pct(&mut lat, 0.95))
        );
    }

    for (conc, browsers) in [(1usize, 1usize), (2, 2), (4, 2)] {
        let server = start_server(conc, browsers);
        // Warm up: one capture so Chromium and the database are ready.
        run_cell(&client, &server, json!({"url": format!("{base}/simple"), "waitUntil": "load"}), 2, 1).await;
        let (rate, mut lat) =
            run_cell(&client, &server, json!({"url": format!("{base}/simple"), "waitUntil": "load"}), jobs, conc).await;
        println!(
            "{:<44} {:>5} {:>10.2} {:>9.1} {:>9.1}",
            format!("simple page, load, png ({browsers} browser(s))"),
            conc,
            rate,
            ms(pct(&mut lat, 0.5)),
            ms(pct(&mut lat, 0.95))
        );
        let (rate, mut lat) = run_cell(&client, &server, json!({"url": format!("{base}/simple")}), jobs, conc).await;
        println!(
            "{:<44} {:>5} {:>10.2} {:>9.1} {:>9.1}",
            "simple page, networkidle (default), png",
            conc,
            rate,
            ms(pct(&mut lat, 0.5)),
            ms(pct(&mut lat, 0.95))
        );
        let n = (jobs / 2).max(4);
        let (rate, mut lat) = run_cell(
            &client,
            &server,
            json!({"url": format!("{base}/long"), "fullPage": true, "waitUntil": "load"}),
            n,
            conc,
        )
        .await;
        println!(
            "{:<44} {:>5} {:>10.2} {:>9.1} {:>9.1}",
            "6000 px full page, 30 lazy images",
            conc,
            rate,
            ms(pct(&mut lat, 0.5)),
            ms(pct(&mut lat, 0.95))
        );
        drop(server);
    }
}
