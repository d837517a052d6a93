//! The wire types of the account's balance (`GET /v1/account/balance`, the
//! `account_balance` tool, the dashboard's usage).

use capture_core::UserId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The live monthly balance.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Balance {
    pub user_id: UserId,
    pub plan: String,
    pub is_admin: bool,
    /// Always "actions".
    pub unit: &'static str,
    pub window: BalanceWindow,
    pub usage: BalanceUsage,
}

/// The calendar month (UTC).
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BalanceWindow {
    /// Always "month".
    pub interval: &'static str,
    pub started_at: String,
    pub reset_at: String,
    pub reset_seconds: i64,
}

/// Usage in the window.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BalanceUsage {
    pub used: i64,
    /// Null for an administrator (no cap applies).
    pub limit: Option<i64>,
    pub remaining: Option<i64>,
    pub unlimited: bool,
    pub percent_used: Option<f64>,
    pub policy: UsagePolicy,
}

/// Which rule the usage is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum UsagePolicy {
    /// The plan's monthly cap.
    PlanLimit,
    /// An administrator: no cap.
    AdminUnlimited,
}

/// The input of tools that take no arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct NoArgs {}
