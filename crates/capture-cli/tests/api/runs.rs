//! Runs where processes matter: a worker killed mid-run, a second node without a browser,
//! a failing encoder on the server's PATH, and a live session finalised when the service
//! shuts down. The rest: `crates/capture-server/tests/service/api/runs.rs`.

use crate::helpers::*;
use capture_testkit::runs::*;
use capture_testkit::webhooks::Receiver;
use serde_json::{Value, json};
use std::time::Duration;

async fn a_worker_killed_mid_run_ends_it_exactly_once(db: Db) {
    let site = site().await;
    let rx = Receiver::start(vec![(200, Duration::ZERO)]).await;
    let mut app = TestApp::spawn(opts(db)).await;
    let (_, key) = app.user_with_key("pro").await;
    hook(&app, &key, &rx).await;
    let steps = json!([{"action": "wait", "ms": 60_000}]);
    let run = start(&app, &key, json!({"startUrl": site.url("/ticker"), "steps": steps, "timeoutMs": 120_000})).await;
    let id = run["id"].as_str().unwrap().to_string();
    wait_status(&app, &key, &id, &["running"], 60).await;
    app.kill9();
    app.start("api,worker,scheduler").await;
    let run = wait_end(&app, &key, &id).await;
    assert_eq!((run["status"].as_str(), run["endReason"].as_str()), (Some("failed"), Some("worker_lost")), "{run}");
    assert!(run["finalizationError"].as_str().unwrap().contains("stopped before finishing"), "{run}");
    rx.wait_for(1, Duration::from_secs(30)).await;
    // Sweeps and the re-claimed task come and go: still exactly one event.
    nothing_within("a second run event", Duration::from_secs(4), || async {
        let n = rx.all().len();
        (n != 1).then_some(n)
    })
    .await;
    let got = rx.all();
    assert_eq!(got.len(), 1, "{got:?}");
    let body: Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!((body["type"].as_str(), body["data"]["runId"].as_str()), (Some("run.failed"), Some(id.as_str())));
}

/// A live run is held by a node with a browser: one without (here the node that made the
/// connect URL) passes the client's connection on to it and relays; a wrong token is the
/// browser node's 401, and any node takes the stop.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_without_a_browser_passes_live_clients_on_to_one_with_a_browser() {
    let site = site().await;
    let app = TestApp::spawn(opts(Db::Postgres)).await;
    let api_only = app.node("api,scheduler", &[]).await;
    let (_, key) = app.user_with_key("pro").await;
    // Created through the API-only node: its connect URL names that node…
    let r = app
        .client
        .post(api_only.url("/v1/runs"))
        .bearer_auth(&key)
        .json(&json!({"startUrl": site.url("/blank"), "live": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 202);
    let run: Value = r.json().await.unwrap();
    let id = run["id"].as_str().unwrap();
    let endpoint = run["connectUrl"].as_str().unwrap().to_string();
    let there = endpoint.replace("ws://", "http://");
    // …which has no browser: it passes the connection on to the node with one. A wrong token
    // is refused there (401), and the run stays pending.
    let wrong = there.split("token=").next().unwrap().to_string() + "token=nope";
    let r = app
        .client
        .get(&wrong)
        .header("upgrade", "websocket")
        .header("connection", "upgrade")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .header("sec-websocket-version", "13")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    assert_eq!(get_run(&app, &key, id).await["status"], "pending");
    // The real token, through the API-only node: the worker node holds the run.
    let here = endpoint.clone();
    let (hold, args) = (script("hold.mjs"), [clients_dir().display().to_string(), here]);
    // Stopped once the client has its page (a stop between its connect and its first read
    // raced the client on a loaded machine).
    let client = node_connected(&hold, &args).await;
    wait_status(&app, &key, id, &["running"], 60).await;
    let r = app.client.post(api_only.url(&format!("/v1/runs/{id}/stop"))).bearer_auth(&key).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 202, "any node takes the stop");
    let out = client.await.unwrap();
    assert_eq!(out["url"], site.url("/blank"));
    let run = wait_end(&app, &key, id).await;
    assert_eq!((run["status"].as_str(), run["endReason"].as_str()), (Some("stopped"), Some("stopped")), "{run}");
}

