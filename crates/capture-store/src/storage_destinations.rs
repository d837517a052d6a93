//! Storage destinations: a customer's own S3-compatible bucket, per account, named, with the
//! key pair sealed by the service's master key. A capture with `storage` names one by id; its
//! copy there is a task of its own (`storage_copy`), queued when the job is done, so a slow
//! bucket never holds a capture worker: the job's `storage_status` is `pending` until the copy
//! ends `stored` (with `storage_url`) or `failed` (with `storage_error`), which emits
//! `screenshot.stored`.

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::db::{Result, Store};

/// A storage destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageDestination {
    pub id: String,
    pub user_id: String,
    pub name: String,
    /// `s3://bucket/prefix`.
    pub url: String,
    /// An S3-compatible server's base URL; None for AWS itself.
    pub endpoint: Option<String>,
    pub region: String,
    /// The access key id, sealed with the master key.
    pub access_key_id_enc: String,
    /// The secret access key, sealed with the master key.
    pub secret_access_key_enc: String,
    pub created_at: i64,
}

const COLS: &str = "id, user_id, name, url, endpoint, region, access_key_id_enc, secret_access_key_enc, created_at";

fn destination_from(r: &AnyRow) -> Result<StorageDestination> {
    Ok(StorageDestination {
        id: r.try_get("id")?,
        user_id: r.try_get("user_id")?,
        name: r.try_get("name")?,
        url: r.try_get("url")?,
        endpoint: r.try_get("endpoint")?,
        region: r.try_get("region")?,
        access_key_id_enc: r.try_get("access_key_id_enc")?,
        secret_access_key_enc: r.try_get("secret_access_key_enc")?,
        created_at: r.try_get("created_at")?,
    })
}

impl Store {
    /// Store a new destination.
    pub async fn create_storage_destination(&self, d: &StorageDestination) -> Result<()> {
        sqlx::query(sqlf!("INSERT INTO storage_destinations ({COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"))
            .bind(&d.id)
            .bind(&d.user_id)
            .bind(&d.name)
            .bind(&d.url)
            .bind(d.endpoint.clone())
            .bind(&d.region)
            .bind(&d.access_key_id_enc)
            .bind(&d.secret_access_key_enc)
            .bind(d.created_at)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// An account's destinations, oldest first.
    pub async fn list_storage_destinations(&self, user_id: &str) -> Result<Vec<StorageDestination>> {
        let rows =
            sqlx::query(sqlf!("SELECT {COLS} FROM storage_destinations WHERE user_id = $1 ORDER BY created_at, id"))
                .bind(user_id)
                .fetch_all(&self.pool)
                .await?;
        rows.iter().map(destination_from).collect()
    }

    /// A destination of `user_id` by id; None when there is none or it is another's.
    pub async fn storage_destination(&self, user_id: &str, id: &str) -> Result<Option<StorageDestination>> {
        let row = sqlx::query(sqlf!("SELECT {COLS} FROM storage_destinations WHERE user_id = $1 AND id = $2"))
            .bind(user_id)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(destination_from).transpose()
    }

    /// Delete a destination of `user_id`; false when it is not theirs.
    pub async fn delete_storage_destination(&self, user_id: &str, id: &str) -> Result<bool> {
        let res = sqlx::query("DELETE FROM storage_destinations WHERE user_id = $1 AND id = $2")
            .bind(user_id)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(res.rows_affected() > 0)
    }

    /// An attempt at a copy failed and another is due at `run_at`: the task waits in the queue
    /// (its claims count the attempts). False when `worker` no longer holds it.
    pub async fn copy_again(&self, task_id: &str, worker: &str, run_at: i64, error: &str) -> Result<bool> {
        let res = sqlx::query(
            "UPDATE tasks SET status = 'queued', locked_by = NULL, locked_until = NULL, run_at = $1, last_error = $2 \
             WHERE id = $3 AND locked_by = $4 AND status = 'running'",
        )
        .bind(run_at)
        .bind(error)
        .bind(task_id)
        .bind(worker)
        .execute(&self.pool)
        .await?;
        Ok(res.rows_affected() > 0)
    }

    /// A copy ended: written at `url`, or given up with `error`. The job shows it
    /// (`storage_status` stored or failed) and `screenshot.stored` carries `event`, fenced on
    /// the lease. False when `worker` no longer holds the task.
    #[allow(clippy::too_many_arguments)]
    pub async fn copy_ended(
        &self,
        task_id: &str,
        worker: &str,
        job_id: &str,
        url: Option<&str>,
        error: Option<&str>,
        event: &serde_json::Value,
        now: i64,
    ) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let status = if url.is_some() { "done" } else { "failed" };
        if !Self::finish_task(&mut tx, task_id, worker, status, error, now).await? {
            tx.rollback().await?;
            return Ok(false);
        }
        let row: Option<(String,)> = sqlx::query_as(
            "UPDATE screenshots SET storage_url = $1, storage_error = $2, storage_status = $3 \
             WHERE id = $4 AND storage_status = 'pending' RETURNING user_id",
        )
        .bind(url.map(str::to_string))
        .bind(error.map(str::to_string))
        .bind(if url.is_some() { "stored" } else { "failed" })
        .bind(job_id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((user_id,)) = &row {
            // Streams and other nodes' caches re-read the job.
            crate::events::append_event(&mut tx, user_id, job_id, "screenshot.stored", event, now).await?;
            crate::webhooks::emit(&mut tx, user_id, "screenshot.stored", event, now, None).await?;
        }
        tx.commit().await?;
        Ok(true)
    }
}
