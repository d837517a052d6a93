//! Webhooks end to end with a real receiver on 127.0.0.1.

use crate::helpers::*;
use capture_testkit::both_dbs;
use capture_testkit::webhooks::*;
use serde_json::{Value, json};
use std::time::Duration;

async fn deliveries_are_signed_and_rotation_replaces_the_secret(db: Db) {
    let rx = Receiver::start(vec![(200, Duration::ZERO)]).await;
    let app = TestApp::spawn(hook_opts(db)).await;
    let (_, key) = app.user_with_key("free").await;
    let ep = create_endpoint(&app, &key, json!({"url": rx.url, "description": "ci"})).await;
    let id = ep["id"].as_str().unwrap().to_string();
    let secret = ep["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("whsec_"));
    assert_eq!(ep["events"], json!(["*"]));
    assert_eq!(ep["description"], "ci");
    // Listing never shows secrets.
    let list: Value = app.get(&key, "/v1/webhooks").await.json().await.unwrap();
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    assert!(list["data"][0].get("secret").is_none(), "{list}");

    let r = app.client.post(app.url(&format!("/v1/webhooks/{id}/test"))).bearer_auth(&key).send().await.unwrap();
    assert!(r.status().is_success());
    let got = rx.wait_for(1, Duration::from_secs(20)).await;
    let body = verify(&secret, &got[0]).expect("signature verifies");
    assert_eq!(body["type"], "test.ping");
    assert_eq!(body["data"]["endpointId"], id.as_str());
    assert!(body["data"]["message"].is_string());
    assert!(body["createdAt"].as_str().unwrap().ends_with('Z'));
    let h = &got[0].headers;
    assert_eq!(
        h["webhook-id"].to_str().unwrap(),
        body["id"].as_str().unwrap(),
        "the delivery id is in the signed body"
    );
    assert_eq!(h["x-service-event"], "test.ping");
    assert_eq!(h["user-agent"], "Service-Webhook/1");
    assert_eq!(h["content-type"], "application/json");
    let d = wait_delivery_status(&app, &key, &id, "succeeded").await;
    assert_eq!(d["attempts"], 1);
    assert_eq!(d["responseCode"], 200);
    assert_eq!(d["eventType"], "test.ping");
    assert_eq!(d["id"], body["id"]);

    // Rotation: the new secret verifies, the old one does not.
    let rot: Value = app
        .client
        .post(app.url(&format!("/v1/webhooks/{id}/rotate")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let new_secret = rot["secret"].as_str().unwrap().to_string();
    assert_ne!(new_secret, secret);
    app.client.post(app.url(&format!("/v1/webhooks/{id}/test"))).bearer_auth(&key).send().await.unwrap();
    let got = rx.wait_for(2, Duration::from_secs(20)).await;
    verify(&new_secret, &got[1]).expect("new secret verifies");
    assert!(verify(&secret, &got[1]).is_err(), "old secret must not verify");
    // A tampered body does not verify.
    let mut tampered = got[1].clone();
    tampered.body = tampered.body.replace("test.ping", "test.pong");
    assert!(verify(&new_secret, &tampered).is_err());

    // Another account cannot see or use the endpoint.
    let (_, other) = app.user_with_key("free").await;
    assert_eq!(
        app.client.post(app.url(&format!("/v1/webhooks/{id}/test"))).bearer_auth(&other).send().await.unwrap().status(),
        404
    );
    assert_eq!(app.get(&other, &format!("/v1/webhooks/{id}/deliveries")).await.status(), 404);
    assert_eq!(
        app.client.delete(app.url(&format!("/v1/webhooks/{id}"))).bearer_auth(&other).send().await.unwrap().status(),
        404
    );
}

async fn failed_attempts_are_retried_with_one_webhook_id_then_exhausted(db: Db) {
    let flaky = Receiver::start(vec![(500, Duration::ZERO), (502, Duration::ZERO), (200, Duration::ZERO)]).await;
    let down = Receiver::start(vec![(503, Duration::ZERO)]).await;
    let app = TestApp::spawn(hook_opts(db)).await;
    let (_, key) = app.user_with_key("free").await;
    let a = create_endpoint(&app, &key, json!({"url": flaky.url})).await;
    let b = create_endpoint(&app, &key, json!({"url": down.url})).await;
    let (aid, bid) = (a["id"].as_str().unwrap(), b["id"].as_str().unwrap());
    app.client.post(app.url(&format!("/v1/webhooks/{aid}/test"))).bearer_auth(&key).send().await.unwrap();
    app.client.post(app.url(&format!("/v1/webhooks/{bid}/test"))).bearer_auth(&key).send().await.unwrap();

    let got = flaky.wait_for(3, Duration::from_secs(30)).await;
    let ids: Vec<_> = got.iter().map(|r| r.headers["webhook-id"].to_str().unwrap().to_string()).collect();
    assert!(ids.iter().all(|i| *i == ids[0]), "one Webhook-Id across retries: {ids:?}");
    for r in &got {
        verify(a["secret"].as_str().unwrap(), r).expect("every attempt is signed");
    }
    let d = wait_delivery_status(&app, &key, aid, "succeeded").await;
    assert_eq!(d["attempts"], 3);
    assert_eq!(d["responseCode"], 200);

    let d = wait_delivery_status(&app, &key, bid, "exhausted").await;
    assert_eq!(d["attempts"], 6);
    assert_eq!(d["responseCode"], 503);
    assert!(d["errorMessage"].as_str().unwrap().contains("503"));
    assert!(d["nextAttemptAt"].is_null());
    assert_eq!(down.all().len(), 6, "six attempts");
    nothing_within("a seventh attempt", Duration::from_millis(800), || async {
        let all = down.all();
        (all.len() > 6).then_some(all)
    })
    .await;
}

async fn a_slow_receiver_times_out_and_is_retried(db: Db) {
    let rx = Receiver::start(vec![(200, Duration::from_secs(3)), (200, Duration::ZERO)]).await;
    let app = TestApp::spawn(hook_opts(db).env("CAPTURE_WEBHOOK_TIMEOUT", "700ms")).await;
    let (_, key) = app.user_with_key("free").await;
    let ep = create_endpoint(&app, &key, json!({"url": rx.url})).await;
    let id = ep["id"].as_str().unwrap();
    app.client.post(app.url(&format!("/v1/webhooks/{id}/test"))).bearer_auth(&key).send().await.unwrap();
    let d = wait_delivery_status(&app, &key, id, "succeeded").await;
    assert_eq!(d["attempts"], 2, "{d}");
    let got = rx.wait_for(2, Duration::from_secs(10)).await;
    assert_eq!(got[0].headers["webhook-id"], got[1].headers["webhook-id"]);
    let first = deliveries(&app, &key, id).await;
    assert_eq!(first[0]["responseCode"], 200);
}

async fn redirects_are_not_followed(db: Db) {
    let target = Receiver::start(vec![(200, Duration::ZERO)]).await;
    // A receiver that answers every delivery with a redirect to another receiver.
    let location = target.url.clone();
    let app_r = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            let location = location.clone();
            async move { (axum::http::StatusCode::TEMPORARY_REDIRECT, [(axum::http::header::LOCATION, location)]) }
        }),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let redirecting = format!("http://{}/hook", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app_r).await.unwrap() });
    let app = TestApp::spawn(hook_opts(db)).await;
    let (_, key) = app.user_with_key("free").await;
    let ep = create_endpoint(&app, &key, json!({"url": redirecting})).await;
    let id = ep["id"].as_str().unwrap();
    app.client.post(app.url(&format!("/v1/webhooks/{id}/test"))).bearer_auth(&key).send().await.unwrap();
    let d = wait_delivery_status(&app, &key, id, "exhausted").await;
    assert_eq!(d["responseCode"], 307);
    assert_eq!(d["attempts"], 6);
    assert!(target.all().is_empty(), "the redirect target must never be called");
}

