//! Webhook delivery benchmark: `cargo bench -p capture-bench --bench webhooks`.
//!
//! Starts the release `capture serve --roles api,scheduler` (SQLite), a local receiver on
//! 127.0.0.1 that answers 200 at once, queues `BENCH_DELIVERIES` (default 400) test pings
//! as fast as the API takes them, and reports deliveries per second and the p50/p95 time
//! from the event (`createdAt` in the signed body) to its receipt. Loopback only, bounded.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

mod support;

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::var("BENCH_DELIVERIES").ok().and_then(|v| v.parse().ok()).unwrap_or(400);
    let got: Arc<Mutex<Vec<(i64, String)>>> = Arc::default();
    let g = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: String| {
            let g = g.clone();
            async move {
                g.lock().unwrap().push((now_ms(), body));
                "{\"ok\":true}"
            }
        }),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}/hook", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });

    let server = support::Server::start("api,scheduler", &[("CAPTURE_WEBHOOK_ALLOW_HTTP", "true".into())]);
    let (base, key) = (server.base.clone(), server.key.clone());
    let client = reqwest::Client::new();
    let ep: Value = client
        .post(format!("{base}/v1/webhooks"))
        .bearer_auth(&key)
        .json(&json!({"url": hook}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = ep["endpoint"]["id"].as_str().unwrap().to_string();

    let t0 = Instant::now();
    let mut hs = Vec::new();
    for w in 0..8 {
        let (client, base, key, id) = (client.clone(), base.clone(), key.clone(), id.clone());
        hs.push(tokio::spawn(async move {
            for _ in (w..n).step_by(8) {
                let r = client.post(format!("{base}/v1/webhooks/{id}/test")).bearer_auth(&key).send().await.unwrap();
                assert!(r.status().is_success());
            }
        }));
    }
    for h in hs {
        h.await.unwrap();
    }
    let queued = t0.elapsed();
    let deadline = Instant::now() + Duration::from_secs(120);
    while got.lock().unwrap().len() < n {
        assert!(Instant::now() < deadline, "only {} of {n} delivered", got.lock().unwrap().len());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let total = t0.elapsed();
    let mut lat: Vec<i64> = got
        .lock()
        .unwrap()
        .iter()
        .map(|(at, body)| {
            let v: Value = serde_json::from_str(body).unwrap();
            let created = chrono_ms(v["createdAt"].as_str().unwrap());
            at - created
        })
        .collect();
    lat.sort();
    println!("webhook delivery benchmark: {n} deliveries to a local receiver");
    println!(
        "  queued through the API in {:.2} s ({:.0} events/s)",
        queued.as_secs_f64(),
        n as f64 / queued.as_secs_f64()
    );
    println!("  all delivered in {:.2} s: {:.1} deliveries/s", total.as_secs_f64(), n as f64 / total.as_secs_f64());
    println!(
        "  event -> receipt: p50 {} ms, p95 {} ms, max {} ms",
        lat[lat.len() / 2],
        lat[lat.len() * 95 / 100],
        lat[lat.len() - 1]
    );
    drop(server);
}

/// Parse `2026-11-23T00:00:00.123Z` into Unix milliseconds (no date crate needed).
fn chrono_ms(s: &str) -> i64 {
    let (date, time) = s.trim_end_matches('Z').split_once('T').unwrap();
    let d: Vec<i64> = date.split('-').map(|x| x.parse().unwrap()).collect();
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let t: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    let (y, m, day) = (d[0], d[1], d[2]);
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    let ms: i64 = format!("{frac:0<3}")[..3].parse().unwrap();
    ((days * 86400 + t[0] * 3600 + t[1] * 60 + t[2]) * 1000) + ms
}
