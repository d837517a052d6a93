//! MCP over OAuth against the real `capture` binary, where a test needs what one process
//! cannot give: an automation session reached from a second node. The rest of the OAuth and
//! MCP suite runs in-process: `crates/capture-server/tests/service/oauth.rs` and
//! `oauth_inbox.rs`.

#[path = "api/helpers.rs"]
#[allow(dead_code)]
mod helpers;

use capture_testkit::oauth::*;
use helpers::{Api, Db, Opts, TestApp};
use serde_json::{Value, json};

/// The secret the nodes of these deployments sign their internal calls with.
const CLUSTER_SECRET: &str = "oauth-suite-cluster-secret-0123456789abcdef";

/// The OAuth/MCP tests' app over this suite's harness (the `capture` binary).
type App = capture_testkit::oauth::App<TestApp>;

/// An MCP automation session is a live run held by the node that started it, on both
/// databases: it shows as a running live run with its minutes reserved, its tools drive the
/// page (a ref from the snapshot tapped), another node (behind the same base URL) says where
/// it lives, a node without a browser refuses to start one, and the end finalises the run.
async fn automation_session_is_a_live_run(db: Db) {
    let page =
        "<!doctype html><title>Counter</title><button id=go onclick=\"document.getElementById('n').textContent = \
                'clicked'\">Go</button><p id=n>waiting</p>"
            .to_string();
    let site = helpers::Site::start(vec![("/", "text/html", page)]).await;
    let app = App::spawn_with(Opts::full(db).env("CAPTURE_CLUSTER_SECRET", CLUSTER_SECRET)).await;
    let mcp = app.url("/mcp");
    let (email, _c, m) = app.tokens(Some(&mcp)).await;
    let token = m["access_token"].as_str().unwrap();
    let key = app.app.new_key(&email).await;
    let call = |name: &'static str, args: Value| tool_at(&app.http, &mcp, token, name, args);

    let r = call("session_start", json!({"url": site.url("/"), "device": "iphone-se", "recordVideo": false})).await;
    assert_ne!(r["isError"], true, "{r}");
    let sid = r["structuredContent"]["sessionId"].as_str().unwrap().to_string();
    assert_eq!(r["structuredContent"]["title"], "Counter", "{r}");
    let run: Value = app.app.get(&key, &format!("/v1/runs/{sid}")).await.json().await.unwrap();
    assert_eq!((run["status"].as_str(), run["kind"].as_str()), (Some("running"), Some("live")), "{run}");
    assert_eq!((run["actionsReserved"].as_i64(), run["device"]["preset"].as_str()), (Some(5), Some("iphone-se")));
    assert!(run["connectUrl"].is_null(), "the connect token was spent by the node: {run}");

    let r = call("snapshot", json!({"sessionId": sid})).await;
    let tree = r["structuredContent"]["snapshot"].as_str().unwrap().to_string();
    let go = tree
        .lines()
        .find(|l| l.contains("button \"Go\""))
        .and_then(|l| l.split("[ref=").nth(1))
        .map(|r| r.trim_end_matches(']').to_string())
        .unwrap_or_else(|| panic!("{tree}"));
    let r = call("tap", json!({"sessionId": sid, "ref": go})).await;
    assert_ne!(r["isError"], true, "{r}");
    let r = call("get_text", json!({"sessionId": sid, "selector": "#n"})).await;
    assert_eq!(r["structuredContent"]["text"], "clicked", "{r}");

    if db == Db::Postgres {
        // Another node of the deployment (same base URL, no browser), as a balancer without
        // stickiness would send the agent's next calls: they are forwarded to the node
        // holding the session, and the client sees no difference.
        let other = app.app.node("api", &[("CAPTURE_BASE_URL", &app.base)]).await;
        let elsewhere = other.url("/mcp");
        let r = tool_at(&app.http, &elsewhere, token, "get_url", json!({"sessionId": sid})).await;
        assert_eq!(r["structuredContent"]["url"], json!(site.url("/")), "{r}");
        let r = tool_at(&app.http, &elsewhere, token, "get_text", json!({"sessionId": sid, "selector": "#n"})).await;
        assert_eq!(r["structuredContent"]["text"], "clicked", "{r}");
        let r =
            tool_at(&app.http, &elsewhere, token, "navigate", json!({"sessionId": sid, "url": site.url("/")})).await;
        assert_ne!(r["isError"], true, "{r}");
        let r = tool_at(&app.http, &elsewhere, token, "get_text", json!({"sessionId": sid, "selector": "#n"})).await;
        assert_eq!(r["structuredContent"]["text"], "waiting", "the page the other node navigated: {r}");
        // Both nodes list it.
        for mcp_url in [&mcp, &elsewhere] {
            let r = tool_at(&app.http, mcp_url, token, "session_list", json!({})).await;
            let ids: Vec<&str> = r["structuredContent"]["sessions"]
                .as_array()
                .map(|a| a.iter().filter_map(|s| s["sessionId"].as_str()).collect())
                .unwrap_or_default();
            assert_eq!(ids, [sid.as_str()], "{r}");
        }
        // What forwarding adds: get_url through the other node against the holding node,
        // 50 each, interleaved.
        let (mut direct, mut forwarded) = (Vec::new(), Vec::new());
        for _ in 0..50 {
            for (url, into) in [(&mcp, &mut direct), (&elsewhere, &mut forwarded)] {
                let t = std::time::Instant::now();
                let r = tool_at(&app.http, url, token, "get_url", json!({"sessionId": sid})).await;
                assert_ne!(r["isError"], true, "{r}");
                into.push(t.elapsed());
            }
        }
        direct.sort();
        forwarded.sort();
        println!(
            "get_url p50: {:.2} ms on the holding node, {:.2} ms through another node (+{:.2} ms forwarded)",
            direct[25].as_secs_f64() * 1e3,
            forwarded[25].as_secs_f64() * 1e3,
            (forwarded[25].as_secs_f64() - direct[25].as_secs_f64()) * 1e3
        );
        // Another account reaches nothing of it through either node.
        let (_, _, theirs) = app.tokens(Some(&mcp)).await;
        let theirs = theirs["access_token"].as_str().unwrap();
        for mcp_url in [&mcp, &elsewhere] {
            let r = tool_at(&app.http, mcp_url, theirs, "get_url", json!({"sessionId": sid})).await;
            assert_eq!(r["structuredContent"]["code"], "NOT_FOUND", "{r}");
            let r = tool_at(&app.http, mcp_url, theirs, "session_list", json!({})).await;
            assert_eq!(r["structuredContent"]["sessions"], json!([]), "{r}");
        }
        // A node without a browser still refuses to start a session.
        let r = tool_at(&app.http, &elsewhere, token, "session_start", json!({"url": site.url("/")})).await;
        assert_eq!(r["structuredContent"]["code"], "SERVICE_UNAVAILABLE", "{r}");
        // Unsigned or wrongly signed internal calls are refused.
        let forged = app
            .http
            .post(other.url("/internal/v1/automation/call"))
            .header("x-capture-cluster", "t=1,s=00")
            .json(&json!({"userId": "usr_x", "tool": "get_url", "args": {"sessionId": sid}}))
            .send()
            .await
            .unwrap();
        assert_eq!(forged.status().as_u16(), 401);
        // A correctly signed call is taken once: the same request sent again (as someone who
        // recorded it on the internal network would) is refused.
        let body = json!({"userId": "usr_x", "tool": "get_url", "args": {"sessionId": sid}}).to_string();
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        let nonce = capture_core::ids::random_string(22);
        let s = capture_testkit::webhooks::hmac_sha256_hex(
            CLUSTER_SECRET.as_bytes(),
            format!("{t}.{nonce}.{body}").as_bytes(),
        );
        let signed = format!("t={t},n={nonce},s={s}");
        let send = || {
            app.http
                .post(other.url("/internal/v1/automation/call"))
                .header("x-capture-cluster", &signed)
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
        };
        let first = send().await.unwrap();
        assert_eq!(first.status().as_u16(), 404, "signed with the cluster secret, for no account");
        let answer: Value = first.json().await.unwrap();
        assert_eq!(answer["code"], "NOT_FOUND", "{answer}");
        assert_eq!(send().await.unwrap().status().as_u16(), 401, "a replay is refused");
    }

    let r = call("session_end", json!({"sessionId": sid})).await;
    let ended = &r["structuredContent"];
    assert_eq!((ended["status"].as_str(), ended["endReason"].as_str()), (Some("completed"), Some("finished")), "{r}");
    assert_eq!((ended["actionsCharged"].as_i64(), ended["finalUrl"].as_str()), (Some(1), Some(site.url("/").as_str())));
    let run: Value = app.app.get(&key, &format!("/v1/runs/{sid}")).await.json().await.unwrap();
    assert_eq!(run["status"], "completed", "{run}");
    let b = call("account_balance", json!({})).await;
    assert_eq!(b["structuredContent"]["usage"]["used"], 1, "5 reserved, 4 given back: {b}");
    let r = call("session_end", json!({"sessionId": sid})).await;
    assert_eq!(r["structuredContent"]["code"], "SESSION_EXPIRED", "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn automation_session_is_a_live_run_on_sqlite() {
    automation_session_is_a_live_run(Db::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn automation_session_is_a_live_run_on_postgres() {
    automation_session_is_a_live_run(Db::Postgres).await
}

/// A session whose node dies: calls through the surviving node say so at once
/// (`SESSION_UNREACHABLE`, not a hang), and within the run's lease the session ends as
/// `failed` (`worker_lost`) with only what ran charged; then it is `SESSION_EXPIRED`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_session_whose_node_died_ends_as_failed_within_its_lease() {
    let site =
        helpers::Site::start(vec![("/", "text/html", "<!doctype html><title>Here</title><p>hi".to_string())]).await;
    let app = App::spawn_with(Opts::full(Db::Postgres).env("CAPTURE_RUN_LEASE", "3s")).await;
    let mcp = app.url("/mcp");
    let (email, _c, m) = app.tokens(Some(&mcp)).await;
    let token = m["access_token"].as_str().unwrap();
    let key = app.app.new_key(&email).await;
    // The session is started on a second node with a browser, which then dies.
    let mut owner = app.app.node("api,worker", &[("CAPTURE_BASE_URL", &app.base)]).await;
    let r = tool_at(
        &app.http,
        &owner.url("/mcp"),
        token,
        "session_start",
        json!({"url": site.url("/"), "recordVideo": false}),
    )
    .await;
    assert_ne!(r["isError"], true, "{r}");
    let sid = r["structuredContent"]["sessionId"].as_str().unwrap().to_string();
    let r = tool_at(&app.http, &mcp, token, "get_title", json!({"sessionId": sid})).await;
    assert_eq!(r["structuredContent"]["title"], "Here", "forwarded while the owner lives: {r}");

    owner.kill9();
    let t = std::time::Instant::now();
    let r = tool_at(&app.http, &mcp, token, "get_title", json!({"sessionId": sid})).await;
    assert_eq!(r["structuredContent"]["code"], "SESSION_UNREACHABLE", "{r}");
    assert!(t.elapsed() < std::time::Duration::from_secs(10), "answered at once, not after a hang");
    let run = loop {
        let run: Value = app.app.get(&key, &format!("/v1/runs/{sid}")).await.json().await.unwrap();
        if run["status"] != "running" {
            break run;
        }
        assert!(t.elapsed() < std::time::Duration::from_secs(20), "still running: {run}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    println!("the dead node's session ended {:?} after the kill", t.elapsed());
    assert_eq!((run["status"].as_str(), run["endReason"].as_str()), (Some("failed"), Some("worker_lost")), "{run}");
    assert_eq!(run["actionsCharged"].as_i64(), Some(1), "one started minute ran: {run}");
    let r = tool_at(&app.http, &mcp, token, "get_title", json!({"sessionId": sid})).await;
    assert_eq!(r["structuredContent"]["code"], "SESSION_EXPIRED", "{r}");
}
