//! Monitors' scheduler benchmark: `cargo bench -p capture-bench --bench monitors`.
//!
//! One node (`capture serve --roles api,scheduler`, SQLite) keeps `BENCH_MONITORS` monitors
//! (default 1,000) on a 5-minute schedule. Their due times are spread over `BENCH_WINDOW_S`
//! seconds (default 60: five times the rate of 1,000 monitors every 5 minutes), written straight
//! into the database, and the bench reports the lag from each due time to the start of its
//! check (its capture job queued and charged): p50, p99 and the worst, and how many due times
//! were missed. No worker runs, so the captures stay queued (the simulated part); then a
//! second node with a worker checks `BENCH_REAL` monitors (default 5) of a local page with real
//! Chromium captures and reports due-to-started and due-to-compared. Loopback only, bounded.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use sqlx::{Connection, Row};

mod support;

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

fn pct(v: &mut [i64], q: f64) -> i64 {
    v.sort();
    if v.is_empty() {
        return 0;
    }
    v[((v.len() as f64 - 1.0) * q).round() as usize]
}

async fn create_monitors(base: &str, key: &str, n: usize, url: &str, every: &str) -> Vec<String> {
    let client = reqwest::Client::new();
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let body = json!({"name": format!("m{i}"), "url": url, "schedule": {"every": every}, "paused": true,
                          "capture": {"width": 800, "height": 600, "fullPage": false}});
        let r = client.post(format!("{base}/v1/monitors")).bearer_auth(key).json(&body).send().await.unwrap();
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
        let m: Value = r.json().await.unwrap();
        ids.push(m["id"].as_str().unwrap().to_string());
    }
    ids
}

/// Make the monitors active and due at `due[i]` (ms), straight in the database.
async fn schedule(db: &std::path::Path, ids: &[String], due: &[i64]) {
    let url = format!("sqlite://{}", db.display());
    sqlx::any::install_default_drivers();
    let mut c = sqlx::AnyConnection::connect(&url).await.unwrap();
    let mut tx = c.begin().await.unwrap();
    for (id, at) in ids.iter().zip(due) {
        sqlx::query("UPDATE monitors SET status = 'active', next_run_at = $1 WHERE id = $2")
            .bind(*at)
            .bind(id)
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
}

/// Each monitor's first check: (monitor, created_at, completed_at, status).
async fn first_checks(db: &std::path::Path) -> Vec<(String, i64, Option<i64>, String)> {
    let url = format!("sqlite://{}", db.display());
    let mut c = sqlx::AnyConnection::connect(&url).await.unwrap();
    let rows = sqlx::query(
        "SELECT monitor_id, MIN(created_at) AS at, MIN(completed_at) AS done, MIN(status) AS status FROM monitor_checks GROUP BY monitor_id",
    )
    .fetch_all(&mut c)
    .await
    .unwrap();
    rows.iter()
        .map(|r| {
            (
                r.get::<String, _>("monitor_id"),
                r.get::<i64, _>("at"),
                r.try_get::<i64, _>("done").ok(),
                r.get::<String, _>("status"),
            )
        })
        .collect()
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::var("BENCH_MONITORS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let window_s: i64 = std::env::var("BENCH_WINDOW_S").ok().and_then(|v| v.parse().ok()).unwrap_or(60);
    let real: usize = std::env::var("BENCH_REAL").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let limits = [
        ("CAPTURE_PLAN_MONITORS", format!("pro={}", n + real + 10)),
        ("CAPTURE_QUEUE_MAX_PENDING", "1000000".to_string()),
        ("CAPTURE_QUEUE_MAX_PENDING_PER_ACCOUNT", "1000000".to_string()),
    ];

    // The scheduler alone: captures queued, never run.
    let server = support::Server::start("api,scheduler", &limits);
    let t = Instant::now();
    let ids = create_monitors(&server.base, &server.key, n, "http://127.0.0.1:9/page", "5m").await;
    println!("created {n} monitors in {:.1} s", t.elapsed().as_secs_f64());
    let start = now_ms() + 2_000;
    let due: Vec<i64> = (0..n).map(|i| start + (i as i64 * window_s * 1000) / n as i64).collect();
    let db = server.data_dir().join("capture.db");
    schedule(&db, &ids, &due).await;
    let deadline = Instant::now() + Duration::from_secs(window_s as u64 + 60);
    let checks = loop {
        let c = first_checks(&db).await;
        if c.len() >= n || Instant::now() > deadline {
            break c;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let due_of: std::collections::HashMap<&str, i64> =
        ids.iter().map(String::as_str).zip(due.iter().copied()).collect();
    let mut lags: Vec<i64> = checks.iter().filter_map(|(m, at, _, _)| due_of.get(m.as_str()).map(|d| at - d)).collect();
    let started = lags.len();
    println!(
        "scheduler: {started}/{n} due times over {window_s} s started ({} missed); lag due→check started: p50 {} ms, p99 {} ms, max {} ms (rss {:.0} MB)",
        n - started,
        pct(&mut lags, 0.5),
        pct(&mut lags, 0.99),
        lags.iter().max().copied().unwrap_or(0),
        server.rss_mb()
    );
    drop(server);

    // A sample with real captures: a worker on the same node.
    if real == 0 {
        return;
    }
    let page = axum::Router::new().route(
        "/page",
        axum::routing::get(|| async {
            axum::response::Html(format!(
                "<!doctype html><title>Bench</title><h1>Prices</h1><p class=t>{}</p>{}",
                now_ms(),
                "<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>".repeat(40)
            ))
        }),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/page", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, page).await.unwrap() });
    let server = support::Server::start("api,worker,scheduler", &limits);
    let ids = create_monitors(&server.base, &server.key, real, &url, "5m").await;
    let start = now_ms() + 2_000;
    let due: Vec<i64> = (0..real).map(|i| start + i as i64 * 1_000).collect();
    let db = server.data_dir().join("capture.db");
    schedule(&db, &ids, &due).await;
    let deadline = Instant::now() + Duration::from_secs(180);
    let checks = loop {
        let c = first_checks(&db).await;
        if (c.len() >= real && c.iter().all(|x| x.2.is_some())) || Instant::now() > deadline {
            break c;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let due_of: std::collections::HashMap<&str, i64> =
        ids.iter().map(String::as_str).zip(due.iter().copied()).collect();
    let mut started: Vec<i64> =
        checks.iter().filter_map(|(m, at, _, _)| due_of.get(m.as_str()).map(|d| at - d)).collect();
    let mut compared: Vec<i64> =
        checks.iter().filter_map(|(m, _, done, _)| Some(done.as_ref()? - due_of.get(m.as_str())?)).collect();
    let statuses: Vec<&str> = checks.iter().map(|c| c.3.as_str()).collect();
    println!(
        "real captures: {}/{real} checks ended ({statuses:?}); due→started p50 {} ms, max {} ms; due→compared p50 {} ms, max {} ms",
        compared.len(),
        pct(&mut started, 0.5),
        started.iter().max().copied().unwrap_or(0),
        pct(&mut compared, 0.5),
        compared.iter().max().copied().unwrap_or(0),
    );
}
