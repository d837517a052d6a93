//! Gates: how creates that count against a bound (the monthly cap, the queue bounds) run side
//! by side on PostgreSQL and still never pass the bound.
//!
//! A gate is a fixed set of slot rows: [`MAX_SLOTS`](crate::db::MAX_GATE_SLOTS) per account (`account_slots`) and as many for
//! the global queue bound (`queue_slots`). A create takes one free slot of each gate it passes
//! (`FOR UPDATE SKIP LOCKED`, held to commit) — the **fast** way — or all of them in order —
//! the **exact** way, which excludes every other create of that gate.
//!
//! Why the fast way stays exact: a create counts what is committed only after taking its slot,
//! so every earlier holder of any slot has committed and is counted, and at most `of - 1`
//! others are uncommitted, each adding at most one job. So a fast create whose count leaves
//! room for all of them cannot pass the bound; one that does not ([`Gate::need_exact`]) starts
//! again the exact way. Far from a bound, up to that many creates of one account run at once
//! instead of queueing on one row (the `users` row lock, the counter row, before).
//!
//! The monthly cap the same way: each account slot carries a **block** of the month's
//! actions granted from `usage_counters` (`granted`) and what was charged from it (`spent`),
//! so a fast create charges its slot's block and touches the counter row only to take a new
//! block, once every [`block`] creates. The counter is therefore what was charged there plus
//! what was granted to blocks; the account's usage is the counter less what its blocks hold
//! unspent ([`USED`]). When the counter cannot grant what a create needs, the create starts
//! again the exact way, which takes the unspent blocks back first, so the cap refuses only
//! what the account truly has not got left.
//!
//! Lock order, the same for every create, so none can wait in a circle: account slots, then
//! the counter row, then queue slots. A create that finds it needs the exact way after taking
//! a slot never takes more: it rolls back and starts again.
//!
//! SQLite runs one writer at a time (`BEGIN IMMEDIATE`), which is exact already: no slots.

use sqlx::{Any, Transaction};

use crate::db::{Backend, MAX_GATE_SLOTS as MAX_SLOTS, Result, Store};

impl Store {
    /// How many of one account's creates (and of everyone's, against the queue bound) may run
    /// at once on PostgreSQL: `1..=MAX_SLOTS` (clamped), all of them unless set. With 1 they
    /// run one at a time.
    pub fn with_gate_slots(mut self, slots: i64) -> Store {
        self.slots = slots.clamp(1, MAX_SLOTS);
        self
    }
}

/// The usage of account `c.user_id` in month `c.month` as SQL, for a query that joins
/// `usage_counters c`: the counter less what the account's slots hold unspent.
pub(crate) const USED: &str = "(c.used - CAST(COALESCE((SELECT SUM(s.granted - s.spent) FROM account_slots s \
     WHERE s.user_id = c.user_id AND s.month = c.month), 0) AS BIGINT))";

/// How a create holds a gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hold {
    /// SQLite: the only writer.
    Serial,
    /// PostgreSQL: slot `slot` of the gate's `of`, with others' creates running beside it.
    Slot { slot: i64, of: i64 },
    /// PostgreSQL: every slot of the gate.
    All,
}

/// A fast create found it cannot decide without the exact picture: roll back, start again
/// with `exact`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NeedExact;

/// The gate of one account, or the global queue gate.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Gate<'a> {
    Account(&'a str),
    Queue,
}

