//! Browser session runs end to end: scripted runs of every step kind on fixture pages with
//! known console errors and failing requests, a failing step named, stop, live sessions
//! driven by real puppeteer-core (and a hostile client) through the service's DevTools
//! endpoint, the recorded video checked with ffprobe, webhooks verified, a worker killed
//! mid-run, and the latency figures beside a browserless-style `puppeteer.launch`.

use crate::helpers::*;
use capture_testkit::runs::*;
use capture_testkit::webhooks::{Receiver, verify};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The figures: a live session's start (POST to first page load, connect to first
/// command) beside a browserless-style `puppeteer.launch`, medians of 5 rounds each.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn live_session_start_latency_beside_puppeteer_launch() {
    let (site, app, key) = pro_app(opts(Db::Sqlite).env("CAPTURE_RUNS_MAX_ACTIVE_PER_ACCOUNT", "20")).await;
    let out = node(
        &script("latency.mjs"),
        &[
            clients_dir().display().to_string(),
            app.base.clone(),
            key.clone(),
            site.url("/blank"),
            chromium(),
            "5".into(),
        ],
    )
    .await;
    eprintln!("FIGURES {out}");
    assert_eq!(out["rounds"], 5);
    assert!(out["live"]["postToLoaded"].as_u64().unwrap() > 0 && out["launch"]["loaded"].as_u64().unwrap() > 0);
    let list: Value = app.get(&key, "/v1/runs?limit=5").await.json().await.unwrap();
    for r in list["data"].as_array().unwrap() {
        let r = wait_end(&app, &key, r["id"].as_str().unwrap()).await;
        assert_eq!(r["endReason"], "disconnected", "{r}");
    }
}

/// The fixture site, the app with `opts`, and a pro key.
async fn pro_app(opts: Opts) -> (Site, TestApp, String) {
    let site = site().await;
    let app = TestApp::spawn(opts).await;
    let (_, key) = app.user_with_key("pro").await;
    (site, app, key)
}

/// The fixture site, a webhook receiver, the app with `opts`, a pro key, and the secret of
/// the key's webhook endpoint (pointing at the receiver).
async fn with_hook(opts: Opts) -> (Site, Receiver, TestApp, String, String) {
    let rx = Receiver::start(vec![(200, Duration::ZERO)]).await;
    let (site, app, key) = pro_app(opts).await;
    let secret = hook(&app, &key, &rx).await;
    (site, rx, app, key, secret)
}

