//! Durability: kill -9, lease expiry, graceful drain on SIGTERM, no leftover Chromium.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::*;
use capture_testkit::both_dbs;

async fn wait_status(app: &TestApp, key: &str, id: &str, status: &str) {
    eventually(&format!("job {id} reaches {status}"), Duration::from_secs(60), || async {
        let v: Value = app.get(key, &format!("/v1/screenshot/{id}")).await.json().await.unwrap();
        if v["status"] == status { Ok(()) } else { Err(v) }
    })
    .await;
}

async fn accepted_jobs_survive_a_hard_kill(db: Db) {
    let site = Site::start(vec![("/red", "text/html", solid("#ff0000"))]).await;
    let mut app = TestApp::spawn(Opts::api(db)).await;
    let (_, key) = app.user_with_key("free").await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(
            app.create(&key, json!({"url": site.url("/red"), "width": 200, "height": 150, "waitUntil": "load"})).await
                ["id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    app.kill9();
    app.start("api,worker,scheduler").await;
    for id in &ids {
        let v = app.wait(&key, id).await;
        assert_eq!(v["status"], "done", "{v}");
    }
}
both_dbs!(accepted_jobs_survive_a_hard_kill);

async fn a_dead_workers_job_returns_when_its_lease_expires(db: Db) {
    let site = Site::start(vec![("/red", "text/html", solid("#ff0000"))]).await;
    let mut app = TestApp::spawn(Opts::full(db).env("CAPTURE_QUEUE_LEASE", "2s")).await;
    let (_, key) = app.user_with_key("free").await;
    let id = app.create(&key, json!({"url": site.url("/red"), "delay": 4000, "width": 200, "height": 150})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    wait_status(&app, &key, &id, "processing").await;
    app.kill9();
    app.start("api,worker,scheduler").await;
    let v = app.wait(&key, &id).await;
    assert_eq!(v["status"], "done", "{v}");
    let b: Value = app.get(&key, "/v1/account/balance").await.json().await.unwrap();
    assert_eq!(b["usage"]["used"], 1, "charged once");
}
both_dbs!(a_dead_workers_job_returns_when_its_lease_expires);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_finishes_in_flight_captures_and_leaves_no_chromium_behind() {
    let site = Site::start(vec![("/red", "text/html", solid("#ff0000"))]).await;
    let mut app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free").await;
    let id = app.create(&key, json!({"url": site.url("/red"), "delay": 1500, "width": 200, "height": 150})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    wait_status(&app, &key, &id, "processing").await;
    let status = app.terminate(40).expect("the service stops after SIGTERM");
    assert!(status.success(), "{status:?}");
    let browser_dir = app.data_dir.join("browser");
    let leftovers =
        std::process::Command::new("pgrep").args(["-f", &browser_dir.display().to_string()]).output().unwrap();
    assert!(leftovers.stdout.is_empty(), "Chromium processes left: {}", String::from_utf8_lossy(&leftovers.stdout));
    let profiles: Vec<_> = std::fs::read_dir(&browser_dir).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(profiles.is_empty(), "profile folders left: {profiles:?}");
    app.start("api").await;
    let v: Value = app.get(&key, &format!("/v1/screenshot/{id}")).await.json().await.unwrap();
    assert_eq!(v["status"], "done", "the in-flight capture finished during the drain: {v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_hands_back_what_cannot_finish_before_the_deadline() {
    let site = Site::start(vec![("/red", "text/html", solid("#ff0000"))]).await;
    let mut app = TestApp::spawn(Opts::full(Db::Sqlite).env("CAPTURE_SHUTDOWN_GRACE", "1s")).await;
    let (_, key) = app.user_with_key("free").await;
    let id =
        app.create(&key, json!({"url": site.url("/red"), "delay": 25000, "width": 200, "height": 150})).await["id"]
            .as_str()
            .unwrap()
            .to_string();
    wait_status(&app, &key, &id, "processing").await;
    let t = Instant::now();
    app.terminate(30).expect("the service stops after SIGTERM");
    assert!(t.elapsed() < Duration::from_secs(15), "drain respects the deadline: {:?}", t.elapsed());
    app.start("api").await;
    let v: Value = app.get(&key, &format!("/v1/screenshot/{id}")).await.json().await.unwrap();
    assert_eq!(v["status"], "pending", "handed back to the queue: {v}");
}