async fn a_failing_encoder_fails_the_run_with_its_finalization_error(db: Db) {
    let site = site().await;
    let rx = Receiver::start(vec![(200, Duration::ZERO)]).await;
    // An ffmpeg that always fails, first on the service's PATH.
    let bin = tempfile::tempdir().unwrap();
    let fake = bin.path().join("ffmpeg");
    std::fs::write(&fake, "#!/bin/sh\necho 'encoder exploded' >&2\nexit 1\n").unwrap();
    std::process::Command::new("chmod").arg("+x").arg(&fake).status().unwrap();
    let path = format!("{}:{}", bin.path().display(), std::env::var("PATH").unwrap_or_default());
    let app = TestApp::spawn(opts(db).env("PATH", &path)).await;
    let (_, key) = app.user_with_key("pro").await;
    let secret = hook(&app, &key, &rx).await;
    let steps = json!([{"action": "goto", "url": site.url("/start")}, {"action": "wait", "ms": 300}]);
    let run = start(&app, &key, json!({"startUrl": site.url("/blank"), "steps": steps})).await;
    let id = run["id"].as_str().unwrap();
    let run = wait_end(&app, &key, id).await;
    assert_eq!((run["status"].as_str(), run["endReason"].as_str()), (Some("failed"), Some("finished")), "{run}");
    let why = run["finalizationError"].as_str().unwrap();
    assert!(why.contains("encoding the video failed") && why.contains("encoder exploded"), "{why}");
    assert!(run["error"].is_null() && run["videoUrl"].is_null());
    // What was known is kept: the steps, the page, the counts.
    assert!(run["stepResults"].as_array().unwrap().iter().all(|r| r["ok"] == true));
    assert_eq!((run["pageTitle"].as_str(), run["consoleErrorCount"].as_i64()), (Some("Sign up"), Some(3)));
    let body = event_of(&rx, &secret, id).await;
    assert_eq!(body["type"], "run.failed");
    let data = &body["data"];
    assert_eq!((data["finalizationError"].as_str(), data["pageTitle"].as_str()), (Some(why), Some("Sign up")));
    assert_eq!((data["consoleErrorCount"].as_i64(), data["networkErrorCount"].as_i64()), (Some(3), Some(2)));
    assert!(data["videoUrl"].is_null());
}

/// SIGTERM ends a connected live session, which is finalised before the process exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_live_session_is_finalised_when_the_service_shuts_down() {
    let site = site().await;
    let rx = Receiver::start(vec![(200, Duration::ZERO)]).await;
    let mut app = TestApp::spawn(opts(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("pro").await;
    let secret = hook(&app, &key, &rx).await;
    let run = start(&app, &key, json!({"startUrl": site.url("/ticker"), "live": true})).await;
    let id = run["id"].as_str().unwrap().to_string();
    let args = [clients_dir().display().to_string(), run["connectUrl"].as_str().unwrap().to_string()];
    // Returns once the client says it is connected.
    let client = node_connected(&script("hold.mjs"), &args).await;
    wait_status(&app, &key, &id, &["running"], 60).await;
    // About time itself: the session records a second of video before the shutdown.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(app.terminate(60).is_some(), "the service stopped");
    let out = tokio::time::timeout(Duration::from_secs(20), client).await.expect("disconnected").unwrap();
    assert_eq!(out["url"], site.url("/ticker"));
    app.start("api,worker,scheduler").await;
    let run = get_run(&app, &key, &id).await;
    assert_eq!((run["status"].as_str(), run["endReason"].as_str()), (Some("failed"), Some("shutdown")), "{run}");
    assert!(run["finalizationError"].as_str().unwrap().contains("shut down"), "{run}");
    assert_eq!(run["pageTitle"], "Ticker");
    assert!(video_seconds(&app, run["videoUrl"].as_str().unwrap()).await > 0.5);
    let body = event_of(&rx, &secret, &id).await;
    assert_eq!(body["type"], "run.failed");
}

capture_testkit::both_dbs!(a_worker_killed_mid_run_ends_it_exactly_once);
capture_testkit::both_dbs!(a_failing_encoder_fails_the_run_with_its_finalization_error);
