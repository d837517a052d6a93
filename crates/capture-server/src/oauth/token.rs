//! `/oauth/token` (authorization code with PKCE S256, refresh with rotation) and
//! `/oauth/revoke` (RFC 7009).

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use capture_core::clock::Clock;
use capture_store::{CodeRedemption, NewToken, RefreshOutcome, Store, TokenKind};

use super::clients::{self, ClientError};
use super::{
    ACCESS_PREFIX, ACCESS_TTL_MS, OAuthError, REFRESH_PREFIX, REFRESH_TTL_MS, canonical_resource, cors, hash_secret,
    new_secret, parse_params, s256, token_body,
};
use crate::crypto::ct_eq;
use crate::state::AppState;

/// Largest token or revocation request body.
const FORM_LIMIT: usize = 16 * 1024;

/// The form of a token-endpoint request, and the client it names (from the body or an
/// HTTP Basic header; public clients send no secret).
fn read_form(headers: &HeaderMap, body: &[u8]) -> Result<(BTreeMap<String, String>, Option<String>), OAuthError> {
    let ct = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    if !ct.starts_with("application/x-www-form-urlencoded") {
        return Err(OAuthError::bad("invalid_request", "send the parameters as application/x-www-form-urlencoded"));
    }
    if body.len() > FORM_LIMIT {
        return Err(OAuthError::bad("invalid_request", format!("the body is larger than {FORM_LIMIT} bytes")));
    }
    let params = parse_params(&String::from_utf8_lossy(body)).map_err(|e| OAuthError::bad("invalid_request", e))?;
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic ").or_else(|| v.strip_prefix("basic ")))
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b.trim()).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| s.split_once(':').map(|(id, _)| id.to_string()))
        .map(|id| {
            url::form_urlencoded::parse(format!("x={id}").as_bytes()).next().map(|(_, v)| v.to_string()).unwrap_or(id)
        });
    let body_id = params.get("client_id").filter(|c| !c.is_empty()).cloned();
    let client_id = match (body_id, basic) {
        (Some(a), Some(b)) if a != b => {
            return Err(OAuthError::bad(
                "invalid_request",
                "client_id in the body and the Authorization header differ",
            ));
        }
        (a, b) => a.or(b),
    };
    Ok((params, client_id))
}

fn ok_json(v: serde_json::Value) -> Response {
    let mut r = Json(v).into_response();
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r.headers_mut().insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    cors(r)
}

/// `POST /oauth/token`
pub async fn token(State(state): State<AppState>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    match token_inner(&state, &headers, &body).await {
        Ok(v) => ok_json(v),
        Err(e) => e.into_response(),
    }
}

