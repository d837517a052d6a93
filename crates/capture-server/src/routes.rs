//! The JSON API's routers, by how a request authenticates: the app serves them (`app::router`)
//! and the OpenAPI document describes them (`docs::openapi`), from this one list.

use axum::Router;

use crate::http::api::Api;
use crate::screenshots;
use crate::state::AppState;

/// The routers of the JSON API (each route registered with its OpenAPI operation), by how a
/// request authenticates. The OpenAPI document is made from these same routers
/// ([`crate::docs::openapi`]): what is served is what is documented.
pub struct Apis {
    /// An API key (`Authorization: Bearer`).
    pub api_key: Vec<Api>,
    /// An API key or the OAuth session of the CLI and MCP clients.
    pub api_key_or_oauth: Vec<Api>,
    /// An API key or the website's session cookie.
    pub api_key_or_session: Vec<Api>,
    /// Their own credential: a render link's signature, a live run's DevTools token.
    pub own_auth: Vec<Api>,
}

impl Apis {
    /// Every router, whatever its authentication.
    pub fn all(self) -> impl Iterator<Item = Api> {
        [self.api_key, self.api_key_or_oauth, self.api_key_or_session, self.own_auth].into_iter().flatten()
    }
}

/// The JSON API's routers.
pub fn apis() -> Apis {
    Apis {
        api_key: vec![
            screenshots::v1_router(),
            crate::audits::v1_router(),
            crate::ads::v1_router(),
            crate::webhooks::router(),
            crate::render::keys_router(),
            crate::storage::router(),
            crate::profiles::router(),
            crate::monitors::router(),
            crate::proxies::router(),
            crate::liveview::router(),
            screenshots::api_router(),
            crate::runs::v1_router(),
            crate::campaigns::v1_router(),
        ],
        api_key_or_oauth: vec![crate::account::router(), crate::inbox::router()],
        api_key_or_session: vec![screenshots::web_app_router()],
        own_auth: vec![crate::render::public_router(), crate::runs::devtools_router()],
    }
}

pub fn merged(apis: Vec<Api>) -> Router<AppState> {
    apis.into_iter().fold(Router::new(), Router::merge)
}