async fn a_scripted_run_of_every_step_kind(db: Db) {
    let (site, rx, app, key, secret) = with_hook(opts(db)).await;
    let run = start(
        &app,
        &key,
        json!({"startUrl": site.url("/blank"), "device": "pixel-8", "timeoutMs": 90_000, "steps": every_step(&site)}),
    )
    .await;
    let id = run["id"].as_str().unwrap();
    assert_eq!((run["status"].as_str(), run["kind"].as_str()), (Some("pending"), Some("scripted")));
    assert_eq!(run["actionsReserved"], 2, "1 per started minute of timeoutMs");
    assert_eq!(run["device"]["width"], 412);
    let events = stream(&app, &key, id).await;
    let run = get_run(&app, &key, id).await;
    eprintln!("run: {run}");
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["endReason"], "finished");
    let results = run["stepResults"].as_array().unwrap();
    let actions: Vec<&str> = results.iter().map(|r| r["action"].as_str().unwrap()).collect();
    assert_eq!(
        actions,
        [
            "goto",
            "waitFor",
            "type",
            "select",
            "hover",
            "assertText",
            "scroll",
            "scroll",
            "screenshot",
            "evaluate",
            "wait",
            "click",
            "waitFor",
            "assertUrl",
            "waitFor",
            "assertText",
            "press",
            "evaluate"
        ]
    );
    assert!(results.iter().all(|r| r["ok"] == true && r["durationMs"].is_u64()), "{results:?}");
    assert!(results[10]["durationMs"].as_u64().unwrap() >= 300, "the wait waited");
    assert_eq!(results[0]["result"]["status"], 200);
    assert_eq!(results[3]["result"], json!(["pro"]));
    assert_eq!(results[9]["result"], "Sign up 42");
    // The preset's device: its user agent, touch, screen and DPR (a page without a meta
    // viewport lays out 980 px wide on a phone, as on the real one).
    let device = &results[17]["result"];
    assert!(device[0].as_str().unwrap().contains("Pixel 8"), "{device}");
    assert_eq!((device[1].as_bool(), device[2].as_i64(), device[3].as_f64()), (Some(true), Some(412), Some(2.625)));
    let shot_url = results[8]["result"]["url"].as_str().unwrap();
    let (status, ct, png) = app.fetch(shot_url).await;
    assert_eq!((status, ct.as_str()), (200, "image/png"));
    let img = decode(&png);
    assert!(img.width().abs_diff(1082) <= 1, "the device's viewport at its DPR: {}", img.width());
    // The page's state and the exact error counts.
    assert_eq!(run["finalUrl"], site.url("/done?name=Ada&plan=pro"));
    assert_eq!(run["pageTitle"], "Done");
    assert_eq!(run["consoleErrorCount"], 3, "{}", run["consoleErrors"]);
    assert_eq!(run["networkErrorCount"], 2, "{}", run["networkErrors"]);
    let texts: Vec<&str> =
        run["consoleErrors"].as_array().unwrap().iter().map(|c| c["text"].as_str().unwrap()).collect();
    assert!(texts.contains(&"first error") && texts.contains(&"second error"), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("boom later")), "{texts:?}");
    let failed: Vec<&str> =
        run["networkErrors"].as_array().unwrap().iter().map(|c| c["url"].as_str().unwrap()).collect();
    assert!(failed.contains(&site.url("/missing.png").as_str()) && failed.contains(&site.url("/nope").as_str()));
    // The video covers the run.
    let secs = video_seconds(&app, run["videoUrl"].as_str().unwrap()).await;
    let ran = run["durationMs"].as_f64().unwrap() / 1000.0;
    eprintln!("video {secs:.2}s, run {ran:.2}s");
    assert!((secs - ran).abs() < 2.0, "video {secs}s vs run {ran}s");
    // Charged for the minute it ran; the reserved rest came back.
    assert_eq!((run["actionsReserved"].as_i64(), run["actionsCharged"].as_i64()), (Some(2), Some(1)));
    assert_eq!(used(&app, &key).await, 1);
    // The stream: pending/running, a step event per step, then completed with the run.
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.iter().filter(|n| **n == "step").count(), 18, "{names:?}");
    assert_eq!(names.last(), Some(&"completed"), "{names:?}");
    assert_eq!(events.last().unwrap().1["run"]["status"], "completed");
    // run.completed, once, signed.
    let got = rx.wait_for(1, Duration::from_secs(30)).await;
    nothing_within("a second event for the run", Duration::from_millis(500), || async {
        let all = rx.all();
        (all.len() > 1).then_some(all)
    })
    .await;
    assert_eq!(rx.all().len(), 1, "exactly one event per run");
    let body = verify(&secret, &got[0]).expect("the signature verifies");
    assert_eq!(body["type"], "run.completed");
    let data = &body["data"];
    assert_eq!(data["runId"], id);
    assert_eq!((data["consoleErrorCount"].as_i64(), data["networkErrorCount"].as_i64()), (Some(3), Some(2)));
    assert_eq!(data["finalUrl"], run["finalUrl"]);
    assert_eq!(data["pageTitle"], "Done");
    assert!(data["videoUrl"].as_str().unwrap().contains("/files/"), "{data}");
    assert!(data.get("finalizationError").is_none(), "{data}");
    // Listed, newest first.
    let list: Value = app.get(&key, "/v1/runs?limit=5").await.json().await.unwrap();
    assert_eq!(list["data"][0]["id"], id);
}

