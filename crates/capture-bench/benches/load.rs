//! Load test of a scaled-out set-up: `cargo bench -p capture-bench --bench load`.
//!
//! On PostgreSQL (a fresh database on `CAPTURE_TEST_PG_URL`'s server, dropped at the end)
//! it starts one API node and 1, then 2, worker nodes (`--roles worker`, one browser and
//! two pages each), all on loopback against a local page. Each worker node is confined to a
//! core of its own (`taskset`), so adding a worker adds a core, as adding a machine would. For each set-up it submits
//! `BENCH_JOBS` (default 120) jobs as fast as 16 clients can, then waits for all of them,
//! and reports: accepted requests/s on the API (also with no worker at all, for the API
//! node's own rate), captures/s (overall and per worker), and
//! p50/p95 queue wait (accepted → a worker starts it) and capture time, from the jobs'
//! own timestamps in the database. Bounded and loopback only.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::Connection;

mod support;
use support::{Node, create_account, ms, pct, pg_exec, pg_fresh_db, submit, wait_done};

async fn site() -> String {
    let page = "<!doctype html><html><head><title>Load</title></head><body><h1>Load test</h1><p>A simple page.</p></body></html>";
    let app = axum::Router::new().route("/", axum::routing::get(move || async move { axum::response::Html(page) }));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    base
}

struct Cell {
    accepted_per_s: f64,
    captures_per_s: f64,
    wait: Vec<Duration>,
    run: Vec<Duration>,
}

async fn cell(workers: usize, jobs: usize, page: &str) -> Cell {
    let db = format!("capture_load_{}_{}", std::process::id(), workers);
    let db_url = url::Url::parse(&pg_fresh_db(&db).await).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let envs: Vec<(String, String)> = vec![
        ("CAPTURE_LISTEN".into(), "127.0.0.1:0".into()),
        // One folder for every node: local files stand in for the shared bucket here.
        ("CAPTURE_DATA_DIR".into(), dir.path().join("data").display().to_string()),
        ("CAPTURE_DATABASE_URL".into(), db_url.to_string()),
        ("CAPTURE_MASTER_KEY".into(), "11".repeat(32)),
        ("CAPTURE_EGRESS_ALLOW".into(), "127.0.0.1".into()),
        ("CAPTURE_PLAN_LIMITS".into(), "pro=100000000".into()),
        ("CAPTURE_BROWSERS".into(), "1".into()),
        ("CAPTURE_WORKER_CONCURRENCY".into(), "2".into()),
        ("CAPTURE_LOG".into(), "warn".into()),
    ];
    let key = create_account(&envs);
    let api = Node::start("api,scheduler", &envs);
    let base = api.base.clone().unwrap();
    // Worker i runs on CPU i (when the machine has it): one core per worker node, as if
    // each were a machine of its own; the API node and PostgreSQL float.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let ws: Vec<Node> =
        (0..workers).map(|i| Node::start_on("worker", &envs, (workers <= cores).then_some(i))).collect();
    let client = reqwest::Client::new();
    // Let the browsers start, and warm each worker up with a couple of jobs.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let body = json!({"url": page, "waitUntil": "load"});
    let mut warm = Vec::new();
    for _ in 0..(2 * workers) {
        warm.push(submit(&client, &base, &key, &body).await);
    }
    wait_all(&client, &base, &key, &warm).await;

    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let t0 = Instant::now();
    let mut hs = Vec::new();
    for _ in 0..16 {
        let (client, base, key, next, body) = (client.clone(), base.clone(), key.clone(), next.clone(), body.clone());
        hs.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < jobs {
                ids.push(submit(&client, &base, &key, &body).await);
            }
            ids
        }));
    }
    let mut ids = Vec::new();
    for h in hs {
        ids.extend(h.await.unwrap());
    }
    let accepted = t0.elapsed();
    if workers == 0 {
        // The API alone: nothing runs the jobs.
        drop(api);
        pg_exec(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).await;
        return Cell {
            accepted_per_s: jobs as f64 / accepted.as_secs_f64(),
            captures_per_s: 0.0,
            wait: vec![],
            run: vec![],
        };
    }
    wait_all(&client, &base, &key, &ids).await;

    // Timings from the database: accepted (created_at) → started_at → completed_at.
    sqlx::any::install_default_drivers();
    let mut c = sqlx::AnyConnection::connect(db_url.as_str()).await.unwrap();
    let rows: Vec<(i64, i64, i64)> = sqlx::query_as(
        "SELECT created_at, started_at, completed_at FROM screenshots \
         WHERE status = 'done' AND id = ANY(string_to_array($1, ','))",
    )
    .bind(ids.join(","))
    .fetch_all(&mut c)
    .await
    .unwrap();
    let _ = c.close().await;
    assert_eq!(rows.len(), jobs, "every job is done");
    let first = rows.iter().map(|r| r.0).min().unwrap();
    let last = rows.iter().map(|r| r.2).max().unwrap();
    let wait = rows.iter().map(|r| Duration::from_millis((r.1 - r.0).max(0) as u64)).collect();
    let run = rows.iter().map(|r| Duration::from_millis((r.2 - r.1).max(0) as u64)).collect();
    drop(ws);
    drop(api);
    pg_exec(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).await;
    Cell {
        accepted_per_s: jobs as f64 / accepted.as_secs_f64(),
        captures_per_s: jobs as f64 / ((last - first) as f64 / 1000.0),
        wait,
        run,
    }
}

async fn wait_all(client: &reqwest::Client, base: &str, key: &str, ids: &[String]) {
    for id in ids {
        wait_done(client, base, key, id, Duration::from_millis(20)).await;
    }
}

#[tokio::main]
async fn main() {
    let jobs: usize = std::env::var("BENCH_JOBS").ok().and_then(|v| v.parse().ok()).unwrap_or(120);
    let page = site().await;
    println!(
        "load test: PostgreSQL, 1 API node, N worker nodes (1 browser, 2 pages, 1 core each), {jobs} jobs per cell, {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "{:<8} {:>12} {:>11} {:>12} {:>10} {:>10} {:>10} {:>10}",
        "workers", "accepted/s", "captures/s", "per worker", "wait p50", "wait p95", "run p50", "run p95"
    );
    // The API node alone (no workers: jobs stay queued), for its own acceptance rate.
    let c = cell(0, 4 * jobs, &page).await;
    println!("{:<8} {:>12.0} {:>11} (API node and PostgreSQL alone, {} jobs)", 0, c.accepted_per_s, "-", 4 * jobs);
    let mut rates = Vec::new();
    for workers in [1usize, 2] {
        let mut c = cell(workers, jobs, &page).await;
        rates.push(c.captures_per_s);
        println!(
            "{:<8} {:>12.0} {:>11.2} {:>12.2} {:>8.0}ms {:>8.0}ms {:>8.0}ms {:>8.0}ms",
            workers,
            c.accepted_per_s,
            c.captures_per_s,
            c.captures_per_s / workers as f64,
            ms(pct(&mut c.wait, 0.5)),
            ms(pct(&mut c.wait, 0.95)),
            ms(pct(&mut c.run, 0.5)),
            ms(pct(&mut c.run, 0.95)),
        );
    }
    println!("scaling 1 -> 2 workers: x{:.2}", rates[1] / rates[0]);
}
