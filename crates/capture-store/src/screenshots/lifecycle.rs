//! A screenshot job's way through the queue: processing when claimed, then done, failed (its
//! actions given back when the caller says so) or handed back — each fenced on the task's
//! lease (`finish_task`).

use super::ScreenshotDone;
use super::batch::batch_job_ended;
use crate::db::{Result, Store};
use crate::events::append_event;
use crate::notify::{WORK_CHANNEL, notify};

impl Store {
    /// Move a job to `processing` (with its event) when its task is claimed.
    pub async fn mark_processing(&self, job_id: &str, now: i64) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let row: Option<(String,)> = sqlx::query_as(
            "UPDATE screenshots SET status = 'processing', started_at = $1 WHERE id = $2 \
             AND status = 'pending' RETURNING user_id",
        )
        .bind(now)
        .bind(job_id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((user_id,)) = &row {
            append_event(
                &mut tx,
                user_id,
                job_id,
                "screenshot.status",
                &serde_json::json!({"status": "processing"}),
                now,
            )
            .await?;
        }
        tx.commit().await?;
        Ok(row.is_some())
    }

    /// Record a finished capture, fenced on the lease. False when the lease was lost.
    pub async fn complete_screenshot(
        &self,
        task_id: &str,
        worker: &str,
        job_id: &str,
        done: &ScreenshotDone,
        completed_event: &serde_json::Value,
        copy: Option<&str>,
        now: i64,
    ) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        if !Self::finish_task(&mut tx, task_id, worker, "done", None, now).await? {
            tx.rollback().await?;
            return Ok(false);
        }
        let row: Option<(String, Option<String>)> = sqlx::query_as(
            "UPDATE screenshots SET status = 'done', result_key = $1, thumb_key = $2, page_title = $3, \
             tags = $4, width = $5, height = $6, error = NULL, completed_at = $7, metadata = $9, credentials = NULL, \
             storage_url = $10, storage_error = $11, storage_status = $12 \
             WHERE id = $8 AND status IN ('pending', 'processing') RETURNING user_id, batch_id",
        )
        .bind(&done.result_key)
        .bind(done.thumb_key.clone())
        .bind(done.page_title.clone())
        .bind(serde_json::to_string(&done.tags).unwrap_or_else(|_| "[]".into()))
        .bind(done.width)
        .bind(done.height)
        .bind(now)
        .bind(job_id)
        .bind(done.metadata.clone())
        .bind(done.storage_url.clone())
        .bind(done.storage_error.clone())
        .bind(copy.map(|_| "pending"))
        .fetch_optional(&mut *tx)
        .await?;
        if let (Some((user_id, _)), Some(payload)) = (&row, copy) {
            crate::queue::enqueue(&mut tx, "storage_copy", job_id, Some(user_id), payload, now).await?;
        }
        if let Some((user_id, batch)) = &row {
            append_event(&mut tx, user_id, job_id, "screenshot.status", &serde_json::json!({"status": "done"}), now)
                .await?;
            crate::webhooks::emit(&mut tx, user_id, "screenshot.completed", completed_event, now, None).await?;
            if let Some(b) = batch {
                batch_job_ended(&mut tx, b, now).await?;
            }
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Record a permanent failure, fenced on the lease. `refund` gives the job's actions
    /// back (failures the service caused); a job that ran into its own deadline or failed
    /// on the tenant's page keeps its charge.
    pub async fn fail_screenshot(
        &self,
        task_id: &str,
        worker: &str,
        job_id: &str,
        error: &str,
        refund: bool,
        now: i64,
    ) -> Result<bool> {
        let kept = if refund { 0 } else { i64::MAX };
        self.fail_screenshot_keeping(task_id, worker, job_id, error, kept, now).await
    }

    /// [`Self::fail_screenshot`], keeping `kept` of the job's actions charged and giving the
    /// rest back (a capture that was made, whose language-model extraction failed, keeps the
    /// capture's own).
    pub async fn fail_screenshot_keeping(
        &self,
        task_id: &str,
        worker: &str,
        job_id: &str,
        error: &str,
        kept: i64,
        now: i64,
    ) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        if !Self::finish_task(&mut tx, task_id, worker, "failed", Some(error), now).await? {
            tx.rollback().await?;
            return Ok(false);
        }
        // user, key, actions, month, url, batch
        type Failed = (String, Option<String>, i64, String, String, Option<String>);
        let row: Option<Failed> = sqlx::query_as(
            "UPDATE screenshots SET status = 'failed', error = $1, completed_at = $2, credentials = NULL \
             WHERE id = $3 AND status IN ('pending', 'processing') \
             RETURNING user_id, key_id, actions, usage_month, url, batch_id",
        )
        .bind(error)
        .bind(now)
        .bind(job_id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((user_id, key_id, actions, month, _, _)) = &row {
            let back = (*actions - kept).max(0);
            crate::ledger::give_back(&mut tx, user_id, key_id.as_deref(), "refund", job_id, back, month, now).await?;
        }
        if let Some((user_id, _, _, _, url, batch)) = &row {
            append_event(
                &mut tx,
                user_id,
                job_id,
                "screenshot.status",
                &serde_json::json!({"status": "failed", "error": error}),
                now,
            )
            .await?;
            let data = serde_json::json!({"screenshotId": job_id, "url": url, "error": error});
            crate::webhooks::emit(&mut tx, user_id, "screenshot.failed", &data, now, None).await?;
            if let Some(b) = batch {
                batch_job_ended(&mut tx, b, now).await?;
            }
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Hand a task back to the queue (graceful shutdown): the job returns to `pending`
    /// and the claim does not count as an attempt.
    pub async fn release(&self, task_id: &str, worker: &str, job_id: &str, now: i64) -> Result<bool> {
        self.put_back(task_id, worker, job_id, now, false).await
    }

    /// [`release`](Self::release) so another account can have the slot: the task counts one
    /// more hand-back ([`Task::handed_back`](crate::Task::handed_back)).
    pub async fn hand_back(&self, task_id: &str, worker: &str, job_id: &str, now: i64) -> Result<bool> {
        self.put_back(task_id, worker, job_id, now, true).await
    }

    async fn put_back(&self, task_id: &str, worker: &str, job_id: &str, now: i64, handed_back: bool) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let kind: Option<(String,)> = sqlx::query_as(
            "UPDATE tasks SET status = 'queued', locked_by = NULL, locked_until = NULL, \
             attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, run_at = $1, \
             handed_back = handed_back + $4 \
             WHERE id = $2 AND locked_by = $3 AND status = 'running' RETURNING kind",
        )
        .bind(now)
        .bind(task_id)
        .bind(worker)
        .bind(i64::from(handed_back))
        .fetch_optional(&mut *tx)
        .await?;
        let Some((kind,)) = kind else {
            tx.rollback().await?;
            return Ok(false);
        };
        // Another node may pick it up at once (this one is shutting down).
        notify(&mut tx, WORK_CHANNEL, &kind).await?;
        let row: Option<(String,)> = sqlx::query_as(
            "UPDATE screenshots SET status = 'pending', started_at = NULL WHERE id = $1 \
             AND status = 'processing' RETURNING user_id",
        )
        .bind(job_id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((user_id,)) = &row {
            append_event(&mut tx, user_id, job_id, "screenshot.status", &serde_json::json!({"status": "pending"}), now)
                .await?;
        }
        tx.commit().await?;
        Ok(true)
    }
}