async fn a_failing_step_is_named_and_the_run_fails(db: Db) {
    let opts = opts(db).env("CAPTURE_RUNS_MAX_ACTIVE_PER_ACCOUNT", "1").env("CAPTURE_RUN_CONNECT_TTL", "2s");
    let (site, rx, app, key, secret) = with_hook(opts).await;
    let steps = json!([
        {"action": "evaluate", "expression": "1 + 1"},
        {"action": "click", "selector": "#missing", "timeoutMs": 700},
        {"action": "evaluate", "expression": "never"}
    ]);
    let run = start(&app, &key, json!({"startUrl": site.url("/blank"), "steps": steps, "recordVideo": false})).await;
    let id = run["id"].as_str().unwrap();
    // The account's bound on active runs: a second one is refused while the first is active.
    let r = app.post_json(&key, "/v1/runs", &json!({"startUrl": site.url("/blank"), "live": true})).await;
    let (status, v): (u16, Value) = (r.status().as_u16(), r.json().await.unwrap());
    if status == 429 {
        assert_eq!(v["code"], "CONCURRENCY_LIMIT", "{v}");
        assert_eq!(v["details"]["limit"], 1);
    } else {
        // The first had already ended (it is quick); the live one waits for a client: stop it.
        assert_eq!(status, 202, "{v}");
        stop(&app, &key, v["id"].as_str().unwrap()).await;
    }
    let events = stream(&app, &key, id).await;
    let run = wait_end(&app, &key, id).await;
    assert_eq!((run["status"].as_str(), run["endReason"].as_str()), (Some("failed"), Some("step_failed")), "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(error.starts_with("steps[1] (click '#missing'): "), "{error}");
    let results = run["stepResults"].as_array().unwrap();
    assert_eq!(results.len(), 2, "the steps after the failure do not run");
    assert_eq!((results[0]["ok"].as_bool(), results[0]["result"].as_i64()), (Some(true), Some(2)));
    assert_eq!(results[1]["ok"], false);
    assert_eq!(results[1]["error"], error);
    assert!(run["videoUrl"].is_null());
    let (last, data) = events.last().unwrap();
    assert_eq!(last, "failed");
    assert_eq!(data["error"], error);
    let body = event_of(&rx, &secret, id).await;
    assert_eq!(body["type"], "run.failed");
    assert_eq!(body["data"]["finalizationError"], error);
    // A live run nobody connects to ends failed once its token expires, and costs nothing.
    let lonely = start(&app, &key, json!({"startUrl": site.url("/blank"), "live": true})).await;
    let lonely_id = lonely["id"].as_str().unwrap();
    let lonely = wait_end(&app, &key, lonely_id).await;
    assert_eq!(
        (lonely["status"].as_str(), lonely["endReason"].as_str()),
        (Some("failed"), Some("not_connected")),
        "{lonely}"
    );
    assert_eq!(lonely["actionsCharged"], 0);
    let body = event_of(&rx, &secret, lonely_id).await;
    assert_eq!(body["type"], "run.failed");
    assert!(body["data"]["finalizationError"].as_str().unwrap().contains("no client connected"), "{body}");
    // Bad requests name their field; nothing is created.
    for (body, field) in [
        (json!({"startUrl": "file:///etc/passwd", "live": true}), "startUrl"),
        (json!({"startUrl": site.url("/"), "steps": [{"action": "fly"}]}), "steps[0].action"),
        (json!({"startUrl": site.url("/"), "steps": [{"action": "wait", "ms": 60_001}]}), "steps[0].ms"),
        (json!({"startUrl": site.url("/"), "live": true, "device": "nokia"}), "device"),
    ] {
        let r = app.post_json(&key, "/v1/runs", &body).await;
        assert_eq!(r.status().as_u16(), 400);
        let v: Value = r.json().await.unwrap();
        assert_eq!(
            (v["code"].as_str(), v["details"]["field"].as_str()),
            (Some("VALIDATION_ERROR"), Some(field)),
            "{v}"
        );
    }
    let r = app.get(&key, "/v1/runs/run_doesnotexist").await;
    assert_eq!(r.status().as_u16(), 404);
}

async fn stop_ends_a_running_run_cleanly(db: Db) {
    let (site, app, key) = pro_app(opts(db)).await;
    let steps = json!([{"action": "wait", "ms": 60_000}]);
    let run = start(&app, &key, json!({"startUrl": site.url("/ticker"), "steps": steps, "timeoutMs": 120_000})).await;
    let id = run["id"].as_str().unwrap();
    wait_status(&app, &key, id, &["running"], 60).await;
    // About time itself: the run records two seconds of video before it is stopped.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(stop(&app, &key, id).await.status().as_u16(), 202);
    let stopped_at = Instant::now();
    let run = wait_end(&app, &key, id).await;
    assert!(stopped_at.elapsed() < Duration::from_secs(15), "stopped promptly: {run}");
    assert_eq!((run["status"].as_str(), run["endReason"].as_str()), (Some("stopped"), Some("stopped")), "{run}");
    assert_eq!(run["pageTitle"], "Ticker");
    assert_eq!((run["actionsReserved"].as_i64(), run["actionsCharged"].as_i64()), (Some(2), Some(1)));
    let secs = video_seconds(&app, run["videoUrl"].as_str().unwrap()).await;
    let ran = run["durationMs"].as_f64().unwrap() / 1000.0;
    assert!((secs - ran).abs() < 2.0 && secs > 1.5, "video {secs}s vs run {ran}s");
    // Stopping again changes nothing.
    let again: Value = stop(&app, &key, id).await.json().await.unwrap();
    assert_eq!(again["status"], "stopped");
}

async fn puppeteer_drives_a_live_session(db: Db) {
    let (site, rx, app, key, secret) = with_hook(opts(db)).await;
    let t0 = Instant::now();
    let body = json!({"startUrl": site.url("/blank"), "live": true, "device": "desktop-1280"});
    let r = app.post_idem(&key, "/v1/runs", &body, Some("live-run-0001")).await;
    let post_ms = t0.elapsed().as_millis();
    assert_eq!(r.status().as_u16(), 202);
    let run: Value = r.json().await.unwrap();
    // A retry with the same key replays the answer (the same run, the same connect URL).
    let r = app.post_idem(&key, "/v1/runs", &body, Some("live-run-0001")).await;
    assert_eq!((r.status().as_u16(), r.headers()["idempotency-replayed"].to_str().unwrap()), (202, "true"));
    let replay: Value = r.json().await.unwrap();
    assert_eq!((&replay["id"], &replay["connectUrl"]), (&run["id"], &run["connectUrl"]));
    let id = run["id"].as_str().unwrap();
    assert_eq!(
        (run["kind"].as_str(), run["timeoutMs"].as_i64(), run["actionsReserved"].as_i64()),
        (Some("live"), Some(300_000), Some(5))
    );
    let endpoint = run["connectUrl"].as_str().unwrap().to_string();
    assert!(
        endpoint.starts_with(&format!("ws://{}/v1/runs/{id}/devtools?token=", app.base.trim_start_matches("http://"))),
        "{endpoint}"
    );
    // The connect URL is only in the create answer.
    assert!(get_run(&app, &key, id).await.get("connectUrl").is_none());
    let out = node(&clients_dir().join("puppeteer.mjs"), &[endpoint.clone(), site.base.clone()]).await;
    eprintln!("puppeteer: {out}");
    assert_eq!(out["pages"], 1, "the session's page, and nothing else");
    assert_eq!(out["url"], site.url("/done?name=Ada+Lovelace&plan=pro"));
    assert_eq!(out["text"], "name=Ada+Lovelace&plan=pro");
    assert_eq!((out["eval"].as_i64(), out["title"].as_str()), (Some(42), Some("Done")));
    assert_eq!(out["pagesWithSecond"], 2);
    // Disconnected: the run ends and is finalised.
    let run = wait_end(&app, &key, id).await;
    eprintln!("live run: {run}");
    assert_eq!((run["status"].as_str(), run["endReason"].as_str()), (Some("completed"), Some("disconnected")), "{run}");
    assert_eq!(run["finalUrl"], site.url("/done?name=Ada+Lovelace&plan=pro"));
    assert_eq!(run["pageTitle"], "Done");
    // The session's own page loaded the form once (the client's second page is not logged).
    assert_eq!(run["consoleErrorCount"], 3, "{}", run["consoleErrors"]);
    assert_eq!(run["networkErrorCount"], 2, "{}", run["networkErrors"]);
    assert_eq!(run["actionsCharged"], 1);
    let secs = video_seconds(&app, run["videoUrl"].as_str().unwrap()).await;
    let ran = run["durationMs"].as_f64().unwrap() / 1000.0;
    eprintln!("video {secs:.2}s, session {ran:.2}s");
    assert!((secs - ran).abs() < 2.0, "video {secs}s vs session {ran}s");
    // The token was single-use.
    let again = app
        .client
        .get(endpoint.replace("ws://", "http://"))
        .header("upgrade", "websocket")
        .header("connection", "upgrade")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .header("sec-websocket-version", "13")
        .send()
        .await
        .unwrap();
    assert_eq!(again.status().as_u16(), 401);
    let v: Value = again.json().await.unwrap();
    assert_eq!(v["code"], "UNAUTHORIZED");
    let got = rx.wait_for(1, Duration::from_secs(30)).await;
    let body = verify(&secret, &got[0]).unwrap();
    assert_eq!((body["type"].as_str(), body["data"]["runId"].as_str()), (Some("run.completed"), Some(id)));
    assert_eq!(body["data"]["consoleErrorCount"], 3);

    // Figures: a live session's start beside a browserless-style puppeteer.launch, same run.
    let launch =
        node(&script("launch.mjs"), &[clients_dir().display().to_string(), chromium(), site.url("/blank")]).await;
    eprintln!(
        "FIGURES live session: POST {post_ms} ms, connect {} ms, connect to first command {} ms; \
         puppeteer.launch: launch {} ms, first command {} ms, first page load {} ms",
        out["connectMs"], out["firstCommandMs"], launch["launchMs"], launch["firstCommandMs"], launch["loadedMs"]
    );
}

async fn a_hostile_live_client_is_refused_and_the_pool_unharmed(db: Db) {
    let (site, app, key) = pro_app(opts(db)).await;
    let run = start(&app, &key, json!({"startUrl": site.url("/blank"), "live": true, "recordVideo": false})).await;
    let id = run["id"].as_str().unwrap();
    let endpoint = run["connectUrl"].as_str().unwrap().to_string();
    // The service's own listener stands in for a private address the page must not reach.
    let out = node(&clients_dir().join("hostile.mjs"), &[endpoint, site.base.clone(), app.base.clone()]).await;
    eprintln!("hostile: {out}");
    let refused = |k: &str, why: &str| {
        let v = out[k].as_str().unwrap_or_else(|| panic!("{k}: {}", out[k]));
        assert!(v.starts_with("error: ") && v.contains(why), "{k}: {v}");
    };
    refused("createContext", "not allowed");
    refused("close", "not allowed");
    refused("crash", "not allowed");
    refused("fileTarget", "file: URLs are refused");
    refused("foreignContextTarget", "one browser context");
    refused("fileNavigate", "file: URLs are refused");
    assert_eq!(out["contexts"]["browserContextIds"], json!([]));
    assert_eq!(out["download"], json!({}), "answered, not applied");
    assert_eq!(out["targetContexts"], 1);
    // The page never reached the service's listener (the error page's text may not have
    // rendered when the script reads it; the run's network log says it for certain).
    let body = out["privateBody"].as_str().unwrap_or("");
    assert!(body.is_empty() || body.contains("blocked by egress policy"), "{out}");
    assert_eq!(out["pageGoesOn"], 42);
    let run = wait_end(&app, &key, id).await;
    assert_eq!(run["status"], "completed", "{run}");
    let red = format!("{}/red", app.base);
    let blocked = run["networkErrors"].as_array().unwrap().iter().find(|r| r["url"] == red.as_str()).cloned();
    assert!(blocked.as_ref().and_then(|b| b["failure"].as_str()).unwrap_or("").contains("egress"), "{run}");
    // The pool is unharmed: a scripted run and a capture afterwards.
    let after = start(
        &app,
        &key,
        json!({"startUrl": site.url("/done?x=1"), "recordVideo": false, "steps": [{"action": "assertText", "text": "x=1"}]}),
    )
    .await;
    let after = wait_end(&app, &key, after["id"].as_str().unwrap()).await;
    assert_eq!(after["status"], "completed", "{after}");
    let job = app.create(&key, json!({"url": site.url("/blank")})).await;
    let job = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(job["status"], "done", "{job}");
    // A plain GET is not a DevTools client.
    let r = app.client.get(app.url("/v1/runs/run_x/devtools?token=abc")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 400, "not a WebSocket handshake");
}

async fn playwright_connects_over_cdp(db: Db) {
    let (site, app, key) = pro_app(opts(db)).await;
    let run = start(&app, &key, json!({"startUrl": site.url("/blank"), "live": true, "recordVideo": false})).await;
    let id = run["id"].as_str().unwrap();
    let out =
        node(&clients_dir().join("playwright.mjs"), &[run["connectUrl"].as_str().unwrap().into(), site.base.clone()])
            .await;
    eprintln!("playwright: {out}");
    assert_eq!((out["contexts"].as_i64(), out["pages"].as_i64()), (Some(1), Some(1)));
    assert_eq!(out["text"], "name=Grace+Hopper&plan=pro");
    assert_eq!(out["eval"], 42);
    assert!(out["newContext"].as_str().unwrap().contains("not allowed"), "{out}");
    let run = wait_end(&app, &key, id).await;
    assert_eq!((run["status"].as_str(), run["endReason"].as_str()), (Some("completed"), Some("disconnected")), "{run}");
    assert_eq!(run["pageTitle"], "Done");
}

async fn a_live_session_ends_at_its_timeout_and_on_stop(db: Db) {
    let (site, app, key) = pro_app(opts(db)).await;
    let clients = clients_dir().display().to_string();
    // The timeout ends the session: the client is disconnected, the run completes.
    let run = start(&app, &key, json!({"startUrl": site.url("/ticker"), "live": true, "timeoutMs": 3000})).await;
    let id = run["id"].as_str().unwrap();
    let out = node(&script("hold.mjs"), &[clients.clone(), run["connectUrl"].as_str().unwrap().into()]).await;
    assert_eq!(out["url"], site.url("/ticker"));
    let held = out["connectedMs"].as_u64().unwrap();
    assert!((2_000..10_000).contains(&held), "connected for {held} ms");
    let run = wait_end(&app, &key, id).await;
    assert_eq!((run["status"].as_str(), run["endReason"].as_str()), (Some("completed"), Some("timeout")), "{run}");
    assert_eq!(run["pageTitle"], "Ticker");
    let secs = video_seconds(&app, run["videoUrl"].as_str().unwrap()).await;
    assert!((2.0..4.5).contains(&secs), "a 3 s session's video lasts {secs} s");
    // Stop ends a connected session: the client is disconnected, the run is stopped.
    let run = start(&app, &key, json!({"startUrl": site.url("/blank"), "live": true, "recordVideo": false})).await;
    let id = run["id"].as_str().unwrap().to_string();
    let endpoint = run["connectUrl"].as_str().unwrap().to_string();
    let client = node_connected(&script("hold.mjs"), &[clients, endpoint]).await;
    wait_status(&app, &key, &id, &["running"], 60).await;
    assert_eq!(stop(&app, &key, &id).await.status().as_u16(), 202);
    let out =
        tokio::time::timeout(Duration::from_secs(20), client).await.expect("the client was disconnected").unwrap();
    assert_eq!(out["url"], site.url("/blank"));
    let run = wait_end(&app, &key, &id).await;
    assert_eq!((run["status"].as_str(), run["endReason"].as_str()), (Some("stopped"), Some("stopped")), "{run}");
    assert_eq!(run["actionsCharged"], 1);
}

async fn runs_reserve_their_minutes_and_give_back_the_rest(db: Db) {
    let site = site().await;
    let app = TestApp::spawn(opts(db).env("CAPTURE_PLAN_LIMITS", "free=2,starter=2000,pro=10000")).await;
    let (_, key) = app.user_with_key("free").await;
    let steps = json!([{"action": "wait", "ms": 1500}]);
    // (timeoutMs, actions reserved, used after): two minutes of timeout reserve both actions
    // of the month; the run takes under a minute, so it is charged 1 and the other is given
    // back; a three-minute run then gets the one minute left (it would be cut off cleanly).
    for (timeout_ms, reserved, used_after) in [(120_000, 2, 1), (180_000, 1, 2)] {
        let body =
            json!({"startUrl": site.url("/blank"), "steps": steps, "timeoutMs": timeout_ms, "recordVideo": false});
        let run = start(&app, &key, body).await;
        assert_eq!(run["actionsReserved"], reserved, "{run}");
        if reserved == 2 {
            // Nothing is left while it runs.
            let r = app.post_json(&key, "/v1/runs", &json!({"startUrl": site.url("/blank"), "live": true})).await;
            assert_eq!(r.status().as_u16(), 429);
            let v: Value = r.json().await.unwrap();
            assert_eq!(v["code"], "PLAN_QUOTA_EXCEEDED", "{v}");
        }
        let run = wait_end(&app, &key, run["id"].as_str().unwrap()).await;
        assert_eq!((run["status"].as_str(), run["actionsCharged"].as_i64()), (Some("completed"), Some(1)), "{run}");
        assert_eq!(used(&app, &key).await, used_after);
    }
}

/// Issue 25: a live client that enables `Runtime`, makes its page log megabytes a second and
/// stops reading is closed with 1008 and a reason once the relay's queue passes its bound
/// (the server does not buffer for it), and its run ends `failed` with `client_too_slow`.
async fn a_live_client_that_stops_reading_is_closed_with_a_reason(db: Db) {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let (site, app, key) = pro_app(opts(db)).await;
    let run = start(&app, &key, json!({"startUrl": site.url("/blank"), "live": true, "recordVideo": false})).await;
    let id = run["id"].as_str().unwrap();
    let (mut ws, _) = tokio_tungstenite::connect_async(run["connectUrl"].as_str().unwrap()).await.unwrap();
    let mut next = 0;
    let mut call =
        async |ws: &mut tokio_tungstenite::WebSocketStream<_>, method: &str, params: Value, sid: Option<&str>| {
            next += 1;
            let mut m = json!({"id": next, "method": method, "params": params});
            if let Some(s) = sid {
                m["sessionId"] = json!(s);
            }
            ws.send(Message::Text(m.to_string().into())).await.unwrap();
            loop {
                let v: Value = serde_json::from_str(ws.next().await.unwrap().unwrap().to_text().unwrap()).unwrap();
                if v["id"] == next {
                    return v;
                }
            }
        };
    let targets = call(&mut ws, "Target.getTargets", json!({}), None).await;
    let page = targets["result"]["targetInfos"][0]["targetId"].as_str().unwrap().to_string();
    let attached = call(&mut ws, "Target.attachToTarget", json!({"targetId": page, "flatten": true}), None).await;
    let sid = attached["result"]["sessionId"].as_str().unwrap().to_string();
    call(&mut ws, "Runtime.enable", json!({}), Some(&sid)).await;
    let flood = "setInterval(() => console.log('x'.repeat(200000)), 10); 1";
    call(&mut ws, "Runtime.evaluate", json!({"expression": flood}), Some(&sid)).await;
    // The client reads nothing more until its run has ended.
    let run = wait_end(&app, &key, id).await;
    assert_eq!((run["status"].as_str(), run["endReason"].as_str()), (Some("failed"), Some("client_too_slow")), "{run}");
    let why = run["finalizationError"].as_str().unwrap_or_default();
    assert!(why.contains("1008") && why.contains("client too slow"), "{run}");
    let frame = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(msg) = ws.next().await {
            match msg {
                Ok(Message::Close(frame)) => return frame,
                Ok(_) => {}
                Err(e) => panic!("the socket failed before its close frame: {e}"),
            }
        }
        None
    })
    .await
    .expect("a close frame")
    .expect("a close frame with a code");
    assert_eq!(u16::from(frame.code), 1008);
    assert_eq!(frame.reason.as_str(), "client too slow: more than 16 MB of DevTools messages waited unread");
}

