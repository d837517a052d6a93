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
        (name = "webhooks", description = "Signed event deliveries"),
        (name = "account", description = "Balance and usage"),
        (name = "ads", description = "Generated video ads: drafts and renders")
    )
)]
/// The OpenAPI document's frame: title, the shared error body, the security scheme.
struct Frame;

/// The OpenAPI document: the frame plus every resource's paths and schemas.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let mut doc = Frame::openapi();
    doc.merge(crate::screenshots::ApiDoc::openapi());
    doc.merge(crate::webhooks::ApiDoc::openapi());
    doc.merge(crate::account::ApiDoc::openapi());
    doc.merge(crate::ads::ApiDoc::openapi());
    doc
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
    fn the_document_describes_each_resource_with_its_request_schemas() {
        let doc = serde_json::to_value(openapi()).unwrap();
        for path in [
            "/v1/screenshot",
            "/v1/screenshots",
            "/v1/webhooks",
            "/v1/account/balance",
            "/v1/adshot/draft",
            "/v1/adshot/render",
            "/v1/adshot/{id}/stream",
        ] {
            assert!(doc["paths"][path].is_object(), "{path} is documented");
        }
        // The capture options come from their JSON Schema, bounds included.
        let shot = &doc["components"]["schemas"]["ScreenshotRequest"];
        assert_eq!(shot["properties"]["width"]["maximum"], 3840, "{shot}");
        assert_eq!(shot["properties"]["format"]["enum"], serde_json::json!(["png", "jpeg", "webp", null]), "{shot}");
        assert_eq!(shot["required"], serde_json::json!(["url"]));
        let hook = &doc["components"]["schemas"]["WebhookEndpointRequest"];
        assert_eq!(hook["properties"]["description"]["maxLength"], 500, "{hook}");
        let render = &doc["components"]["schemas"]["AdRenderRequest"];
        assert_eq!(render["required"], serde_json::json!(["draftId", "voiceId", "musicId"]), "{render}");
        let job = &doc["components"]["schemas"]["Job"];
        assert!(job["properties"]["status"].is_object(), "{job}");
    }
}
