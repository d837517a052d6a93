//! Website audits: creation with the page cap's actions reserved up front (in the same
//! transaction as the task, the first event and the idempotent response), progress, and the
//! end — done (charging the pages audited, giving back the rest) or failed (giving back
//! everything) — with its event and webhook in the same transaction. Listing with a stable
//! cursor; lookup by the public report token.

use capture_core::JobStatus;
use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};

use crate::admission::{self, QueueFull, QueueLimits, QueueScope};
use crate::db::{Result, Store, StoreError};
use crate::events::append_event;
use crate::ledger::reserve;
use crate::paid::{Made, Refused, Step, finish, settle};
use crate::shape::{Before, IdemResponse, Table};

/// An audit row.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRow {
    pub id: String,
    pub user_id: String,
    pub key_id: Option<String>,
    pub status: JobStatus,
    pub url: String,
    /// single_page or full_site.
    pub report_type: String,
    pub max_pages: i64,
    pub pages_audited: i64,
    /// Pages audited plus pages waiting, as last reported (capped by `max_pages`).
    pub pages_total: i64,
    /// The category scores (JSON) once done.
    pub scores: Option<String>,
    /// The whole report (JSON) once done.
    pub report: Option<String>,
    pub error: Option<String>,
    /// The public report page's token (`/r/{token}`).
    pub share_token: String,
    /// The rendered PDF of the report, once someone asked for it.
    pub pdf_key: Option<String>,
    /// Actions reserved at creation (the page cap).
    pub actions_reserved: i64,
    /// Actions kept when the audit ended (pages audited; 0 when it failed).
    pub actions_charged: i64,
    pub usage_month: String,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub completed_at: Option<i64>,
}

/// An audit to create. `limit: None` means unlimited (admin).
#[derive(Debug, Clone)]
pub struct NewAudit {
    pub id: String,
    pub user_id: String,
    pub key_id: Option<String>,
    pub url: String,
    pub report_type: String,
    pub max_pages: i64,
    /// Actions to reserve (1 for a single page, the page cap for a whole site).
    pub actions: i64,
    pub share_token: String,
    pub month: String,
    pub limit: Option<i64>,
    /// ISO time the monthly window resets (for `quota.warning`).
    pub reset_at: String,
    pub now: i64,
    /// When the `audit` task is due, on the queue's clock (the system clock; `now` may be the
    /// service's shifted clock, `CAPTURE_CLOCK_OFFSET`).
    pub task_run_at: i64,
    /// The `audit` task's payload.
    pub task_payload: String,
    /// Bounds on audits waiting or running (the screenshots' settings, counted separately).
    pub queue_limits: QueueLimits,
}

crate::ledger::charged_by!(NewAudit, actions);

/// What a finished audit records.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditDone {
    pub pages_audited: i64,
    pub scores: String,
    pub report: String,
}

const COLS: &str = "id, user_id, key_id, status, url, report_type, max_pages, pages_audited, pages_total, \
    scores, report, error, share_token, pdf_key, actions_reserved, actions_charged, usage_month, created_at, \
    started_at, completed_at";
/// The reads of a row by id, of a page, and of a created row.
const TABLE: Table = Table::new("audits", COLS);

/// The columns of a listing: everything but the report, which can be large.
const LIST_COLS: &str = "id, user_id, key_id, status, url, report_type, max_pages, pages_audited, pages_total, \
    scores, NULL AS report, error, share_token, pdf_key, actions_reserved, actions_charged, usage_month, created_at, \
    started_at, completed_at";

/// The type of every event of an audit (its data carries `status`, or `pagesDone`).
pub const AUDIT_EVENT: &str = "audit.status";
/// The type of an audit's progress events (`{pagesDone, pagesTotal}`).
pub const AUDIT_PROGRESS_EVENT: &str = "audit.progress";

