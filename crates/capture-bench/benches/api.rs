//! API throughput benchmark: `cargo bench -p capture-bench --bench api` (needs `wrk`:
//! `apt-get install wrk`).
//!
//! Starts the release `capture serve --roles api,scheduler` (SQLite, no Chromium) and, in
//! this process, a hello-world axum server as the baseline. `wrk -t1 -c32` loads each in
//! turn: the baseline, our `/healthz` (middleware only), and an authenticated
//! `GET /v1/screenshot/:id` of a finished job. Three rounds each, medians reported, with
//! the authenticated GET as a share of the baseline. Also reports the API process's
//! resident memory when idle and after the load. Loopback only, bounded (5 s per run).

use std::time::Duration;

mod support;
use support::{Server, median, pg_exec, pg_fresh_db};

fn wrk(url: &str, key: Option<&str>, secs: u64) -> f64 {
    let mut cmd = std::process::Command::new("wrk");
    cmd.args(["-t1", "-c32", &format!("-d{secs}s"), "--latency"]);
    if let Some(k) = key {
        cmd.args(["-H", &format!("Authorization: Bearer {k}")]);
    }
    let out = cmd.arg(url).output().expect("wrk is installed (apt-get install wrk)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("Non-2xx"), "wrk saw errors:\n{text}");
    text.lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no Requests/sec in wrk output:\n{text}"))
}

fn hello_world() -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let app = axum::Router::new().route("/", axum::routing::get(|| async { "Hello, World!" }));
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(format!("http://{}/", l.local_addr().unwrap())).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    rx.recv().unwrap()
}

/// A finished job to read: an uploaded PNG becomes a done job at once.
async fn finished_job(server: &Server) -> String {
    let mut png = Vec::new();
    image::RgbImage::from_pixel(64, 64, image::Rgb([255, 0, 0]))
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    let form = reqwest::multipart::Form::new()
        .part("file", reqwest::multipart::Part::bytes(png).file_name("red.png").mime_str("image/png").unwrap());
    let v: serde_json::Value = reqwest::Client::new()
        .post(format!("{}/v1/screenshot/upload", server.base))
        .bearer_auth(&server.key)
        .multipart(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["id"].as_str().unwrap_or_else(|| panic!("upload failed: {v}")).to_string()
}

fn main() {
    if std::process::Command::new("wrk").arg("--version").output().is_err() {
        eprintln!("this benchmark needs wrk: apt-get install wrk");
        std::process::exit(2);
    }
    let secs: u64 = std::env::var("BENCH_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let hello = hello_world();
    let server = Server::start("api,scheduler", &[]);
    std::thread::sleep(Duration::from_millis(500));
    let idle_rss = server.rss_mb();

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let id = rt.block_on(finished_job(&server));
    let get_url = format!("{}/v1/screenshot/{id}", server.base);
    let health = format!("{}/healthz", server.base);

    println!("API benchmark: wrk -t1 -c32, {secs} s per run, 3 rounds, medians");
    let (mut base, mut hz, mut get) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        base.push(wrk(&hello, None, secs));
        hz.push(wrk(&health, None, secs));
        get.push(wrk(&get_url, Some(&server.key), secs));
    }
    let (base, hz, get) = (median(base), median(hz), median(get));
    println!("{:<52} {:>10}", "case", "req/s");
    println!("{:<52} {:>10.0}", "baseline: hello-world axum (same machine)", base);
    println!("{:<52} {:>10.0} ({:.0} %)", "GET /healthz (our middleware, no auth)", hz, hz / base * 100.0);
    println!(
        "{:<52} {:>10.0} ({:.0} % of baseline; target >= 40 %)",
        "GET /v1/screenshot/:id (API key, SQLite)",
        get,
        get / base * 100.0
    );
    println!("API process memory: idle {idle_rss:.1} MB, after load {:.1} MB (target idle <= 60 MB)", server.rss_mb());
    drop(server);

    // The same read on PostgreSQL: key lookups are cached there too while the node's
    // listener hears every change (a revocation reaches every node in milliseconds).
    let db = format!("capture_apibench_{}", std::process::id());
    let pg = rt.block_on(pg_fresh_db(&db));
    let server = Server::start("api,scheduler", &[("CAPTURE_DATABASE_URL", pg)]);
    let id = rt.block_on(finished_job(&server));
    let mut get = Vec::new();
    for _ in 0..3 {
        get.push(wrk(&format!("{}/v1/screenshot/{id}", server.base), Some(&server.key), secs));
    }
    let get = median(get);
    println!(
        "{:<52} {:>10.0} ({:.0} % of baseline; target >= 40 %)",
        "GET /v1/screenshot/:id (API key, PostgreSQL)",
        get,
        get / base * 100.0
    );
    drop(server);
    rt.block_on(pg_exec(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")));
}
