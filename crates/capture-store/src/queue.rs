//! The durable queue shared by every kind of background work: a kind, a payload, a lease,
//! attempts and a next-run time. Claims take a lease (`locked_until`); a worker that dies
//! simply lets its lease run out and the task is claimed again. Completion is fenced on
//! the lease owner, so a worker that lost its lease cannot overwrite a newer result.
//!
//! Each task names the account it works for. Browser work is claimed **fairly**
//! ([`Store::claim_fair`]): the next task goes to the account with the fewest tasks running
//! (oldest first among equals), and an account at its running cap ([`FairShare`], by plan)
//! gets nothing until one of its tasks ends — so one tenant's hanging pages cannot hold every
//! worker. Fair claims pass one at a time (SQLite's single writer; a transaction-scoped
//! advisory lock on PostgreSQL), which makes the caps exact across nodes.

use sqlx::any::AnyRow;
use sqlx::{Any, AssertSqlSafe, Executor, Row, Transaction};

use crate::db::{Backend, Result, Store, placeholders};
use crate::notify::{WORK_CHANNEL, notify};

/// A claimed task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub id: String,
    pub kind: String,
    pub subject_id: String,
    pub payload: String,
    /// Claims so far, this one included.
    pub attempts: i64,
    /// The account the task works for (none for the service's own work).
    pub account_id: Option<String>,
    /// Times it went back to the queue so another account could have its slot.
    pub handed_back: i64,
}

/// Running tasks allowed per account while claiming fairly, by the account's plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FairShare {
    /// `(plan, cap)` pairs; a cap below 1 is taken as 1.
    pub per_plan: Vec<(String, i64)>,
    /// The cap of plans not listed (and of tasks of no account); None: no cap.
    pub default: Option<i64>,
}

impl FairShare {
    fn cap(&self, plan: Option<&str>) -> Option<i64> {
        plan.and_then(|p| self.per_plan.iter().find(|(name, _)| name == p).map(|(_, c)| *c))
            .or(self.default)
            .map(|c| c.max(1))
    }
}

/// Key of the advisory lock that makes fair claims pass one at a time (PostgreSQL).
const FAIR_CLAIM_LOCK: i64 = 7_245_021;

const CLAIMED_COLS: &str = "id, kind, subject_id, payload, attempts, account_id, handed_back";

pub(crate) async fn enqueue(
    tx: &mut Transaction<'static, Any>,
    kind: &str,
    subject_id: &str,
    account_id: Option<&str>,
    payload: &str,
    now: i64,
) -> Result<String> {
    let id = capture_core::ids::new_id(capture_core::ids::TASK);
    sqlx::query(
        "INSERT INTO tasks (id, kind, subject_id, account_id, payload, status, attempts, run_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, 'queued', 0, $6, $6)",
    )
    .bind(&id)
    .bind(kind)
    .bind(subject_id)
    .bind(account_id.map(str::to_string))
    .bind(payload)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    // Due now: wake an idle worker of this kind on any node when this commits.
    notify(tx, WORK_CHANNEL, kind).await?;
    Ok(id)
}

fn task_from(r: &AnyRow) -> Result<Task> {
    Ok(Task {
        id: r.try_get("id")?,
        kind: r.try_get("kind")?,
        subject_id: r.try_get("subject_id")?,
        payload: r.try_get("payload")?,
        attempts: r.try_get("attempts")?,
        account_id: r.try_get("account_id")?,
        handed_back: r.try_get("handed_back")?,
    })
}