fn row_from(r: &AnyRow) -> Result<AuditRow> {
    Ok(AuditRow {
        id: r.try_get("id")?,
        user_id: r.try_get("user_id")?,
        key_id: r.try_get("key_id")?,
        status: {
            let s: String = r.try_get("status")?;
            JobStatus::parse(&s).ok_or_else(|| StoreError::Corrupt(format!("audit status '{s}'")))?
        },
        url: r.try_get("url")?,
        report_type: r.try_get("report_type")?,
        max_pages: r.try_get("max_pages")?,
        pages_audited: r.try_get("pages_audited")?,
        pages_total: r.try_get("pages_total")?,
        scores: r.try_get("scores")?,
        report: r.try_get("report")?,
        error: r.try_get("error")?,
        share_token: r.try_get("share_token")?,
        pdf_key: r.try_get("pdf_key")?,
        actions_reserved: r.try_get("actions_reserved")?,
        actions_charged: r.try_get("actions_charged")?,
        usage_month: r.try_get("usage_month")?,
        created_at: r.try_get("created_at")?,
        started_at: r.try_get("started_at")?,
        completed_at: r.try_get("completed_at")?,
    })
}

/// Refuse when the account's audits waiting or running reach `per_account` (exact: the
/// account's creates are serialised), or everyone's reach `global` (a count without a global
/// lock: on PostgreSQL a burst of creates may pass it by a few).
async fn check_queue(
    tx: &mut Transaction<'static, Any>,
    user_id: &str,
    limits: QueueLimits,
) -> Result<std::result::Result<(), QueueFull>> {
    const ACTIVE: &str = "status IN ('pending', 'processing')";
    if let Some(limit) = limits.per_account {
        let (pending,): (i64,) = sqlx::query_as(sqlf!("SELECT COUNT(*) FROM audits WHERE user_id = $1 AND {ACTIVE}"))
            .bind(user_id)
            .fetch_one(&mut **tx)
            .await?;
        if pending >= limit {
            return Ok(Err(QueueFull { scope: QueueScope::Account, pending, limit }));
        }
    }
    if let Some(limit) = limits.global {
        let (pending,): (i64,) =
            sqlx::query_as(sqlf!("SELECT COUNT(*) FROM (SELECT 1 FROM audits WHERE {ACTIVE} LIMIT $1) active"))
                .bind(limit)
                .fetch_one(&mut **tx)
                .await?;
        if pending >= limit {
            return Ok(Err(QueueFull { scope: QueueScope::Global, pending, limit }));
        }
    }
    Ok(Ok(()))
}

