//! Webhook endpoints and the delivery outbox. Deliveries are written in the same
//! transaction as the change that caused them; each one is driven by a task of kind
//! `webhook` on the shared queue (its `run_at` is the next attempt), and every attempt is
//! recorded.

use serde_json::{Value, json};
use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};

use crate::db::{Result, Store};
use crate::json::Json;

/// Attempts per delivery (1 + 5 retries).
pub const MAX_ATTEMPTS: i64 = 6;

/// A webhook endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub id: String,
    pub user_id: String,
    pub url: String,
    pub events: Vec<String>,
    pub description: Option<String>,
    /// The signing secret, encrypted with the master key.
    pub secret_enc: String,
    pub created_at: i64,
}

/// A delivery as listed to its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: String,
    pub endpoint_id: String,
    pub event_type: String,
    pub status: String,
    pub attempts: i64,
    pub response_code: Option<i64>,
    pub error_message: Option<String>,
    pub created_at: i64,
    pub last_attempt_at: Option<i64>,
    pub next_attempt_at: Option<i64>,
}

/// What a sender needs for one attempt.
#[derive(Debug, Clone)]
pub struct DeliveryJob {
    pub delivery: Delivery,
    /// The exact body to send (and sign).
    pub payload: String,
    pub url: String,
    pub secret_enc: String,
    /// The endpoint was deleted: send nothing more.
    pub endpoint_deleted: bool,
}

/// The outcome of one attempt.
#[derive(Debug, Clone)]
pub struct AttemptOutcome {
    pub status_code: Option<i64>,
    pub error: Option<String>,
    pub duration_ms: i64,
    pub succeeded: bool,
}

fn endpoint_from(r: &AnyRow) -> Result<Endpoint> {
    Ok(Endpoint {
        id: r.try_get("id")?,
        user_id: r.try_get("user_id")?,
        url: r.try_get("url")?,
        events: r.try_get::<Json<Vec<String>>, _>("events")?.0,
        description: r.try_get("description")?,
        secret_enc: r.try_get("secret_enc")?,
        created_at: r.try_get("created_at")?,
    })
}

pub(crate) const DELIVERY_COLS: &str = "id, endpoint_id, event_type, status, attempts, response_code, error_message, \
    created_at, last_attempt_at, next_attempt_at";

pub(crate) fn delivery_from(r: &AnyRow) -> Result<Delivery> {
    Ok(Delivery {
        id: r.try_get("id")?,
        endpoint_id: r.try_get("endpoint_id")?,
        event_type: r.try_get("event_type")?,
        status: r.try_get("status")?,
        attempts: r.try_get("attempts")?,
        response_code: r.try_get("response_code")?,
        error_message: r.try_get("error_message")?,
        created_at: r.try_get("created_at")?,
        last_attempt_at: r.try_get("last_attempt_at")?,
        next_attempt_at: r.try_get("next_attempt_at")?,
    })
}

/// Does an endpoint subscribed to `events` receive `event_type`? (`*` = everything,
/// including types added later.)
pub fn subscribed(events: &[String], event_type: &str) -> bool {
    events.iter().any(|e| e == "*" || e == event_type)
}

/// Queue `event_type` for every endpoint of `user_id` that subscribes to it, inside the
/// caller's transaction (the outbox). Returns the delivery ids.
pub(crate) async fn emit(
    tx: &mut Transaction<'static, Any>,
    user_id: &str,
    event_type: &str,
    data: &Value,
    now: i64,
    only_endpoint: Option<&str>,
) -> Result<Vec<String>> {
    let rows = sqlx::query(
        "SELECT id, user_id, url, events, description, secret_enc, created_at FROM webhook_endpoints \
         WHERE user_id = $1 AND deleted_at IS NULL AND ($2 IS NULL OR id = $2) ORDER BY created_at, id",
    )
    .bind(user_id)
    .bind(only_endpoint.map(str::to_string))
    .fetch_all(&mut **tx)
    .await?;
    let mut ids = Vec::new();
    for r in &rows {
        let ep = endpoint_from(r)?;
        if only_endpoint.is_none() && !subscribed(&ep.events, event_type) {
            continue;
        }
        let id = capture_core::ids::new_id("msg");
        let payload = json!({
            "id": id,
            "type": event_type,
            "createdAt": capture_core::time::iso(now),
            "data": data,
        })
        .to_string();
        sqlx::query(
            "INSERT INTO webhook_deliveries (id, endpoint_id, user_id, event_type, payload, status, attempts, \
             created_at, next_attempt_at) VALUES ($1, $2, $3, $4, $5, 'pending', 0, $6, $6)",
        )
        .bind(&id)
        .bind(&ep.id)
        .bind(user_id)
        .bind(event_type)
        .bind(&payload)
        .bind(now)
        .execute(&mut **tx)
        .await?;
        crate::queue::enqueue(tx, "webhook", &id, Some(user_id), "{}", now).await?;
        ids.push(id);
    }
    Ok(ids)
}

