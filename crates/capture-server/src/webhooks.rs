//! Webhooks: endpoint management (`/v1/webhooks`), signing, and the delivery worker.
//! Deliveries come from the outbox the store writes with each change; the worker claims
//! them from the shared queue with a lease, signs each attempt afresh, never follows
//! redirects, and connects only to addresses the egress guard accepts.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use capture_core::events::{WEBHOOK_EVENTS, is_subscribable};
use capture_core::time::{iso, now_ms};
use capture_core::{FieldError, ids};
use capture_store::{AttemptOutcome, Delivery, Endpoint, MAX_ATTEMPTS, Task};
use hmac::{Hmac, Mac};
use serde_json::{Map, Value, json};
use sha2::Sha256;
use tokio_util::sync::CancellationToken;

use crate::error::{ApiError, ApiResult};
use crate::pipeline::{Account, JsonObject};
use crate::state::AppState;

/// Routes (authenticated by the caller's router).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/webhooks", post(create_handler).get(list_handler))
        .route("/v1/webhooks/{id}", axum::routing::delete(delete_handler))
        .route("/v1/webhooks/{id}/rotate", post(rotate_handler))
        .route("/v1/webhooks/{id}/test", post(test_handler))
        .route("/v1/webhooks/{id}/deliveries", get(deliveries_handler))
}

/// Most endpoints one account may have.
const MAX_ENDPOINTS: usize = 20;

/// A new signing secret: `whsec_` and 40 random characters.
pub fn new_secret() -> String {
    format!("whsec_{}", ids::random_string(40))
}

/// `t=<ts>,v1=<hex HMAC-SHA256(secret, "<ts>.<body>")>`; the key is the whole secret string.
pub fn signature(secret: &str, timestamp: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC accepts any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    format!("t={timestamp},v1={}", hex::encode(mac.finalize().into_bytes()))
}

fn endpoint_json(e: &Endpoint) -> Value {
    json!({
        "id": e.id,
        "url": e.url,
        "events": e.events,
        "description": e.description,
        "createdAt": iso(e.created_at),
    })
}

fn delivery_json(d: &Delivery) -> Value {
    json!({
        "id": d.id,
        "eventType": d.event_type,
        "status": d.status,
        "attempts": d.attempts,
        "responseCode": d.response_code,
        "errorMessage": d.error_message,
        "createdAt": iso(d.created_at),
        "lastAttemptAt": d.last_attempt_at.map(iso),
        "nextAttemptAt": d.next_attempt_at.map(iso),
    })
}

/// Check an endpoint URL: http(s), HTTPS unless allowed, no literal private address
/// unless allowed (names are checked again, on the resolved address, at every delivery).
pub fn validate_url(state: &AppState, raw: &str) -> Result<String, FieldError> {
    let u = url::Url::parse(raw.trim()).map_err(|e| FieldError::new("url", format!("is not a valid URL ({e})")))?;
    match u.scheme() {
        "https" => {}
        "http" if state.cfg.webhook_allow_http => {}
        "http" => {
            return Err(FieldError::new("url", "must use https (this server does not allow plain http endpoints)"));
        }
        _ => return Err(FieldError::new("url", "must be an http(s) URL")),
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(FieldError::new("url", "must not contain credentials"));
    }
    let host = u.host_str().unwrap_or("").trim_start_matches('[').trim_end_matches(']').to_string();
    if host.is_empty() {
        return Err(FieldError::new("url", "must have a host"));
    }
    if !state.cfg.allow_private_networks {
        let private = match host.parse::<IpAddr>() {
            Ok(ip) => capture_browser::egress::forbidden_reason(ip).is_some(),
            Err(_) => host.eq_ignore_ascii_case("localhost") || host.to_ascii_lowercase().ends_with(".localhost"),
        };
        if private {
            return Err(FieldError::new("url", "must not point at a loopback, private or link-local address"));
        }
    }
    if raw.len() > 2048 {
        return Err(FieldError::new("url", "must be at most 2048 characters"));
    }
    Ok(u.to_string())
}