impl Store {
    /// Claim the oldest runnable task of `kind` (queued and due, or running with an
    /// expired lease) for `worker` until `now + lease_ms`.
    pub async fn claim(&self, kind: &str, worker: &str, now: i64, lease_ms: i64) -> Result<Option<Task>> {
        let lock = match self.backend {
            Backend::Postgres => "FOR UPDATE SKIP LOCKED",
            Backend::Sqlite => "",
        };
        let sql = format!(
            "UPDATE tasks SET status = 'running', locked_by = $1, locked_until = $2, attempts = attempts + 1 \
             WHERE id = (SELECT id FROM tasks WHERE kind = $3 AND \
               ((status = 'queued' AND run_at <= $4) OR (status = 'running' AND locked_until < $4)) \
               ORDER BY run_at, id LIMIT 1 {lock}) \
             RETURNING {CLAIMED_COLS}"
        );
        let mut tx = self.begin_write().await?;
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(worker)
            .bind(now + lease_ms)
            .bind(kind)
            .bind(now)
            .fetch_optional(&mut *tx)
            .await?;
        tx.commit().await?;
        row.as_ref().map(task_from).transpose()
    }

    /// Claim a runnable task of one of `kinds` fairly across accounts (see the module docs):
    /// the account with the fewest running tasks of these kinds goes first (then the oldest
    /// task), and an account with `share`'s cap of tasks running is passed over.
    pub async fn claim_fair(
        &self,
        kinds: &[&str],
        worker: &str,
        now: i64,
        lease_ms: i64,
        share: &FairShare,
    ) -> Result<Option<Task>> {
        if kinds.is_empty() {
            return Ok(None);
        }
        // Kinds are our own constants, bound as parameters numbered from `first`.
        let kinds_from = |first: usize| placeholders(first, kinds.len());
        let mut tx = self.begin_write().await?;
        if self.backend == Backend::Postgres {
            tx.execute(AssertSqlSafe(format!("SELECT pg_advisory_xact_lock({FAIR_CLAIM_LOCK})"))).await?;
        }
        // Accounts with runnable work, their plan and their oldest runnable task.
        let ready_sql = format!(
            "SELECT t.account_id, u.plan, MIN(t.run_at) FROM tasks t LEFT JOIN users u ON u.id = t.account_id \
             WHERE t.kind IN ({}) AND ((t.status = 'queued' AND t.run_at <= $1) \
               OR (t.status = 'running' AND t.locked_until < $1)) \
             GROUP BY t.account_id, u.plan",
            kinds_from(2)
        );
        let mut q = sqlx::query_as::<_, (Option<String>, Option<String>, i64)>(AssertSqlSafe(ready_sql)).bind(now);
        for k in kinds {
            q = q.bind(*k);
        }
        let ready = q.fetch_all(&mut *tx).await?;
        if ready.is_empty() {
            tx.rollback().await?;
            return Ok(None);
        }
        let running_sql = format!(
            "SELECT account_id, COUNT(*) FROM tasks WHERE kind IN ({}) AND status = 'running' \
             AND locked_until >= $1 GROUP BY account_id",
            kinds_from(2)
        );
        let mut q = sqlx::query_as::<_, (Option<String>, i64)>(AssertSqlSafe(running_sql)).bind(now);
        for k in kinds {
            q = q.bind(*k);
        }
        let running: std::collections::HashMap<Option<String>, i64> =
            q.fetch_all(&mut *tx).await?.into_iter().collect();
        let mut order: Vec<(i64, i64, Option<String>)> = ready
            .into_iter()
            .filter_map(|(account, plan, first_at)| {
                let n = running.get(&account).copied().unwrap_or(0);
                let cap = if account.is_some() { share.cap(plan.as_deref()) } else { None };
                cap.is_none_or(|c| n < c).then_some((n, first_at, account))
            })
            .collect();
        order.sort();
        let lock = match self.backend {
            Backend::Postgres => "FOR UPDATE SKIP LOCKED",
            Backend::Sqlite => "",
        };
        let kinds_in = kinds_from(3);
        for (_, _, account) in order {
            let who = if account.is_some() {
                format!("account_id = ${}", kinds.len() + 4)
            } else {
                "account_id IS NULL".into()
            };
            let sql = format!(
                "UPDATE tasks SET status = 'running', locked_by = $1, locked_until = $2, attempts = attempts + 1 \
                 WHERE id = (SELECT id FROM tasks WHERE kind IN ({kinds_in}) AND {who} AND \
                   ((status = 'queued' AND run_at <= ${n}) OR (status = 'running' AND locked_until < ${n})) \
                   ORDER BY run_at, id LIMIT 1 {lock}) \
                 RETURNING {CLAIMED_COLS}",
                n = kinds.len() + 3
            );
            let mut q = sqlx::query(AssertSqlSafe(sql)).bind(worker).bind(now + lease_ms);
            for k in kinds {
                q = q.bind(*k);
            }
            q = q.bind(now);
            if let Some(a) = &account {
                q = q.bind(a.clone());
            }
            if let Some(r) = q.fetch_optional(&mut *tx).await? {
                let task = task_from(&r)?;
                tx.commit().await?;
                return Ok(Some(task));
            }
        }
        tx.rollback().await?;
        Ok(None)
    }

