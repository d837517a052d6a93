//! The event log: every change of a job, audit, run or ad appended in its transaction (the
//! stream and outbox feed), and read back by subject.

use sqlx::{Any, Transaction};

use crate::db::{Result, Store};

/// Append an event in the caller's transaction (the stream/outbox feed).
pub(crate) async fn append_event(
    tx: &mut Transaction<'static, Any>,
    user_id: &str,
    subject_id: &str,
    event_type: &str,
    data: &serde_json::Value,
    now: i64,
) -> Result<()> {
    sqlx::query("INSERT INTO events (user_id, subject_id, event_type, data, created_at) VALUES ($1, $2, $3, $4, $5)")
        .bind(user_id)
        .bind(subject_id)
        .bind(event_type)
        .bind(data.to_string())
        .bind(now)
        .execute(&mut **tx)
        .await?;
    // Streams following this job on any node look at its events when this commits.
    crate::notify::notify(tx, crate::notify::JOB_CHANNEL, subject_id).await?;
    Ok(())
}

impl Store {
    /// Events of a subject after `after_id`: `(id, type, data)`.
    pub async fn events_after(&self, subject_id: &str, after_id: i64) -> Result<Vec<(i64, String, String)>> {
        let rows: Vec<(i64, String, String)> =
            sqlx::query_as("SELECT id, event_type, data FROM events WHERE subject_id = $1 AND id > $2 ORDER BY id")
                .bind(subject_id)
                .bind(after_id)
                .fetch_all(&self.pool)
                .await?;
        Ok(rows)
    }
}
