//! `GET /openapi.json` (OpenAPI 3.1, gathered from the resources' handler annotations and
//! their `types.rs`) and the Swagger UI at `/docs`, served from the binary (no internet).

use axum::Router;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_swagger_ui::SwaggerUi;

use crate::state::AppState;

/// Docs routes.
pub fn router() -> Router<AppState> {
    Router::new().merge(SwaggerUi::new("/docs").url("/openapi.json", openapi()))
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Capture API", description = "Render web pages to PNG, JPEG, WebP or PDF through asynchronous jobs."),
    components(schemas(crate::http::error::ErrorBody)),
    modifiers(&BearerAuth),
    tags(
        (name = "screenshots", description = "Capture jobs"),
        (name = "audits", description = "Website audits: scores, findings with evidence, a public report and its PDF"),
        (name = "webhooks", description = "Signed event deliveries"),
        (name = "account", description = "Balance and usage"),
        (name = "ads", description = "Generated video ads: drafts and renders"),
        (name = "inbox", description = "The saved test inbox: address, password, received mail with its links and codes"),
        (name = "auth-test", description = "Sign-in or sign-up? Auth history per site and the recommendation"),
        (name = "campaigns", description = "Bulk audit campaigns mailed within sending hours, caps and suppressions"),
        (name = "storage", description = "Your own S3-compatible buckets, written to by captures that name one in storage"),
        (name = "monitors", description = "Pages captured on a schedule and compared with their baseline: changes and failures as events"),
        (name = "proxies", description = "Your own HTTP, HTTPS and SOCKS5 proxies (or pools of them) that captures, audits, runs and sessions leave through, behind the egress guard")
    )
)]
/// The OpenAPI document's frame: title, the shared error body, the security scheme.
struct Frame;

/// The OpenAPI document: the frame plus every resource's paths and schemas, the error
/// answers every operation can give, and the webhook events the service sends.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let mut doc = Frame::openapi();
    doc.merge(crate::screenshots::ApiDoc::openapi());
    doc.merge(crate::audits::ApiDoc::openapi());
    doc.merge(crate::webhooks::ApiDoc::openapi());
    doc.merge(crate::render::ApiDoc::openapi());
    doc.merge(crate::storage::ApiDoc::openapi());
    doc.merge(crate::profiles::ApiDoc::openapi());
    doc.merge(crate::monitors::ApiDoc::openapi());
    doc.merge(crate::proxies::ApiDoc::openapi());
    doc.merge(crate::liveview::ApiDoc::openapi());
    doc.merge(crate::account::ApiDoc::openapi());
    doc.merge(crate::runs::ApiDoc::openapi());
    doc.merge(crate::ads::ApiDoc::openapi());
    doc.merge(crate::inbox::ApiDoc::openapi());
    doc.merge(crate::campaigns::ApiDoc::openapi());
    // The operations, from the routers the app serves.
    for api in crate::routes::apis().all() {
        doc.merge(api.openapi());
    }
    error_responses(&mut doc);
    doc.webhooks = Some(webhook_events());
    doc
}

/// Add to every operation the error answers of the layers in front of it, each with the
/// one error body: 400 (`X-Organization-ID`, and the body's validation where there is one),
/// 401 when it needs a credential, 404 for a path with an id, 413/415 for a JSON body, 429
/// (`PLAN_QUOTA_EXCEEDED`, `QUEUE_FULL`) where an action is charged, and 500.
fn error_responses(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    let body = |what: &str| {
        ResponseBuilder::new()
            .description(what)
            .content("application/json", ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build())
            .build()
    };
    for (path, item) in doc.paths.paths.iter_mut() {
        let ops = [&mut item.get, &mut item.post, &mut item.put, &mut item.patch, &mut item.delete];
        for op in ops.into_iter().flatten() {
            let mut add = |code: &str, what: &str| {
                op.responses.responses.entry(code.to_string()).or_insert_with(|| body(what).into());
            };
            add("400", "VALIDATION_ERROR, INVALID_JSON, INVALID_IDEMPOTENCY_KEY or INVALID_ORGANIZATION_ID");
            add("500", "INTERNAL_ERROR (opaque; the requestId finds the log lines)");
            if path.contains('{') {
                add("404", "NOT_FOUND: no such resource for this account");
            }
            if op.request_body.is_some() {
                add("413", "PAYLOAD_TOO_LARGE");
                add("415", "UNSUPPORTED_MEDIA_TYPE");
            }
            if op.security.as_ref().is_some_and(|s| !s.is_empty()) {
                add("401", "UNAUTHORIZED: a missing, unknown or revoked credential");
            }
        }
    }
}