/// The `quota.warning` thresholds (percent of the cap), each sent once a month.
const QUOTA_THRESHOLDS: [i64; 2] = [80, 95];

/// Whether usage of `used` would cross a `quota.warning` threshold not yet sent this month.
pub(crate) async fn quota_warning_due(
    tx: &mut Transaction<'static, Any>,
    user_id: &str,
    month: &str,
    used: i64,
    limit: i64,
) -> Result<bool> {
    if limit <= 0 || used * 100 < QUOTA_THRESHOLDS[0] * limit {
        return Ok(false);
    }
    let sent: Vec<(i64,)> = sqlx::query_as("SELECT threshold FROM quota_warnings WHERE user_id = $1 AND month = $2")
        .bind(user_id)
        .bind(month)
        .fetch_all(&mut **tx)
        .await?;
    Ok(QUOTA_THRESHOLDS.iter().any(|t| used * 100 >= t * limit && !sent.iter().any(|(s,)| s == t)))
}
/// Emit `quota.warning` once per threshold per month when `used` crossed 80 % or 95 %.
pub(crate) async fn quota_warnings(
    tx: &mut Transaction<'static, Any>,
    user_id: &str,
    month: &str,
    used: i64,
    limit: i64,
    reset_at: &str,
    now: i64,
) -> Result<()> {
    if limit <= 0 {
        return Ok(());
    }
    for threshold in QUOTA_THRESHOLDS {
        if used * 100 < threshold * limit {
            continue;
        }
        // The primary key makes "once per threshold per month" hold under concurrency.
        let res = sqlx::query(
            "INSERT INTO quota_warnings (user_id, month, threshold, created_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (user_id, month, threshold) DO NOTHING",
        )
        .bind(user_id)
        .bind(month)
        .bind(threshold)
        .bind(now)
        .execute(&mut **tx)
        .await?;
        if res.rows_affected() == 1 {
            let data = json!({
                "threshold": threshold,
                "used": used,
                "limit": limit,
                "remaining": (limit - used).max(0),
                "resetAt": reset_at,
            });
            emit(tx, user_id, "quota.warning", &data, now, None).await?;
        }
    }
    Ok(())
}

