//! Screenshot jobs: creation (the paid create of `paid`, charged through the usage ledger,
//! `ledger`), reads, the cache's and render links' lookups, listing with a stable cursor and
//! sharing. Bulk requests are in [`batch`]; a job's way through the queue in [`lifecycle`].

mod batch;
mod lifecycle;

use capture_core::JobStatus;
use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};

use crate::admission::{self, QueueLimits};
use crate::db::{Result, Store, StoreError};
use crate::events::append_event;
use crate::gate::Gate;
use crate::json::Json;
use crate::ledger::reserve_in;
use crate::paid::{Made, Refused, Step, Stop, finish, settle};
use crate::shape::{Before, IdemResponse, Table};

pub use batch::BatchRefused;

/// A screenshot job row.
#[derive(Debug, Clone, PartialEq)]
pub struct ScreenshotRow {
    pub id: String,
    pub user_id: String,
    pub key_id: Option<String>,
    pub status: JobStatus,
    pub url: String,
    pub options: String,
    pub format: String,
    pub result_key: Option<String>,
    pub thumb_key: Option<String>,
    pub page_title: Option<String>,
    pub tags: Vec<String>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    pub error: Option<String>,
    pub actions: i64,
    pub usage_month: String,
    pub share_token: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub completed_at: Option<i64>,
    /// What the capture read from its page, as JSON (`capture_core::metadata::PageMetadata`).
    pub metadata: Option<String>,
    /// The request's credentials, sealed by the service; cleared when the job ends.
    pub credentials: Option<String>,
    /// The keyed hash of the request, when it may be answered from cache (`cacheTtl`).
    pub cache_hash: Option<String>,
    /// Until when (ms) this job's file answers an identical request.
    pub cache_until: Option<i64>,
    /// The job whose file answered this one (a cache hit).
    pub cached_from: Option<String>,
    /// The bulk request it came with, and its place there.
    pub batch_id: Option<String>,
    pub batch_index: Option<i64>,
    /// Where the copy in the customer's bucket is, or why it could not be written.
    pub storage_url: Option<String>,
    pub storage_error: Option<String>,
    /// The copy for the customer's bucket: `pending` until it ends `stored` or `failed`; None
    /// without one.
    pub storage_status: Option<String>,
    /// The W3C `traceparent` of the request that made the job (traced services only).
    pub traceparent: Option<String>,
}

/// A job to create. `limit: None` means unlimited (admin).
#[derive(Debug, Clone)]
pub struct NewScreenshot {
    pub id: String,
    pub user_id: String,
    pub key_id: Option<String>,
    pub url: String,
    pub options: String,
    /// The request's credentials, sealed by the service (never in `options`).
    pub credentials: Option<String>,
    /// `(keyed hash of the request, until when its file may answer another)`: `cacheTtl`.
    pub cache: Option<(String, i64)>,
    /// A cache hit: the done job whose file this one is (then `done` holds its fields).
    pub cached_from: Option<String>,
    /// A render link's capture (with `cache`): one of the owner's captures of the same request
    /// already pending or running is the one answer, on every node — the create returns that
    /// job instead (nothing charged, nothing queued).
    pub flight: bool,
    /// `(batch id, place)` for a job of a bulk request.
    pub batch: Option<(String, i64)>,
    pub format: String,
    pub actions: i64,
    pub month: String,
    pub limit: Option<i64>,
    /// ISO time the monthly window resets (for `quota.warning`).
    pub reset_at: String,
    pub now: i64,
    /// Some(..) creates the job already done (uploads); None queues a capture task.
    pub done: Option<ScreenshotDone>,
    /// Task payload for queued jobs.
    pub task_payload: String,
    /// Bounds on jobs waiting for or in capture (queued jobs only; uploads are done at once).
    pub queue_limits: QueueLimits,
    /// The W3C `traceparent` of the request making it, when the service exports traces: the
    /// worker's spans continue that trace.
    pub traceparent: Option<String>,
}

crate::ledger::charged_by!(NewScreenshot, actions);

/// The result fields of a finished job.
#[derive(Debug, Clone, PartialEq)]
pub struct ScreenshotDone {
    pub result_key: String,
    pub thumb_key: Option<String>,
    pub page_title: Option<String>,
    pub tags: Vec<String>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    /// What the capture read from its page, as JSON (None for uploads).
    pub metadata: Option<String>,
    /// Where the copy in the customer's bucket is (`storage`).
    pub storage_url: Option<String>,
    /// Why the copy for the customer's bucket could not be written.
    pub storage_error: Option<String>,
}

