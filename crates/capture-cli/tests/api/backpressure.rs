//! Back-pressure: bounded queues answer at once with a JSON error and Retry-After (never a
//! timeout), refused jobs cost nothing, and jobs are accepted again once the queue drains —
//! on SQLite and PostgreSQL. The services start without workers, so accepted jobs stay
//! pending until a restart with workers drains them.

use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use crate::helpers::*;
use capture_testkit::both_dbs;

/// `n` concurrent creates of `body` with each of `keys` in turn: (status, headers, body).
async fn create_concurrently(app: &TestApp, keys: &[String], n: usize, body: Value) -> Vec<(u16, HeaderMap, Value)> {
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let (c, url, key, body) =
                (app.client.clone(), app.url("/v1/screenshot"), keys[i % keys.len()].clone(), body.clone());
            tokio::spawn(async move {
                let r = c.post(url).bearer_auth(key).json(&body).send().await.unwrap();
                let (s, h) = (r.status().as_u16(), r.headers().clone());
                (s, h, r.json::<Value>().await.unwrap())
            })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

fn retry_after(h: &HeaderMap) -> u64 {
    h.get("retry-after").expect("Retry-After").to_str().unwrap().parse().unwrap()
}

async fn metrics(app: &TestApp) -> String {
    app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap()
}

/// Every job of `key` ended done or failed.
async fn wait_all(app: &TestApp, key: &str) {
    let list: Value = app.get(key, "/v1/screenshots?limit=100").await.json().await.unwrap();
    for job in list["data"].as_array().unwrap() {
        app.wait(key, job["id"].as_str().unwrap()).await;
    }
}

async fn a_full_account_queue_answers_429_queue_full_until_it_drains(db: Db) {
    let site = Site::start(vec![("/red", "text/html", solid("#ff0000"))]).await;
    let mut app = TestApp::spawn(Opts::api(db).env("CAPTURE_QUEUE_MAX_PENDING_PER_ACCOUNT", "5")).await;
    let (_, key) = app.user_with_key("free").await;
    let (_, other) = app.user_with_key("free").await;
    let page = json!({"url": site.url("/red"), "width": 200, "height": 150, "waitUntil": "load"});

    let started = Instant::now();
    let answers = create_concurrently(&app, std::slice::from_ref(&key), 20, page.clone()).await;
    let accepted = answers.iter().filter(|(s, _, _)| *s == 202).count();
    assert_eq!(accepted, 5, "{answers:?}");
    for (status, h, v) in answers.iter().filter(|(s, _, _)| *s != 202) {
        assert_eq!(*status, 429, "{v}");
        assert_eq!(v["code"], "QUEUE_FULL", "{v}");
        assert_eq!(v["details"], json!({"pending": 5, "limit": 5, "scope": "account"}));
        assert!(v["error"].as_str().unwrap().contains("retry"), "{v}");
        assert_eq!(v["requestId"], h["x-request-id"].to_str().unwrap());
        assert!(h["content-type"].to_str().unwrap().starts_with("application/json"));
        assert!(retry_after(h) >= 1);
        // At most the 5 accepted jobs are counted (some may commit after this answer).
        let remaining: i64 = h["x-ratelimit-remaining"].to_str().unwrap().parse().unwrap();
        assert!((95..=100).contains(&remaining), "{remaining}");
    }
    assert!(started.elapsed() < Duration::from_secs(30), "refusals are immediate: {:?}", started.elapsed());
    let b: Value = app.get(&key, "/v1/account/balance").await.json().await.unwrap();
    assert_eq!(b["usage"]["used"], 5, "{b}");
    let list: Value = app.get(&key, "/v1/screenshots?limit=100").await.json().await.unwrap();
    assert_eq!(list["data"].as_array().unwrap().len(), 5);

    // Another account is not held back by this one.
    app.create(&other, page.clone()).await;

    // A refused idempotent request leaves nothing to replay: the same key runs again.
    let send = |app: &TestApp, body: &Value| {
        app.client
            .post(app.url("/v1/screenshot"))
            .bearer_auth(&key)
            .header("idempotency-key", "after-the-drain-1")
            .json(body)
            .send()
    };
    for _ in 0..2 {
        let r = send(&app, &page).await.unwrap();
        assert_eq!(r.status(), 429);
        assert!(r.headers().get("idempotency-replayed").is_none());
        assert_eq!(r.json::<Value>().await.unwrap()["code"], "QUEUE_FULL");
    }
    let m = metrics(&app).await;
    assert!(m.contains("capture_queue_refused_total{scope=\"account\"} 17"), "{m}");
    assert!(m.contains("capture_queue_tasks{kind=\"screenshot\",status=\"queued\"} 6"), "{m}");
    assert!(m.contains("capture_queue_max_pending{scope=\"account\"} 5"), "{m}");

    // Workers drain the queue; then the same request (same key) is accepted, once.
    app.terminate(20);
    app.start("api,worker,scheduler").await;
    wait_all(&app, &key).await;
    let r = send(&app, &page).await.unwrap();
    assert_eq!(r.status(), 202);
    assert!(r.headers().get("idempotency-replayed").is_none());
    let first: Value = r.json().await.unwrap();
    let r = send(&app, &page).await.unwrap();
    assert_eq!((r.status().as_u16(), r.headers()["idempotency-replayed"].to_str().unwrap()), (202, "true"));
    assert_eq!(r.json::<Value>().await.unwrap()["id"], first["id"]);
    let done = app.wait(&key, first["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "done", "{done}");
    let b: Value = app.get(&key, "/v1/account/balance").await.json().await.unwrap();
    assert_eq!(b["usage"]["used"], 6, "5 drained + 1: {b}");
}
both_dbs!(a_full_account_queue_answers_429_queue_full_until_it_drains);

async fn a_full_global_queue_answers_503_until_it_drains(db: Db) {
    let mut app = TestApp::spawn(Opts::api(db).env("CAPTURE_QUEUE_MAX_PENDING", "6")).await;
    let mut keys: Vec<String> = Vec::new();
    for _ in 0..3 {
        keys.push(app.user_with_key("free").await.1);
    }
    // Nothing listens on port 1: once workers run, these jobs fail at once (and give their
    // action back), which drains the queue.
    let dead = json!({"url": "http://127.0.0.1:1/", "timeoutMs": 2000});

    let answers = create_concurrently(&app, &keys, 24, dead.clone()).await;
    assert_eq!(answers.iter().filter(|(s, _, _)| *s == 202).count(), 6, "{answers:?}");
    for (status, h, v) in answers.iter().filter(|(s, _, _)| *s != 202) {
        assert_eq!(*status, 503, "{v}");
        assert_eq!(v["code"], "SERVICE_UNAVAILABLE", "{v}");
        assert_eq!(v["details"], json!({"reason": "queue_full", "scope": "global"}), "no other tenant's figures");
        assert_eq!(v["requestId"], h["x-request-id"].to_str().unwrap());
        assert!(retry_after(h) >= 1);
    }
    let mut used = 0;
    for key in &keys {
        let b: Value = app.get(key, "/v1/account/balance").await.json().await.unwrap();
        used += b["usage"]["used"].as_i64().unwrap();
    }
    assert_eq!(used, 6, "refused jobs used no action");
    let m = metrics(&app).await;
    assert!(m.contains("capture_queue_refused_total{scope=\"global\"} 18"), "{m}");
    assert!(m.contains("capture_jobs{status=\"pending\"} 6"), "{m}");
    assert!(m.contains("capture_queue_max_pending{scope=\"global\"} 6"), "{m}");

    app.terminate(20);
    app.start("api,worker,scheduler").await;
    for key in &keys {
        wait_all(&app, key).await;
    }
    let job = app.create(&keys[0], dead).await;
    assert_eq!(job["status"], "pending");
    // The worker's browser reports its memory.
    let m = eventually("browser memory in /metrics", Duration::from_secs(20), || async {
        let m = metrics(&app).await;
        if m.contains("capture_browser_memory_bytes{browser=\"0\"}") { Ok(m) } else { Err(m) }
    })
    .await;
    assert!(m.contains("capture_browser_memory_limit_bytes 2147483648"), "{m}");
    assert!(m.contains("capture_browser_restarts_total{reason=\"memory\"} 0"), "{m}");
}
both_dbs!(a_full_global_queue_answers_503_until_it_drains);
