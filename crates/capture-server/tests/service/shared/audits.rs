//! Helpers of the audit tests, shared by the in-process suite (`api/audits.rs` here) and the
//! multi-process one (`crates/capture-cli/tests/api/audits.rs`).

#![allow(dead_code)]

use std::time::Duration;

use serde_json::Value;

use crate::helpers::*;
use crate::shared::sse::{json_events, read_sse};

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
    app.post_idem(key, "/v1/audits", body, idem).await
}

/// Poll an audit until it is done or failed.
pub(crate) async fn wait_audit(app: &TestApp, key: &str, id: &str, limit: Duration) -> Value {
    eventually(&format!("audit {id} finishes"), limit, || async move {
        let v: Value = app.get(key, &format!("/v1/audits/{id}")).await.json().await.unwrap();
        if v["status"] == "done" || v["status"] == "failed" { Ok(v) } else { Err(v) }
    })
    .await
}

/// Read an audit's SSE stream to its end: `(event name, data)`.
pub(crate) async fn read_stream(app: &TestApp, key: &str, id: &str, limit: Duration) -> Vec<(String, Value)> {
    json_events(read_sse(&app.client, &app.url(&format!("/v1/audits/{id}/stream")), key, limit).await)
}

/// The ids of a report page's findings.
pub(crate) fn finding_ids(page: &Value) -> Vec<String> {
    page["findings"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap().to_string()).collect()
}
