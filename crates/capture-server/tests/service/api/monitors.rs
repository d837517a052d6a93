//! Monitors end to end: a page on 127.0.0.1 that the test changes, checked by real captures,
//! compared with its baseline (an ignored clock masked), events verified by their signature,
//! failures never taken for "unchanged", the plan's bound, the scheduler's one run per due
//! time, and two tenants.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::helpers::*;
use capture_testkit::both_dbs;
use capture_testkit::webhooks::*;
use serde_json::{Value, json};

/// The page the monitors watch: its price is the test's to change, its clock changes on every
/// load (and is ignored), and it can answer 500.
struct Shop {
    site: Site,
    price: Arc<Mutex<String>>,
    broken: Arc<Mutex<bool>>,
}

async fn shop() -> Shop {
    use axum::response::IntoResponse;
    let price = Arc::new(Mutex::new("10".to_string()));
    let broken = Arc::new(Mutex::new(false));
    let loads = Arc::new(Mutex::new(0u32));
    let (p, b, n) = (price.clone(), broken.clone(), loads.clone());
    let router = axum::Router::new().route(
        "/pricing",
        axum::routing::get(move || {
            let (p, b, n) = (p.clone(), b.clone(), n.clone());
            async move {
                if *b.lock().unwrap() {
                    return (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "<h1>Server error</h1>").into_response();
                }
                let load = {
                    let mut n = n.lock().unwrap();
                    *n += 1;
                    *n
                };
                let price = p.lock().unwrap().clone();
                // The clock's colour and text change on every load; the price's box does not move.
                let hue = (load * 97) % 360;
                axum::response::Html(format!(
                    "<!doctype html><html><head><title>Pricing</title><style>body{{margin:0;font:24px sans-serif}}\
                     .clock{{position:absolute;left:20px;top:20px;width:300px;height:60px;background:hsl({hue},80%,50%)}}\
                     .price{{position:absolute;left:20px;top:200px;width:400px;height:80px;background:#fff}}</style></head>\
                     <body><div class=\"clock\">Now: {load}</div><p class=\"price\">Price: {price} €</p></body></html>"
                ))
                .into_response()
            }
        }),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    let h = tokio::spawn(async move {
        let _ = axum::serve(l, router).await;
    });
    Shop { site: Site::from_parts(base, h), price, broken }
}

/// Wait until the check is no longer pending, and return it.
async fn ended(app: &TestApp, key: &str, mon: &str, check: &str) -> Value {
    eventually(&format!("check {check} ends"), Duration::from_secs(90), || async {
        let c: Value = app.get(key, &format!("/v1/monitors/{mon}/checks/{check}")).await.json().await.unwrap();
        if c["status"] != "pending" { Ok(c) } else { Err(c) }
    })
    .await
}

/// Check now, then wait for the check to end.
async fn check_now(app: &TestApp, key: &str, mon: &str) -> Value {
    let r = app.post_json(key, &format!("/v1/monitors/{mon}/check"), &json!({})).await;
    let status = r.status().as_u16();
    let c: Value = r.json().await.unwrap();
    assert_eq!(status, 202, "{c}");
    ended(app, key, mon, c["id"].as_str().unwrap()).await
}

/// The bytes of the MIME part whose Content-ID is `cid` (base64, as lettre writes pictures).
fn inline_part(raw: &str, cid: &str) -> Vec<u8> {
    use base64::Engine;
    let at = raw.find(&format!("Content-ID: <{cid}>")).unwrap_or_else(|| panic!("no part {cid}:\n{raw}"));
    let rest = &raw[at..];
    let body = &rest[rest.find("\r\n\r\n").unwrap() + 4..];
    let body = &body[..body.find("\r\n--").unwrap()];
    base64::engine::general_purpose::STANDARD.decode(body.replace("\r\n", "")).unwrap()
}

/// End a pending check as its failed capture would (the scheduler then runs the next due time).
async fn end_check(app: &TestApp, id: &str) {
    let failed =
        capture_store::CheckOutcome { status: "failed".into(), error: Some("ended".into()), ..Default::default() };
    let now = capture_core::time::now_ms();
    assert!(app.state.store.complete_monitor_check(id, &failed, now, &Default::default()).await.unwrap().is_some());
}

fn events_of(rx: &Receiver, secret: &str, kind: &str) -> Vec<Value> {
    rx.all().iter().map(|r| verify(secret, r).expect("signed")).filter(|b| b["type"] == kind).collect()
}

async fn a_monitor_notices_changes_and_never_takes_a_failure_for_unchanged(db: Db) {
    let shop = shop().await;
    let rx = Receiver::start(vec![(200, Duration::ZERO)]).await;
    let sink = capture_testkit::campaigns::Sink::start(TARGET_TMPDIR, &[]);
    let app = TestApp::spawn(
        Opts::full(db)
            .env("CAPTURE_SMTP_URL", &sink.url())
            .env("CAPTURE_MAIL_FROM", "Capture <monitors@capture.test>")
            .env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true")
            .env("CAPTURE_WEBHOOK_RETRY_DELAYS", "150ms,150ms,150ms,150ms,150ms"),
    )
    .await;
    let (_, key) = app.user_with_key("free").await;
    let ep =
        create_endpoint(&app, &key, json!({"url": rx.url, "events": ["monitor.changed", "monitor.failing"]})).await;
    let secret = ep["secret"].as_str().unwrap().to_string();

    let body = json!({
        "name": "Competitor pricing",
        "url": shop.site.url("/pricing"),
        "schedule": {"every": "1h"},
        "capture": {"width": 640, "height": 400, "fullPage": false},
        "ignoreSelectors": [".clock"],
        "notify": {"email": ["owner@shop.test"]},
    });
    let r = app.post_json(&key, "/v1/monitors", &body).await;
    assert_eq!(r.status(), 201);
    let m: Value = r.json().await.unwrap();
    let id = m["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("mon_"), "{m}");
    assert_eq!(
        (&m["name"], &m["status"], &m["compare"], &m["threshold"], &m["baseline"], &m["schedule"]),
        (
            &json!("Competitor pricing"),
            &json!("active"),
            &json!("both"),
            &json!(0.001),
            &json!("auto"),
            &json!({"every": "1h"})
        )
    );
    assert_eq!(m["capture"], json!({"width": 640, "height": 400, "fullPage": false}));

    // Due at once: the scheduler takes the first check, which is the baseline.
    let first = eventually("the first check is taken by the scheduler", Duration::from_secs(90), || async {
        let list: Value = app.get(&key, &format!("/v1/monitors/{id}/checks")).await.json().await.unwrap();
        match list["data"].as_array().unwrap().as_slice() {
            [c] if c["status"] != "pending" => Ok(c.clone()),
            other => Err(json!(other)),
        }
    })
    .await;
    assert_eq!(first["status"], "baseline", "{first}");
    assert_eq!(first["isBaseline"], true);
    let shot = decode(&app.fetch(first["imageUrl"].as_str().unwrap()).await.2);
    assert_eq!((shot.width(), shot.height()), (640, 400));
    let m: Value = app.get(&key, &format!("/v1/monitors/{id}")).await.json().await.unwrap();
    assert_eq!(m["baselineCheckId"], first["id"]);
    assert_eq!(m["lastCheck"]["id"], first["id"]);
    let next = capture_core::time::parse_iso(m["nextRunAt"].as_str().unwrap()).unwrap();
    let now = capture_core::time::now_ms();
    assert!(next > now + 3_000_000 && next <= now + 3_600_000, "the next run is an hour on: {m}");

    // The clock changed (pixels and text) but is ignored: unchanged, nothing differs.
    let same = check_now(&app, &key, &id).await;
    assert_eq!(same["status"], "unchanged", "{same}");
    assert_eq!(same["diffRatio"], json!(0.0));
    assert_eq!(same["changedRegions"], json!([]));
    assert_eq!(same["textDiff"], json!(""));
    assert_eq!(same["diffUrl"], Value::Null);

    // The price changes: changed, where, and how.
    *shop.price.lock().unwrap() = "12".into();
    let changed = check_now(&app, &key, &id).await;
    assert_eq!(changed["status"], "changed", "{changed}");
    // Two digits of 640 x 400 pixels: under the 0.1 % threshold, so the text told the change.
    assert!(changed["diffRatio"].as_f64().unwrap() > 0.0, "{changed}");
    let regions = changed["changedRegions"].as_array().unwrap();
    assert!(!regions.is_empty());
    for r in regions {
        let (y, h) = (r["y"].as_u64().unwrap(), r["h"].as_u64().unwrap());
        assert!(y >= 192 && y + h <= 300, "only the price's box changed: {r}");
    }
    let lines: Vec<&str> = changed["textDiff"].as_str().unwrap().lines().collect();
    assert!(lines.contains(&"-Price: 10 €") && lines.contains(&"+Price: 12 €"), "{lines:?}");
    assert!(!lines.iter().any(|l| l.contains("Now:")), "the clock's text is dropped: {lines:?}");
    let diff = decode(&app.fetch(changed["diffUrl"].as_str().unwrap()).await.2);
    assert_eq!((diff.width(), diff.height()), (640, 400));
    // Outside the changed regions the diff is the page dimmed: the coloured clock is pale grey.
    let px = diff.get_pixel(100, 50).0;
    assert!(px[0] == px[1] && px[1] == px[2] && px[0] >= 191 && px[0] < 255, "{px:?}");
    let shot = decode(&app.fetch(changed["imageUrl"].as_str().unwrap()).await.2);
    let clock = shot.get_pixel(100, 50).0;
    assert!(clock[0] != clock[1] || clock[1] != clock[2], "the capture itself keeps its colours: {clock:?}");
    assert_eq!(changed["baselineImageUrl"], first["imageUrl"]);
    // The event: signed, with the same figures; the change became the baseline (auto).
    let got = rx.wait_for(1, Duration::from_secs(20)).await;
    let ev = verify(&secret, &got[0]).expect("the event verifies");
    assert_eq!(ev["type"], "monitor.changed");
    assert_eq!(
        (&ev["data"]["monitorId"], &ev["data"]["checkId"], &ev["data"]["diffRatio"], &ev["data"]["textDiff"]),
        (&json!(id), &changed["id"], &changed["diffRatio"], &changed["textDiff"])
    );
    assert!(ev["data"]["diffUrl"].as_str().unwrap().starts_with(&format!("{}/files/", app.base)));
    let m: Value = app.get(&key, &format!("/v1/monitors/{id}")).await.json().await.unwrap();
    assert_eq!(m["baselineCheckId"], changed["id"]);
    // The mail: to the listed address, the three pictures inline, the text's change.
    let mails = eventually("the change is mailed", Duration::from_secs(30), || async {
        let m = sink.received();
        if m.is_empty() { Err(()) } else { Ok(m) }
    })
    .await;
    assert_eq!(mails.len(), 1, "one mail: the baseline and the unchanged check mail nobody");
    let (raw, envelope) = &mails[0];
    assert_eq!(envelope["rcpt_tos"], json!(["owner@shop.test"]));
    assert_eq!(capture_testkit::campaigns::header(raw, "Subject").as_deref(), Some("Changed: Competitor pricing"));
    let cid = changed["id"].as_str().unwrap().to_ascii_lowercase();
    for (what, url) in [("before", &first["imageUrl"]), ("after", &changed["imageUrl"]), ("diff", &changed["diffUrl"])]
    {
        let inline = inline_part(raw, &format!("{what}.{cid}@capture.test"));
        assert_eq!(inline, app.fetch(url.as_str().unwrap()).await.2, "the {what} picture is the file itself");
        assert!(raw.replace("=\r\n", "").contains(&format!("cid:{what}.{cid}@capture.test")), "shown in the HTML");
    }
    assert!(raw.contains("+Price: 12 =E2=82=AC") || raw.contains("+Price: 12 €"), "{raw}");

    // An error page: three failed checks (never unchanged, never the baseline), then one
    // monitor.failing; a fourth failure tells nobody again.
    *shop.broken.lock().unwrap() = true;
    for n in 1..=4 {
        let f = check_now(&app, &key, &id).await;
        assert_eq!(f["status"], "failed", "{f}");
        let job: Value = app
            .get(&key, &format!("/v1/screenshot/{}", f["screenshotId"].as_str().unwrap()))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(job["status"], "failed");
        assert_eq!(f["error"], job["error"], "the check says why its capture failed");
        let m: Value = app.get(&key, &format!("/v1/monitors/{id}")).await.json().await.unwrap();
        assert_eq!((m["failuresInARow"].as_i64(), &m["baselineCheckId"]), (Some(n), &changed["id"]));
    }
    let failing = eventually("monitor.failing arrives", Duration::from_secs(20), || async {
        let f = events_of(&rx, &secret, "monitor.failing");
        if f.is_empty() { Err(()) } else { Ok(f) }
    })
    .await;
    nothing_within("a second monitor.failing", Duration::from_secs(2), || async {
        let n = events_of(&rx, &secret, "monitor.failing").len();
        (n > 1).then_some(n)
    })
    .await;
    assert_eq!(failing.len(), 1);
    assert_eq!((&failing[0]["data"]["monitorId"], &failing[0]["data"]["failures"]), (&json!(id), &json!(3)));
    let mails = eventually("the failures are mailed", Duration::from_secs(30), || async {
        let m = sink.received();
        if m.len() >= 2 { Ok(m) } else { Err(m.len()) }
    })
    .await;
    assert_eq!(mails.len(), 2, "one failing mail for the run of failures");
    assert_eq!(
        capture_testkit::campaigns::header(&mails[1].0, "Subject").as_deref(),
        Some("Failing: Competitor pricing")
    );

    // Back up: unchanged against the last good baseline, and the run of failures ends.
    *shop.broken.lock().unwrap() = false;
    let back = check_now(&app, &key, &id).await;
    assert_eq!(back["status"], "unchanged", "{back}");
    let m: Value = app.get(&key, &format!("/v1/monitors/{id}")).await.json().await.unwrap();
    assert_eq!(m["failuresInARow"], 0);

    // Accept the first check as the baseline again: the price now differs from it.
    let r = app.post_json(&key, &format!("/v1/monitors/{id}/baseline"), &json!({"checkId": first["id"]})).await;
    assert_eq!(r.status(), 200);
    let m: Value = r.json().await.unwrap();
    assert_eq!(m["baselineCheckId"], first["id"]);
    // A new threshold keeps the baseline; other things to compare start a new one.
    let patch = |body: Value| {
        let (app, key, id) = (&app, key.clone(), id.clone());
        async move {
            let r = app
                .client
                .patch(app.url(&format!("/v1/monitors/{id}")))
                .bearer_auth(&key)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            r.json::<Value>().await.unwrap()
        }
    };
    let m = patch(json!({"threshold": 0.01})).await;
    assert_eq!((&m["threshold"], &m["baselineCheckId"]), (&json!(0.01), &first["id"]));
    let m = patch(json!({"ignoreSelectors": [".clock", ".banner"]})).await;
    assert_eq!(m["baselineCheckId"], Value::Null, "{m}");
    let r = app.post_json(&key, &format!("/v1/monitors/{id}/baseline"), &json!({"checkId": first["id"]})).await;
    assert_eq!(r.status(), 200);
    let failed_id = app.get(&key, &format!("/v1/monitors/{id}/checks?limit=2")).await.json::<Value>().await.unwrap()["data"][1]["id"].clone();
    let r = app.post_json(&key, &format!("/v1/monitors/{id}/baseline"), &json!({"checkId": failed_id})).await;
    assert_eq!(r.status(), 400, "a failed check is never the baseline");
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["details"]["field"], "checkId", "{e}");

    // The history, newest first, in pages.
    let page: Value = app.get(&key, &format!("/v1/monitors/{id}/checks?limit=3")).await.json().await.unwrap();
    let statuses: Vec<&str> = page["data"].as_array().unwrap().iter().map(|c| c["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, vec!["unchanged", "failed", "failed"]);
    let cursor = page["nextCursor"].as_str().unwrap();
    let rest: Value =
        app.get(&key, &format!("/v1/monitors/{id}/checks?limit=100&before={cursor}")).await.json().await.unwrap();
    let statuses: Vec<&str> = rest["data"].as_array().unwrap().iter().map(|c| c["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, vec!["failed", "failed", "changed", "unchanged", "baseline"]);
    assert_eq!(rest["nextCursor"], Value::Null);

    // Another account sees none of it and can do nothing with it.
    let (_, other) = app.user_with_key("free").await;
    assert_eq!(app.get(&other, &format!("/v1/monitors/{id}")).await.status(), 404);
    assert_eq!(app.get(&other, &format!("/v1/monitors/{id}/checks")).await.status(), 404);
    assert_eq!(app.post_json(&other, &format!("/v1/monitors/{id}/check"), &json!({})).await.status(), 404);
    assert_eq!(
        app.post_json(&other, &format!("/v1/monitors/{id}/baseline"), &json!({"checkId": first["id"]})).await.status(),
        404
    );
    let theirs: Value = app.get(&other, "/v1/monitors").await.json().await.unwrap();
    assert_eq!(theirs["data"], json!([]));
    // The owner's list shows each monitor's latest check, the same one as the monitor itself.
    let mine: Value = app.get(&key, "/v1/monitors").await.json().await.unwrap();
    let one: Value = app.get(&key, &format!("/v1/monitors/{id}")).await.json().await.unwrap();
    let listed = mine["data"].as_array().unwrap().iter().find(|m| m["id"] == json!(id)).expect("listed");
    assert_eq!(listed["lastCheck"], one["lastCheck"]);
    assert!(one["lastCheck"]["id"].is_string(), "{one}");
    // Each check was one capture job, charged as one: 1 + 1 + 1 + 4 + 1 = 8 (an error page that
    // answered is charged like any capture failing its failOnHttpError condition).
    let jobs: Value = app.get(&key, "/v1/screenshots?limit=100").await.json().await.unwrap();
    assert_eq!(jobs["data"].as_array().unwrap().len(), 8);
    assert_eq!(used(&app, &key).await, 8);

    // Paused: no next run; resumed: due again; deleted: gone with its checks.
    let p: Value = app.post_json(&key, &format!("/v1/monitors/{id}/pause"), &json!({})).await.json().await.unwrap();
    assert_eq!((&p["status"], &p["nextRunAt"]), (&json!("paused"), &Value::Null));
    let p: Value = app.post_json(&key, &format!("/v1/monitors/{id}/resume"), &json!({})).await.json().await.unwrap();
    assert_eq!(p["status"], "active");
    assert!(p["nextRunAt"].is_string());
    let r = app.client.delete(app.url(&format!("/v1/monitors/{id}"))).bearer_auth(&key).send().await.unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(app.get(&key, &format!("/v1/monitors/{id}")).await.status(), 404);
    assert_eq!(app.get(&key, &format!("/v1/monitors/{id}/checks")).await.status(), 404);
}

async fn bad_monitors_are_refused_naming_the_field_and_the_plan_bounds_them(db: Db) {
    let app = TestApp::spawn(Opts::api(db).env("CAPTURE_PLAN_MONITORS", "free=2")).await;
    let (_, key) = app.user_with_key("free").await;
    let refused = |body: Value| {
        let app = &app;
        let key = key.clone();
        async move {
            let r = app.post_json(&key, "/v1/monitors", &body).await;
            let status = r.status().as_u16();
            let e: Value = r.json().await.unwrap();
            assert_eq!((status, &e["code"]), (400, &json!("VALIDATION_ERROR")), "{body}: {e}");
            e["details"]["field"].as_str().unwrap().to_string()
        }
    };
    let url = "http://127.0.0.1:9/page";
    assert_eq!(refused(json!({"url": url, "schedule": {"every": "1m"}})).await, "schedule.every");
    assert_eq!(refused(json!({"url": url, "schedule": {"cron": "61 9 * * *"}})).await, "schedule.cron");
    assert_eq!(refused(json!({"url": url, "schedule": {"cron": "* * * * *"}})).await, "schedule.cron");
    assert_eq!(
        refused(json!({"url": url, "schedule": {"cron": "0 9 * * 1-5", "timezone": "Mars/Olympus"}})).await,
        "schedule.timezone"
    );
    assert_eq!(refused(json!({"url": url, "schedule": {}})).await, "schedule");
    assert_eq!(
        refused(json!({"url": url, "schedule": {"every": "1h"}, "capture": {"colour": "red"}})).await,
        "capture.colour"
    );
    assert_eq!(
        refused(json!({"url": url, "schedule": {"every": "1h"}, "capture": {"width": "wide"}})).await,
        "capture.width"
    );
    assert_eq!(refused(json!({"url": url, "schedule": {"every": "1h"}, "capture": {"url": url}})).await, "capture.url");
    assert_eq!(
        refused(json!({"url": url, "schedule": {"every": "1h"}, "ignoreSelectors": [".ok", "div["]})).await,
        "ignoreSelectors[1]"
    );
    assert_eq!(refused(json!({"url": url, "schedule": {"every": "1h"}, "threshold": 2})).await, "threshold");
    assert_eq!(
        refused(json!({"url": url, "schedule": {"every": "1h"}, "notify": {"email": ["nope"]}})).await,
        "notify.email[0]"
    );
    assert_eq!(
        refused(json!({"url": url, "schedule": {"every": "1h"}, "capture": {"format": "markdown"}})).await,
        "compare"
    );
    // The egress guard's rules hold at create: a private address is refused.
    assert_eq!(refused(json!({"url": "http://10.1.2.3/", "schedule": {"every": "1h"}})).await, "url");
    assert_eq!(refused(json!({"url": "http://169.254.169.254/latest/", "schedule": {"every": "1h"}})).await, "url");
    assert_eq!(refused(json!({"url": "ftp://x.example/", "schedule": {"every": "1h"}})).await, "url");
    assert_eq!(
        refused(json!({"url": url, "schedule": {"every": "1h"}, "capture": {"profile": "nope"}})).await,
        "capture.profile"
    );

    // Two monitors fit the plan (paused: none runs here); the third is refused.
    let made = |name: &str| json!({"name": name, "url": url, "schedule": {"every": "2h"}, "paused": true});
    let mut ids = Vec::new();
    for name in ["one", "two"] {
        let r = app.post_json(&key, "/v1/monitors", &made(name)).await;
        assert_eq!(r.status(), 201);
        let m: Value = r.json().await.unwrap();
        assert_eq!((&m["status"], &m["nextRunAt"]), (&json!("paused"), &Value::Null));
        ids.push(m["id"].as_str().unwrap().to_string());
    }
    let r = app.post_json(&key, "/v1/monitors", &made("three")).await;
    assert_eq!(r.status(), 403);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["code"], "PLAN_LIMIT_EXCEEDED", "{e}");
    // Another account has its own bound.
    let (_, other) = app.user_with_key("free").await;
    assert_eq!(app.post_json(&other, "/v1/monitors", &made("theirs")).await.status(), 201);

    // Newest first, in pages.
    let page: Value = app.get(&key, "/v1/monitors?limit=1").await.json().await.unwrap();
    assert_eq!(page["data"][0]["name"], "two");
    let cursor = page["nextCursor"].as_str().unwrap();
    let rest: Value = app.get(&key, &format!("/v1/monitors?limit=1&before={cursor}")).await.json().await.unwrap();
    assert_eq!(rest["data"][0]["name"], "one");
    assert_eq!(rest["nextCursor"], Value::Null);

    // A change: a cron schedule in a time zone, the rest kept.
    let r = app
        .client
        .patch(app.url(&format!("/v1/monitors/{}", ids[0])))
        .bearer_auth(&key)
        .json(&json!({"schedule": {"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"}, "compare": "text"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let m: Value = r.json().await.unwrap();
    assert_eq!(
        (&m["schedule"], &m["compare"], &m["name"], &m["status"]),
        (&json!({"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"}), &json!("text"), &json!("one"), &json!("paused"))
    );
    let r = app
        .client
        .patch(app.url(&format!("/v1/monitors/{}", ids[0])))
        .bearer_auth(&key)
        .json(&json!({"schedule": {"every": "30s"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = app
        .client
        .patch(app.url(&format!("/v1/monitors/{}", ids[0])))
        .bearer_auth(&other)
        .json(&json!({"name": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

async fn the_scheduler_runs_each_due_time_once_and_a_missed_run_once(db: Db) {
    // No worker: captures stay queued, so the checks the scheduler starts stay pending and are
    // easy to count.
    // Two actions a month: the third check is refused by the quota.
    let app =
        TestApp::spawn(Opts::api(db).env("CAPTURE_MONITOR_MIN_INTERVAL", "1s").env("CAPTURE_PLAN_LIMITS", "free=2"))
            .await;
    let (_, key) = app.user_with_key("free").await;
    let made =
        |name: &str, every: &str| json!({"name": name, "url": "http://127.0.0.1:9/x", "schedule": {"every": every}});
    let m: Value = app.post_json(&key, "/v1/monitors", &made("late", "10m")).await.json().await.unwrap();
    let id = m["id"].as_str().unwrap().to_string();
    let checks = |id: String| {
        let (app, key) = (&app, key.clone());
        async move {
            let v: Value = app.get(&key, &format!("/v1/monitors/{id}/checks")).await.json().await.unwrap();
            v["data"].as_array().unwrap().clone()
        }
    };
    let first = eventually("the first check starts", Duration::from_secs(20), || async {
        let c = checks(id.clone()).await;
        if c.len() == 1 { Ok(c) } else { Err(json!(c)) }
    })
    .await;
    assert_eq!(first[0]["status"], "pending");
    // While its capture waits, the check-now button says so.
    let r = app.post_json(&key, &format!("/v1/monitors/{id}/check"), &json!({})).await;
    assert_eq!(r.status(), 429);

    // A monitor that missed three hours of 10-minute slots (the service was down) runs once,
    // and its next run counts from now.
    let m: Value = app.post_json(&key, "/v1/monitors", &made("missed", "10m")).await.json().await.unwrap();
    let missed = m["id"].as_str().unwrap().to_string();
    eventually("its first check starts", Duration::from_secs(20), || async {
        if checks(missed.clone()).await.len() == 1 { Ok(()) } else { Err(()) }
    })
    .await;
    let user = app.state.store.monitor_checks_ready(100).await.unwrap();
    assert!(user.is_empty(), "their captures are queued, not ended: {user:?}");
    // Its capture ended (as a failed capture does), and it was due three hours ago.
    let pending = checks(missed.clone()).await;
    end_check(&app, pending[0]["id"].as_str().unwrap()).await;
    let mut row =
        app.state.store.due_monitors(i64::MAX, 100).await.unwrap().into_iter().find(|r| r.id == missed).unwrap();
    let now = capture_core::time::now_ms();
    row.next_run_at = Some(now - 3 * 3_600_000);
    assert!(app.state.store.update_monitor(&row).await.unwrap());
    let after = eventually("one catch-up check", Duration::from_secs(20), || async {
        let c = checks(missed.clone()).await;
        if c.len() >= 2 && c[0]["status"] != "pending" { Ok(c) } else { Err(json!(c)) }
    })
    .await;
    nothing_within("a second catch-up check", Duration::from_secs(3), || async {
        let n = checks(missed.clone()).await.len();
        (n > 2).then_some(n)
    })
    .await;
    assert_eq!(after.len(), 2);
    // That catch-up check is the account's third capture of the month: refused by the quota, a
    // failed check saying so (never a silent skip, never "unchanged").
    assert_eq!(after[0]["status"], "failed", "{after:?}");
    assert_eq!(after[0]["screenshotId"], Value::Null);
    let why = after[0]["error"].as_str().unwrap();
    assert!(why.starts_with("monthly quota of 2 actions reached; it resets at "), "{why}");
    let m: Value = app.get(&key, &format!("/v1/monitors/{missed}")).await.json().await.unwrap();
    let next = capture_core::time::parse_iso(m["nextRunAt"].as_str().unwrap()).unwrap();
    assert!(next > now + 500_000, "the next run is ten minutes from now, not a missed slot: {m}");

    // Paused or deleted: never runs again.
    // (Refused by the quota, its checks fail at once: a one-second monitor checks each second.)
    let m: Value = app.post_json(&key, "/v1/monitors", &made("short", "1s")).await.json().await.unwrap();
    let short = m["id"].as_str().unwrap().to_string();
    eventually("it runs twice", Duration::from_secs(20), || async {
        if checks(short.clone()).await.len() >= 2 { Ok(()) } else { Err(()) }
    })
    .await;
    app.post_json(&key, &format!("/v1/monitors/{short}/pause"), &json!({})).await;
    let n = checks(short.clone()).await.len();
    nothing_within("a paused monitor runs", Duration::from_secs(3), || async {
        let now = checks(short.clone()).await.len();
        (now > n).then_some(now)
    })
    .await;
    let r = app.client.delete(app.url(&format!("/v1/monitors/{missed}"))).bearer_auth(&key).send().await.unwrap();
    assert_eq!(r.status(), 204);
    assert!(app.state.store.monitor_checks_ready(100).await.unwrap().iter().all(|c| c.monitor_id != missed));
}

both_dbs!(a_monitor_notices_changes_and_never_takes_a_failure_for_unchanged);
both_dbs!(bad_monitors_are_refused_naming_the_field_and_the_plan_bounds_them);
both_dbs!(the_scheduler_runs_each_due_time_once_and_a_missed_run_once);
