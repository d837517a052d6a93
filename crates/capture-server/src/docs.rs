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
    tags((name = "screenshots", description = "Capture jobs"), (name = "account", description = "Balance and usage"))
)]
/// The OpenAPI document's frame: title, the shared error body, the security scheme.
struct Frame;

/// The OpenAPI document: the frame plus every resource's paths and schemas.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let mut doc = Frame::openapi();
    doc.merge(crate::screenshots::ApiDoc::openapi());
    doc.merge(crate::account::ApiDoc::openapi());
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