pub(crate) const COLS: &str = "id, user_id, key_id, status, url, options, format, result_key, \
    thumb_key, page_title, tags, width, height, error, actions, usage_month, share_token, \
    created_at, started_at, completed_at, metadata, credentials, cache_hash, cache_until, cached_from, batch_id, batch_index, \
    storage_url, storage_error, storage_status, traceparent";
/// The reads of a row by id, of a page, and of a created row.
const TABLE: Table = Table::new("screenshots", COLS);

pub(crate) fn row_from(r: &AnyRow) -> Result<ScreenshotRow> {
    Ok(ScreenshotRow {
        id: r.try_get("id")?,
        user_id: r.try_get("user_id")?,
        key_id: r.try_get("key_id")?,
        status: {
            let s: String = r.try_get("status")?;
            JobStatus::parse(&s).ok_or_else(|| crate::db::StoreError::Corrupt(format!("screenshot status '{s}'")))?
        },
        url: r.try_get("url")?,
        options: r.try_get("options")?,
        format: r.try_get("format")?,
        result_key: r.try_get("result_key")?,
        thumb_key: r.try_get("thumb_key")?,
        page_title: r.try_get("page_title")?,
        tags: r.try_get::<Json<Vec<String>>, _>("tags")?.0,
        width: r.try_get("width")?,
        height: r.try_get("height")?,
        error: r.try_get("error")?,
        actions: r.try_get("actions")?,
        usage_month: r.try_get("usage_month")?,
        share_token: r.try_get("share_token")?,
        created_at: r.try_get("created_at")?,
        started_at: r.try_get("started_at")?,
        completed_at: r.try_get("completed_at")?,
        metadata: r.try_get("metadata")?,
        credentials: r.try_get("credentials")?,
        cache_hash: r.try_get("cache_hash")?,
        cache_until: r.try_get("cache_until")?,
        cached_from: r.try_get("cached_from")?,
        batch_id: r.try_get("batch_id")?,
        batch_index: r.try_get("batch_index")?,
        storage_url: r.try_get("storage_url")?,
        storage_error: r.try_get("storage_error")?,
        storage_status: r.try_get("storage_status")?,
        traceparent: r.try_get("traceparent")?,
    })
}

/// Insert a new job (and its task when it waits in the queue) with its first event, in the
/// caller's transaction.
async fn insert_screenshot(tx: &mut Transaction<'static, Any>, n: &NewScreenshot) -> Result<()> {
    let (status, d) = match &n.done {
        Some(d) => ("done", Some(d)),
        None => ("pending", None),
    };
    sqlx::query(
        "INSERT INTO screenshots (id, user_id, key_id, status, url, options, format, result_key, \
         thumb_key, page_title, tags, width, height, actions, usage_month, created_at, completed_at, metadata, \
         credentials, cache_hash, cache_until, cached_from, batch_id, batch_index, flight, traceparent) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, \
         $23, $24, $25, $26)",
    )
    .bind(&n.id)
    .bind(&n.user_id)
    .bind(n.key_id.clone())
    .bind(status)
    .bind(&n.url)
    .bind(&n.options)
    .bind(&n.format)
    .bind(d.map(|d| d.result_key.clone()))
    .bind(d.and_then(|d| d.thumb_key.clone()))
    .bind(d.and_then(|d| d.page_title.clone()))
    .bind(Json(d.map_or(&[][..], |d| &d.tags[..])))
    .bind(d.and_then(|d| d.width))
    .bind(d.and_then(|d| d.height))
    .bind(n.actions)
    .bind(&n.month)
    .bind(n.now)
    .bind(d.map(|_| n.now))
    .bind(d.and_then(|d| d.metadata.clone()))
    .bind(n.credentials.clone())
    .bind(n.cache.as_ref().map(|c| c.0.clone()))
    .bind(n.cache.as_ref().map(|c| c.1))
    .bind(n.cached_from.clone())
    .bind(n.batch.as_ref().map(|b| b.0.clone()))
    .bind(n.batch.as_ref().map(|b| b.1))
    .bind(n.cache.as_ref().filter(|_| n.flight && n.done.is_none()).map(|c| c.0.clone()))
    .bind(n.traceparent.clone())
    .execute(&mut **tx)
    .await?;
    if n.done.is_none() {
        crate::queue::enqueue(tx, "screenshot", &n.id, Some(&n.user_id), &n.task_payload, n.now).await?;
    }
    append_event(tx, &n.user_id, &n.id, "screenshot.status", &serde_json::json!({ "status": status }), n.now).await?;
    Ok(())
}

