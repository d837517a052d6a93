//! Helpers of the audit tests, shared by the in-process suite
//! (`crates/capture-server/tests/service/api/audits.rs`) and the multi-process one
//! (`crates/capture-cli/tests/api/audits.rs`).

use std::time::Duration;

use serde_json::Value;

use crate::common::*;
use crate::sse::{json_events, read_sse};

/// The settings of the audit tests: workers and plain-http webhooks. No `CAPTURE_AXE_PATH`:
/// audits run the axe-core built into the binary, as on a default install.
pub fn opts(db: Db) -> Opts {
    Opts::full(db).env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true")
}

pub async fn post_audit(app: &impl Api, key: &str, body: &Value, idem: Option<&str>) -> reqwest::Response {
    app.post_idem(key, "/v1/audits", body, idem).await
}

/// Poll an audit until it is done or failed.
pub async fn wait_audit(app: &impl Api, key: &str, id: &str, limit: Duration) -> Value {
    eventually(&format!("audit {id} finishes"), limit, || async move {
        let v: Value = app.get(key, &format!("/v1/audits/{id}")).await.json().await.unwrap();
        if v["status"] == "done" || v["status"] == "failed" { Ok(v) } else { Err(v) }
    })
    .await
}

/// Read an audit's SSE stream to its end: `(event name, data)`.
pub async fn read_stream(app: &impl Api, key: &str, id: &str, limit: Duration) -> Vec<(String, Value)> {
    json_events(read_sse(app.client(), &app.url(&format!("/v1/audits/{id}/stream")), key, limit).await)
}

/// The ids of a report page's findings.
pub fn finding_ids(page: &Value) -> Vec<String> {
    page["findings"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap().to_string()).collect()
}
