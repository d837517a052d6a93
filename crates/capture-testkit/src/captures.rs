//! Helpers of the capture tests, shared by the in-process suite
//! (`crates/capture-server/tests/service/api/captures.rs`) and the multi-process one
//! (`crates/capture-cli/tests/api/captures.rs`).

use std::time::Duration;

use serde_json::Value;

use crate::common::*;
use crate::sse::read_sse;

pub fn pages() -> Vec<(&'static str, &'static str, String)> {
    let tall = {
        let mut s = String::from(
            "<!doctype html><html><head><title>Tall</title><style>body{margin:0} div{height:1000px}</style></head><body>",
        );
        for c in ["#ff0000", "#00ff00", "#0000ff", "#ffff00", "#00ffff", "#ff00ff"] {
            s.push_str(&format!("<div style=\"background:{c}\"></div>"));
        }
        s.push_str("</body></html>");
        s
    };
    vec![
        ("/red", "text/html", solid("#ff0000")),
        ("/blue", "text/html", solid("#0000ff")),
        ("/tall", "text/html", tall),
        (
            "/dark",
            "text/html",
            "<!doctype html><html><head><title>Dark</title><style>html,body{margin:0;height:100%;background:#ffffff}@media (prefers-color-scheme: dark){html,body{background:#000000}}</style></head><body></body></html>".into(),
        ),
        (
            "/click",
            "text/html",
            "<!doctype html><html><head><title>Click</title><style>html,body{margin:0;height:100%;background:#ff0000}button{position:absolute;left:10px;top:10px;width:100px;height:40px}</style></head><body><button id=\"go\" onclick=\"document.body.style.background='#00ff00'\">Go</button></body></html>".into(),
        ),
        (
            "/late",
            "text/html",
            "<!doctype html><html><head><title>Late</title><style>html,body{margin:0;height:100%;background:#ff0000}</style></head><body><script>setTimeout(function(){var d=document.createElement('div');d.id='ready';document.body.style.background='#0000ff';document.body.appendChild(d)},400)</script></body></html>".into(),
        ),
        (
            "/consent",
            "text/html",
            "<!doctype html><html><head><title>Consent</title><style>html,body{margin:0;height:100%;background:#ffffff}#onetrust-banner-sdk{position:fixed;left:0;top:0;width:100%;height:100%;background:#ff00ff}</style></head><body><div id=\"onetrust-consent-sdk\"><div id=\"onetrust-banner-sdk\"><button id=\"onetrust-accept-btn-handler\" onclick=\"document.getElementById('onetrust-consent-sdk').remove()\">Accept</button></div></div></body></html>".into(),
        ),
    ]
}

pub async fn shot(app: &impl Api, key: &str, body: Value) -> (Value, Vec<u8>) {
    let job = app.create(key, body).await;
    let done = app.wait(key, job["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "done", "{done}");
    let (status, _ct, bytes) = app.fetch(done["publicUrl"].as_str().unwrap()).await;
    assert_eq!(status, 200);
    (done, bytes)
}

/// Read a job's event stream to its end: `(event name, data)`; comments come back as
/// `("ping", "")`.
pub async fn job_stream(app: &impl Api, key: &str, id: &str, limit: Duration) -> Vec<(String, String)> {
    read_sse(app.client(), &app.url(&format!("/v1/screenshot/{id}/stream")), key, limit).await
}
