//! The account's balance, from the caller's account view.

use capture_core::UserId;
use capture_core::time::iso;

use super::types::{Balance, BalanceUsage, BalanceWindow, UsagePolicy};
use crate::auth::Account;
use crate::error::Result;
use crate::state::AppState;

/// The balance as `a` found it (its usage as of its authentication).
pub fn balance_of(a: &Account) -> Balance {
    let used = a.used;
    let usage = if a.is_admin {
        BalanceUsage {
            used,
            limit: None,
            remaining: None,
            unlimited: true,
            percent_used: None,
            policy: UsagePolicy::AdminUnlimited,
        }
    } else {
        let limit = a.plan_limit;
        let pct = if limit > 0 { ((used as f64 / limit as f64) * 10000.0).round() / 100.0 } else { 100.0 };
        BalanceUsage {
            used,
            limit: Some(limit),
            remaining: Some((limit - used).max(0)),
            unlimited: false,
            percent_used: Some(pct),
            policy: UsagePolicy::PlanLimit,
        }
    };
    Balance {
        user_id: UserId::from_stored(a.user.id.clone()),
        plan: a.user.plan.clone(),
        is_admin: a.is_admin,
        unit: "actions",
        window: BalanceWindow {
            interval: "month",
            started_at: iso(a.window.start_ms),
            reset_at: iso(a.window.reset_ms),
            reset_seconds: a.window.reset_secs(),
        },
        usage,
    }
}

/// The live balance: usage read now, not the (briefly cached) figure of the account view.
/// Returns it with the usage it read.
pub async fn balance(state: &AppState, a: &Account) -> Result<Balance> {
    let mut a = a.clone();
    a.used = state.store.month_usage(&a.user.id, &a.window.label).await?;
    Ok(balance_of(&a))
}