async fn deleting_an_endpoint_stops_its_deliveries(db: Db) {
    let rx = Receiver::start(vec![(500, Duration::ZERO)]).await;
    let app = TestApp::spawn(hook_opts(db).env("CAPTURE_WEBHOOK_RETRY_DELAYS", "1s,1s,1s,1s,1s")).await;
    let (_, key) = app.user_with_key("free").await;
    let ep = create_endpoint(&app, &key, json!({"url": rx.url})).await;
    let id = ep["id"].as_str().unwrap();
    app.client.post(app.url(&format!("/v1/webhooks/{id}/test"))).bearer_auth(&key).send().await.unwrap();
    rx.wait_for(1, Duration::from_secs(10)).await;
    let r = app.client.delete(app.url(&format!("/v1/webhooks/{id}"))).bearer_auth(&key).send().await.unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(rx.all().len(), 1);
    nothing_within("a delivery after deletion", Duration::from_millis(2500), || async {
        let all = rx.all();
        (all.len() > 1).then_some(all)
    })
    .await;
    let list: Value = app.get(&key, "/v1/webhooks").await.json().await.unwrap();
    assert!(list["data"].as_array().unwrap().is_empty());
    assert_eq!(
        app.client.post(app.url(&format!("/v1/webhooks/{id}/test"))).bearer_auth(&key).send().await.unwrap().status(),
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn endpoint_urls_are_validated_and_private_targets_blocked() {
    let rx = Receiver::start(vec![(200, Duration::ZERO)]).await;
    // Default policy: https only, no private addresses.
    let app = TestApp::spawn(Opts::api(Db::Sqlite).env("CAPTURE_EGRESS_ALLOW", "")).await;
    let (_, key) = app.user_with_key("free").await;
    for (body, field) in [
        (json!({"url": "http://example.com/hook"}), "url"),
        (json!({"url": "ftp://example.com/hook"}), "url"),
        (json!({"url": "https://example.com/hook", "events": ["screenshot.done"]}), "events"),
        (json!({"url": "https://example.com/hook", "events": "*"}), "events"),
        (json!({"events": ["*"]}), "url"),
        (json!({"url": "https://127.0.0.1/hook"}), "url"),
        (json!({"url": "https://[::1]/hook"}), "url"),
        (json!({"url": "https://localhost/hook"}), "url"),
    ] {
        let r = app.post_json(&key, "/v1/webhooks", &body).await;
        assert_eq!(r.status(), 400, "{body}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["code"], "VALIDATION_ERROR");
        assert_eq!(v["details"]["field"], field, "{v}");
    }
    drop(app);
    // Plain http allowed, private networks not: a name that resolves to loopback is
    // refused at connect time and the receiver never hears from us.
    let app =
        TestApp::spawn(Opts::api(Db::Sqlite).env("CAPTURE_EGRESS_ALLOW", "").env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true"))
            .await;
    let (_, key) = app.user_with_key("free").await;
    // The machine's own host name resolves to a loopback address on Debian (/etc/hosts).
    let host =
        String::from_utf8(std::process::Command::new("hostname").output().unwrap().stdout).unwrap().trim().to_string();
    let resolved: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host.as_str(), 80)).await.unwrap().collect();
    assert!(resolved.iter().all(|a| a.ip().is_loopback()), "{host} should resolve to loopback: {resolved:?}");
    let sneaky = rx.url.replace("127.0.0.1", &host);
    let ep = create_endpoint(&app, &key, json!({"url": sneaky})).await;
    let id = ep["id"].as_str().unwrap();
    app.client.post(app.url(&format!("/v1/webhooks/{id}/test"))).bearer_auth(&key).send().await.unwrap();
    let d = eventually("the delivery is attempted", Duration::from_secs(20), || async {
        let ds = deliveries(&app, &key, id).await;
        if ds[0]["attempts"].as_i64().unwrap() >= 1 { Ok(ds[0].clone()) } else { Err(ds) }
    })
    .await;
    let e = d["errorMessage"].as_str().unwrap().to_lowercase();
    assert!(e.contains("block") || e.contains("loopback") || e.contains("private"), "{e}");
    assert!(rx.all().is_empty(), "the receiver must not be reached");
}

async fn quota_warnings_fire_once_per_threshold(db: Db) {
    let rx = Receiver::start(vec![(200, Duration::ZERO)]).await;
    let app = TestApp::spawn(hook_opts(db).env("CAPTURE_PLAN_LIMITS", "free=10")).await;
    let (_, key) = app.user_with_key("free").await;
    let ep = create_endpoint(&app, &key, json!({"url": rx.url, "events": ["quota.warning"]})).await;
    let mut tasks = Vec::new();
    for i in 0..14 {
        let (c, url, key) = (app.client.clone(), app.url("/v1/screenshot"), key.clone());
        tasks.push(tokio::spawn(async move {
            c.post(url)
                .bearer_auth(key)
                .json(&json!({"url": format!("https://example.com/{i}")}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }));
    }
    for t in tasks {
        let s = t.await.unwrap();
        assert!(s == 202 || s == 429);
    }
    let got = rx.wait_for(2, Duration::from_secs(20)).await;
    nothing_within("a third warning", Duration::from_millis(600), || async {
        let all = rx.all();
        (all.len() > 2).then_some(all)
    })
    .await;
    let got_all = rx.all();
    assert_eq!(got_all.len(), 2, "exactly two warnings: {got:?}");
    let mut thresholds: Vec<i64> = got_all
        .iter()
        .map(|r| {
            let v = verify(ep["secret"].as_str().unwrap(), r).unwrap();
            assert_eq!(v["type"], "quota.warning");
            assert_eq!(v["data"]["limit"], 10);
            assert!(v["data"]["resetAt"].as_str().unwrap().ends_with('Z'));
            assert_eq!(v["data"]["remaining"].as_i64().unwrap(), 10 - v["data"]["used"].as_i64().unwrap());
            v["data"]["threshold"].as_i64().unwrap()
        })
        .collect();
    thresholds.sort();
    assert_eq!(thresholds, vec![80, 95]);
}

async fn capture_outcomes_reach_subscribed_endpoints_only(db: Db) {
    let site = Site::start(vec![("/red", "text/html", solid("#ff0000"))]).await;
    let all = Receiver::start(vec![(200, Duration::ZERO)]).await;
    let failures = Receiver::start(vec![(200, Duration::ZERO)]).await;
    let app = TestApp::spawn(Opts::full(db).env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true")).await;
    let (_, key) = app.user_with_key("free").await;
    let e_all = create_endpoint(&app, &key, json!({"url": all.url})).await;
    create_endpoint(&app, &key, json!({"url": failures.url, "events": ["screenshot.failed"]})).await;
    let ok = app.create(&key, json!({"url": site.url("/red"), "width": 200, "height": 150})).await;
    app.wait(&key, ok["id"].as_str().unwrap()).await;
    let pdf = app.create(&key, json!({"url": site.url("/red"), "pdf": true})).await;
    app.wait(&key, pdf["id"].as_str().unwrap()).await;
    let bad = app.create(&key, json!({"url": "http://127.0.0.1:9/"})).await;
    app.wait(&key, bad["id"].as_str().unwrap()).await;
    let got = all.wait_for(3, Duration::from_secs(20)).await;
    let bodies: Vec<Value> = got.iter().map(|r| verify(e_all["secret"].as_str().unwrap(), r).unwrap()).collect();
    let completed: Vec<&Value> = bodies.iter().filter(|b| b["type"] == "screenshot.completed").collect();
    assert_eq!(completed.len(), 2);
    let png = completed.iter().find(|b| b["data"]["screenshotId"] == ok["id"]).unwrap();
    assert_eq!(png["data"]["format"], "png");
    assert_eq!(png["data"]["width"], 200);
    assert_eq!(png["data"]["height"], 150);
    assert_eq!(png["data"]["url"], site.url("/red"));
    assert!(png["data"]["publicUrl"].as_str().unwrap().starts_with("http"));
    let p = completed.iter().find(|b| b["data"]["screenshotId"] == pdf["id"]).unwrap();
    assert_eq!(p["data"]["format"], "pdf");
    assert!(p["data"]["publicUrl"].as_str().unwrap().ends_with(".pdf"));
    let f = bodies.iter().find(|b| b["type"] == "screenshot.failed").unwrap();
    assert_eq!(f["data"]["screenshotId"], bad["id"]);
    assert!(f["data"]["error"].as_str().is_some_and(|e| !e.is_empty()));
    let only_failed = failures.wait_for(1, Duration::from_secs(10)).await;
    nothing_within("a second delivery to the failures-only endpoint", Duration::from_millis(500), || async {
        let all = failures.all();
        (all.len() > 1).then_some(all)
    })
    .await;
    assert_eq!(failures.all().len(), 1);
    assert_eq!(only_failed[0].headers["x-service-event"], "screenshot.failed");
}

both_dbs!(deliveries_are_signed_and_rotation_replaces_the_secret);
both_dbs!(failed_attempts_are_retried_with_one_webhook_id_then_exhausted);
both_dbs!(a_slow_receiver_times_out_and_is_retried);
both_dbs!(redirects_are_not_followed);
both_dbs!(deleting_an_endpoint_stops_its_deliveries);
both_dbs!(quota_warnings_fire_once_per_threshold);
both_dbs!(capture_outcomes_reach_subscribed_endpoints_only);
