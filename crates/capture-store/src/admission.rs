//! Back-pressure: bounds on the screenshot jobs waiting for or in capture (`pending` and
//! `processing`), per account and in total, checked inside the create transaction, and the
//! queue counts `/metrics` shows.
//!
//! How the checks stay exact under concurrency:
//! - SQLite: every write transaction starts with `BEGIN IMMEDIATE`, so creates already run
//!   one at a time; a count inside the transaction is exact.
//! - PostgreSQL: an account's creates are serialised on its `users` row
//!   (`FOR NO KEY UPDATE`, taken first; it does not block the foreign-key checks of other
//!   inserts). Under READ COMMITTED each later statement sees what the previous holder
//!   committed, so the per-account count is exact. The global bound needs one point that
//!   every create passes: a transaction-scoped advisory lock taken as the last step, after
//!   this transaction's job is inserted, so it is held only for one bounded count and the
//!   commit. Before that, an unlocked count refuses at once when the committed jobs alone
//!   fill the queue, so a full queue answers its refusals in parallel instead of queueing
//!   them behind the lock.

use sqlx::{Any, Transaction};

use crate::db::{Backend, Result, Store};

/// Key of the advisory lock that serialises the final global check (PostgreSQL).
const GLOBAL_QUEUE_LOCK: i64 = 7_245_020;

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

/// Serialise this account's creates (PostgreSQL; SQLite's writers are serial already).
pub(crate) async fn lock_account(tx: &mut Transaction<'static, Any>, backend: Backend, user_id: &str) -> Result<()> {
    if backend == Backend::Postgres {
        sqlx::query("SELECT id FROM users WHERE id = $1 FOR NO KEY UPDATE")
            .bind(user_id)
            .fetch_optional(&mut **tx)
            .await?;
    }
    Ok(())
}

/// Refuse when the account already has `limit` jobs waiting or in capture.
pub(crate) async fn check_account(
    tx: &mut Transaction<'static, Any>,
    user_id: &str,
    limit: Option<i64>,
    adding: i64,
) -> Result<std::result::Result<(), QueueFull>> {
    let Some(limit) = limit else { return Ok(Ok(())) };
    let (pending,): (i64,) = sqlx::query_as(sqlf!("SELECT COUNT(*) FROM screenshots WHERE user_id = $1 AND {ACTIVE}"))
        .bind(user_id)
        .fetch_one(&mut **tx)
        .await?;
    Ok(if pending + adding > limit { Err(QueueFull { scope: QueueScope::Account, pending, limit }) } else { Ok(()) })
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

/// Before inserting: refuse when the jobs already there fill the queue. Exact on SQLite; on
/// PostgreSQL a fast path that takes no lock ([`check_global_final`] decides).
pub(crate) async fn check_global_early(
    tx: &mut Transaction<'static, Any>,
    limit: Option<i64>,
    adding: i64,
) -> Result<std::result::Result<(), QueueFull>> {
    let Some(limit) = limit else { return Ok(Ok(())) };
    let pending = count_global(tx, limit).await?;
    Ok(if pending + adding > limit { Err(QueueFull { scope: QueueScope::Global, pending, limit }) } else { Ok(()) })
}

/// After inserting this transaction's job (PostgreSQL only): under the advisory lock, which
/// is held until commit, count every committed active job plus our own and refuse past `limit`.
pub(crate) async fn check_global_final(
    tx: &mut Transaction<'static, Any>,
    backend: Backend,
    limit: Option<i64>,
) -> Result<std::result::Result<(), QueueFull>> {
    let Some(limit) = limit else { return Ok(Ok(())) };
    if backend != Backend::Postgres {
        return Ok(Ok(()));
    }
    sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(GLOBAL_QUEUE_LOCK).execute(&mut **tx).await?;
    let with_ours = count_global(tx, limit + 1).await?;
    Ok(if with_ours > limit {
        Err(QueueFull { scope: QueueScope::Global, pending: with_ours - 1, limit })
    } else {
        Ok(())
    })
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
