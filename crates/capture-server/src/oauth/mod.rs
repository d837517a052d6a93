//! OAuth 2.1 authorization server on the service's own host (`{base_url}` is the issuer):
//! RFC 8414 server metadata, RFC 9728 protected-resource metadata for `{base_url}/mcp`,
//! RFC 7591 dynamic registration and client ID metadata documents (public clients only),
//! the authorization-code grant with PKCE S256 (sign-in and consent on the website),
//! refresh-token rotation with replay detection, RFC 8707 audiences and RFC 7009 revocation.
//!
//! Codes and tokens are opaque random strings stored only as SHA-256 hashes. Access tokens
//! live one hour, refresh tokens 30 days; each refresh revokes the presented token, and
//! presenting a revoked one revokes the whole grant (its "family").

mod authorize;
mod clients;
mod token;

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use capture_core::ids;
use serde_json::{Value, json};

use crate::auth::{ACCESS_PREFIX, mcp_resource};
use crate::crypto::sha256_hex;
use crate::http::ApiError;
use crate::state::AppState;

pub use clients::{is_loopback_redirect, redirect_uri_allowed};

/// How long an access token lives.
pub const ACCESS_TTL_MS: i64 = 3600 * 1000;
/// How long a refresh token lives (each use replaces it).
pub const REFRESH_TTL_MS: i64 = 30 * 24 * 3600 * 1000;
/// How long an authorization code lives.
pub const CODE_TTL_MS: i64 = 60 * 1000;
/// The one scope: everything the account can do through the MCP tools and the CLI.
pub const SCOPE: &str = "capture";
/// Prefix of refresh tokens.
pub const REFRESH_PREFIX: &str = "cap_rt_";
/// Prefix of authorization codes.
pub const CODE_PREFIX: &str = "cap_ac_";

/// Routes of the authorization server (no API-key authentication).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/.well-known/oauth-authorization-server", get(server_metadata).options(preflight))
        .route("/.well-known/oauth-protected-resource", get(resource_metadata).options(preflight))
        .route("/.well-known/oauth-protected-resource/mcp", get(resource_metadata).options(preflight))
        .route("/oauth/register", post(clients::register).options(preflight))
        .route("/oauth/authorize", get(authorize::show).post(authorize::decide))
        .route("/oauth/token", post(token::token).options(preflight))
        .route("/oauth/revoke", post(token::revoke).options(preflight))
}

/// Where protected-resource metadata for `/mcp` lives (named in 401 challenges).
pub fn resource_metadata_url(state: &AppState) -> String {
    format!("{}/.well-known/oauth-protected-resource/mcp", state.base_url)
}

/// A requested RFC 8707 `resource` in its canonical form, if this server protects it:
/// `{base_url}/mcp` (the MCP server) or `{base_url}` (the REST API, for the CLI).
pub fn canonical_resource(state: &AppState, raw: &str) -> Option<String> {
    let trimmed = raw.trim_end_matches('/');
    let mcp = mcp_resource(state);
    if trimmed == mcp {
        Some(mcp)
    } else if trimmed == state.base_url {
        Some(state.base_url.clone())
    } else {
        None
    }
}

async fn server_metadata(State(state): State<AppState>) -> Response {
    let b = &state.base_url;
    cors(
        Json(json!({
            "issuer": b,
            "authorization_endpoint": format!("{b}/oauth/authorize"),
            "token_endpoint": format!("{b}/oauth/token"),
            "registration_endpoint": format!("{b}/oauth/register"),
            "revocation_endpoint": format!("{b}/oauth/revoke"),
            "scopes_supported": [SCOPE],
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "code_challenge_methods_supported": ["S256"],
            "client_id_metadata_document_supported": true,
            "authorization_response_iss_parameter_supported": true,
            "service_documentation": format!("{b}/mcp/setup"),
        }))
        .into_response(),
    )
}