fn parse_events(v: Option<&Value>) -> Result<Vec<String>, FieldError> {
    let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(vec!["*".into()]) };
    let arr = v.as_array().ok_or_else(|| FieldError::new("events", "must be an array of event names"))?;
    if arr.is_empty() {
        return Err(FieldError::new("events", "must name at least one event (or \"*\")"));
    }
    let mut out = Vec::new();
    for e in arr {
        let name = e.as_str().ok_or_else(|| FieldError::new("events", "must hold strings"))?;
        if !is_subscribable(name) {
            return Err(FieldError::new(
                "events",
                format!("unknown event '{name}' (known: *, {})", WEBHOOK_EVENTS.join(", ")),
            ));
        }
        if !out.iter().any(|x| x == name) {
            out.push(name.to_string());
        }
    }
    Ok(out)
}

/// Create an endpoint; returns its JSON with the secret (shown this once).
pub async fn create_endpoint(state: &AppState, account: &Account, body: &Map<String, Value>) -> ApiResult<Value> {
    let url = match body.get("url") {
        Some(Value::String(s)) => validate_url(state, s)?,
        None | Some(Value::Null) => return Err(FieldError::new("url", "is required").into()),
        Some(_) => return Err(FieldError::new("url", "must be a string").into()),
    };
    let events = parse_events(body.get("events"))?;
    let description = match body.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.len() <= 500 => Some(s.clone()),
        Some(Value::String(_)) => return Err(FieldError::new("description", "must be at most 500 characters").into()),
        Some(_) => return Err(FieldError::new("description", "must be a string").into()),
    };
    if state.store.list_endpoints(&account.user.id).await?.len() >= MAX_ENDPOINTS {
        return Err(ApiError::validation(FieldError::new(
            "url",
            format!("an account may have at most {MAX_ENDPOINTS} endpoints"),
        )));
    }
    let secret = new_secret();
    let ep = Endpoint {
        id: ids::new_id("whe"),
        user_id: account.user.id.clone(),
        url,
        events,
        description,
        secret_enc: state.master.encrypt(&secret),
        created_at: now_ms(),
    };
    state.store.create_endpoint(&ep).await?;
    let mut v = endpoint_json(&ep);
    v["secret"] = json!(secret);
    Ok(v)
}

/// The caller's endpoints (no secrets).
pub async fn list_endpoints(state: &AppState, account: &Account) -> ApiResult<Value> {
    let eps = state.store.list_endpoints(&account.user.id).await?;
    Ok(json!({"data": eps.iter().map(endpoint_json).collect::<Vec<_>>()}))
}

async fn own_endpoint(state: &AppState, account: &Account, id: &str) -> ApiResult<Endpoint> {
    if !ids::looks_like("whe", id) {
        return Err(ApiError::not_found("webhook endpoint"));
    }
    state.store.endpoint_of(&account.user.id, id).await?.ok_or_else(|| ApiError::not_found("webhook endpoint"))
}

/// Replace the signing secret; returns the new one (shown this once).
pub async fn rotate_secret(state: &AppState, account: &Account, id: &str) -> ApiResult<Value> {
    own_endpoint(state, account, id).await?;
    let secret = new_secret();
    if !state.store.rotate_endpoint_secret(&account.user.id, id, &state.master.encrypt(&secret)).await? {
        return Err(ApiError::not_found("webhook endpoint"));
    }
    Ok(json!({"id": id, "secret": secret}))
}

/// Queue a `test.ping` to the endpoint.
pub async fn send_test(state: &AppState, account: &Account, id: &str) -> ApiResult<Value> {
    own_endpoint(state, account, id).await?;
    let delivery = state
        .store
        .send_test_ping(&account.user.id, id, now_ms())
        .await?
        .ok_or_else(|| ApiError::not_found("webhook endpoint"))?;
    state.webhook_work.notify_one();
    Ok(json!({"deliveryId": delivery, "eventType": "test.ping", "status": "pending"}))
}

/// The last 50 deliveries of an endpoint, newest first.
pub async fn list_deliveries(state: &AppState, account: &Account, id: &str) -> ApiResult<Value> {
    own_endpoint(state, account, id).await?;
    let ds = state.store.list_deliveries(&account.user.id, id, 50).await?;
    Ok(json!({"data": ds.iter().map(delivery_json).collect::<Vec<_>>()}))
}