async fn token_inner(state: &AppState, headers: &HeaderMap, body: &[u8]) -> Result<serde_json::Value, OAuthError> {
    let (p, client_id) = read_form(headers, body)?;
    let client_id = client_id.ok_or_else(|| OAuthError::bad("invalid_request", "client_id is required"))?;
    let client = match clients::resolve(state, &client_id).await {
        Ok(c) => c,
        Err(ClientError::Internal(e)) => return Err(e.into()),
        Err(e) => {
            return Err(OAuthError {
                status: StatusCode::UNAUTHORIZED,
                error: "invalid_client",
                description: e.describe(),
            });
        }
    };
    let get = |k: &str| p.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let requested_resource = match get("resource") {
        None => None,
        Some(r) => Some(canonical_resource(state, r).ok_or_else(|| {
            OAuthError::bad(
                "invalid_target",
                "resource must be this server's MCP address ({base_url}/mcp) or {base_url}",
            )
        })?),
    };
    let now = state.clock.now_ms();
    match get("grant_type") {
        Some("authorization_code") => {
            let code = get("code").ok_or_else(|| OAuthError::bad("invalid_request", "code is required"))?;
            let verifier = get("code_verifier")
                .ok_or_else(|| OAuthError::bad("invalid_request", "code_verifier is required (PKCE)"))?;
            let redirect_uri =
                get("redirect_uri").ok_or_else(|| OAuthError::bad("invalid_request", "redirect_uri is required"))?;
            let grant = match state.store.redeem_oauth_code(&hash_secret(code), now).await? {
                CodeRedemption::Redeemed(c) => c,
                CodeRedemption::Replayed => {
                    tracing::warn!(client_id = %client.client_id, "an authorization code was presented twice; its tokens are revoked");
                    return Err(OAuthError::bad("invalid_grant", "the authorization code was already used"));
                }
                CodeRedemption::Invalid => {
                    return Err(OAuthError::bad("invalid_grant", "the authorization code is unknown or expired"));
                }
            };
            if grant.client_id != client.client_id {
                return Err(OAuthError::bad("invalid_grant", "the authorization code was issued to another client"));
            }
            if grant.redirect_uri != redirect_uri {
                return Err(OAuthError::bad("invalid_grant", "redirect_uri does not match the authorization request"));
            }
            let verifier_ok = (43..=128).contains(&verifier.len())
                && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
            if !verifier_ok || !ct_eq(s256(verifier).as_bytes(), grant.code_challenge.as_bytes()) {
                return Err(OAuthError::bad(
                    "invalid_grant",
                    "code_verifier does not match the code_challenge (PKCE S256)",
                ));
            }
            if requested_resource.is_some() && requested_resource != grant.resource {
                return Err(OAuthError::bad(
                    "invalid_target",
                    "resource differs from the one in the authorization request",
                ));
            }
            let access = new_secret(ACCESS_PREFIX);
            let refresh = new_secret(REFRESH_PREFIX);
            let make = |secret: &str, kind, ttl| NewToken {
                token_hash: hash_secret(secret),
                kind,
                client_id: grant.client_id.clone(),
                user_id: grant.user_id.clone(),
                scope: grant.scope.clone(),
                resource: grant.resource.clone(),
                family_id: grant.code_hash.clone(),
                expires_at: now + ttl,
            };
            state
                .store
                .issue_oauth_tokens(
                    &[
                        make(&access, TokenKind::Access, ACCESS_TTL_MS),
                        make(&refresh, TokenKind::Refresh, REFRESH_TTL_MS),
                    ],
                    now,
                )
                .await?;
            Ok(token_body(&access, &refresh, &grant.scope))
        }
        Some("refresh_token") => {
            let presented =
                get("refresh_token").ok_or_else(|| OAuthError::bad("invalid_request", "refresh_token is required"))?;
            let access = new_secret(ACCESS_PREFIX);
            let refresh = new_secret(REFRESH_PREFIX);
            let outcome = state
                .store
                .rotate_refresh_token(&hash_secret(presented), &client.client_id, now, |g| {
                    if requested_resource.is_some() && requested_resource != g.resource {
                        return None;
                    }
                    let make = |secret: &str, kind, ttl| NewToken {
                        token_hash: hash_secret(secret),
                        kind,
                        client_id: g.client_id.clone(),
                        user_id: g.user_id.clone(),
                        scope: g.scope.clone(),
                        resource: g.resource.clone(),
                        family_id: g.family_id.clone(),
                        expires_at: now + ttl,
                    };
                    Some(vec![
                        make(&access, TokenKind::Access, ACCESS_TTL_MS),
                        make(&refresh, TokenKind::Refresh, REFRESH_TTL_MS),
                    ])
                })
                .await?;
            match outcome {
                RefreshOutcome::Declined(_) => {
                    Err(OAuthError::bad("invalid_target", "resource differs from the one this grant was issued for"))
                }
                RefreshOutcome::Rotated(g) => Ok(token_body(&access, &refresh, &g.scope)),
                RefreshOutcome::Replayed => {
                    tracing::warn!(client_id = %client.client_id, "a rotated refresh token was presented again; the grant is revoked");
                    Err(OAuthError::bad("invalid_grant", "the refresh token was already used or revoked"))
                }
                RefreshOutcome::Invalid => {
                    Err(OAuthError::bad("invalid_grant", "the refresh token is unknown or expired"))
                }
            }
        }
        Some(other) => Err(OAuthError::bad(
            "unsupported_grant_type",
            format!("grant_type '{other}' is not supported (authorization_code, refresh_token)"),
        )),
        None => Err(OAuthError::bad("invalid_request", "grant_type is required")),
    }
}

/// `POST /oauth/revoke` (RFC 7009): revoke an access or refresh token. The answer is 200
/// whether or not the token was live, so it reveals nothing; revoking a refresh token ends
/// the whole grant.
pub async fn revoke(
    State(store): State<Store>,
    State(clock): State<Clock>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let (p, client_id) = match read_form(&headers, &body) {
        Ok(x) => x,
        Err(e) => return e.into_response(),
    };
    let Some(token) = p.get("token").filter(|t| !t.is_empty()) else {
        return OAuthError::bad("invalid_request", "token is required").into_response();
    };
    if let Err(e) = store.revoke_oauth_token(&hash_secret(token), client_id.as_deref(), clock.now_ms()).await {
        return OAuthError::from(e).into_response();
    }
    ok_json(serde_json::json!({}))
}