impl Store {
    /// Create a job: reserve its actions against the cap, check the queue bounds (queued
    /// jobs), insert the job, queue its task (or record it done for uploads) and its first
    /// event — one transaction. A refusal writes nothing.
    pub async fn create_screenshot(
        &self,
        n: &NewScreenshot,
    ) -> Result<std::result::Result<(ScreenshotRow, i64), Refused>> {
        self.create_screenshot_with(n, None).await
    }

    /// [`Store::create_screenshot`], storing the idempotent response in the same transaction.
    pub async fn create_screenshot_with(
        &self,
        n: &NewScreenshot,
        idem: Option<IdemResponse<'_, ScreenshotRow>>,
    ) -> Result<std::result::Result<(ScreenshotRow, i64), Refused>> {
        // A flight lost to another create of the same request: that one answers (looked up
        // again when it ended in between).
        for _ in 0..3 {
            match self.create_screenshot_once(n, idem).await {
                Err(StoreError::Db(sqlx::Error::Database(d))) if n.flight && is_flight_taken(d.as_ref()) => {
                    let Some((hash, _)) = &n.cache else { break };
                    if let Some(row) = self.running_screenshot(&n.user_id, hash).await? {
                        return Ok(Ok((row, self.month_usage(&n.user_id, &n.month).await?)));
                    }
                }
                other => return other,
            }
        }
        Err(StoreError::Conflict("the render link's capture in flight could not be joined".into()))
    }

    async fn create_screenshot_once(
        &self,
        n: &NewScreenshot,
        idem: Option<IdemResponse<'_, ScreenshotRow>>,
    ) -> Result<std::result::Result<(ScreenshotRow, i64), Refused>> {
        // The fast way first (one slot of each gate, PostgreSQL); the exact way when it cannot tell.
        match self.try_create_screenshot(n, idem, false).await {
            Err(Stop::NeedExact) => settle(self.try_create_screenshot(n, idem, true).await),
            other => settle(other),
        }
    }

    async fn try_create_screenshot(
        &self,
        n: &NewScreenshot,
        idem: Option<IdemResponse<'_, ScreenshotRow>>,
        exact: bool,
    ) -> Step<(ScreenshotRow, i64)> {
        let made = Made { table: &TABLE, id: &n.id, key_id: n.key_id.as_deref(), now: n.now, from_row: row_from, idem };
        let mut tx = self.begin_write().await?;
        let steps: Step<i64> = async {
            let tx = &mut tx;
            let limits = if n.done.is_none() { n.queue_limits } else { QueueLimits::default() };
            let hold = Gate::Account(&n.user_id).enter(tx, self.backend, self.slots, exact).await?;
            let op = if n.format == "pdf" { "pdf" } else { "screenshot" };
            let used = reserve_in(tx, &n.charge(op), hold).await???;
            // The quota comes first: a client out of actions learns that, not "retry later".
            admission::check_account_in(tx, &n.user_id, limits.per_account, 1, hold).await???;
            admission::check_global(tx, self.backend, self.slots, limits.global, 1, exact).await???;
            insert_screenshot(tx, n).await?;
            Ok(used)
        }
        .await;
        finish(tx, made, steps).await
    }

