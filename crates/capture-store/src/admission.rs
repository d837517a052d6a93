//! Back-pressure: bounds on the screenshot jobs waiting for or in capture (`pending` and
//! `processing`), per account and in total, checked inside the create transaction, and the
//! queue counts `/metrics` shows.
//!
//! How the checks stay exact under concurrency:
//! - SQLite: every write transaction starts with `BEGIN IMMEDIATE`, so creates already run
//!   one at a time; a count inside the transaction is exact.
//! - PostgreSQL: a create passes its account's gate and the global queue gate
//!   ([`crate::gate`]): one slot of each, counting only after taking it, so at most
//!   one less than its slots uncommitted jobs are unseen; a count that leaves room for them is exact, and
//!   one that does not starts the create again holding every slot. A count that alone fills
//!   the queue refuses at once, so a full queue answers its refusals in parallel.

use sqlx::{Any, Transaction};

use crate::db::{Backend, Result, Store};
use crate::gate::{self, Gate, Hold, NeedExact};

/// The job states that occupy the queue. Written exactly as in the partial index
/// `screenshots_active`, so both backends use it.
const ACTIVE: &str = "status IN ('pending', 'processing')";

/// Bounds on pending + processing screenshot jobs; `None` means unbounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueLimits {
    /// Jobs one account may have waiting or in capture.
    pub per_account: Option<i64>,
    /// Jobs all accounts together may have waiting or in capture.
    pub global: Option<i64>,
}

/// Which bound refused a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueScope {
    Account,
    Global,
}

impl QueueScope {
    /// `account` or `global` (error details, metrics labels).
    pub fn as_str(self) -> &'static str {
        match self {
            QueueScope::Account => "account",
            QueueScope::Global => "global",
        }
    }
}

/// The queue is full for this job: nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueFull {
    pub scope: QueueScope,
    /// Jobs found waiting or in capture (for the global bound, counted no further than `limit`).
    pub pending: i64,
    pub limit: i64,
}

/// Hold all of this account's gate slots (PostgreSQL; SQLite's writers are serial already):
/// the exact way in, which every create but a single job's takes.
pub(crate) async fn lock_account(tx: &mut Transaction<'static, Any>, backend: Backend, user_id: &str) -> Result<()> {
    Gate::Account(user_id).enter(tx, backend, crate::db::MAX_GATE_SLOTS, true).await?;
    Ok(())
}

/// Refuse when the account already has `limit` jobs waiting or in capture (the caller holds
/// its gate exactly).
pub(crate) async fn check_account(
    tx: &mut Transaction<'static, Any>,
    user_id: &str,
    limit: Option<i64>,
    adding: i64,
) -> Result<std::result::Result<(), QueueFull>> {
    Ok(check_account_in(tx, user_id, limit, adding, Hold::All).await?.unwrap_or(Ok(())))
}

/// [`check_account`] for a create holding the account's gate as `hold`.
pub(crate) async fn check_account_in(
    tx: &mut Transaction<'static, Any>,
    user_id: &str,
    limit: Option<i64>,
    adding: i64,
    hold: Hold,
) -> Result<std::result::Result<std::result::Result<(), QueueFull>, NeedExact>> {
    let Some(limit) = limit else { return Ok(Ok(Ok(()))) };
    let (pending,): (i64,) = sqlx::query_as(sqlf!("SELECT COUNT(*) FROM screenshots WHERE user_id = $1 AND {ACTIVE}"))
        .bind(user_id)
        .fetch_one(&mut **tx)
        .await?;
    Ok(gate::fits(hold, pending, adding, limit)
        .map(|fits| if fits { Ok(()) } else { Err(QueueFull { scope: QueueScope::Account, pending, limit }) }))
}

/// Active jobs of every account, counted no further than `upto` (the count walks the
/// partial index, so a bound keeps it cheap however deep the queue is).
async fn count_global(tx: &mut Transaction<'static, Any>, upto: i64) -> Result<i64> {
    let (n,): (i64,) =
        sqlx::query_as(sqlf!("SELECT COUNT(*) FROM (SELECT 1 FROM screenshots WHERE {ACTIVE} LIMIT $1) active"))
            .bind(upto)
            .fetch_one(&mut **tx)
            .await?;
    Ok(n)
}

/// Before inserting `adding` jobs: pass the global queue gate (one slot, or `exact`, all)
/// and refuse when the jobs there fill the queue. `Err(NeedExact)`: a fast create too near
/// the bound to tell.
pub(crate) async fn check_global(
    tx: &mut Transaction<'static, Any>,
    backend: Backend,
    of: i64,
    limit: Option<i64>,
    adding: i64,
    exact: bool,
) -> Result<std::result::Result<std::result::Result<(), QueueFull>, NeedExact>> {
    let Some(limit) = limit else { return Ok(Ok(Ok(()))) };
    let hold = Gate::Queue.enter(tx, backend, of, exact).await?;
    let pending = count_global(tx, limit).await?;
    Ok(gate::fits(hold, pending, adding, limit)
        .map(|fits| if fits { Ok(()) } else { Err(QueueFull { scope: QueueScope::Global, pending, limit }) }))
}

impl Store {
    /// Queued and running tasks by kind: `(kind, status, count)` (metrics).
    pub async fn tasks_by_status(&self) -> Result<Vec<(String, String, i64)>> {
        let rows: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT kind, status, COUNT(*) FROM tasks WHERE status IN ('queued', 'running') GROUP BY kind, status",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows)
    }
}
