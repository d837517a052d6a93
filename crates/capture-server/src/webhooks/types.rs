//! The wire types of webhook endpoints and their deliveries: the body of
//! `POST /v1/webhooks` (also the `create_webhook` tool's input), an endpoint, its secret
//! (shown once), a delivery, and the answers of rotate and test.

use capture_core::{DeliveryId, DeliveryStatus, EndpointId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::lists::list_type;

/// Most characters of an endpoint's description.
pub const DESCRIPTION_MAX: usize = 500;
/// Most characters of an endpoint URL.
pub const URL_MAX: usize = 2048;

// Checked by `service::parse_endpoint`: the shape and the events here, the URL against this
// server's egress policy there.
/// A new webhook endpoint: the body of `POST /v1/webhooks` (also the `create_webhook`
/// tool's input).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(rename = "WebhookEndpointRequest")]
pub struct EndpointIn {
    /// HTTPS address that receives deliveries.
    #[schemars(url, length(max = URL_MAX))]
    pub url: String,
    /// Event types, or ["*"] for every event including future ones.
    #[serde(default = "every_event", deserialize_with = "events_or_every")]
    pub events: Vec<String>,
    /// Optional note.
    #[schemars(length(max = DESCRIPTION_MAX))]
    pub description: Option<String>,
}

fn every_event() -> Vec<String> {
    vec!["*".into()]
}

/// `null` is the default, every event.
fn events_or_every<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<String>>::deserialize(d)?.unwrap_or_else(every_event))
}

// The OpenAPI schema is the JSON Schema above.
impl utoipa::PartialSchema for EndpointIn {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::schema::openapi::<EndpointIn>()
    }
}

impl ToSchema for EndpointIn {
    fn name() -> std::borrow::Cow<'static, str> {
        "WebhookEndpointRequest".into()
    }
}

/// A webhook endpoint (never with its secret).
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub id: EndpointId,
    pub url: String,
    pub events: Vec<String>,
    pub description: Option<String>,
    pub created_at: String,
}

/// An endpoint just created, with its signing secret (shown this once).
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
pub struct EndpointWithSecret {
    #[serde(flatten)]
    pub endpoint: Endpoint,
    /// `whsec_…`: verify deliveries with HMAC-SHA256 over "<timestamp>.<body>".
    pub secret: String,
}

/// The answer of `POST /v1/webhooks`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CreatedEndpoint {
    pub endpoint: EndpointWithSecret,
}

list_type! {
    /// The caller's endpoints.
    pub type EndpointList = Collection<Endpoint>;
    schemas: both;
}

/// A new signing secret (shown this once); the old one no longer signs.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RotatedSecret {
    pub id: EndpointId,
    pub secret: String,
}

/// A queued `test.ping`.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestPing {
    pub delivery_id: DeliveryId,
    /// Always "test.ping".
    pub event_type: &'static str,
    pub status: DeliveryStatus,
}

/// One delivery of an event to an endpoint (every attempt is kept; this is its summary).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// Also the `Webhook-Id` header of every attempt.
    pub id: DeliveryId,
    pub event_type: String,
    pub status: DeliveryStatus,
    pub attempts: i64,
    pub response_code: Option<i64>,
    pub error_message: Option<String>,
    pub created_at: String,
    pub last_attempt_at: Option<String>,
    pub next_attempt_at: Option<String>,
}

list_type! {
    /// An endpoint's last deliveries, newest first.
    pub type DeliveryList = Collection<Delivery>;
    schemas: openapi;
}

/// The input of the tools that name one endpoint.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EndpointArgs {
    /// The endpoint id (whe_…).
    pub id: String,
}
