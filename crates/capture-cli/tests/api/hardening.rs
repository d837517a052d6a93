//! What an adversarial test of the running service broke, each tried again: one tenant
//! stalling every worker, idempotency keys left in flight by a client that hung up, the
//! service's own listeners reachable from a rendered page, and the charge of a job that
//! failed on its own script.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::helpers::*;

fn site_pages() -> Vec<(&'static str, &'static str, String)> {
    vec![("/red", "text/html", solid("#ff0000")), ("/blue", "text/html", solid("#0000ff"))]
}

/// A job whose own script never finishes: it holds a worker until its deadline.
fn hanging_job(url: &str) -> Value {
    json!({"url": url, "waitUntil": "load", "timeoutMs": 1000, "preScreenshotJs": "await new Promise(() => {})"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_account_flooding_hanging_jobs_leaves_workers_for_everyone_else() {
    let site = Site::start(site_pages()).await;
    // Four workers; a free account may run two jobs at once.
    let app = TestApp::spawn(
        Opts::full(Db::Sqlite)
            .env("CAPTURE_WORKER_CONCURRENCY", "4")
            .env("CAPTURE_BROWSERS", "1")
            .env("CAPTURE_MAX_RUNNING_PER_ACCOUNT", "free=2"),
    )
    .await;
    let (_, mallory) = app.user_with_key("free");
    let (_, alice) = app.user_with_key("free");
    let mut hanging = Vec::new();
    for _ in 0..8 {
        hanging.push(app.create(&mallory, hanging_job(&site.url("/red"))).await["id"].as_str().unwrap().to_string());
    }
    // Mallory's jobs are picked up (two at a time at most) before Alice asks.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let statuses = statuses(&app, &mallory, &hanging).await;
        let running = statuses.iter().filter(|s| *s == "processing").count();
        assert!(running <= 2, "mallory runs {running} jobs at once: {statuses:?}");
        if running == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "mallory's jobs never started: {statuses:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Alice's trivial job runs on a free worker at once: it is done while every one of
    // Mallory's jobs is still hanging (their deadline is half a minute away).
    let job = app.create(&alice, json!({"url": site.url("/blue"), "waitUntil": "load"})).await;
    let done = app.wait(&alice, job["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "done", "{done}");
    let statuses = statuses(&app, &mallory, &hanging).await;
    assert!(
        statuses.iter().all(|s| s == "pending" || s == "processing"),
        "alice finished while mallory's jobs still hang: {statuses:?}"
    );
    assert!(statuses.iter().filter(|s| *s == "processing").count() <= 2, "{statuses:?}");
}

async fn statuses(app: &TestApp, key: &str, ids: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for id in ids {
        let v: Value = app.get(key, &format!("/v1/screenshot/{id}")).await.json().await.unwrap();
        out.push(v["status"].as_str().unwrap().to_string());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_that_fails_on_its_own_script_keeps_its_charge_and_an_unreachable_one_does_not() {
    let site = Site::start(site_pages()).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free");
    // The tenant's own selector: clicking what is not there fails the job, charged.
    let job = app
        .create(
            &key,
            json!({"url": site.url("/red"), "waitUntil": "load", "clickBefore": "#missing", "timeoutMs": 1000}),
        )
        .await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "failed", "{done}");
    // Nothing listens there: the page could not be reached at all, given back.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let job = app.create(&key, json!({"url": format!("http://127.0.0.1:{port}/")})).await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "failed", "{done}");
    let b: Value = app.get(&key, "/v1/account/balance").await.json().await.unwrap();
    assert_eq!(b["usage"]["used"], 1, "only the job that failed on its own selector is charged: {b}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_that_hangs_up_right_after_sending_never_strands_its_idempotency_key() {
    // API only: jobs stay pending, so every charge is visible as a job.
    let app = TestApp::spawn(Opts::api(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("pro");
    let addr = app.url("").trim_start_matches("http://").trim_end_matches('/').to_string();
    let body = json!({"url": "https://example.com/"}).to_string();
    let keys: Vec<String> = (0..30).map(|i| format!("hangup-{i}-{}", rand_suffix())).collect();
    for k in &keys {
        // Send the whole request, then close the connection without reading the answer.
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let req = format!(
            "POST /v1/screenshot HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\
             Content-Type: application/json\r\nIdempotency-Key: {k}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        drop(s);
    }
    // Each retry with the same key gets the one job the first request made (or makes it
    // now, if the first never arrived): never a 409 that outlives a moment.
    let mut ids = Vec::new();
    for k in &keys {
        let deadline = Instant::now() + Duration::from_secs(20);
        let v = loop {
            let r = app
                .client
                .post(app.url("/v1/screenshot"))
                .bearer_auth(&key)
                .header("idempotency-key", k)
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let v: Value = r.json().await.unwrap();
            if status == 202 {
                break v;
            }
            assert_eq!(status, 409, "{v}");
            assert!(Instant::now() < deadline, "key {k} stayed in flight: {v}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        ids.push(v["id"].as_str().unwrap().to_string());
    }
    let distinct: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(distinct.len(), keys.len(), "one job per key");
    // No job was created (and charged) that the client cannot learn: every charge is one
    // of the jobs the retries named.
    let b: Value = app.get(&key, "/v1/account/balance").await.json().await.unwrap();
    assert_eq!(b["usage"]["used"], keys.len(), "{b}");
    let list: Value = app.get(&key, "/v1/screenshots?limit=100").await.json().await.unwrap();
    let listed: std::collections::HashSet<String> =
        list["data"].as_array().unwrap().iter().map(|j| j["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(listed, ids.into_iter().collect(), "the account's jobs are exactly the ones the retries got");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_services_own_listeners_stay_out_of_reach_even_with_loopback_allowed() {
    let site = Site::start(site_pages()).await;
    // Loopback allowed (the tests' own sites live there), yet the API itself is refused.
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free");
    let ok = app.create(&key, json!({"url": site.url("/red"), "waitUntil": "load"})).await;
    assert_eq!(app.wait(&key, ok["id"].as_str().unwrap()).await["status"], "done");
    for path in ["/openapi.json", "/healthz"] {
        let job = app.create(&key, json!({"url": app.url(path), "waitUntil": "load", "timeoutMs": 3000})).await;
        let done = app.wait(&key, job["id"].as_str().unwrap()).await;
        assert_eq!(done["status"], "failed", "{path}: {done}");
        let e = done["error"].as_str().unwrap().to_lowercase();
        assert!(e.contains("own listener") || e.contains("egress") || e.contains("blocked"), "{path}: {e}");
    }
    // And a webhook endpoint pointing at the service itself is refused up front.
    let r = app
        .post_json(&key, "/v1/webhooks", &json!({"url": app.url("/v1/screenshots").replace("http://", "https://")}))
        .await;
    assert_eq!(r.status(), 400);
}
