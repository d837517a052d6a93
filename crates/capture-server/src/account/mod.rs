//! `GET /v1/account/balance` (alias `/usage`): the live monthly balance.

use axum::extract::State;
use axum::routing::get;
use axum::{Extension, Json, Router};
use capture_core::time::iso;
use serde_json::{Value, json};

use crate::auth::{Account, UsageAfter};
use crate::http::ApiResult;
use crate::state::AppState;

pub mod types;

/// The account paths and schemas of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(paths(balance_handler), components(schemas(types::Balance, types::BalanceWindow, types::BalanceUsage)))]
pub struct ApiDoc;

/// Routes (authenticated by the caller's router).
pub fn router() -> Router<AppState> {
    Router::new().route("/v1/account/balance", get(balance_handler)).route("/v1/account/usage", get(balance_handler))
}

/// The balance object of the contract, from the caller's account view.
pub fn balance(a: &Account) -> Value {
    let used = a.used;
    let usage = if a.is_admin {
        json!({"used": used, "limit": null, "remaining": null, "unlimited": true, "percentUsed": null, "policy": "admin-unlimited"})
    } else {
        let limit = a.plan_limit;
        let pct = if limit > 0 { ((used as f64 / limit as f64) * 10000.0).round() / 100.0 } else { 100.0 };
        json!({"used": used, "limit": limit, "remaining": (limit - used).max(0), "unlimited": false, "percentUsed": pct, "policy": "plan-limit"})
    };
    json!({
        "userId": a.user.id,
        "plan": a.user.plan,
        "isAdmin": a.is_admin,
        "unit": "actions",
        "window": {
            "interval": "month",
            "startedAt": iso(a.window.start_ms),
            "resetAt": iso(a.window.reset_ms),
            "resetSeconds": a.window.reset_secs(),
        },
        "usage": usage,
    })
}

#[utoipa::path(get, path = "/v1/account/balance", tag = "account", description = "Alias: GET /v1/account/usage", responses((status = 200, body = crate::account::types::Balance), (status = 401, body = crate::http::error::ErrorBody)), security(("api_key" = [])))]
/// The live monthly balance.
pub async fn balance_handler(
    State(s): State<AppState>,
    Extension(mut a): Extension<Account>,
) -> ApiResult<(Extension<UsageAfter>, Json<Value>)> {
    // Live, not the (briefly cached) figure behind the rate-limit headers.
    a.used = s.store.month_usage(&a.user.id, &a.window.label).await?;
    Ok((Extension(UsageAfter(a.used)), Json(balance(&a))))
}