impl Gate<'_> {
    /// Take one of this gate's first `of` slots (or, `exact`, all of its slots) for the rest
    /// of the transaction.
    pub(crate) async fn enter(
        self,
        tx: &mut Transaction<'static, Any>,
        backend: Backend,
        of: i64,
        exact: bool,
    ) -> Result<Hold> {
        if backend != Backend::Postgres {
            return Ok(Hold::Serial);
        }
        if exact {
            self.ensure(tx).await?;
            let q = match self {
                Gate::Account(user) => {
                    sqlx::query("SELECT slot FROM account_slots WHERE user_id = $1 ORDER BY slot FOR UPDATE").bind(user)
                }
                Gate::Queue => {
                    sqlx::query("SELECT slot FROM queue_slots WHERE $1 = '' ORDER BY slot FOR UPDATE").bind("")
                }
            };
            q.fetch_all(&mut **tx).await?;
            return Ok(Hold::All);
        }
        if let Some(slot) = self.free_slot(tx, of).await? {
            return Ok(Hold::Slot { slot, of });
        }
        // None free: wait for one, picked at random so waiters spread over the slots. An
        // account without slot rows yet gets them first.
        let slot = rand::random_range(0..of);
        if !self.wait_for(tx, slot).await? {
            self.ensure(tx).await?;
            self.wait_for(tx, slot).await?;
        }
        Ok(Hold::Slot { slot, of })
    }

    /// Wait for slot `slot` and take it; false when there is no such slot row.
    async fn wait_for(self, tx: &mut Transaction<'static, Any>, slot: i64) -> Result<bool> {
        let q = match self {
            Gate::Account(user) => {
                sqlx::query("SELECT slot FROM account_slots WHERE user_id = $1 AND slot = $2 FOR UPDATE")
                    .bind(user)
                    .bind(slot)
            }
            Gate::Queue => {
                sqlx::query("SELECT slot FROM queue_slots WHERE $1 = '' AND slot = $2 FOR UPDATE").bind("").bind(slot)
            }
        };
        Ok(q.fetch_optional(&mut **tx).await?.is_some())
    }

    async fn free_slot(self, tx: &mut Transaction<'static, Any>, of: i64) -> Result<Option<i64>> {
        let q = match self {
            Gate::Account(user) => sqlx::query_as(
                "SELECT slot FROM account_slots WHERE user_id = $1 AND slot < $2 \
                 ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED",
            )
            .bind(user),
            Gate::Queue => sqlx::query_as(
                "SELECT slot FROM queue_slots WHERE $1 = '' AND slot < $2 ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED",
            )
            .bind(""),
        };
        let q = q.bind(of);
        let row: Option<(i64,)> = q.fetch_optional(&mut **tx).await?;
        Ok(row.map(|(s,)| s))
    }

    /// Make the account's slot rows (the queue's come with the schema).
    async fn ensure(self, tx: &mut Transaction<'static, Any>) -> Result<()> {
        if let Gate::Account(user) = self {
            sqlx::query(
                "INSERT INTO account_slots (user_id, slot) SELECT $1, s FROM generate_series(0, $2 - 1) s \
                 ON CONFLICT (user_id, slot) DO NOTHING",
            )
            .bind(user)
            .bind(MAX_SLOTS)
            .execute(&mut **tx)
            .await?;
        }
        Ok(())
    }
}

/// Whether a count of `found` jobs, plus `adding`, fits `limit` for a create holding `hold`:
/// `Ok(true)` fits, `Ok(false)` does not, `Err(NeedExact)` only the exact count can tell.
pub(crate) fn fits(hold: Hold, found: i64, adding: i64, limit: i64) -> std::result::Result<bool, NeedExact> {
    if found + adding > limit {
        // What is committed already fills it: refused however the others end.
        return Ok(false);
    }
    match hold {
        // Each other slot holder may add one uncommitted job.
        Hold::Slot { of, .. } if found + adding + (of - 1) > limit => Err(NeedExact),
        _ => Ok(true),
    }
}

/// The block a slot (of `of`) takes from the counter beside the actions it needs now: a
/// sixteenth of what one slot's share of the cap would be, at most 100, so an account's
/// blocks together hold back at most 1/16 of its cap (and nothing for small plans, which
/// charge the counter directly).
pub(crate) fn block(limit: Option<i64>, of: i64) -> i64 {
    match limit {
        None => 100,
        Some(l) => (l / (of * 16)).clamp(0, 100),
    }
}
