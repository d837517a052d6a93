//! The usage ledger: what a paid create charges (`Charge`), reserving it under the account's
//! monthly cap in the create's own transaction (`reserve`, and `reserve_in` for PostgreSQL's
//! per-slot blocks), its ledger entry, the `quota.warning` events it crosses, and giving
//! actions back (`give_back`). Screenshots, audits, ads and runs charge through it.

use sqlx::{Any, Transaction};

use crate::db::Result;
use crate::gate::{self, Hold, NeedExact};

/// The monthly cap would be passed: nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaExceeded {
    pub used: i64,
}

/// What a create charges: `actions` of the payer's `month` for `operation` on `subject_id`,
/// under the account's monthly cap.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Charge<'a> {
    pub user_id: &'a str,
    /// The API key that asked (None: the website or a worker).
    pub key_id: Option<&'a str>,
    pub operation: &'a str,
    pub subject_id: &'a str,
    pub actions: i64,
    pub month: &'a str,
    /// The month's cap (None: unlimited).
    pub limit: Option<i64>,
    /// ISO time the month resets, for the `quota.warning` events the charge crosses.
    pub reset_at: &'a str,
    pub now: i64,
}

/// `charge(operation)` for a paid create's `New*` type: its payer, month, cap and now are
/// fields of the same names on every such type; `$actions` names the field of the actions.
macro_rules! charged_by {
    ($new:ty, $actions:ident) => {
        impl $new {
            /// What creating it charges for `operation`.
            pub(crate) fn charge<'a>(&'a self, operation: &'a str) -> $crate::ledger::Charge<'a> {
                $crate::ledger::Charge {
                    user_id: &self.user_id,
                    key_id: self.key_id.as_deref(),
                    operation,
                    subject_id: &self.id,
                    actions: self.$actions,
                    month: &self.month,
                    limit: self.limit,
                    reset_at: &self.reset_at,
                    now: self.now,
                }
            }
        }
    };
}
pub(crate) use charged_by;

/// The quota part of every paid create that holds its account's gate exactly (all slots on
/// PostgreSQL, the single writer on SQLite), in its transaction: reserve the charge's actions
/// if the cap allows, record the ledger entry and queue the `quota.warning` events the new
/// usage crosses. The usage after the reservation, or the current usage when refused (the
/// caller rolls back).
pub(crate) async fn reserve(
    tx: &mut Transaction<'static, Any>,
    c: &Charge<'_>,
) -> Result<std::result::Result<i64, QuotaExceeded>> {
    let Charge { user_id, month, limit, .. } = *c;
    counter_row(tx, user_id, month).await?;
    // One conditional UPDATE: the row lock (PostgreSQL) or the single writer (SQLite) makes
    // the check and the increment atomic, so concurrent requests never pass the cap.
    let mut granted = grant(tx, user_id, month, c.actions, limit).await?;
    if granted.is_none() && take_back_blocks(tx, user_id, month).await? > 0 {
        // The counter also held what the account's slots were granted and have not spent:
        // with that back, it is the usage itself.
        granted = grant(tx, user_id, month, c.actions, limit).await?;
    }
    if granted.is_none() {
        return Ok(Err(QuotaExceeded { used: month_used(tx, user_id, month).await? }));
    }
    let used = month_used(tx, user_id, month).await?;
    charged(tx, c).await?;
    if let Some(limit) = limit {
        crate::webhooks::quota_warnings(tx, user_id, month, used, limit, c.reset_at, c.now).await?;
    }
    Ok(Ok(used))
}

/// Charges the fast way may take: at most this many actions each, so a fast create can bound
/// what the others beside it add (see [`reserve_in`]).
const FAST_ACTIONS: i64 = 10;

/// [`reserve`] for a create holding its account's gate as `hold`: with one slot (PostgreSQL's
/// fast way), charge the slot's block of actions, taking a new block from the counter when it
/// runs short. `Err(NeedExact)` when only the exact way can decide: the counter cannot grant
/// what is needed (the cap is near, or the other slots hold it), the charge is large, or a
/// `quota.warning` threshold may be crossed by this create or those beside it.
pub(crate) async fn reserve_in(
    tx: &mut Transaction<'static, Any>,
    c: &Charge<'_>,
    hold: Hold,
) -> Result<std::result::Result<std::result::Result<i64, QuotaExceeded>, NeedExact>> {
    let Hold::Slot { slot, of } = hold else { return Ok(Ok(reserve(tx, c).await?)) };
    let Charge { user_id, month, limit, actions, .. } = *c;
    let block = gate::block(limit, of);
    if actions > FAST_ACTIONS || block == 0 {
        return Ok(Err(NeedExact));
    }
    let spent: Option<(i64,)> = sqlx::query_as(
        "UPDATE account_slots SET spent = spent + $1 \
         WHERE user_id = $2 AND slot = $3 AND month = $4 AND spent + $1 <= granted RETURNING spent",
    )
    .bind(actions)
    .bind(user_id)
    .bind(slot)
    .bind(month)
    .fetch_optional(&mut **tx)
    .await?;
    if spent.is_none() {
        // A new block for this slot: what is needed now and a block more, or just what is needed.
        let (was_month, granted, spent): (String, i64, i64) =
            sqlx::query_as("SELECT month, granted, spent FROM account_slots WHERE user_id = $1 AND slot = $2")
                .bind(user_id)
                .bind(slot)
                .fetch_one(&mut **tx)
                .await?;
        counter_row(tx, user_id, month).await?;
        let mut got = actions + block;
        if grant(tx, user_id, month, got, limit).await?.is_none() {
            got = actions;
            if grant(tx, user_id, month, got, limit).await?.is_none() {
                return Ok(Err(NeedExact));
            }
        }
        let (granted, spent) = if was_month == month {
            (granted + got, spent + actions)
        } else {
            // The slot's block of an earlier month: what it left unspent goes back there.
            if granted > spent {
                sqlx::query("UPDATE usage_counters SET used = used - $1 WHERE user_id = $2 AND month = $3")
                    .bind(granted - spent)
                    .bind(user_id)
                    .bind(&was_month)
                    .execute(&mut **tx)
                    .await?;
            }
            (got, actions)
        };
        sqlx::query("UPDATE account_slots SET month = $1, granted = $2, spent = $3 WHERE user_id = $4 AND slot = $5")
            .bind(month)
            .bind(granted)
            .bind(spent)
            .bind(user_id)
            .bind(slot)
            .execute(&mut **tx)
            .await?;
    }
    let used = month_used(tx, user_id, month).await?;
    if let Some(limit) = limit {
        // The others beside this create may have charged up to this much, uncommitted: a
        // threshold that near is for the exact way to cross, so its warning is sent once, on time.
        let at_most = used + (of - 1) * FAST_ACTIONS;
        if crate::webhooks::quota_warning_due(tx, user_id, month, at_most, limit).await? {
            return Ok(Err(NeedExact));
        }
    }
    charged(tx, c).await?;
    Ok(Ok(Ok(used)))
}