/// Delete an endpoint; nothing more is delivered to it.
pub async fn delete_endpoint(state: &AppState, account: &Account, id: &str) -> ApiResult<()> {
    own_endpoint(state, account, id).await?;
    if !state.store.delete_endpoint(&account.user.id, id, now_ms()).await? {
        return Err(ApiError::not_found("webhook endpoint"));
    }
    Ok(())
}

async fn create_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    JsonObject(body, _): JsonObject,
) -> ApiResult<(StatusCode, Json<Value>)> {
    Ok((StatusCode::CREATED, Json(json!({"endpoint": create_endpoint(&state, &account, &body).await?}))))
}

async fn list_handler(State(state): State<AppState>, Extension(account): Extension<Account>) -> ApiResult<Json<Value>> {
    Ok(Json(list_endpoints(&state, &account).await?))
}

async fn rotate_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    Ok(Json(rotate_secret(&state, &account, &id).await?))
}

async fn test_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    Ok((StatusCode::ACCEPTED, Json(send_test(&state, &account, &id).await?)))
}

async fn deliveries_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    Ok(Json(list_deliveries(&state, &account, &id).await?))
}

async fn delete_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    delete_endpoint(&state, &account, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Resolves names for deliveries and refuses forbidden addresses: the connection is made
/// to exactly the addresses checked here, so DNS rebinding cannot slip past.
struct GuardedResolver {
    allow_private: bool,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow = self.allow_private;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs = capture_browser::egress::check_url_host(&host, 0, allow)
                .await
                .map_err(|e| -> Box<dyn std::error::Error + Send + Sync> { e.into() })?;
            let it: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(it)
        })
    }
}

/// The HTTP client for deliveries: no redirects, no proxies, guarded resolution.
pub fn http_client(state_allow_private: bool, timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver { allow_private: state_allow_private }))
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .timeout(timeout)
        .user_agent("Service-Webhook/1")
        .build()
        .expect("the webhook HTTP client builds")
}

/// Run `n` delivery loops until `stop`.
pub async fn run(state: AppState, n: usize, stop: CancellationToken) {
    let client = http_client(state.cfg.allow_private_networks, state.cfg.webhook_timeout);
    let node = ids::random_string(8);
    let mut handles = Vec::new();
    for i in 0..n {
        let (state, client, stop) = (state.clone(), client.clone(), stop.clone());
        let worker = format!("wh-{node}-{i}");
        handles.push(tokio::spawn(async move {
            let lease = (state.cfg.webhook_timeout + Duration::from_secs(30)).as_millis() as i64;
            while !stop.is_cancelled() {
                match state.store.claim("webhook", &worker, now_ms(), lease).await {
                    Ok(Some(task)) => {
                        // One change can queue several deliveries under a single wake-up
                        // (PostgreSQL folds identical notifications of a transaction): pass
                        // it on so an idle sibling looks for the next one meanwhile.
                        state.webhook_work.notify_one();
                        deliver(&state, &client, &worker, task).await
                    }
                    Ok(None) => {
                        tokio::select! {
                            _ = state.webhook_work.notified() => {}
                            _ = tokio::time::sleep(state.cfg.queue_poll) => {}
                            _ = stop.cancelled() => {}
                        }
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "claiming a delivery failed");
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                            _ = stop.cancelled() => {}
                        }
                    }
                }
            }
        }));
    }
    for h in handles {
        let _ = h.await;
    }
}

fn describe(e: &reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        return format!("no response within {} s", timeout.as_secs_f64());
    }
    // The most specific cause (e.g. the egress guard's reason) is the last in the chain.
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg = s.to_string();
        src = s.source();
    }
    if e.is_connect() { format!("connection failed: {msg}") } else { msg }
}

