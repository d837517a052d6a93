//! The webhook endpoint operations, scoped to the calling account: create (the secret
//! shown once), list, rotate the secret, queue a test, list deliveries, delete.

use capture_core::events::{WEBHOOK_EVENTS, is_subscribable};
use capture_core::time::iso;
use capture_core::{DeliveryId, DeliveryStatus, EndpointId, FieldError, ids};
use serde_json::{Map, Value};

use super::types::{
    DESCRIPTION_MAX, Delivery, DeliveryList, Endpoint, EndpointIn, EndpointList, EndpointWithSecret, RotatedSecret,
    TestPing, URL_MAX,
};
use crate::auth::Account;
use crate::error::{Error, Result};
use crate::http::validated::Checked;
use crate::state::AppState;

/// Most endpoints one account may have.
const MAX_ENDPOINTS: usize = 20;

/// A new signing secret: `whsec_` and 40 random characters.
pub fn new_secret() -> String {
    format!("whsec_{}", ids::random_string(40))
}

fn endpoint(e: &capture_store::Endpoint) -> Endpoint {
    Endpoint {
        id: EndpointId::from_stored(e.id.clone()),
        url: e.url.clone(),
        events: e.events.clone(),
        description: e.description.clone(),
        created_at: iso(e.created_at),
    }
}

fn delivery(d: &capture_store::Delivery) -> Delivery {
    Delivery {
        id: DeliveryId::from_stored(d.id.clone()),
        event_type: d.event_type.clone(),
        status: DeliveryStatus::parse(&d.status).unwrap_or_else(|| {
            tracing::error!(delivery = %d.id, status = %d.status, "a delivery has a status this version does not know");
            DeliveryStatus::Pending
        }),
        attempts: d.attempts,
        response_code: d.response_code,
        error_message: d.error_message.clone(),
        created_at: iso(d.created_at),
        last_attempt_at: d.last_attempt_at.map(iso),
        next_attempt_at: d.next_attempt_at.map(iso),
    }
}

