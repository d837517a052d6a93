//! The wire types of the account's balance.

use serde::Serialize;
use utoipa::ToSchema;

/// The live monthly balance.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct Balance {
    user_id: String,
    plan: String,
    is_admin: bool,
    /// Always "actions".
    unit: String,
    window: BalanceWindow,
    usage: BalanceUsage,
}

/// The calendar month (UTC).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct BalanceWindow {
    interval: String,
    started_at: String,
    reset_at: String,
    reset_seconds: i64,
}

/// Usage in the window.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct BalanceUsage {
    used: i64,
    limit: Option<i64>,
    remaining: Option<i64>,
    unlimited: bool,
    percent_used: Option<f64>,
    /// plan-limit or admin-unlimited.
    policy: String,
}