    /// The jobs of a batch of `user_id`, in the order the request gave them (none for
    /// another account's batch).
    pub async fn batch_screenshots(&self, user_id: &str, batch_id: &str) -> Result<Vec<ScreenshotRow>> {
        let rows = sqlx::query(sqlf!(
            "SELECT {COLS} FROM screenshots WHERE user_id = $1 AND batch_id = $2 ORDER BY batch_index"
        ))
        .bind(user_id)
        .bind(batch_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(row_from).collect()
    }

    /// A job by id, whoever owns it (workers, streams after an ownership check).
    pub async fn screenshot(&self, id: &str) -> Result<Option<ScreenshotRow>> {
        TABLE.get(&self.pool, id, None, row_from).await
    }

    /// A job of `user_id` (None for someone else's).
    pub async fn screenshot_of(&self, user_id: &str, id: &str) -> Result<Option<ScreenshotRow>> {
        TABLE.get(&self.pool, id, Some(user_id), row_from).await
    }

    /// The newest job of `user_id` whose file may answer a request of this keyed hash at
    /// `now`: done, and within its `cacheTtl`. A cache hit answers from the original.
    pub async fn cached_screenshot(&self, user_id: &str, hash: &str, now: i64) -> Result<Option<ScreenshotRow>> {
        let row = sqlx::query(sqlf!(
            "SELECT {COLS} FROM screenshots WHERE user_id = $1 AND cache_hash = $2 AND status = 'done' \
             AND cache_until > $3 AND cached_from IS NULL ORDER BY created_at DESC LIMIT 1"
        ))
        .bind(user_id)
        .bind(hash)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(row_from).transpose()
    }

    /// The newest job of `user_id` with this keyed hash still waiting or running (a render
    /// link joins it instead of starting another capture of the same thing).
    pub async fn running_screenshot(&self, user_id: &str, hash: &str) -> Result<Option<ScreenshotRow>> {
        let row = sqlx::query(sqlf!(
            "SELECT {COLS} FROM screenshots WHERE user_id = $1 AND cache_hash = $2 \
             AND status IN ('pending', 'processing') ORDER BY created_at DESC LIMIT 1"
        ))
        .bind(user_id)
        .bind(hash)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(row_from).transpose()
    }

    /// The newest failed job of `user_id` with this keyed hash that ended at `since` or
    /// later (a render link's negative cache).
    pub async fn failed_screenshot_since(
        &self,
        user_id: &str,
        hash: &str,
        since: i64,
    ) -> Result<Option<ScreenshotRow>> {
        let row = sqlx::query(sqlf!(
            "SELECT {COLS} FROM screenshots WHERE user_id = $1 AND cache_hash = $2 AND status = 'failed' \
             AND completed_at >= $3 ORDER BY completed_at DESC LIMIT 1"
        ))
        .bind(user_id)
        .bind(hash)
        .bind(since)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(row_from).transpose()
    }

    /// Captures (not cache hits) of `user_id` with this keyed hash created at `since` or
    /// later, and the oldest of them (a render link's rate).
    pub async fn captures_since(&self, user_id: &str, hash: &str, since: i64) -> Result<(i64, Option<i64>)> {
        Ok(sqlx::query_as(
            "SELECT COUNT(*), MIN(created_at) FROM screenshots WHERE user_id = $1 AND cache_hash = $2 \
             AND created_at >= $3 AND cached_from IS NULL",
        )
        .bind(user_id)
        .bind(hash)
        .bind(since)
        .fetch_one(&self.pool)
        .await?)
    }

    /// Newest first; `before` is `(created_at, Some(id))` from a cursor or `(ts, None)`.
    pub async fn list_screenshots(&self, user_id: &str, before: Before, limit: i64) -> Result<Vec<ScreenshotRow>> {
        TABLE.page(&self.pool, user_id, before, None, limit, row_from).await
    }

    /// Set the share token of a job if it has none; returns the token in force.
    pub async fn share(&self, user_id: &str, id: &str, token: &str) -> Result<Option<String>> {
        sqlx::query("UPDATE screenshots SET share_token = $1 WHERE id = $2 AND user_id = $3 AND share_token IS NULL")
            .bind(token)
            .bind(id)
            .bind(user_id)
            .execute(&self.pool)
            .await?;
        Ok(self.screenshot_of(user_id, id).await?.and_then(|r| r.share_token))
    }

    /// Remove the share token; false when the job is not the user's.
    pub async fn unshare(&self, user_id: &str, id: &str) -> Result<bool> {
        let res = sqlx::query("UPDATE screenshots SET share_token = NULL WHERE id = $1 AND user_id = $2")
            .bind(id)
            .bind(user_id)
            .execute(&self.pool)
            .await?;
        Ok(res.rows_affected() > 0)
    }

    /// The job a public share token points at.
    pub async fn screenshot_by_share(&self, token: &str) -> Result<Option<ScreenshotRow>> {
        let row = sqlx::query(sqlf!("SELECT {COLS} FROM screenshots WHERE share_token = $1"))
            .bind(token)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(row_from).transpose()
    }

    /// Job counts by status (metrics).
    pub async fn count_by_status(&self) -> Result<Vec<(String, i64)>> {
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT status, COUNT(*) FROM screenshots GROUP BY status").fetch_all(&self.pool).await?;
        Ok(rows)
    }
}

/// Is this database error the unique index of render links' captures in flight
/// (`screenshots_flight`)?
fn is_flight_taken(e: &dyn sqlx::error::DatabaseError) -> bool {
    e.is_unique_violation()
        && (e.constraint() == Some("screenshots_flight") || e.message().contains("screenshots.flight"))
}