impl Store {
    /// Create an audit: reserve its actions against the cap, insert it, queue its `audit`
    /// task and its first event, and (with `idem`) store the response for the
    /// Idempotency-Key — one transaction. A refusal writes nothing.
    pub async fn create_audit_with(
        &self,
        n: &NewAudit,
        idem: Option<IdemResponse<'_, AuditRow>>,
    ) -> Result<std::result::Result<(AuditRow, i64), Refused>> {
        let made = Made { table: &TABLE, id: &n.id, key_id: n.key_id.as_deref(), now: n.now, from_row: row_from, idem };
        let mut tx = self.begin_write().await?;
        let steps: Step<i64> = async {
            let tx = &mut tx;
            admission::lock_account(tx, self.backend, &n.user_id).await?;
            let used = reserve(tx, &n.charge("audit")).await??;
            // The quota comes first: a client out of actions learns that, not "retry later".
            check_queue(tx, &n.user_id, n.queue_limits).await??;
            sqlx::query(
                "INSERT INTO audits (id, user_id, key_id, status, url, report_type, max_pages, share_token, \
                 actions_reserved, usage_month, created_at) \
                 VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(&n.id)
            .bind(&n.user_id)
            .bind(n.key_id.clone())
            .bind(&n.url)
            .bind(&n.report_type)
            .bind(n.max_pages)
            .bind(&n.share_token)
            .bind(n.actions)
            .bind(&n.month)
            .bind(n.now)
            .execute(&mut **tx)
            .await?;
            crate::queue::enqueue(tx, "audit", &n.id, Some(&n.user_id), &n.task_payload, n.task_run_at).await?;
            append_event(tx, &n.user_id, &n.id, AUDIT_EVENT, &serde_json::json!({"status": "pending"}), n.now).await?;
            Ok(used)
        }
        .await;
        settle(finish(tx, made, steps).await)
    }

    /// An audit by id, whoever owns it (workers, streams after an ownership check).
    pub async fn audit(&self, id: &str) -> Result<Option<AuditRow>> {
        TABLE.get(&self.pool, id, None, row_from).await
    }

    /// An audit of `user_id` (None for someone else's).
    pub async fn audit_of(&self, user_id: &str, id: &str) -> Result<Option<AuditRow>> {
        TABLE.get(&self.pool, id, Some(user_id), row_from).await
    }

    /// The audit a public report token points at.
    pub async fn audit_by_token(&self, token: &str) -> Result<Option<AuditRow>> {
        let row = sqlx::query(sqlf!("SELECT {COLS} FROM audits WHERE share_token = $1"))
            .bind(token)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(row_from).transpose()
    }

    /// Newest first, without their reports; `before` is `(created_at, Some(id))` from a
    /// cursor or `(ts, None)`.
    pub async fn list_audits(&self, user_id: &str, before: Before, limit: i64) -> Result<Vec<AuditRow>> {
        Table::new("audits", LIST_COLS).page(&self.pool, user_id, before, None, limit, row_from).await
    }

    /// Move an audit to `processing` (with its event) when its task is claimed.
    pub async fn mark_audit_processing(&self, id: &str, now: i64) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let row: Option<(String,)> = sqlx::query_as(
            "UPDATE audits SET status = 'processing', started_at = $1, pages_audited = 0 WHERE id = $2 \
             AND status = 'pending' RETURNING user_id",
        )
        .bind(now)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((user_id,)) = &row {
            append_event(&mut tx, user_id, id, AUDIT_EVENT, &serde_json::json!({"status": "processing"}), now).await?;
        }
        tx.commit().await?;
        Ok(row.is_some())
    }

