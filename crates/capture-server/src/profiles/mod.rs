//! Browser profiles (`/v1/profiles`): a signed-in browser state (cookies, localStorage,
//! IndexedDB) per account that captures, audits, runs and automation sessions start from.
//! [`service`] holds the operations, [`login`] the helper that signs in to a site with the
//! account's test inbox and saves the result.

pub mod login;
pub mod service;
pub mod types;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use axum::{Extension, Router};
use capture_core::profile::BrowserState;

use self::types::{LoginIn, LoginOut, Profile, ProfileIn, ProfileList, ProfilePatch};
use crate::auth::Account;
use crate::http::api::Api;
use crate::http::error::ErrorBody;
use crate::http::json::JsonLimit;
use crate::http::{ApiResult, Json, Path, ValidatedJson};
use crate::state::AppState;

/// The profile paths and schemas of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(ProfileIn, ProfilePatch, Profile, ProfileList, LoginIn, LoginOut)))]
pub struct ApiDoc;

/// Routes (authenticated by the caller's router).
pub fn router() -> Api {
    // A state may be 4 MB serialized (`MAX_STATE_BYTES`); its body may be laid out with more.
    let state_body = || Extension(JsonLimit(STATE_BODY_LIMIT));
    Api::new()
        .op_with::<__path_create_handler, _, _>(create_handler, |m| m.layer(state_body()))
        .op::<__path_list_handler, _, _>(list_handler)
        .op::<__path_login_handler, _, _>(login_handler)
        .op::<__path_state_handler, _, _>(state_handler)
        .op::<__path_get_handler, _, _>(get_handler)
        .op_with::<__path_update_handler, _, _>(update_handler, |m| m.layer(state_body()))
        .op::<__path_delete_handler, _, _>(delete_handler)
}

/// The largest body of a create or update that carries a state: the state's own bound
/// (checked on the state, compactly serialized) plus room for indentation and the other fields.
pub const STATE_BODY_LIMIT: usize = capture_core::profile::MAX_STATE_BYTES * 3 / 2 + 64 * 1024;

#[utoipa::path(post, path = "/v1/profiles", tag = "profiles", request_body = ProfileIn,
    responses((status = 201, body = Profile), (status = 400, body = ErrorBody)), security(("api_key" = [])))]
/// Make a profile: empty (a session, a run or `login` saves into it) or with an imported
/// Playwright storage state. Its state is stored encrypted and never shown but to
/// `GET /v1/profiles/{id}/state`.
async fn create_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    ValidatedJson { valid, .. }: ValidatedJson<ProfileIn>,
) -> ApiResult<(StatusCode, Json<Profile>)> {
    Ok((StatusCode::CREATED, Json(service::create(&state, &account, valid).await?)))
}

#[utoipa::path(get, path = "/v1/profiles", tag = "profiles",
    responses((status = 200, body = ProfileList)), security(("api_key" = [])))]
/// The caller's profiles (what their states hold, never a value).
async fn list_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
) -> ApiResult<Json<ProfileList>> {
    Ok(Json(service::list(&state, &account).await?))
}

#[utoipa::path(get, path = "/v1/profiles/{id}", tag = "profiles", params(("id" = String, Path, description = "id or name")),
    responses((status = 200, body = Profile), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// One profile, by id or name.
async fn get_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<Json<Profile>> {
    Ok(Json(service::get(&state, &account, &id).await?))
}

#[utoipa::path(patch, path = "/v1/profiles/{id}", tag = "profiles", params(("id" = String, Path, description = "id or name")),
    request_body = ProfilePatch,
    responses((status = 200, body = Profile), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
/// Rename a profile, replace its state, or both.
async fn update_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
    ValidatedJson { valid, .. }: ValidatedJson<ProfilePatch>,
) -> ApiResult<Json<Profile>> {
    Ok(Json(service::update(&state, &account, &id, valid).await?))
}

#[utoipa::path(delete, path = "/v1/profiles/{id}", tag = "profiles", params(("id" = String, Path, description = "id or name")),
    responses((status = 204), (status = 404, body = ErrorBody)), security(("api_key" = [])))]
/// Delete a profile and its state; jobs queued with it then fail saying so.
async fn delete_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    service::delete(&state, &account, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/v1/profiles/{id}/state", tag = "profiles", params(("id" = String, Path, description = "id or name")),
    responses((status = 200, body = Object, description = "Playwright's storage-state format"), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
/// The profile's state in clear, in Playwright's storage-state format (for
/// `browser.newContext({storageState})`): its cookies' values included.
async fn state_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    Path(id): Path<String>,
) -> ApiResult<Json<BrowserState>> {
    Ok(Json(service::export(&state, &account, &id).await?))
}

#[utoipa::path(post, path = "/v1/profiles/login", tag = "profiles", request_body = LoginIn,
    responses(
        (status = 200, body = LoginOut),
        (status = 400, body = ErrorBody),
        (status = 422, body = ErrorBody, description = "LOGIN_FAILED: the site did not end signed in (details.steps: what was done; details.finalUrl)"),
        (status = 503, body = ErrorBody, description = "SERVICE_UNAVAILABLE: this node runs no browser (no worker role)"),
    ),
    security(("api_key" = [])))]
/// Sign in (or up) to a site with your test inbox's address, follow the verification link
/// or type the one-time code the site mails, and save the signed-in state as a profile.
async fn login_handler(
    State(state): State<AppState>,
    Extension(account): Extension<Account>,
    ValidatedJson { valid, .. }: ValidatedJson<LoginIn>,
) -> ApiResult<Response> {
    // A node without a browser hands the sign-in to one that has it, answering as it did.
    Ok(login::anywhere(&state, &account, valid).await?.into_response())
}

/// The internal route a node without a browser forwards a sign-in to (signed, no API key).
pub fn internal_router() -> Router<AppState> {
    Router::new().route(login::INTERNAL_PATH, post(login::internal_handler))
}