async fn resource_metadata(State(state): State<AppState>) -> Response {
    cors(
        Json(json!({
            "resource": mcp_resource(&state),
            "authorization_servers": [state.base_url],
            "scopes_supported": [SCOPE],
            "bearer_methods_supported": ["header"],
            "resource_name": "Capture MCP server",
            "resource_documentation": format!("{}/mcp/setup", state.base_url),
        }))
        .into_response(),
    )
}

/// Answer a CORS preflight (browser-based MCP clients call these endpoints cross-origin;
/// nothing here relies on cookies, so any origin may).
pub async fn preflight() -> Response {
    let mut r = StatusCode::NO_CONTENT.into_response();
    let h = r.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, POST, DELETE, OPTIONS"));
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("authorization, content-type, mcp-protocol-version, mcp-session-id, last-event-id"),
    );
    h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    r
}

/// Let any origin read `r` (no cookies are involved).
pub fn cors(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("www-authenticate, mcp-session-id, mcp-protocol-version, x-request-id, x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset, x-ratelimit-policy"),
    );
    r
}

/// An RFC 6749 §5.2 error answer: `{error, error_description}`.
#[derive(Debug, Clone)]
pub struct OAuthError {
    pub status: StatusCode,
    pub error: &'static str,
    pub description: String,
}

impl OAuthError {
    /// A 400 with `error`.
    pub fn bad(error: &'static str, description: impl Into<String>) -> Self {
        OAuthError { status: StatusCode::BAD_REQUEST, error, description: description.into() }
    }
}

impl From<ApiError> for OAuthError {
    fn from(e: ApiError) -> Self {
        // Already logged by `ApiError::internal`; the client sees only the generic code.
        OAuthError { status: StatusCode::INTERNAL_SERVER_ERROR, error: "server_error", description: e.message }
    }
}

impl From<capture_store::StoreError> for OAuthError {
    fn from(e: capture_store::StoreError) -> Self {
        ApiError::from(e).into()
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let mut r =
            (self.status, Json(json!({"error": self.error, "error_description": self.description}))).into_response();
        r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"capture\""));
        }
        cors(r)
    }
}

/// Parse `application/x-www-form-urlencoded` parameters; a parameter sent twice is an error
/// (RFC 6749 §3.1), as is an empty name.
pub fn parse_params(raw: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for (k, v) in url::form_urlencoded::parse(raw.as_bytes()) {
        if k.is_empty() {
            continue;
        }
        if out.insert(k.to_string(), v.to_string()).is_some() {
            return Err(format!("the parameter '{k}' was sent more than once"));
        }
    }
    Ok(out)
}

/// A new secret with `prefix` and 43 random characters (≈256 bits).
pub fn new_secret(prefix: &str) -> String {
    format!("{prefix}{}", ids::random_string(43))
}

/// The stored form of a code or token.
pub fn hash_secret(secret: &str) -> String {
    sha256_hex(secret.as_bytes())
}

/// BASE64URL(SHA-256(verifier)) without padding (RFC 7636 §4.2, S256).
pub fn s256(verifier: &str) -> String {
    use sha2::Digest;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()))
}

/// The JSON body of a token response.
fn token_body(access: &str, refresh: &str, scope: &str) -> Value {
    json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": ACCESS_TTL_MS / 1000,
        "refresh_token": refresh,
        "scope": scope,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s256_matches_the_rfc_7636_example() {
        assert_eq!(s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    }

    #[test]
    fn a_repeated_parameter_is_refused() {
        assert!(parse_params("a=1&b=2").is_ok());
        assert!(parse_params("a=1&a=2").is_err());
        assert_eq!(parse_params("x=a%20b").unwrap()["x"], "a b");
    }

    #[test]
    fn new_access_tokens_have_the_shape_authentication_recognises() {
        assert!(crate::auth::looks_like_access_token(&new_secret(ACCESS_PREFIX)));
        assert!(!crate::auth::looks_like_access_token(&new_secret(REFRESH_PREFIX)));
    }
}