/// Make the account's counter row for `month`.
async fn counter_row(tx: &mut Transaction<'static, Any>, user_id: &str, month: &str) -> Result<()> {
    sqlx::query(
        "INSERT INTO usage_counters (user_id, month, used) VALUES ($1, $2, 0) ON CONFLICT (user_id, month) DO NOTHING",
    )
    .bind(user_id)
    .bind(month)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Add `actions` to the counter if the cap allows: the counter after, or None.
async fn grant(
    tx: &mut Transaction<'static, Any>,
    user_id: &str,
    month: &str,
    actions: i64,
    limit: Option<i64>,
) -> Result<Option<i64>> {
    let row: Option<(i64,)> = sqlx::query_as(
        "UPDATE usage_counters SET used = used + $1 WHERE user_id = $2 AND month = $3 \
         AND ($4 < 0 OR used + $1 <= $4) RETURNING used",
    )
    .bind(actions)
    .bind(user_id)
    .bind(month)
    .bind(limit.unwrap_or(-1))
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row.map(|(u,)| u))
}

/// Take back into the counter what the account's slots were granted for `month` and have not
/// spent (the caller holds all of them). How many actions came back.
async fn take_back_blocks(tx: &mut Transaction<'static, Any>, user_id: &str, month: &str) -> Result<i64> {
    let (unspent,): (i64,) = sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(granted - spent), 0) AS BIGINT) FROM account_slots WHERE user_id = $1 AND month = $2",
    )
    .bind(user_id)
    .bind(month)
    .fetch_one(&mut **tx)
    .await?;
    if unspent > 0 {
        sqlx::query("UPDATE account_slots SET granted = spent WHERE user_id = $1 AND month = $2")
            .bind(user_id)
            .bind(month)
            .execute(&mut **tx)
            .await?;
        sqlx::query("UPDATE usage_counters SET used = used - $1 WHERE user_id = $2 AND month = $3")
            .bind(unspent)
            .bind(user_id)
            .bind(month)
            .execute(&mut **tx)
            .await?;
    }
    Ok(unspent)
}

/// The account's usage in `month` as this transaction sees it.
pub(crate) async fn month_used(tx: &mut Transaction<'static, Any>, user_id: &str, month: &str) -> Result<i64> {
    let row: Option<(i64,)> = sqlx::query_as(sqlf!(
        "SELECT {USED} FROM usage_counters c WHERE c.user_id = $1 AND c.month = $2",
        USED = gate::USED
    ))
    .bind(user_id)
    .bind(month)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row.map_or(0, |(u,)| u))
}

/// The ledger entry of a charge that was reserved.
async fn charged(tx: &mut Transaction<'static, Any>, c: &Charge<'_>) -> Result<()> {
    sqlx::query(
        "INSERT INTO usage_ledger (user_id, key_id, operation, actions, subject_id, month, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(c.user_id)
    .bind(c.key_id.map(str::to_string))
    .bind(c.operation)
    .bind(c.actions)
    .bind(c.subject_id)
    .bind(c.month)
    .bind(c.now)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Give `actions` back to `month` (never below zero), recording a ledger entry of
/// `operation` with the negative amount — the inverse of [`reserve`]. Nothing when
/// `actions` is not positive.
pub(crate) async fn give_back(
    tx: &mut Transaction<'static, Any>,
    user_id: &str,
    key_id: Option<&str>,
    operation: &str,
    subject_id: &str,
    actions: i64,
    month: &str,
    now: i64,
) -> Result<()> {
    if actions <= 0 {
        return Ok(());
    }
    sqlx::query(
        "UPDATE usage_counters SET used = CASE WHEN used >= $1 THEN used - $1 ELSE 0 END \
         WHERE user_id = $2 AND month = $3",
    )
    .bind(actions)
    .bind(user_id)
    .bind(month)
    .execute(&mut **tx)
    .await?;
    sqlx::query(
        "INSERT INTO usage_ledger (user_id, key_id, operation, actions, subject_id, month, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(user_id)
    .bind(key_id.map(str::to_string))
    .bind(operation)
    .bind(-actions)
    .bind(subject_id)
    .bind(month)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