/// The `webhooks` section: one POST per event type the service delivers to an endpoint,
/// with the envelope, its data fields and the signature headers.
fn webhook_events() -> utoipa::openapi::path::Paths {
    let data_fields = |event: &str| match event {
        "screenshot.completed" => {
            "screenshotId, url, publicUrl, format, width, height, metadata; storageStatus pending with storage"
        }
        "screenshot.stored" => {
            "screenshotId, and storageUrl (s3://bucket/key) or storageError: the copy to the request's storage \
             destination ended, after screenshot.completed"
        }
        "screenshot.failed" => "screenshotId, url, error",
        "run.completed" => "runId, finalUrl, pageTitle, videoUrl, consoleErrorCount, networkErrorCount",
        "run.failed" => "runId, finalUrl, pageTitle, videoUrl, consoleErrorCount, networkErrorCount, finalizationError",
        "quota.warning" => "threshold, used, limit, remaining, resetAt",
        "test.ping" => "endpointId, message",
        "batch.completed" => "batchId, total, done, failed (when the last job of a bulk request ends)",
        "campaign.completed" => {
            "campaignId, name, status (completed), counts {pending, auditing, ready (all 0), sent, skipped, failed, \
             total}, reasons {<why a row was skipped or failed>: rows}, sendAt, timezone, launchedAt, completedAt"
        }
        "monitor.changed" => {
            "monitorId, name, url, checkId, screenshotId, diffRatio, changedRegions [{x, y, w, h}], diffUrl, imageUrl, \
             baselineImageUrl, textDiff (a unified diff, cut at 20,000 characters)"
        }
        "monitor.failing" => {
            "monitorId, name, url, checkId, error, failures (sent at the third failed check in a row, once until a \
             check succeeds)"
        }
        "session.human_requested" => {
            "sessionId, reason, url (a control-mode live view: open it, do what is asked, press Done), expiresAt, \
             timeoutSec"
        }
        _ => "the event's fields",
    };
    let mut paths = serde_json::Map::new();
    for event in capture_core::events::WEBHOOK_EVENTS {
        let header = |name: &str, what: &str| serde_json::json!({"name": name, "in": "header", "required": true, "description": what, "schema": {"type": "string"}});
        paths.insert(
            (*event).to_string(),
            serde_json::json!({"post": {
                "tags": ["webhooks"],
                "summary": format!("The {event} event, POSTed to a subscribed endpoint"),
                "parameters": [
                    header("webhook-id", "stable delivery id, the same on every retry: deduplicate with it"),
                    header("webhook-timestamp", "Unix seconds at signing time"),
                    header("webhook-signature", "t=<timestamp>,v1=<hex HMAC-SHA256 of \"<timestamp>.<body>\" with the endpoint's secret>"),
                ],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {
                    "type": "object",
                    "required": ["type", "createdAt", "data"],
                    "properties": {
                        "type": {"type": "string", "enum": [event]},
                        "createdAt": {"type": "string", "format": "date-time"},
                        "data": {"type": "object", "description": format!("fields: {}", data_fields(event))}
                    }
                }}}},
                "responses": {
                    "2XX": {"description": "received; any other answer (or none within the timeout) is retried"}
                }
            }}),
        );
    }
    serde_json::from_value(serde_json::Value::Object(paths)).expect("the webhook events are a valid Paths object")
}

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("sk_live_…").build()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_api_route_is_documented_with_its_error_answers() {
        let doc = serde_json::to_value(openapi()).unwrap();
        // Each router's routes, as registered with their operations (a route's path and methods
        // are its documentation's).
        let routes: Vec<(String, String)> = crate::routes::apis().all().flat_map(|api| api.routes()).collect();
        assert!(routes.len() >= 70, "every router was walked: {routes:?}");
        for (method, path) in &routes {
            let op = &doc["paths"][path][method];
            assert!(op.is_object(), "{} {path} is routed but not in the OpenAPI document", method.to_uppercase());
            let responses = op["responses"].as_object().unwrap();
            for code in ["400", "401", "500"] {
                assert_eq!(
                    responses.get(code).map(|r| &r["content"]["application/json"]["schema"]["$ref"]),
                    Some(&serde_json::json!("#/components/schemas/ErrorBody")),
                    "{method} {path} documents {code} with the error body"
                );
            }
            if path.contains('{') {
                assert!(responses.contains_key("404"), "{method} {path}");
            }
        }
        // And nothing is documented that is not routed.
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                assert!(
                    routes.iter().any(|(m, p)| m == method && p == path),
                    "{method} {path} is documented but not routed"
                );
            }
        }
    }

    #[test]
    fn the_webhook_events_are_documented_with_their_envelope() {
        let doc = serde_json::to_value(openapi()).unwrap();
        for event in capture_core::events::WEBHOOK_EVENTS {
            let op = &doc["webhooks"][event]["post"];
            let schema = &op["requestBody"]["content"]["application/json"]["schema"];
            assert_eq!(schema["properties"]["type"]["enum"], serde_json::json!([event]), "{event}: {op}");
            assert_eq!(schema["required"], serde_json::json!(["type", "createdAt", "data"]));
            let headers: Vec<&str> =
                op["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
            assert_eq!(headers, ["webhook-id", "webhook-timestamp", "webhook-signature"]);
        }
        let data = &doc["webhooks"]["campaign.completed"]["post"]["requestBody"]["content"]["application/json"]["schema"]
            ["properties"]["data"]["description"];
        assert!(data.as_str().unwrap().contains("counts {pending"), "{data}");
    }

    #[test]
    fn the_document_describes_each_resource_with_its_request_schemas() {
        let doc = serde_json::to_value(openapi()).unwrap();
        for path in [
            "/v1/screenshot",
            "/v1/screenshots",
            "/v1/webhooks",
            "/v1/account/balance",
            "/v1/audits",
            "/v1/audits/{id}",
            "/v1/audits/{id}/stream",
            "/v1/runs",
            "/v1/runs/{id}/stop",
            "/v1/adshot/draft",
            "/v1/adshot/render",
            "/v1/adshot/{id}/stream",
            "/v1/storage-destinations",
            "/v1/storage-destinations/{id}",
        ] {
            assert!(doc["paths"][path].is_object(), "{path} is documented");
        }
        // The capture options come from their JSON Schema, bounds included.
        let shot = &doc["components"]["schemas"]["ScreenshotRequest"];
        assert_eq!(shot["properties"]["width"]["maximum"], 3840, "{shot}");
        assert_eq!(
            shot["properties"]["format"]["enum"],
            serde_json::json!(["png", "jpeg", "webp", "mp4", "webm", "gif", "markdown", "text", "html", null]),
            "{shot}"
        );
        assert_eq!(shot["required"], serde_json::json!(["url"]));
        // A documented enum's variants keep their values (schemars writes them as `const`).
        let consent = &shot["properties"]["cookieConsent"]["anyOf"][0]["oneOf"];
        let values: Vec<&serde_json::Value> = consent.as_array().unwrap().iter().map(|v| &v["enum"][0]).collect();
        assert_eq!(values, ["auto", "reject", "accept", "hide", "none"], "{consent}");
        // The page as text and extraction, from the same derive.
        assert_eq!(shot["properties"]["maxChars"]["maximum"], 10_000_000, "{shot}");
        assert!(shot["properties"]["content"]["type"].to_string().contains("array"), "{shot}");
        let rule = &shot["properties"]["extract"]["properties"]["rules"]["additionalProperties"];
        assert_eq!(rule["required"], serde_json::json!(["selector"]), "{shot}");
        let hook = &doc["components"]["schemas"]["WebhookEndpointRequest"];
        assert_eq!(hook["properties"]["description"]["maxLength"], 500, "{hook}");
        let run = &doc["components"]["schemas"]["RunRequest"];
        assert_eq!(run["properties"]["timeoutMs"]["maximum"], 1_800_000, "{run}");
        assert_eq!(run["required"], serde_json::json!(["startUrl"]));
        let render = &doc["components"]["schemas"]["AdRenderRequest"];
        assert_eq!(render["required"], serde_json::json!(["draftId", "voiceId", "musicId"]), "{render}");
        let job = &doc["components"]["schemas"]["Job"];
        assert!(job["properties"]["status"].is_object(), "{job}");
        for field in ["contentUrls", "data", "sources"] {
            assert!(job["properties"][field].is_object(), "{field}: {job}");
        }
    }
}
