//! Helpers of the audit tests, shared by the in-process suite (`api/audits.rs` here) and the
//! multi-process one (`crates/capture-cli/tests/api/audits.rs`).

#![allow(dead_code)]

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;

use crate::helpers::*;

/// axe-core's `axe.min.js` (`scripts/test.sh` installs it: `npm ci --prefix tests/audit`).
pub(crate) fn axe_path() -> String {
    let p = std::env::var("CAPTURE_AXE_PATH").unwrap_or_else(|_| {
        format!("{}/../../tests/audit/node_modules/axe-core/axe.min.js", env!("CARGO_MANIFEST_DIR"))
    });
    assert!(
        std::path::Path::new(&p).is_file(),
        "axe-core not found at {p}: run `npm ci --prefix tests/audit` or set CAPTURE_AXE_PATH"
    );
    p
}

pub(crate) fn opts(db: Db) -> Opts {
    Opts::full(db).env("CAPTURE_AXE_PATH", &axe_path()).env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true")
}

pub(crate) async fn post_audit(app: &TestApp, key: &str, body: &Value, idem: Option<&str>) -> reqwest::Response {
    let mut r = app.client.post(app.url("/v1/audits")).bearer_auth(key).json(body);
    if let Some(k) = idem {
        r = r.header("Idempotency-Key", k);
    }
    r.send().await.unwrap()
}

/// Poll an audit until it is done or failed.
pub(crate) async fn wait_audit(app: &TestApp, key: &str, id: &str, limit: Duration) -> Value {
    eventually(&format!("audit {id} finishes"), limit, || async move {
        let v: Value = app.get(key, &format!("/v1/audits/{id}")).await.json().await.unwrap();
        if v["status"] == "done" || v["status"] == "failed" { Ok(v) } else { Err(v) }
    })
    .await
}

pub(crate) async fn used(app: &TestApp, key: &str) -> i64 {
    let b: Value = app.get(key, "/v1/account/balance").await.json().await.unwrap();
    b["usage"]["used"].as_i64().unwrap()
}

/// Read an audit's SSE stream to its end: `(event name, data)`.
pub(crate) async fn read_stream(app: &TestApp, key: &str, id: &str, limit: Duration) -> Vec<(String, Value)> {
    let r = app.client.get(app.url(&format!("/v1/audits/{id}/stream"))).bearer_auth(key).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let mut stream = r.bytes_stream();
    let (mut buf, mut out) = (String::new(), Vec::new());
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let chunk = tokio::time::timeout_at(deadline, stream.next()).await.expect("stream did not end in time");
        let Some(chunk) = chunk else { break };
        buf.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        while let Some(pos) = buf.find("\n\n") {
            let block: String = buf.drain(..pos + 2).collect();
            let (mut name, mut data) = (String::new(), String::new());
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event:") {
                    name = n.trim().to_string();
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push_str(d.trim_start());
                }
            }
            if !name.is_empty() {
                out.push((name, serde_json::from_str(&data).unwrap_or(Value::Null)));
            }
        }
    }
    out
}

/// The ids of a report page's findings.
pub(crate) fn finding_ids(page: &Value) -> Vec<String> {
    page["findings"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap().to_string()).collect()
}
