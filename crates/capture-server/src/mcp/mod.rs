//! The MCP server at `{base_url}/mcp`: Streamable HTTP (rmcp) in stateless mode, behind an
//! OAuth bearer check. Every tool calls the same service functions as the REST API, for the
//! account the access token acts for. The tools live here, a file per product
//! (`audit_tools`, `campaign_tools`, `run_tools`, `inbox_tools`), listed and dispatched by
//! `tools`; the browser automation tools are `crate::automation`.
//!
//! Stateless mode: each POST carries one JSON-RPC message and is answered by a fresh handler
//! (JSON, or an SSE stream when a tool sends progress first). Nothing lives in this node's
//! memory between requests, so any number of API nodes can serve one client; the only
//! state, the OAuth grant, is in the database.

mod audit_tools;
mod campaign_tools;
mod capture_tools;
mod inbox_tools;
mod monitor_tools;
mod profile_tools;
mod run_tools;
mod tools;

use std::sync::Arc;
use std::time::Duration;

use askama::Template;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;

use crate::auth::{self, Account, mcp_resource};
use crate::oauth;
use crate::state::AppState;
use crate::web::base::layout::{Chrome, page};

/// Routes: the MCP endpoint (bearer-protected) and its setup page (public).
pub fn router(state: AppState) -> Router<AppState> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_allowed_hosts(allowed_hosts(&state.base_url))
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        .with_max_request_body_bytes(crate::http::json::JSON_LIMIT)
        .with_cancellation_token(state.shutdown.child_token());
    let st = state.clone();
    let service = StreamableHttpService::new(
        move || Ok(CaptureMcp { state: st.clone() }),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new()
        .route_service("/mcp", service)
        .route_layer(middleware::from_fn_with_state(state, require_token))
        .route("/mcp/setup", get(setup_page))
}

/// `Host` values the transport accepts: the host of `CAPTURE_BASE_URL` (any port, so a
/// proxy in front may use its own) and loopback names. A DNS-rebinding page sends its own
/// host name, which is none of these.
fn allowed_hosts(base_url: &str) -> Vec<String> {
    let mut hosts = vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()];
    if let Some(h) = url::Url::parse(base_url).ok().and_then(|u| u.host_str().map(str::to_string)) {
        let h = h.trim_start_matches('[').trim_end_matches(']').to_string();
        if !hosts.contains(&h) {
            hosts.push(h);
        }
    }
    hosts
}

/// Admit only requests with a live access token whose audience is `{base_url}/mcp`; put its
/// account in the request for the tools.
async fn require_token(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    if req.method() == Method::OPTIONS {
        return oauth::preflight().await;
    }
    let Some(token) = auth::bearer(req.headers()).map(str::to_string) else {
        drain(req).await;
        return unauthorized(&state, None);
    };
    match auth::from_access_token(&state, &token, &[&mcp_resource(&state)]).await {
        Ok(Some(account)) => {
            req.extensions_mut().insert(account.clone());
            let mut resp = next.run(req).await;
            // A tool may have used an action: report the usage as it stands now (and
            // refresh the cache the REST API reads it from).
            let used = match state.store.month_usage(&account.user.id, &account.window.label).await {
                Ok(u) => {
                    state.hot.put_usage(&account.user.id, &account.window.label, u);
                    u
                }
                Err(_) => account.used,
            };
            crate::http::authenticate::rate_limit_headers(resp.headers_mut(), &account, used);
            oauth::cors(resp)
        }
        Ok(None) => {
            drain(req).await;
            unauthorized(&state, Some("the access token is unknown, expired, revoked or not for this MCP server"))
        }
        Err(e) => {
            drain(req).await;
            crate::http::ApiError::from(e).into_response()
        }
    }
}

/// Read (and drop) the body of a request answered without it. A client's first call is
/// unauthenticated by design (it learns where to sign in from the 401); closing a connection
/// with its body still unread in the kernel makes Linux send a reset, which can destroy the 401
/// before the client reads it ("server disconnected without sending a response" in the Python
/// SDK, seen under load). Bounded by the endpoint's body limit and 5 s.
async fn drain(req: Request) {
    let body = axum::body::to_bytes(req.into_body(), crate::http::json::JSON_LIMIT);
    let _ = tokio::time::timeout(Duration::from_secs(5), body).await;
}

