//! Captures of real pages through the whole service, on the real-web corpus
//! (`capture_testkit::corpus`: consent platforms' own markup, vendors' bot walls, a newsletter
//! pop-up): the job says what its consent step did, a wall fails as `blocked: <vendor>`
//! without costing the action and with its `screenshot.failed` webhook, a covered page is
//! reported, and MCP sessions and runs refuse consent pop-ups with the same engine.

use crate::helpers::*;
use capture_testkit::corpus;
use capture_testkit::oauth::tool_at;
use capture_testkit::runs::wait_end;
use capture_testkit::webhooks::*;
use serde_json::{Value, json};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_capture_says_what_it_did_with_consent_and_a_bot_wall_fails_uncharged() {
    let site = corpus::serve().await;
    let hooks = Receiver::start(vec![(200, Duration::ZERO)]).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite).env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true")).await;
    let (_, key) = app.user_with_key("free").await;
    let endpoint = create_endpoint(&app, &key, json!({"url": hooks.url, "events": ["screenshot.failed"]})).await;

    // An unknown cookieConsent is named; nothing is created or charged.
    let r =
        app.post_json(&key, "/v1/screenshot", &json!({"url": site.url("/plain.html"), "cookieConsent": "yes"})).await;
    let status = r.status().as_u16();
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        (status, v["code"].as_str(), v["details"]["field"].as_str()),
        (400, Some("VALIDATION_ERROR"), Some("cookieConsent")),
        "{v}"
    );

    // OneTrust, refused by default: said in metadata.consent and its tag; the marker green.
    let job = app.create(&key, json!({"url": site.url("/onetrust.html"), "waitUntil": "load"})).await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["metadata"]["consent"], json!({"cmp": "Onetrust", "action": "rejected"}), "{done}");
    assert!(done["tags"].as_array().unwrap().contains(&json!("consent-rejected")), "{done}");
    let (_, _, png) = app.fetch(done["publicUrl"].as_str().unwrap()).await;
    assert_px(&decode(&png), 10, 10, corpus::REJECTED);
    assert_eq!(used(&app, &key).await, 1);

    // A wall: failed with what blocked it, the action given back, the failure delivered.
    let job = app.create(&key, json!({"url": site.url("/cf-block.html"), "waitUntil": "load"})).await;
    let failed = app.wait(&key, job["id"].as_str().unwrap()).await;
    let error = failed["error"].as_str().unwrap_or_default().to_string();
    assert_eq!(
        (failed["status"].as_str(), &error[..21.min(error.len())]),
        (Some("failed"), "blocked: cloudflare: "),
        "{failed}"
    );
    assert_eq!(used(&app, &key).await, 1, "a wall costs nothing");
    let got = hooks.wait_for(1, Duration::from_secs(20)).await;
    let body = verify(endpoint["secret"].as_str().unwrap(), &got[0]).unwrap();
    assert_eq!(
        (body["type"].as_str(), body["data"]["screenshotId"].as_str(), body["data"]["error"].as_str()),
        (Some("screenshot.failed"), job["id"].as_str(), Some(error.as_str()))
    );

    // A newsletter pop-up is reported; hidePopups removes it.
    let job = app.create(&key, json!({"url": site.url("/newsletter.html"), "waitUntil": "load"})).await;
    let covered = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(covered["metadata"]["overlay"], json!({"selector": "#newsletter-popup", "coverage": 1.0}), "{covered}");
    assert!(covered["tags"].as_array().unwrap().contains(&json!("overlay-remaining")), "{covered}");
    let job =
        app.create(&key, json!({"url": site.url("/newsletter.html"), "waitUntil": "load", "hidePopups": true})).await;
    let clean = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert!(clean["metadata"]["overlay"].is_null(), "{clean}");
    assert!(clean["tags"].as_array().unwrap().contains(&json!("popups-hidden")), "{clean}");
    let (_, _, png) = app.fetch(clean["publicUrl"].as_str().unwrap()).await;
    assert_px(&decode(&png), 640, 400, corpus::CONTENT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mcp_sessions_and_runs_refuse_consent_with_the_same_engine() {
    let site = corpus::serve().await;
    let app = App::spawn_with(Opts::full(Db::Sqlite)).await;
    let mcp = app.url("/mcp");
    let (_email, _c, m) = app.tokens(Some(&mcp)).await;
    let token = m["access_token"].as_str().unwrap().to_string();
    let call = |name: &'static str, args: Value| {
        let (http, mcp, token) = (app.http.clone(), mcp.clone(), token.clone());
        async move {
            let r = tool_at(&http, &mcp, &token, name, args).await;
            assert_ne!(r["isError"], true, "{name}: {r}");
            r["structuredContent"].clone()
        }
    };
    // Default auto: the first page's pop-up refused, said in the result.
    let start = call("session_start", json!({"url": site.url("/didomi.html"), "recordVideo": false})).await;
    assert_eq!(start["consent"], json!({"cmp": "didomi", "action": "rejected"}), "{start}");
    let sid = start["sessionId"].as_str().unwrap().to_string();
    let nav = call("navigate", json!({"sessionId": sid, "url": site.url("/onetrust.html")})).await;
    assert_eq!(nav["consent"], json!({"cmp": "Onetrust", "action": "rejected"}), "{nav}");
    let answered =
        call("evaluate", json!({"sessionId": sid, "expression": "document.documentElement.dataset.consent"})).await;
    assert_eq!(answered["value"], "rejected");
    call("session_end", json!({"sessionId": sid})).await;
    // none: the banner is the agent's to answer.
    let start = call(
        "session_start",
        json!({"url": site.url("/onetrust.html"), "recordVideo": false, "cookieConsent": "none"}),
    )
    .await;
    assert!(start.get("consent").is_none(), "{start}");
    let sid = start["sessionId"].as_str().unwrap().to_string();
    let expr = "(() => { const e = document.getElementById('onetrust-banner-sdk'); return e ? getComputedStyle(e).display : null; })()";
    eventually("the OneTrust banner shows, unanswered", Duration::from_secs(5), || async {
        let v = call("evaluate", json!({"sessionId": sid, "expression": expr})).await["value"].clone();
        if v == "block" { Ok(v) } else { Err(v) }
    })
    .await;
    let answer =
        call("evaluate", json!({"sessionId": sid, "expression": "document.documentElement.dataset.consent || null"}))
            .await;
    assert_eq!(answer["value"], Value::Null);
    call("session_end", json!({"sessionId": sid})).await;
    // A bad value is named.
    let r = tool_at(
        &app.http,
        &mcp,
        &token,
        "session_start",
        json!({"url": site.url("/plain.html"), "cookieConsent": "maybe"}),
    )
    .await;
    assert_eq!(r["isError"], true, "{r}");

    // A scripted run: accept on every page, said for each goto.
    let (_, key) = app.app.user_with_key("pro").await;
    let body = json!({"startUrl": site.url("/plain.html"), "recordVideo": false, "cookieConsent": "accept",
        "steps": [{"action": "goto", "url": site.url("/cookiebot.html")}]});
    let r = app.app.post_json(&key, "/v1/runs", &body).await;
    assert_eq!(r.status(), 202);
    let run: Value = r.json().await.unwrap();
    assert_eq!(run["cookieConsent"], "accept");
    let ended = wait_end(&app.app, &key, run["id"].as_str().unwrap()).await;
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(
        ended["stepResults"][0]["result"]["consent"],
        json!({"cmp": "Cybotcookiebot", "action": "accepted"}),
        "{ended}"
    );
}
