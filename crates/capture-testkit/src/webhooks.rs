//! Helpers of the webhook tests, shared by the in-process suite
//! (`crates/capture-server/tests/service/api/webhooks.rs`) and the multi-process one
//! (`crates/capture-cli/tests/api/webhooks.rs`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::common::*;

/// One request the receiver saw.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: axum::http::HeaderMap,
    pub body: String,
}

/// A webhook receiver: records every request; answers with the next scripted reply.
pub struct Receiver {
    pub url: String,
    pub got: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    /// `script`: (status, delay) per request in order; the last one repeats.
    pub async fn start(script: Vec<(u16, Duration)>) -> Receiver {
        let got: Arc<Mutex<Vec<Received>>> = Arc::default();
        let script = Arc::new(Mutex::new(script));
        let (g, s) = (got.clone(), script.clone());
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: axum::http::HeaderMap, body: String| {
                let (g, s) = (g.clone(), s.clone());
                async move {
                    let n = {
                        let mut v = g.lock().unwrap();
                        v.push(Received { headers, body });
                        v.len()
                    };
                    let (status, delay) = {
                        let sc = s.lock().unwrap();
                        sc[(n - 1).min(sc.len() - 1)]
                    };
                    // The scripted delay of a slow receiver: about time itself.
                    tokio::time::sleep(delay).await;
                    (axum::http::StatusCode::from_u16(status).unwrap(), Json(json!({"ok": status < 300})))
                }
            }),
        );
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", l.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
        Receiver { url, got }
    }

    pub fn all(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// Wait until at least `n` requests arrived.
    pub async fn wait_for(&self, n: usize, limit: Duration) -> Vec<Received> {
        eventually(&format!("the receiver gets {n} requests"), limit, || async move {
            let v = self.all();
            if v.len() >= n { Ok(v) } else { Err(v) }
        })
        .await
    }
}

use axum::Json;

/// Verify a delivery exactly as the documentation tells users to (Stripe-compatible):
/// parse `t` and `v1` from Webhook-Signature, HMAC-SHA256 the string "<t>.<raw body>" with
/// the whole secret as the key, compare the lowercase hex in constant time, and reject
/// timestamps more than 300 s from now.
pub fn verify(secret: &str, r: &Received) -> Result<Value, String> {
    let sig = r.headers.get("webhook-signature").ok_or("no signature")?.to_str().unwrap();
    if sig.contains(' ') {
        return Err("spaces in signature header".into());
    }
    let mut t = None;
    let mut v1 = Vec::new();
    for part in sig.split(',') {
        match part.split_once('=') {
            Some(("t", v)) => t = Some(v.to_string()),
            Some(("v1", v)) => v1.push(v.to_string()),
            _ => {}
        }
    }
    let t = t.ok_or("no t")?;
    let ts: i64 = t.parse().map_err(|_| "bad t")?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    if (now - ts).abs() > 300 {
        return Err("timestamp outside tolerance".into());
    }
    assert_eq!(r.headers["webhook-timestamp"].to_str().unwrap(), t);
    let expected = hmac_sha256_hex(secret.as_bytes(), format!("{t}.{}", r.body).as_bytes());
    let ok = v1
        .iter()
        .any(|s| s.len() == expected.len() && s.bytes().zip(expected.bytes()).fold(0u8, |a, (x, y)| a | (x ^ y)) == 0);
    if !ok {
        return Err("signature mismatch".into());
    }
    serde_json::from_str(&r.body).map_err(|e| e.to_string())
}

pub fn hook_opts(db: Db) -> Opts {
    Opts::api(db)
        .env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true")
        .env("CAPTURE_WEBHOOK_RETRY_DELAYS", "150ms,150ms,150ms,150ms,150ms")
}

pub async fn create_endpoint(app: &impl Api, key: &str, body: Value) -> Value {
    let r = app.post_json(key, "/v1/webhooks", &body).await;
    let status = r.status().as_u16();
    let v: Value = r.json().await.unwrap();
    assert_eq!(status, 201, "{v}");
    v["endpoint"].clone()
}

pub async fn deliveries(app: &impl Api, key: &str, ep: &str) -> Vec<Value> {
    let v: Value = app.get(key, &format!("/v1/webhooks/{ep}/deliveries")).await.json().await.unwrap();
    v["data"].as_array().unwrap().clone()
}

pub async fn wait_delivery_status(app: &impl Api, key: &str, ep: &str, status: &str) -> Value {
    eventually(&format!("a {status} delivery"), Duration::from_secs(30), || async move {
        let ds = deliveries(app, key, ep).await;
        ds.iter().find(|d| d["status"] == status).cloned().ok_or(ds)
    })
    .await
}

/// HMAC-SHA256 of `msg` under `key`, in lowercase hex.
pub fn hmac_sha256_hex(key: &[u8], msg: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(msg);
    hex::encode(mac.finalize().into_bytes())
}
