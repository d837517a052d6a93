//! `GET /v1/account/balance` (alias `/usage`): the live monthly balance.

pub mod service;
pub mod types;

use axum::Extension;
use axum::extract::State;

use self::types::{Balance, BalanceUsage, BalanceWindow, UsagePolicy};
use crate::auth::{Account, UsageAfter};
use crate::http::api::Api;
use crate::http::error::ErrorBody;
use crate::http::{ApiResult, Json};
use crate::state::AppState;

/// The account paths and schemas of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(components(schemas(Balance, BalanceWindow, BalanceUsage, UsagePolicy)))]
pub struct ApiDoc;

/// Routes (authenticated by the caller's router).
pub fn router() -> Api {
    Api::new().op::<__path_balance_handler, _, _>(balance_handler).op::<__path_usage_handler, _, _>(usage_handler)
}

#[utoipa::path(get, path = "/v1/account/balance", tag = "account", description = "Alias: GET /v1/account/usage", responses((status = 200, body = Balance), (status = 401, body = ErrorBody)), security(("api_key" = [])))]
/// The live monthly balance.
pub async fn balance_handler(
    State(s): State<AppState>,
    Extension(a): Extension<Account>,
) -> ApiResult<(Extension<UsageAfter>, Json<Balance>)> {
    let b = service::balance(&s, &a).await?;
    Ok((Extension(UsageAfter(b.usage.used)), Json(b)))
}

#[utoipa::path(get, path = "/v1/account/usage", tag = "account", description = "Alias of GET /v1/account/balance", responses((status = 200, body = Balance), (status = 401, body = ErrorBody)), security(("api_key" = [])))]
/// The live monthly balance (alias).
pub async fn usage_handler(
    state: State<AppState>,
    account: Extension<Account>,
) -> ApiResult<(Extension<UsageAfter>, Json<Balance>)> {
    balance_handler(state, account).await
}