async fn deliver(state: &AppState, client: &reqwest::Client, worker: &str, task: Task) {
    let job = match state.store.delivery_job(&task.subject_id).await {
        Ok(Some(j)) => j,
        Ok(None) => {
            tracing::warn!(delivery = %task.subject_id, "delivery vanished");
            let _ = state.store.cancel_delivery(&task.id, worker, &task.subject_id, now_ms()).await;
            return;
        }
        Err(e) => {
            tracing::error!(error = %e, "loading a delivery failed; its lease will expire");
            return;
        }
    };
    if job.endpoint_deleted || job.delivery.status != "pending" {
        let _ = state.store.cancel_delivery(&task.id, worker, &job.delivery.id, now_ms()).await;
        return;
    }
    let Some(secret) = state.master.decrypt(&job.secret_enc) else {
        tracing::error!(endpoint = %job.delivery.endpoint_id, "endpoint secret cannot be decrypted (wrong CAPTURE_MASTER_KEY?)");
        return;
    };
    let outcome = send_once(state, client, &job.url, &job.delivery, &job.payload, &secret).await;
    let attempts_after = job.delivery.attempts + 1;
    let now = now_ms();
    let retry_at = (!outcome.succeeded && attempts_after < MAX_ATTEMPTS).then(|| {
        let delays = &state.cfg.webhook_retry_delays;
        let wait = delays[((attempts_after - 1) as usize).min(delays.len() - 1)];
        now + wait.as_millis() as i64
    });
    match state.store.record_attempt(&task.id, worker, &job.delivery.id, &outcome, retry_at, now).await {
        Ok(true) => {}
        Ok(false) => tracing::warn!(delivery = %job.delivery.id, "lease lost before recording an attempt"),
        Err(e) => tracing::error!(error = %e, "recording an attempt failed"),
    }
}

/// One signed attempt. Public for the benchmark and tests of the signing path.
pub async fn send_once(
    state: &AppState,
    client: &reqwest::Client,
    url: &str,
    d: &Delivery,
    payload: &str,
    secret: &str,
) -> AttemptOutcome {
    let started = Instant::now();
    let timeout = state.cfg.webhook_timeout;
    // A literal address never reaches the resolver: check it here.
    if let Ok(u) = url::Url::parse(url) {
        let host = u.host_str().unwrap_or("").trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = host.parse::<IpAddr>()
            && !state.cfg.allow_private_networks
            && let Some(reason) = capture_browser::egress::forbidden_reason(ip)
        {
            return AttemptOutcome {
                status_code: None,
                error: Some(format!("blocked by egress policy: {ip} is {reason}")),
                duration_ms: 0,
                succeeded: false,
            };
        }
    }
    let ts = now_ms() / 1000;
    let res = client
        .post(url)
        .header("content-type", "application/json")
        .header("webhook-id", &d.id)
        .header("webhook-timestamp", ts.to_string())
        .header("webhook-signature", signature(secret, ts, payload))
        .header("x-service-event", &d.event_type)
        .body(payload.to_string())
        .send()
        .await;
    let duration_ms = started.elapsed().as_millis() as i64;
    match res {
        Ok(r) => {
            let code = r.status().as_u16();
            let ok = r.status().is_success();
            AttemptOutcome {
                status_code: Some(i64::from(code)),
                error: (!ok).then(|| format!("endpoint answered HTTP {code}")),
                duration_ms,
                succeeded: ok,
            }
        }
        Err(e) => {
            AttemptOutcome { status_code: None, error: Some(describe(&e, timeout)), duration_ms, succeeded: false }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_matches_the_documented_algorithm() {
        // HMAC-SHA256("whsec_test", "1700000000.{}"), computed independently with openssl.
        let s = signature("whsec_test", 1_700_000_000, "{}");
        assert_eq!(s, "t=1700000000,v1=35495024f4ef3f94e5a93e22221544c4b75e9a42300cd965ab81cb85cd994e91");
    }

    #[test]
    fn events_default_to_everything_and_unknown_names_are_refused() {
        assert_eq!(parse_events(None).unwrap(), vec!["*"]);
        assert!(parse_events(Some(&json!(["screenshot.done"]))).is_err());
        assert!(parse_events(Some(&json!([]))).is_err());
        assert_eq!(parse_events(Some(&json!(["quota.warning", "quota.warning"]))).unwrap(), vec!["quota.warning"]);
    }
}
