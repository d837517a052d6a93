//! Quotas, idempotency and listing — each on SQLite and PostgreSQL.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::helpers::*;
use capture_testkit::both_dbs;

async fn concurrent_requests_never_pass_the_monthly_cap(db: Db) {
    let app = TestApp::spawn(Opts::api(db).env("CAPTURE_PLAN_LIMITS", "free=5")).await;
    let (_, key) = app.user_with_key("free").await;
    let mut tasks = Vec::new();
    for i in 0..20 {
        let (c, url, key) = (app.client.clone(), app.url("/v1/screenshot"), key.clone());
        tasks.push(tokio::spawn(async move {
            let r = c
                .post(url)
                .bearer_auth(key)
                .json(&json!({"url": format!("https://example.com/{i}")}))
                .send()
                .await
                .unwrap();
            let s = r.status().as_u16();
            let h = r.headers().clone();
            (s, h, r.json::<Value>().await.unwrap())
        }));
    }
    let mut accepted = 0;
    for t in tasks {
        let (s, h, v) = t.await.unwrap();
        match s {
            202 => accepted += 1,
            429 => {
                assert_eq!(v["code"], "PLAN_QUOTA_EXCEEDED");
                assert_eq!(v["details"]["limit"], 5);
                assert_eq!(v["details"]["used"], 5);
                assert_eq!(v["details"]["plan"], "free");
                assert!(v["details"]["resetAt"].as_str().unwrap().ends_with('Z'));
                let retry: i64 = h["retry-after"].to_str().unwrap().parse().unwrap();
                assert!(retry > 0);
                assert_eq!(h["x-ratelimit-remaining"], "0");
            }
            other => panic!("unexpected {other}: {v}"),
        }
    }
    assert_eq!(accepted, 5);
    let b: Value = app.get(&key, "/v1/account/balance").await.json().await.unwrap();
    assert_eq!(b["usage"]["used"], 5);
    assert_eq!(b["usage"]["remaining"], 0);
    assert_eq!(b["usage"]["percentUsed"], 100.0);
    let list: Value = app.get(&key, "/v1/screenshots?limit=100").await.json().await.unwrap();
    assert_eq!(list["data"].as_array().unwrap().len(), 5);
}
both_dbs!(concurrent_requests_never_pass_the_monthly_cap);

async fn replayed_request_returns_the_first_response(db: Db) {
    let app = TestApp::spawn(Opts::api(db)).await;
    let (_, key) = app.user_with_key("free").await;
    let (_, other) = app.user_with_key("free").await;
    let body = json!({"url": "https://example.com/idem", "width": 640});
    let send = |k: &str, ik: &str, b: &Value| {
        app.client.post(app.url("/v1/screenshot")).bearer_auth(k).header("idempotency-key", ik).json(b).send()
    };
    let r1 = send(&key, "order-123-abc", &body).await.unwrap();
    assert_eq!(r1.status(), 202);
    assert!(r1.headers().get("idempotency-replayed").is_none());
    let v1: Value = r1.json().await.unwrap();
    let r2 = send(&key, "order-123-abc", &body).await.unwrap();
    assert_eq!(r2.status(), 202);
    assert_eq!(r2.headers()["idempotency-replayed"], "true");
    let v2: Value = r2.json().await.unwrap();
    assert_eq!(v1, v2);
    // Same key, different body.
    let r3 = send(&key, "order-123-abc", &json!({"url": "https://example.com/other"})).await.unwrap();
    assert_eq!(r3.status(), 422);
    assert_eq!(r3.json::<Value>().await.unwrap()["code"], "IDEMPOTENCY_KEY_REUSED");
    // Keys are scoped to the account.
    let r4 = send(&other, "order-123-abc", &body).await.unwrap();
    assert_eq!(r4.status(), 202);
    assert!(r4.headers().get("idempotency-replayed").is_none());
    let b: Value = app.get(&key, "/v1/account/balance").await.json().await.unwrap();
    assert_eq!(b["usage"]["used"], 1, "a replay costs nothing");

    // Twelve concurrent requests with one key create exactly one job.
    let mut tasks = Vec::new();
    for _ in 0..12 {
        let (c, url, key) = (app.client.clone(), app.url("/v1/screenshot"), key.clone());
        tasks.push(tokio::spawn(async move {
            let r = c
                .post(url)
                .bearer_auth(key)
                .header("idempotency-key", "burst-key-0001")
                .json(&json!({"url": "https://example.com/burst"}))
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }));
    }
    let mut ids = HashSet::new();
    let mut created = 0;
    for t in tasks {
        let (s, v) = t.await.unwrap();
        match s {
            202 => {
                created += 1;
                ids.insert(v["id"].as_str().unwrap().to_string());
            }
            409 => assert_eq!(v["code"], "IDEMPOTENCY_IN_FLIGHT"),
            other => panic!("unexpected {other}: {v}"),
        }
    }
    assert!(created >= 1);
    assert_eq!(ids.len(), 1, "every success names the same job");
    let list: Value = app.get(&key, "/v1/screenshots?limit=100").await.json().await.unwrap();
    let burst = list["data"].as_array().unwrap().iter().filter(|j| j["url"] == "https://example.com/burst").count();
    assert_eq!(burst, 1);
}
both_dbs!(replayed_request_returns_the_first_response);

async fn the_cursor_walks_every_job_exactly_once(db: Db) {
    let app = TestApp::spawn(Opts::api(db)).await;
    let (_, key) = app.user_with_key("pro").await;
    let (_, other) = app.user_with_key("pro").await;
    app.create(&other, json!({"url": "https://example.com/not-mine"})).await;
    let mut tasks = Vec::new();
    for i in 0..25 {
        let (c, url, key) = (app.client.clone(), app.url("/v1/screenshot"), key.clone());
        tasks.push(tokio::spawn(async move {
            c.post(url)
                .bearer_auth(key)
                .json(&json!({"url": format!("https://example.com/{i}")}))
                .send()
                .await
                .unwrap()
                .status()
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), 202);
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut last_created = String::from("9999");
    loop {
        let path = match &cursor {
            None => "/v1/screenshots?limit=7".to_string(),
            Some(c) => format!("/v1/screenshots?limit=7&before={}", urlencode(c)),
        };
        let v: Value = app.get(&key, &path).await.json().await.unwrap();
        for j in v["data"].as_array().unwrap() {
            let created = j["createdAt"].as_str().unwrap().to_string();
            assert!(created <= last_created, "newest first");
            last_created = created;
            seen.push(j["id"].as_str().unwrap().to_string());
        }
        match v["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let unique: HashSet<_> = seen.iter().collect();
    assert_eq!(seen.len(), 25, "{seen:?}");
    assert_eq!(unique.len(), 25);
    // A bare timestamp lists strictly older jobs.
    let all: Value = app.get(&key, "/v1/screenshots?limit=100").await.json().await.unwrap();
    assert!(all["nextCursor"].is_null());
    let newest = all["data"][0]["createdAt"].as_str().unwrap().to_string();
    let older: Value =
        app.get(&key, &format!("/v1/screenshots?limit=100&before={}", urlencode(&newest))).await.json().await.unwrap();
    assert!(older["data"].as_array().unwrap().iter().all(|j| j["createdAt"].as_str().unwrap() < newest.as_str()));
}
both_dbs!(the_cursor_walks_every_job_exactly_once);

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}
