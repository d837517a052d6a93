//! Bulk requests: a batch of jobs created all or nothing, its jobs in the request's order,
//! and the `batch.completed` event once its last job ends.

use sqlx::{Any, Transaction};

use super::{COLS, NewScreenshot, ScreenshotRow, insert_screenshot, row_from};
use crate::admission::{self, QueueFull};
use crate::db::{Result, Store};
use crate::ledger::reserve;
use crate::shape::IdemResponse;

/// Why a batch was refused: nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchRefused {
    /// The monthly cap: the usage before the batch, and how many of its jobs would fit.
    Quota { used: i64, fits: i64 },
    /// The queue bounds, for all its waiting jobs together.
    Queue(QueueFull),
    /// The Idempotency-Key was taken over while this request ran.
    IdempotencyTakenOver,
}

/// One job of a batch ended (done or failed): count it down, and when it was the last,
/// emit `batch.completed` with how many were done and how many failed. The batch row's
/// lock orders two last jobs ending at once, so the event is emitted once.
pub(super) async fn batch_job_ended(tx: &mut Transaction<'static, Any>, batch_id: &str, now: i64) -> Result<()> {
    let left: Option<(i64, String, i64)> = sqlx::query_as(
        "UPDATE screenshot_batches SET remaining = remaining - 1, \
         completed_at = CASE WHEN remaining = 1 THEN $2 ELSE completed_at END \
         WHERE id = $1 AND remaining > 0 RETURNING remaining, user_id, total",
    )
    .bind(batch_id)
    .bind(now)
    .fetch_optional(&mut **tx)
    .await?;
    if let Some((0, user_id, total)) = left {
        emit_batch_completed(tx, batch_id, &user_id, total, now).await?;
    }
    Ok(())
}

async fn emit_batch_completed(
    tx: &mut Transaction<'static, Any>,
    batch_id: &str,
    user_id: &str,
    total: i64,
    now: i64,
) -> Result<()> {
    let counts: Vec<(String, i64)> =
        sqlx::query_as("SELECT status, COUNT(*) FROM screenshots WHERE batch_id = $1 GROUP BY status")
            .bind(batch_id)
            .fetch_all(&mut **tx)
            .await?;
    let count = |s: &str| counts.iter().find(|(k, _)| k == s).map_or(0, |c| c.1);
    let data =
        serde_json::json!({"batchId": batch_id, "total": total, "done": count("done"), "failed": count("failed")});
    crate::webhooks::emit(tx, user_id, "batch.completed", &data, now, None).await?;
    Ok(())
}

impl Store {
    /// Create a batch of jobs (a bulk request) all or nothing: every job's actions are
    /// reserved, the queue bounds checked for all of them, each job inserted with its place,
    /// and the idempotent response stored, in one transaction. `jobs` is not empty and its
    /// jobs share the owner, month and queue limits.
    pub async fn create_screenshot_batch(
        &self,
        batch_id: &str,
        jobs: &[NewScreenshot],
        idem: Option<IdemResponse<'_, Vec<ScreenshotRow>>>,
    ) -> Result<std::result::Result<(Vec<ScreenshotRow>, i64), BatchRefused>> {
        let Some(first) = jobs.first() else { return Ok(Ok((Vec::new(), 0))) };
        let (user_id, now, limits) = (&first.user_id, first.now, first.queue_limits);
        let queued = jobs.iter().filter(|j| j.done.is_none()).count() as i64;
        let mut tx = self.begin_write().await?;
        admission::lock_account(&mut tx, self.backend, user_id).await?;
        let mut used = 0;
        for (i, n) in jobs.iter().enumerate() {
            let op = if n.format == "pdf" { "pdf" } else { "screenshot" };
            match reserve(&mut tx, &n.charge(op)).await? {
                Ok(u) => used = u,
                Err(q) => {
                    tx.rollback().await?;
                    let before: i64 = jobs[..i].iter().map(|j| j.actions).sum();
                    return Ok(Err(BatchRefused::Quota { used: q.used - before, fits: i as i64 }));
                }
            }
        }
        let admitted = match admission::check_account(&mut tx, user_id, limits.per_account, queued).await? {
            Ok(()) => admission::check_global(&mut tx, self.backend, self.slots, limits.global, queued, true)
                .await?
                .unwrap_or(Ok(())),
            full => full,
        };
        if let Err(full) = admitted {
            tx.rollback().await?;
            return Ok(Err(BatchRefused::Queue(full)));
        }
        sqlx::query(
            "INSERT INTO screenshot_batches (id, user_id, total, remaining, created_at, completed_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(batch_id)
        .bind(user_id)
        .bind(jobs.len() as i64)
        .bind(queued)
        .bind(now)
        .bind((queued == 0).then_some(now))
        .execute(&mut *tx)
        .await?;
        for n in jobs {
            insert_screenshot(&mut tx, n).await?;
        }
        if queued == 0 {
            emit_batch_completed(&mut tx, batch_id, user_id, jobs.len() as i64, now).await?;
        }
        if let Some(key_id) = first.key_id.as_deref() {
            crate::shape::key_used(&mut tx, key_id, now).await?;
        }
        let rows = sqlx::query(sqlf!("SELECT {COLS} FROM screenshots WHERE batch_id = $1 ORDER BY batch_index"))
            .bind(batch_id)
            .fetch_all(&mut *tx)
            .await?;
        let rows = rows.iter().map(row_from).collect::<Result<Vec<_>>>()?;
        if let Some(idem) = idem {
            let (status, body) = (idem.render)(&rows);
            if !Store::idem_complete_tx(&mut tx, idem.claim, status, &body).await? {
                tx.rollback().await?;
                return Ok(Err(BatchRefused::IdempotencyTakenOver));
            }
        }
        tx.commit().await?;
        Ok(Ok((rows, used)))
    }
}