/// Check an endpoint URL: http(s), HTTPS unless allowed, no literal private address
/// unless allowed (names are checked again, on the resolved address, at every delivery).
pub fn validate_url(state: &AppState, raw: &str) -> std::result::Result<String, FieldError> {
    let u = url::Url::parse(raw.trim()).map_err(|e| FieldError::new("url", format!("is not a valid URL ({e})")))?;
    match u.scheme() {
        "https" => {}
        "http" if state.cfg.webhooks.allow_http => {}
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
    if raw.len() > URL_MAX {
        return Err(FieldError::new("url", format!("must be at most {URL_MAX} characters")));
    }
    Ok(u.to_string())
}

impl Checked for EndpointIn {
    type Valid = EndpointIn;

    /// The events (known names or `*`, at least one, each once) and the description; the
    /// URL needs this server's policy ([`parse_endpoint`]).
    fn check(self) -> std::result::Result<EndpointIn, FieldError> {
        if self.events.is_empty() {
            return Err(FieldError::new("events", "must name at least one event (or \"*\")"));
        }
        let mut events: Vec<String> = Vec::new();
        for name in self.events {
            if !is_subscribable(&name) {
                return Err(FieldError::new(
                    "events",
                    format!("unknown event '{name}' (known: *, {})", WEBHOOK_EVENTS.join(", ")),
                ));
            }
            if !events.contains(&name) {
                events.push(name);
            }
        }
        if self.description.as_ref().is_some_and(|d| d.len() > DESCRIPTION_MAX) {
            return Err(FieldError::new("description", format!("must be at most {DESCRIPTION_MAX} characters")));
        }
        Ok(EndpointIn { events, ..self })
    }
}

/// Check a request's JSON object: its shape and events ([`EndpointIn`]), then the URL
/// against this server's policy ([`validate_url`]).
pub fn parse_endpoint(state: &AppState, body: &Map<String, Value>) -> Result<EndpointIn, FieldError> {
    let input = crate::http::validated::validate::<EndpointIn>(body)?;
    let url = validate_url(state, &input.url)?;
    Ok(EndpointIn { url, ..input })
}

/// Create an endpoint from a checked request; its secret is in the answer this once.
pub async fn create_endpoint(state: &AppState, account: &Account, input: EndpointIn) -> Result<EndpointWithSecret> {
    if state.store.list_endpoints(&account.user.id).await?.len() >= MAX_ENDPOINTS {
        return Err(FieldError::new("url", format!("an account may have at most {MAX_ENDPOINTS} endpoints")).into());
    }
    let secret = new_secret();
    let ep = capture_store::Endpoint {
        id: EndpointId::new().into(),
        user_id: account.user.id.clone(),
        url: input.url,
        events: input.events,
        description: input.description,
        secret_enc: state.master.encrypt(&secret),
        created_at: state.clock.now_ms(),
    };
    state.store.create_endpoint(&ep).await?;
    Ok(EndpointWithSecret { endpoint: endpoint(&ep), secret })
}

/// The caller's endpoints (no secrets).
pub async fn list_endpoints(state: &AppState, account: &Account) -> Result<EndpointList> {
    let eps = state.store.list_endpoints(&account.user.id).await?;
    Ok(EndpointList { data: eps.iter().map(endpoint).collect() })
}

/// An endpoint of the caller, or `NotFound`.
pub async fn get_endpoint(state: &AppState, account: &Account, id: &EndpointId) -> Result<Endpoint> {
    Ok(endpoint(&own_endpoint(state, account, id).await?))
}

async fn own_endpoint(state: &AppState, account: &Account, id: &EndpointId) -> Result<capture_store::Endpoint> {
    state.store.endpoint_of(&account.user.id, id.as_str()).await?.ok_or_else(|| Error::not_found(EndpointId::NOUN))
}

/// Replace the signing secret; the new one is in the answer this once.
pub async fn rotate_secret(state: &AppState, account: &Account, id: &EndpointId) -> Result<RotatedSecret> {
    own_endpoint(state, account, id).await?;
    let secret = new_secret();
    if !state.store.rotate_endpoint_secret(&account.user.id, id.as_str(), &state.master.encrypt(&secret)).await? {
        return Err(Error::not_found(EndpointId::NOUN));
    }
    Ok(RotatedSecret { id: id.clone(), secret })
}

/// Queue a `test.ping` to the endpoint.
pub async fn send_test(state: &AppState, account: &Account, id: &EndpointId) -> Result<TestPing> {
    own_endpoint(state, account, id).await?;
    let delivery = state
        .store
        .send_test_ping(&account.user.id, id.as_str(), state.clock.now_ms())
        .await?
        .ok_or_else(|| Error::not_found(EndpointId::NOUN))?;
    state.wake.queued(crate::queues::Queue::Webhook);
    Ok(TestPing {
        delivery_id: DeliveryId::from_stored(delivery),
        event_type: "test.ping",
        status: DeliveryStatus::Pending,
    })
}

/// The last 50 deliveries of an endpoint, newest first.
pub async fn list_deliveries(state: &AppState, account: &Account, id: &EndpointId) -> Result<DeliveryList> {
    own_endpoint(state, account, id).await?;
    let ds = state.store.list_deliveries(&account.user.id, id.as_str(), 50).await?;
    Ok(DeliveryList { data: ds.iter().map(delivery).collect() })
}

/// Delete an endpoint; nothing more is delivered to it.
pub async fn delete_endpoint(state: &AppState, account: &Account, id: &EndpointId) -> Result<()> {
    own_endpoint(state, account, id).await?;
    if !state.store.delete_endpoint(&account.user.id, id.as_str(), state.clock.now_ms()).await? {
        return Err(Error::not_found(EndpointId::NOUN));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    #[test]
    fn events_default_to_everything_and_unknown_names_are_refused() {
        let events =
            |body: Value| crate::http::validated::validate::<EndpointIn>(body.as_object().unwrap()).map(|e| e.events);
        let url = "https://example.com/hook";
        assert_eq!(events(json!({"url": url})).unwrap(), vec!["*"]);
        assert_eq!(events(json!({"url": url, "events": null})).unwrap(), vec!["*"]);
        assert_eq!(events(json!({"url": url, "events": ["screenshot.done"]})).unwrap_err().field, "events");
        assert_eq!(events(json!({"url": url, "events": []})).unwrap_err().field, "events");
        assert_eq!(events(json!({"url": url, "events": "*"})).unwrap_err().field, "events");
        assert_eq!(
            events(json!({"url": url, "events": ["quota.warning", "quota.warning"]})).unwrap(),
            vec!["quota.warning"]
        );
    }
}