    /// Accounts with a task of `kind` that could run now and has waited at least `waited_ms`
    /// (queued and due since then, or its lease expired since then), each once, in no
    /// particular order; `None` stands for tasks of no account. A node whose slots are all
    /// taken asks this to know whether another account is kept out.
    pub async fn waiting_accounts(&self, kind: &str, now: i64, waited_ms: i64) -> Result<Vec<Option<String>>> {
        let since = now - waited_ms.max(0);
        let rows: Vec<(Option<String>,)> = sqlx::query_as(
            "SELECT DISTINCT account_id FROM tasks WHERE kind = $1 AND \
             ((status = 'queued' AND run_at <= $2) OR (status = 'running' AND locked_until < $2))",
        )
        .bind(kind)
        .bind(since)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|(a,)| a).collect())
    }

    /// Tasks of one of `kinds` running now (leases not expired), by account (metrics, tests).
    pub async fn running_by_account(&self, kind: &str, now: i64) -> Result<Vec<(Option<String>, i64)>> {
        Ok(sqlx::query_as(
            "SELECT account_id, COUNT(*) FROM tasks WHERE kind = $1 AND status = 'running' AND locked_until >= $2 \
             GROUP BY account_id ORDER BY account_id",
        )
        .bind(kind)
        .bind(now)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The most times one task of `kind` was handed back to the queue for another account
    /// (metrics, tests).
    pub async fn most_hand_backs(&self, kind: &str) -> Result<i64> {
        let (n,): (Option<i64>,) = sqlx::query_as("SELECT MAX(handed_back) FROM tasks WHERE kind = $1")
            .bind(kind)
            .fetch_one(&self.pool)
            .await?;
        Ok(n.unwrap_or(0))
    }

    /// Extend a lease; false when the worker no longer holds it.
    pub async fn extend_lease(&self, task_id: &str, worker: &str, until: i64) -> Result<bool> {
        let res =
            sqlx::query("UPDATE tasks SET locked_until = $1 WHERE id = $2 AND locked_by = $3 AND status = 'running'")
                .bind(until)
                .bind(task_id)
                .bind(worker)
                .execute(&self.pool)
                .await?;
        Ok(res.rows_affected() > 0)
    }

    /// Tasks waiting to run (metrics, back-pressure).
    pub async fn queue_depth(&self) -> Result<i64> {
        let (n,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM tasks WHERE status = 'queued'").fetch_one(&self.pool).await?;
        Ok(n)
    }

    /// Close the task if `worker` still holds it. False (and nothing written) otherwise.
    pub(crate) async fn finish_task(
        tx: &mut Transaction<'static, Any>,
        task_id: &str,
        worker: &str,
        status: &str,
        error: Option<&str>,
        now: i64,
    ) -> Result<bool> {
        let res = sqlx::query(
            "UPDATE tasks SET status = $1, last_error = $2, finished_at = $3, locked_until = NULL \
             WHERE id = $4 AND locked_by = $5 AND status = 'running'",
        )
        .bind(status)
        .bind(error.map(str::to_string))
        .bind(now)
        .bind(task_id)
        .bind(worker)
        .execute(&mut **tx)
        .await?;
        Ok(res.rows_affected() > 0)
    }
}
