//! Customers' proxies (`/v1/proxies`): one proxy or a pool that captures, audits, runs and
//! sessions naming it (`proxy`) leave through, behind the egress guard. [`service`] holds
//! the operations.

pub mod service;
pub mod types;

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;

use self::types::{
    MemberShown, MemberTest, Proxy, ProxyIn, ProxyList, ProxyPatch, ProxyServed, ProxyTest, ProxyTestIn,
};
use crate::auth::Account;
use crate::http::api::Api;
use crate::http::error::ErrorBody;
use crate::http::{ApiResult, Json, OptionalJson, Path, ValidatedJson};
use crate::state::AppState;

/// The proxy paths and schemas of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(
    ProxyIn,
    ProxyPatch,
    Proxy,
    ProxyList,
    MemberShown,
    ProxyTestIn,
    ProxyTest,
    MemberTest,
    ProxyServed,
    types::Rotation
)))]
pub struct ApiDoc;

/// Routes (authenticated by the caller's router).
pub fn router() -> Api {
    Api::new()
        .op::<__path_create_handler, _, _>(create_handler)
        .op::<__path_list_handler, _, _>(list_handler)
        .op::<__path_get_handler, _, _>(get_handler)
        .op::<__path_update_handler, _, _>(update_handler)
        .op::<__path_delete_handler, _, _>(delete_handler)
        .op::<__path_test_handler, _, _>(test_handler)
}

#[utoipa::path(post, path = "/v1/proxies", tag = "proxies", request_body = ProxyIn,
    responses((status = 201, body = Proxy), (status = 400, body = ErrorBody)), security(("api_key" = [])))]
/// Add a proxy (`url`) or a pool (`urls`, `rotation`): `http://`, `https://` or
/// `socks5://`, with credentials in the URL or in `username`/`password`. The URLs are stored
/// encrypted; credentials are never returned.
async fn create_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    ValidatedJson { valid, .. }: ValidatedJson<ProxyIn>,
) -> ApiResult<(StatusCode, Json<Proxy>)> {
    Ok((StatusCode::CREATED, Json(service::create(&state, &account, valid).await?)))
}

#[utoipa::path(get, path = "/v1/proxies", tag = "proxies",
    responses((status = 200, body = ProxyList)), security(("api_key" = [])))]
/// The caller's proxies (never their credentials).
async fn list_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
) -> ApiResult<Json<ProxyList>> {
    Ok(Json(service::list(&state, &account).await?))
}

#[utoipa::path(get, path = "/v1/proxies/{id}", tag = "proxies", params(("id" = String, Path, description = "id or name")),
    responses((status = 200, body = Proxy), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// One proxy, by id or name.
async fn get_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<Json<Proxy>> {
    Ok(Json(service::get(&state, &account, &id).await?))
}

#[utoipa::path(patch, path = "/v1/proxies/{id}", tag = "proxies", params(("id" = String, Path, description = "id or name")),
    request_body = ProxyPatch,
    responses((status = 200, body = Proxy), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
/// Rename a proxy, replace its URLs (and credentials), or change a pool's rotation.
async fn update_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
    ValidatedJson { valid, .. }: ValidatedJson<ProxyPatch>,
) -> ApiResult<Json<Proxy>> {
    Ok(Json(service::update(&state, &account, &id, valid).await?))
}

#[utoipa::path(delete, path = "/v1/proxies/{id}", tag = "proxies", params(("id" = String, Path, description = "id or name")),
    responses((status = 204), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// Delete a proxy and its credentials; jobs queued with it then fail saying so (not charged).
async fn delete_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    service::delete(&state, &account, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/v1/proxies/{id}/test", tag = "proxies", params(("id" = String, Path, description = "id or name")),
    request_body(content = Option<ProxyTestIn>, description = "optional: the page to fetch"),
    responses((status = 200, body = ProxyTest), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
/// Fetch a page through every member (behind the egress guard, as a capture would) and report
/// each one's latency, the page's status and, where the answer names it, the exit address.
async fn test_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
    // The body is optional: none tests against the operator's default page.
    OptionalJson(test): OptionalJson<ProxyTestIn>,
) -> ApiResult<Json<ProxyTest>> {
    Ok(Json(service::test(&state, &account, &id, test.url).await?))
}