capture_testkit::both_dbs!(a_scripted_run_of_every_step_kind);
capture_testkit::both_dbs!(a_failing_step_is_named_and_the_run_fails);
capture_testkit::both_dbs!(stop_ends_a_running_run_cleanly);
capture_testkit::both_dbs!(puppeteer_drives_a_live_session);
capture_testkit::both_dbs!(a_hostile_live_client_is_refused_and_the_pool_unharmed);
capture_testkit::both_dbs!(playwright_connects_over_cdp);
capture_testkit::both_dbs!(a_live_session_ends_at_its_timeout_and_on_stop);
capture_testkit::both_dbs!(a_live_client_that_stops_reading_is_closed_with_a_reason);
capture_testkit::both_dbs!(runs_reserve_their_minutes_and_give_back_the_rest);

/// With no node with a browser anywhere, a live client is refused (503) and its token stays
/// unspent, so it can connect again once a worker node is up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_any_browser_a_live_client_is_refused_and_keeps_its_token() {
    let app = TestApp::spawn(Opts::api(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("pro").await;
    let r = app.post_json(&key, "/v1/runs", &json!({"startUrl": "https://example.com/", "live": true})).await;
    assert_eq!(r.status().as_u16(), 202);
    let run: Value = r.json().await.unwrap();
    let id = run["id"].as_str().unwrap();
    let there = run["connectUrl"].as_str().unwrap().replace("ws://", "http://");
    let r = app
        .client
        .get(&there)
        .header("upgrade", "websocket")
        .header("connection", "upgrade")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .header("sec-websocket-version", "13")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 503);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["code"], "SERVICE_UNAVAILABLE", "{v}");
    let held: Value = app.get(&key, &format!("/v1/runs/{id}")).await.json().await.unwrap();
    assert_eq!(held["status"], "pending", "{held}");
}
