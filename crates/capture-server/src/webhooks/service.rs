//! The webhook endpoint operations, scoped to the calling account: create (the secret
//! shown once), list, rotate the secret, queue a test, list deliveries, delete.

use capture_core::events::{WEBHOOK_EVENTS, is_subscribable};
use capture_core::time::{iso, now_ms};
use capture_core::{FieldError, ids};
use capture_store::{Delivery, Endpoint};
use serde_json::{Map, Value, json};

use crate::auth::Account;
use crate::http::{ApiError, ApiResult};
use crate::state::AppState;

/// Most endpoints one account may have.
const MAX_ENDPOINTS: usize = 20;

/// A new signing secret: `whsec_` and 40 random characters.
pub fn new_secret() -> String {
    format!("whsec_{}", ids::random_string(40))
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
    if let Err(e) = crate::egress::check_url(&u, &state.egress) {
        return Err(FieldError::new(
            "url",
            format!("must not point at a loopback, private or link-local address, or at this service ({e})"),
        ));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_default_to_everything_and_unknown_names_are_refused() {
        assert_eq!(parse_events(None).unwrap(), vec!["*"]);
        assert!(parse_events(Some(&json!(["screenshot.done"]))).is_err());
        assert!(parse_events(Some(&json!([]))).is_err());
        assert_eq!(parse_events(Some(&json!(["quota.warning", "quota.warning"]))).unwrap(), vec!["quota.warning"]);
    }
}