/// 401 with the RFC 9728 challenge and the contract's JSON body.
fn unauthorized(state: &AppState, token_error: Option<&str>) -> Response {
    let b = &state.base_url;
    let metadata = oauth::resource_metadata_url(state);
    let message = match token_error {
        None => {
            "sign in to use the Capture MCP server: connect your MCP client to mcp_url and it will open the sign-in page"
        }
        Some(e) => e,
    };
    let body = json!({
        "error": message,
        "code": "UNAUTHORIZED",
        "mcp_url": mcp_resource(state),
        "login_url": format!("{b}/login"),
        "setup_url": format!("{b}/mcp/setup"),
        "codex_login_command": "codex mcp login capture",
    });
    let mut challenge = format!("Bearer resource_metadata=\"{metadata}\", scope=\"{}\"", oauth::SCOPE);
    if let Some(e) = token_error {
        challenge.push_str(&format!(", error=\"invalid_token\", error_description=\"{e}\""));
    }
    let mut r = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    oauth::cors(r)
}

/// The MCP server: one per request (stateless), holding only the shared state.
#[derive(Clone)]
pub struct CaptureMcp {
    state: AppState,
}

/// Every MCP tool with its schema and description (for `/llms.txt`).
pub fn catalogue() -> Vec<rmcp::model::Tool> {
    tools::catalogue()
}

/// What the server tells an agent when it connects.
pub const INSTRUCTIONS: &str = "Capture renders web pages into PNG, JPEG, WebP or PDF. Use take_screenshot to capture \
a page (it waits for the result and returns the image and its public URL), get_screenshot and list_screenshots to \
find earlier captures, share_screenshot for a public link, account_balance for the monthly actions left (each \
capture costs one), the webhook tools to manage endpoints that receive screenshot.completed and other events, and run_audit / \
get_audit for website audits (scores, findings with evidence, a public report and its PDF; one action per page).";

impl ServerHandler for CaptureMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("capture", env!("CARGO_PKG_VERSION"))
                    .with_title("Capture")
                    .with_website_url(format!("{}/mcp/setup", self.state.base_url)),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::catalogue()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::catalogue().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        // The bearer check put the account in the HTTP request, which rmcp hands over.
        let account = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<Account>())
            .cloned()
            .ok_or_else(|| rmcp::ErrorData::internal_error("the request carries no authenticated account", None))?;
        let args = request.arguments.clone().unwrap_or_default();
        Ok(tools::call(&self.state, &account, &request.name, args, &context).await?.into())
    }
}

/// `GET /mcp/setup`: how to add the server to common MCP clients.
async fn setup_page(State(state): State<AppState>) -> Response {
    let tools = tools::catalogue()
        .iter()
        .map(|t| {
            let summary = t.description.as_deref().unwrap_or("").split(". ").next().unwrap_or("").to_string();
            (t.name.to_string(), summary)
        })
        .collect();
    let setup = SetupPage {
        chrome: Chrome::public("Connect an AI agent"),
        mcp: mcp_resource(&state),
        base: &state.base_url,
        tools,
    };
    page(StatusCode::OK, &setup, None)
}

/// `templates/mcp/setup.html`
#[derive(Template)]
#[template(path = "mcp/setup.html")]
struct SetupPage<'a> {
    chrome: Chrome<'a>,
    mcp: String,
    base: &'a str,
    /// Each tool's name and the first sentence of its description.
    tools: Vec<(String, String)>,
}

#[cfg(test)]
mod tests {
    use super::allowed_hosts;

    #[test]
    fn the_base_url_host_is_allowed_besides_loopback() {
        let h = allowed_hosts("https://capture.example.com");
        assert!(h.contains(&"capture.example.com".to_string()));
        assert!(h.contains(&"127.0.0.1".to_string()));
        assert_eq!(allowed_hosts("http://127.0.0.1:8080").len(), 3);
        assert!(allowed_hosts("http://[::1]:8080").contains(&"::1".to_string()));
    }
}