    /// Record progress of a running audit (with a `audit.progress` event), fenced on the
    /// task's lease. False when the lease was lost or the audit is not running.
    pub async fn audit_progress(
        &self,
        task_id: &str,
        worker: &str,
        id: &str,
        pages_done: i64,
        pages_total: i64,
        now: i64,
    ) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let held: Option<(String,)> =
            sqlx::query_as("SELECT id FROM tasks WHERE id = $1 AND locked_by = $2 AND status = 'running'")
                .bind(task_id)
                .bind(worker)
                .fetch_optional(&mut *tx)
                .await?;
        if held.is_none() {
            tx.rollback().await?;
            return Ok(false);
        }
        let row: Option<(String,)> = sqlx::query_as(
            "UPDATE audits SET pages_audited = $1, pages_total = $2 WHERE id = $3 AND status = 'processing' \
             RETURNING user_id",
        )
        .bind(pages_done)
        .bind(pages_total)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((user_id,)) = &row {
            let data = serde_json::json!({"pagesDone": pages_done, "pagesTotal": pages_total});
            append_event(&mut tx, user_id, id, AUDIT_PROGRESS_EVENT, &data, now).await?;
        }
        tx.commit().await?;
        Ok(row.is_some())
    }

    /// Record a finished audit, fenced on the lease: the report is stored, the pages audited
    /// stay charged (at most the reserved actions) and the rest is given back, and
    /// `audit.completed` is emitted — one transaction. False when the lease was lost.
    pub async fn complete_audit(
        &self,
        task_id: &str,
        worker: &str,
        id: &str,
        done: &AuditDone,
        completed_event: &serde_json::Value,
        now: i64,
    ) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        if !Self::finish_task(&mut tx, task_id, worker, "done", None, now).await? {
            tx.rollback().await?;
            return Ok(false);
        }
        let row: Option<(String, Option<String>, i64, String)> = sqlx::query_as(
            "SELECT user_id, key_id, actions_reserved, usage_month FROM audits WHERE id = $1 \
             AND status IN ('pending', 'processing')",
        )
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((user_id, key_id, reserved, month)) = &row {
            let charged = done.pages_audited.clamp(0, *reserved);
            sqlx::query(
                "UPDATE audits SET status = 'done', pages_audited = $1, pages_total = $1, scores = $2, report = $3, \
                 error = NULL, actions_charged = $4, completed_at = $5 WHERE id = $6",
            )
            .bind(done.pages_audited)
            .bind(&done.scores)
            .bind(&done.report)
            .bind(charged)
            .bind(now)
            .bind(id)
            .execute(&mut *tx)
            .await?;
            crate::ledger::give_back(&mut tx, user_id, key_id.as_deref(), "refund", id, reserved - charged, month, now)
                .await?;
            append_event(&mut tx, user_id, id, AUDIT_EVENT, &serde_json::json!({"status": "done"}), now).await?;
            crate::webhooks::emit(&mut tx, user_id, "audit.completed", completed_event, now, None).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Record a failed audit, fenced on the lease: every reserved action is given back and
    /// `audit.failed` is emitted — one transaction. False when the lease was lost.
    pub async fn fail_audit(
        &self,
        task_id: &str,
        worker: &str,
        id: &str,
        error: &str,
        failed_event: &serde_json::Value,
        now: i64,
    ) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        if !Self::finish_task(&mut tx, task_id, worker, "failed", Some(error), now).await? {
            tx.rollback().await?;
            return Ok(false);
        }
        let row: Option<(String, Option<String>, i64, String)> = sqlx::query_as(
            "UPDATE audits SET status = 'failed', error = $1, actions_charged = 0, completed_at = $2 \
             WHERE id = $3 AND status IN ('pending', 'processing') \
             RETURNING user_id, key_id, actions_reserved, usage_month",
        )
        .bind(error)
        .bind(now)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((user_id, key_id, reserved, month)) = &row {
            crate::ledger::give_back(&mut tx, user_id, key_id.as_deref(), "refund", id, *reserved, month, now).await?;
            append_event(
                &mut tx,
                user_id,
                id,
                AUDIT_EVENT,
                &serde_json::json!({"status": "failed", "error": error}),
                now,
            )
            .await?;
            crate::webhooks::emit(&mut tx, user_id, "audit.failed", failed_event, now, None).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Hand an audit's task back to the queue (graceful shutdown): the audit returns to
    /// `pending` and starts over on the next claim, which does not count as an attempt.
    pub async fn release_audit(&self, task_id: &str, worker: &str, id: &str, now: i64) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let res = sqlx::query(
            "UPDATE tasks SET status = 'queued', locked_by = NULL, locked_until = NULL, \
             attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, run_at = $1 \
             WHERE id = $2 AND locked_by = $3 AND status = 'running'",
        )
        .bind(now)
        .bind(task_id)
        .bind(worker)
        .execute(&mut *tx)
        .await?;
        if res.rows_affected() == 0 {
            tx.rollback().await?;
            return Ok(false);
        }
        crate::notify::notify(&mut tx, crate::notify::WORK_CHANNEL, "audit").await?;
        let row: Option<(String,)> = sqlx::query_as(
            "UPDATE audits SET status = 'pending', started_at = NULL, pages_audited = 0 WHERE id = $1 \
             AND status = 'processing' RETURNING user_id",
        )
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((user_id,)) = &row {
            append_event(&mut tx, user_id, id, AUDIT_EVENT, &serde_json::json!({"status": "pending"}), now).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Remember the rendered PDF of an audit's report.
    pub async fn set_audit_pdf(&self, id: &str, pdf_key: &str) -> Result<()> {
        sqlx::query("UPDATE audits SET pdf_key = $1 WHERE id = $2").bind(pdf_key).bind(id).execute(&self.pool).await?;
        Ok(())
    }
}
