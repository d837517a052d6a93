//! Customers' proxies (`/v1/proxies`) against local proxy fixtures that speak the real
//! protocols (an HTTP proxy answering CONNECT with Basic credentials, a SOCKS5 proxy with
//! username/password, one that refuses everything, a closed port): the resource keeps
//! credentials sealed and shows them never; captures, runs and audits leave through the
//! named proxy behind the egress guard; a proxy that fails fails the job naming it, not
//! charged, never a captured error page; another account's proxy is not found.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::*;
use capture_testkit::audits::wait_audit;
use capture_testkit::both_dbs;
use capture_testkit::proxies::{TestProxy, closed_port};

async fn call(app: &TestApp, key: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = app.client.request(method, app.url(path)).bearer_auth(key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (status, if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap() })
}

async fn post(app: &TestApp, key: &str, path: &str, body: Value) -> (u16, Value) {
    call(app, key, reqwest::Method::POST, path, Some(body)).await
}

fn red_page() -> Vec<(&'static str, &'static str, String)> {
    vec![("/red", "text/html", solid("#ff0000")), ("/blue", "text/html", solid("#0000ff"))]
}

async fn proxies_are_kept_sealed_shown_without_credentials_and_per_account(db: Db) {
    let app = TestApp::spawn(Opts::full(db)).await;
    let (_, alice) = app.user_with_key("pro").await;
    let (_, bob) = app.user_with_key("pro").await;

    let (status, p) =
        post(&app, &alice, "/v1/proxies", json!({"name": "office", "url": "http://bob:s3cr%40t@10.1.2.3:3128"})).await;
    assert_eq!(status, 201, "{p}");
    let id = p["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("prx_"), "{p}");
    assert_eq!(
        (&p["name"], &p["kind"], &p["rotation"], &p["members"]),
        (
            &json!("office"),
            &json!("proxy"),
            &Value::Null,
            &json!([{"url": "http://10.1.2.3:3128", "authenticated": true}])
        )
    );
    assert!(!p.to_string().contains("s3cr"), "{p}");
    // A pool with shared credentials and sticky rotation.
    let (status, pool) = post(
        &app,
        &alice,
        "/v1/proxies",
        json!({"name": "eu", "urls": ["socks5://a.example:1080", "http://b.example:8080"], "rotation": "sticky",
               "username": "u", "password": "pw"}),
    )
    .await;
    assert_eq!(status, 201, "{pool}");
    assert_eq!((&pool["kind"], &pool["rotation"]), (&json!("pool"), &json!("sticky")));
    assert_eq!(
        pool["members"],
        json!([{"url": "socks5://a.example:1080", "authenticated": true}, {"url": "http://b.example:8080", "authenticated": true}])
    );

    // Bad input names its field.
    for (body, field, reason) in [
        (
            json!({"name": "x", "url": "ftp://p.example:21"}),
            "url",
            "scheme 'ftp' is not supported (use http://, https:// or socks5://)",
        ),
        (json!({"name": "x", "url": "http://:3128"}), "url", "is not a valid URL: empty host"),
        (json!({"name": "x", "url": "socks5://p.example:99999"}), "url", "is not a valid URL: invalid port number"),
        (json!({"name": "office", "url": "http://p.example:1"}), "name", "a proxy named 'office' exists already"),
        (json!({"name": "x", "urls": []}), "urls", "must list 1 to 50 proxy URLs"),
    ] {
        let (status, e) = post(&app, &alice, "/v1/proxies", body.clone()).await;
        assert_eq!(status, 400, "{body}: {e}");
        assert_eq!(
            (&e["code"], &e["details"]),
            (&json!("VALIDATION_ERROR"), &json!({"field": field, "reason": reason})),
            "{body}"
        );
    }

    // By id or name; renamed; new members replace the old ones.
    let (status, got) = call(&app, &alice, reqwest::Method::GET, "/v1/proxies/office", None).await;
    assert_eq!((status, &got["id"]), (200, &json!(id)));
    let (status, renamed) =
        call(&app, &alice, reqwest::Method::PATCH, &format!("/v1/proxies/{id}"), Some(json!({"name": "hq"}))).await;
    assert_eq!((status, &renamed["name"], &renamed["members"]), (200, &json!("hq"), &p["members"]));
    let (status, e) =
        call(&app, &alice, reqwest::Method::PATCH, &format!("/v1/proxies/{id}"), Some(json!({"rotation": "sticky"})))
            .await;
    assert_eq!((status, &e["details"]["field"]), (400, &json!("rotation")), "{e}");
    let (status, moved) = call(
        &app,
        &alice,
        reqwest::Method::PATCH,
        &format!("/v1/proxies/{id}"),
        Some(json!({"url": "socks5://10.9.9.9"})),
    )
    .await;
    assert_eq!((status, &moved["members"]), (200, &json!([{"url": "socks5://10.9.9.9:1080", "authenticated": false}])));
    let (status, list) = call(&app, &alice, reqwest::Method::GET, "/v1/proxies", None).await;
    let names: Vec<&str> = list["data"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!((status, names), (200, vec!["hq", "eu"]));

    // Another account sees none of it, and cannot name it.
    let (status, list) = call(&app, &bob, reqwest::Method::GET, "/v1/proxies", None).await;
    assert_eq!((status, list["data"].as_array().unwrap().len()), (200, 0));
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let (status, e) = call(&app, &bob, method.clone(), &format!("/v1/proxies/{id}"), None).await;
        assert_eq!((status, &e["code"]), (404, &json!("NOT_FOUND")), "{method}");
    }
    let (status, e) = post(&app, &bob, &format!("/v1/proxies/{id}/test"), json!({})).await;
    assert_eq!((status, &e["code"]), (404, &json!("NOT_FOUND")));
    let (status, e) = post(&app, &bob, "/v1/screenshot", json!({"url": "http://127.0.0.1:9/", "proxy": id})).await;
    assert_eq!(status, 400, "{e}");
    assert_eq!(
        e["details"],
        json!({"field": "proxy", "reason": format!("'{id}' is not one of your proxies (GET /v1/proxies lists them)")})
    );

    let (status, _) = call(&app, &alice, reqwest::Method::DELETE, &format!("/v1/proxies/{id}"), None).await;
    assert_eq!(status, 204);
    let (status, _) = call(&app, &alice, reqwest::Method::GET, &format!("/v1/proxies/{id}"), None).await;
    assert_eq!(status, 404);
}
both_dbs!(proxies_are_kept_sealed_shown_without_credentials_and_per_account);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn captures_leave_through_http_and_socks5_proxies_and_a_failing_one_is_named_and_free() {
    let site = Site::start(red_page()).await;
    let squid = TestProxy::http("squid", Some(("bob", "s3cret"))).await;
    let dante = TestProxy::socks5(Some(("alice", "pw"))).await;
    let refusing = TestProxy::refusing().await;
    let dead = closed_port().await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("pro").await;
    let mut ids = Vec::new();
    for (name, url) in [
        ("squid", squid.url("http", Some(("bob", "s3cret")))),
        ("dante", dante.url("socks5", Some(("alice", "pw")))),
        ("wrong-password", squid.url("http", Some(("bob", "nope")))),
        ("refusing", refusing.url("http", None)),
        ("dead", format!("socks5://{dead}")),
    ] {
        let (status, p) = post(&app, &key, "/v1/proxies", json!({"name": name, "url": url})).await;
        assert_eq!(status, 201, "{p}");
        ids.push(p["id"].as_str().unwrap().to_string());
    }

    // Through each working proxy, by name: the page as it is, and the proxy saw it.
    for (name, id, proxy) in [("squid", &ids[0], &squid), ("dante", &ids[1], &dante)] {
        let before = proxy.passed();
        let job = app.create(&key, json!({"url": site.url("/red"), "waitUntil": "load", "proxy": name})).await;
        let done = app.wait(&key, job["id"].as_str().unwrap()).await;
        assert_eq!(done["status"], "done", "{done}");
        assert_eq!(done["proxy"], json!({"id": id, "member": 0}), "{done}");
        let (status, _, body) = app.fetch(done["publicUrl"].as_str().unwrap()).await;
        assert_eq!(status, 200);
        assert_px(&decode(&body), 10, 10, [255, 0, 0]);
        assert!(proxy.passed() > before, "{name} saw nothing: {:?}", proxy.seen());
    }
    let port = site.base.rsplit(':').next().unwrap();
    assert!(
        squid.seen().iter().any(|s| s.request == format!("CONNECT 127.0.0.1:{port}") && s.allowed),
        "{:?}",
        squid.seen()
    );
    assert!(dante.seen().iter().any(|s| s.request == format!("SOCKS5 127.0.0.1:{port}") && s.allowed));
    // Without `proxy`, nothing goes through them.
    let (squid_seen, dante_seen) = (squid.seen().len(), dante.seen().len());
    let job = app.create(&key, json!({"url": site.url("/blue"), "waitUntil": "load"})).await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!((done["status"].as_str(), done.get("proxy")), (Some("done"), None), "{done}");
    assert_eq!((squid.seen().len(), dante.seen().len()), (squid_seen, dante_seen));

    // A proxy that refuses or fails: the job fails naming it, and costs nothing.
    let used_before = used(&app, &key).await;
    for (name, why) in [
        ("wrong-password", "it refused the credentials (407 Proxy Authentication Required)".to_string()),
        ("refusing", format!("it answered 403 Forbidden to CONNECT 127.0.0.1:{port}")),
        ("dead", format!("connection refused by 127.0.0.1 ({dead})")),
    ] {
        let job = app.create(&key, json!({"url": site.url("/red"), "waitUntil": "load", "proxy": name})).await;
        let done = app.wait(&key, job["id"].as_str().unwrap()).await;
        assert_eq!(
            (done["status"].as_str(), done["error"].as_str(), done["publicUrl"].as_str()),
            (Some("failed"), Some(format!("proxy_failed: {name}: {why}").as_str()), None),
            "{done}"
        );
    }
    assert_eq!(used(&app, &key).await, used_before, "a proxy's failure is not charged");

    // The test endpoint: latency and the exit address each member reports.
    let (status, t) = post(&app, &key, &format!("/v1/proxies/{}/test", ids[0]), json!({"url": site.url("/red")})).await;
    assert_eq!(status, 200, "{t}");
    assert_eq!(
        (&t["ok"], &t["members"][0]["status"], &t["members"][0]["ok"]),
        (&json!(true), &json!(200), &json!(true))
    );
    assert!(t["members"][0]["latencyMs"].as_u64().is_some(), "{t}");
    let (status, t) = post(&app, &key, &format!("/v1/proxies/{}/test", ids[3]), json!({"url": site.url("/red")})).await;
    assert_eq!(status, 200, "{t}");
    assert_eq!(
        (&t["ok"], &t["members"][0]["error"]),
        (
            &json!(false),
            &json!(format!("proxy_failed: refusing: it answered 403 Forbidden to CONNECT 127.0.0.1:{port}"))
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pool_spreads_jobs_per_job_or_sticks_by_key_and_the_guard_checks_the_proxy() {
    let site = Site::start(red_page()).await;
    let a = TestProxy::http("a", None).await;
    let b = TestProxy::socks5(None).await;
    // The egress policy allows the site's loopback address only: a proxy there passes,
    // a proxy on a private address the operator did not allow is refused. One worker, so a
    // job can be made to wait.
    let app = TestApp::spawn(Opts::full(Db::Sqlite).env("CAPTURE_WORKER_CONCURRENCY", "1")).await;
    let (_, key) = app.user_with_key("pro").await;
    let (_, pool) =
        post(&app, &key, "/v1/proxies", json!({"name": "pool", "urls": [a.url("http", None), b.url("socks5", None)]}))
            .await;
    let pool_id = pool["id"].as_str().unwrap().to_string();
    let mut members = std::collections::BTreeMap::new();
    for _ in 0..8 {
        let job = app.create(&key, json!({"url": site.url("/red"), "waitUntil": "load", "proxy": "pool"})).await;
        let done = app.wait(&key, job["id"].as_str().unwrap()).await;
        assert_eq!(done["status"], "done", "{done}");
        assert_eq!(done["proxy"]["id"], json!(pool_id));
        *members.entry(done["proxy"]["member"].as_u64().unwrap()).or_insert(0) += 1;
    }
    // Per-job: the members take the jobs in turn.
    assert_eq!(members, std::collections::BTreeMap::from([(0, 4), (1, 4)]), "per-job rotation: {members:?}");
    assert!(a.passed() > 0 && b.passed() > 0, "{:?} {:?}", a.seen(), b.seen());

    let (status, _) = call(
        &app,
        &key,
        reqwest::Method::PATCH,
        &format!("/v1/proxies/{pool_id}"),
        Some(json!({"rotation": "sticky"})),
    )
    .await;
    assert_eq!(status, 200);
    let mut sticky = std::collections::BTreeSet::new();
    for _ in 0..4 {
        let job = app
            .create(
                &key,
                json!({"url": site.url("/red"), "waitUntil": "load", "proxy": "pool", "proxyStickyKey": "customer-42"}),
            )
            .await;
        sticky.insert(job["proxy"]["member"].as_u64().unwrap());
    }
    assert_eq!(sticky.len(), 1, "a sticky key got several members: {sticky:?}");

    // The proxy's own address is checked like any destination.
    let (_, private) = post(&app, &key, "/v1/proxies", json!({"name": "lan", "url": "http://10.255.255.1:3128"})).await;
    let job = app.create(&key, json!({"url": site.url("/red"), "waitUntil": "load", "proxy": private["id"]})).await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(
        done["error"],
        json!(
            "proxy_failed: lan: blocked by egress policy: 10.255.255.1 is a private address (a proxy on a private network needs the operator's CAPTURE_EGRESS_ALLOW)"
        )
    );

    // A proxy deleted while its job waited for the worker: failed naming it, free.
    let blocker = app.create(&key, json!({"url": site.url("/blue"), "waitUntil": "load", "delay": 3000})).await;
    let (_, gone) = post(&app, &key, "/v1/proxies", json!({"name": "gone", "url": a.url("http", None)})).await;
    let gone_id = gone["id"].as_str().unwrap();
    let job = app.create(&key, json!({"url": site.url("/red"), "waitUntil": "load", "proxy": gone_id})).await;
    let used_before = used(&app, &key).await;
    let (status, _) = call(&app, &key, reqwest::Method::DELETE, &format!("/v1/proxies/{gone_id}"), None).await;
    assert_eq!(status, 204);
    let blocked = app.wait(&key, blocker["id"].as_str().unwrap()).await;
    assert_eq!(blocked["status"], "done");
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(
        (done["status"].as_str(), done["error"].as_str()),
        (Some("failed"), Some(format!("proxy_failed: {gone_id}: the proxy was deleted").as_str())),
        "{done}"
    );
    assert_eq!(used(&app, &key).await, used_before - 1, "the deleted proxy's job was given back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn runs_and_audits_leave_through_the_proxy_too() {
    let site = Site::start(red_page()).await;
    let squid = TestProxy::http("squid", Some(("u", "p"))).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("pro").await;
    let (_, p) =
        post(&app, &key, "/v1/proxies", json!({"name": "squid", "url": squid.url("http", Some(("u", "p")))})).await;
    let id = p["id"].as_str().unwrap().to_string();
    let port = site.base.rsplit(':').next().unwrap().to_string();
    let connects = || squid.seen().iter().filter(|s| s.request == format!("CONNECT 127.0.0.1:{port}")).count();

    let (status, run) = post(
        &app,
        &key,
        "/v1/runs",
        json!({"startUrl": site.url("/red"), "recordVideo": false, "proxy": "squid",
               "steps": [{"action": "goto", "url": site.url("/blue")}]}),
    )
    .await;
    assert_eq!(status, 202, "{run}");
    assert_eq!(run["proxy"], json!({"id": id, "member": 0}));
    let run_id = run["id"].as_str().unwrap();
    let ended = eventually("the run ends", Duration::from_secs(60), || async {
        let v: Value = app.get(&key, &format!("/v1/runs/{run_id}")).await.json().await.unwrap();
        if v["endedAt"].is_string() { Ok(v) } else { Err(v) }
    })
    .await;
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["finalUrl"], json!(site.url("/blue")), "{ended}");
    let after_run = connects();
    assert!(after_run >= 2, "{:?}", squid.seen());

    let (status, audit) = post(&app, &key, "/v1/audits", json!({"url": site.url("/red"), "proxy": id})).await;
    assert_eq!(status, 202, "{audit}");
    let done = wait_audit(&app, &key, audit["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "done", "{done}");
    // The page and the crawl's own requests (robots.txt) went through it.
    assert!(connects() >= after_run + 2, "{:?}", squid.seen());
}

/// An `https://` proxy: TLS to the proxy itself, its certificate checked. Behind a private CA
/// it works once the operator trusts that CA (`CAPTURE_PROXY_CA_FILE`), and without it the
/// job fails naming the proxy and the reason, uncharged.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_https_proxy_is_trusted_through_the_operators_ca_and_refused_without_it() {
    let site = Site::start(red_page()).await;
    let tls_proxy = TestProxy::https("tls", Some(("carol", "pw"))).await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("proxy-ca.pem");
    std::fs::write(&ca, capture_testkit::proxies::TEST_CA_PEM).unwrap();
    let url = tls_proxy.url("https", Some(("carol", "pw")));
    let port = site.base.rsplit(':').next().unwrap().to_string();

    let app = TestApp::spawn(Opts::full(Db::Sqlite).env("CAPTURE_PROXY_CA_FILE", ca.to_str().unwrap())).await;
    let (_, key) = app.user_with_key("pro").await;
    let (status, p) = post(&app, &key, "/v1/proxies", json!({"name": "office", "url": url})).await;
    assert_eq!(status, 201, "{p}");
    assert_eq!(p["members"], json!([{"url": format!("https://{}", tls_proxy.addr), "authenticated": true}]), "{p}");
    let job = app.create(&key, json!({"url": site.url("/red"), "waitUntil": "load", "proxy": "office"})).await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "done", "{done}");
    let (_, _, body) = app.fetch(done["publicUrl"].as_str().unwrap()).await;
    assert_px(&decode(&body), 10, 10, [255, 0, 0]);
    assert!(
        tls_proxy
            .seen()
            .contains(&capture_testkit::proxies::Seen { request: format!("CONNECT 127.0.0.1:{port}"), allowed: true }),
        "{:?}",
        tls_proxy.seen()
    );
    let (status, t) =
        post(&app, &key, &format!("/v1/proxies/{}/test", p["id"].as_str().unwrap()), json!({"url": site.url("/red")}))
            .await;
    assert_eq!((status, &t["ok"], &t["members"][0]["status"]), (200, &json!(true), &json!(200)), "{t}");

    // A server that trusts only the system's roots: the proxy's certificate is refused, and
    // the proxy saw no request (the handshake ended before one).
    let plain = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = plain.user_with_key("pro").await;
    let (_, p) = post(&plain, &key, "/v1/proxies", json!({"name": "office", "url": url})).await;
    let seen = tls_proxy.seen().len();
    let used_before = used(&plain, &key).await;
    let job = plain.create(&key, json!({"url": site.url("/red"), "waitUntil": "load", "proxy": "office"})).await;
    let done = plain.wait(&key, job["id"].as_str().unwrap()).await;
    let why = "proxy_failed: office: TLS with the proxy failed: invalid peer certificate: UnknownIssuer";
    assert_eq!(
        (done["status"].as_str(), done["error"].as_str(), done["publicUrl"].as_str()),
        (Some("failed"), Some(why), None),
        "{done}"
    );
    assert_eq!(used(&plain, &key).await, used_before, "a proxy's failure is not charged");
    let (status, t) = post(
        &plain,
        &key,
        &format!("/v1/proxies/{}/test", p["id"].as_str().unwrap()),
        json!({"url": site.url("/red")}),
    )
    .await;
    assert_eq!((status, &t["ok"], &t["members"][0]["error"]), (200, &json!(false), &json!(why)), "{t}");
    assert_eq!(tls_proxy.seen().len(), seen, "{:?}", tls_proxy.seen());
}