impl Store {
    /// Create an endpoint.
    pub async fn create_endpoint(&self, ep: &Endpoint) -> Result<()> {
        sqlx::query(
            "INSERT INTO webhook_endpoints (id, user_id, url, events, description, secret_enc, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&ep.id)
        .bind(&ep.user_id)
        .bind(&ep.url)
        .bind(Json(&ep.events))
        .bind(ep.description.clone())
        .bind(&ep.secret_enc)
        .bind(ep.created_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Live endpoints of an account, oldest first.
    pub async fn list_endpoints(&self, user_id: &str) -> Result<Vec<Endpoint>> {
        let rows = sqlx::query(
            "SELECT id, user_id, url, events, description, secret_enc, created_at FROM webhook_endpoints \
             WHERE user_id = $1 AND deleted_at IS NULL ORDER BY created_at, id",
        )
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(endpoint_from).collect()
    }

    /// One live endpoint of an account.
    pub async fn endpoint_of(&self, user_id: &str, id: &str) -> Result<Option<Endpoint>> {
        let row = sqlx::query(
            "SELECT id, user_id, url, events, description, secret_enc, created_at FROM webhook_endpoints \
             WHERE user_id = $1 AND id = $2 AND deleted_at IS NULL",
        )
        .bind(user_id)
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(endpoint_from).transpose()
    }

    /// Replace the signing secret; false when the endpoint is not the user's.
    pub async fn rotate_endpoint_secret(&self, user_id: &str, id: &str, secret_enc: &str) -> Result<bool> {
        let res = sqlx::query(
            "UPDATE webhook_endpoints SET secret_enc = $1 WHERE user_id = $2 AND id = $3 AND deleted_at IS NULL",
        )
        .bind(secret_enc)
        .bind(user_id)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(res.rows_affected() > 0)
    }

    /// Delete an endpoint: nothing more is delivered to it.
    pub async fn delete_endpoint(&self, user_id: &str, id: &str, now: i64) -> Result<bool> {
        let res = sqlx::query(
            "UPDATE webhook_endpoints SET deleted_at = $1 WHERE user_id = $2 AND id = $3 AND deleted_at IS NULL",
        )
        .bind(now)
        .bind(user_id)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(res.rows_affected() > 0)
    }

    /// Queue a `test.ping` to one endpoint; returns the delivery id.
    pub async fn send_test_ping(&self, user_id: &str, endpoint_id: &str, now: i64) -> Result<Option<String>> {
        let mut tx = self.begin_write().await?;
        let data = json!({"endpointId": endpoint_id, "message": "This is a test delivery from Capture."});
        let ids = emit(&mut tx, user_id, "test.ping", &data, now, Some(endpoint_id)).await?;
        tx.commit().await?;
        Ok(ids.into_iter().next())
    }

    /// The last `limit` deliveries of an endpoint, newest first.
    pub async fn list_deliveries(&self, user_id: &str, endpoint_id: &str, limit: i64) -> Result<Vec<Delivery>> {
        let rows = sqlx::query(sqlf!(
            "SELECT {DELIVERY_COLS} FROM webhook_deliveries WHERE user_id = $1 AND endpoint_id = $2 \
             ORDER BY created_at DESC, id DESC LIMIT $3"
        ))
        .bind(user_id)
        .bind(endpoint_id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(delivery_from).collect()
    }

    /// Everything an attempt needs, by delivery id.
    pub async fn delivery_job(&self, delivery_id: &str) -> Result<Option<DeliveryJob>> {
        let row = sqlx::query(
            "SELECT d.id, d.endpoint_id, d.event_type, d.status, d.attempts, d.response_code, d.error_message, \
             d.created_at, d.last_attempt_at, d.next_attempt_at, d.payload, e.url, e.secret_enc, e.deleted_at \
             FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.id = $1",
        )
        .bind(delivery_id)
        .fetch_optional(&self.pool)
        .await?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some(DeliveryJob {
            delivery: delivery_from(&r)?,
            payload: r.try_get("payload")?,
            url: r.try_get("url")?,
            secret_enc: r.try_get("secret_enc")?,
            endpoint_deleted: r.try_get::<Option<i64>, _>("deleted_at")?.is_some(),
        }))
    }

    /// Record one attempt (fenced on the task lease) and settle the delivery: succeeded,
    /// retried at `retry_at`, or exhausted when `retry_at` is None. False if the lease was lost.
    pub async fn record_attempt(
        &self,
        task_id: &str,
        worker: &str,
        delivery_id: &str,
        outcome: &AttemptOutcome,
        retry_at: Option<i64>,
        now: i64,
    ) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let (task_status, delivery_status) = match (outcome.succeeded, retry_at) {
            (true, _) => ("done", "succeeded"),
            (false, Some(_)) => ("queued", "pending"),
            (false, None) => ("failed", "exhausted"),
        };
        let res = sqlx::query(
            "UPDATE tasks SET status = $1, run_at = $2, locked_by = NULL, locked_until = NULL, last_error = $3, \
             finished_at = $4 WHERE id = $5 AND locked_by = $6 AND status = 'running'",
        )
        .bind(task_status)
        .bind(retry_at.unwrap_or(now))
        .bind(outcome.error.clone())
        .bind(if task_status == "queued" { None } else { Some(now) })
        .bind(task_id)
        .bind(worker)
        .execute(&mut *tx)
        .await?;
        if res.rows_affected() == 0 {
            tx.rollback().await?;
            return Ok(false);
        }
        sqlx::query(
            "UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, response_code = $2, \
             error_message = $3, last_attempt_at = $4, next_attempt_at = $5 WHERE id = $6",
        )
        .bind(delivery_status)
        .bind(outcome.status_code)
        .bind(outcome.error.clone())
        .bind(now)
        .bind(retry_at)
        .bind(delivery_id)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, error, duration_ms) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(delivery_id)
        .bind(now)
        .bind(outcome.status_code)
        .bind(outcome.error.clone())
        .bind(outcome.duration_ms)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Settle a delivery without sending (its endpoint was deleted): fenced like an attempt.
    pub async fn cancel_delivery(&self, task_id: &str, worker: &str, delivery_id: &str, now: i64) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        if !Self::finish_task(&mut tx, task_id, worker, "done", Some("endpoint deleted"), now).await? {
            tx.rollback().await?;
            return Ok(false);
        }
        sqlx::query(
            "UPDATE webhook_deliveries SET status = 'exhausted', error_message = 'endpoint deleted', \
             next_attempt_at = NULL WHERE id = $1 AND status = 'pending'",
        )
        .bind(delivery_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Recorded attempts of a delivery: `(attempted_at, status_code, error, duration_ms)`.
    pub async fn delivery_attempts(&self, delivery_id: &str) -> Result<Vec<(i64, Option<i64>, Option<String>, i64)>> {
        let rows = sqlx::query_as(
            "SELECT attempted_at, status_code, error, duration_ms FROM webhook_attempts WHERE delivery_id = $1 ORDER BY id",
        )
        .bind(delivery_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows)
    }
}

impl Store {
    /// Emit `event_type` to every subscribed endpoint of `user_id` on its own (an event that
    /// records nothing else, such as `session.human_requested`); the delivery ids.
    pub async fn emit_event(&self, user_id: &str, event_type: &str, data: &Value, now: i64) -> Result<Vec<String>> {
        let mut tx = self.begin_write().await?;
        let ids = emit(&mut tx, user_id, event_type, data, now, None).await?;
        tx.commit().await?;
        Ok(ids)
    }
}
