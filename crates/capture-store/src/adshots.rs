//! Ad generation jobs: drafts (`drf_…`, 1 action) and renders (`ad_…`, 10 actions) in one
//! table. Creation reserves the actions, queues the task (`ad_draft` / `ad_render`), writes
//! the first event and, for an idempotent request, its response — one transaction. The
//! worker reports progress, then completes (with the `adshot.completed` webhook) or fails
//! (with `adshot.failed` and, for failures the service caused, a refund), fenced on its lease.

use capture_core::JobStatus;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::admission::{QueueFull, QueueScope};
use crate::db::{Result, Store, StoreError};
use crate::events::append_event;
use crate::json::Json;
use crate::ledger::reserve;
use crate::paid::{Made, Refused, Step, finish, settle};
use crate::shape::{IdemResponse, Table};

/// Kind of a draft row (and its queue kind is `ad_draft`).
pub const KIND_DRAFT: &str = "draft";
/// Kind of a render row (and its queue kind is `ad_render`).
pub const KIND_RENDER: &str = "render";

/// An ad draft or render.
#[derive(Debug, Clone, PartialEq)]
pub struct AdshotRow {
    pub id: String,
    pub user_id: String,
    pub key_id: Option<String>,
    /// `draft` or `render`.
    pub kind: String,
    /// The draft a render was made from.
    pub draft_id: Option<String>,
    pub status: JobStatus,
    /// What the worker is doing (`capturing`, `extracting`, `voice`, `scenes`, …).
    pub stage: Option<String>,
    /// 0–100.
    pub progress: i64,
    /// The request, as JSON.
    pub input: String,
    /// The draft (name, headline, lines, storyboard, script…) as JSON, once written.
    pub draft: Option<String>,
    /// Blob names of the draft's screenshots.
    pub files: Vec<String>,
    pub video_key: Option<String>,
    pub thumb_key: Option<String>,
    pub duration_ms: Option<i64>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    /// Details of a render (voice-over span, scene timings…) as JSON.
    pub meta: Option<String>,
    pub error: Option<String>,
    pub actions: i64,
    pub usage_month: String,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub completed_at: Option<i64>,
}

/// An ad job to create. `limit: None` means unlimited (admin).
#[derive(Debug, Clone)]
pub struct NewAdshot {
    pub id: String,
    pub user_id: String,
    pub key_id: Option<String>,
    /// [`KIND_DRAFT`] or [`KIND_RENDER`].
    pub kind: String,
    pub draft_id: Option<String>,
    pub input: String,
    pub actions: i64,
    pub month: String,
    pub limit: Option<i64>,
    /// ISO time the monthly window resets (for `quota.warning`).
    pub reset_at: String,
    pub now: i64,
    /// The task's payload.
    pub task_payload: String,
    /// Jobs of this kind the account may have waiting or in progress (None: unbounded).
    pub max_active: Option<i64>,
}

crate::ledger::charged_by!(NewAdshot, actions);

/// What a finished ad job leaves.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AdshotDone {
    pub draft: Option<String>,
    pub files: Vec<String>,
    pub video_key: Option<String>,
    pub thumb_key: Option<String>,
    pub duration_ms: Option<i64>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    pub meta: Option<String>,
}

const COLS: &str = "id, user_id, key_id, kind, draft_id, status, stage, progress, input, draft, files, \
    video_key, thumb_key, duration_ms, width, height, meta, error, actions, usage_month, created_at, started_at, \
    completed_at";
/// The reads of a row by id, of a page, and of a created row.
const TABLE: Table = Table::new("adshots", COLS);

/// The queue kind of a row kind.
pub fn queue_kind(kind: &str) -> &'static str {
    if kind == KIND_RENDER { "ad_render" } else { "ad_draft" }
}

fn row_from(r: &AnyRow) -> Result<AdshotRow> {
    Ok(AdshotRow {
        id: r.try_get("id")?,
        user_id: r.try_get("user_id")?,
        key_id: r.try_get("key_id")?,
        kind: r.try_get("kind")?,
        draft_id: r.try_get("draft_id")?,
        status: {
            let s: String = r.try_get("status")?;
            JobStatus::parse(&s).ok_or_else(|| StoreError::Corrupt(format!("adshot status '{s}'")))?
        },
        stage: r.try_get("stage")?,
        progress: r.try_get("progress")?,
        input: r.try_get("input")?,
        draft: r.try_get("draft")?,
        files: r.try_get::<Json<Vec<String>>, _>("files")?.0,
        video_key: r.try_get("video_key")?,
        thumb_key: r.try_get("thumb_key")?,
        duration_ms: r.try_get("duration_ms")?,
        width: r.try_get("width")?,
        height: r.try_get("height")?,
        meta: r.try_get("meta")?,
        error: r.try_get("error")?,
        actions: r.try_get("actions")?,
        usage_month: r.try_get("usage_month")?,
        created_at: r.try_get("created_at")?,
        started_at: r.try_get("started_at")?,
        completed_at: r.try_get("completed_at")?,
    })
}

impl Store {
    /// Create a draft or render: reserve its actions against the cap, insert it, queue its
    /// task and its first event and, with `idem`, store the idempotent response — one
    /// transaction. A refusal writes nothing.
    pub async fn create_adshot_with(
        &self,
        n: &NewAdshot,
        idem: Option<IdemResponse<'_, AdshotRow>>,
    ) -> Result<std::result::Result<(AdshotRow, i64), Refused>> {
        let op = queue_kind(&n.kind);
        let made = Made { table: &TABLE, id: &n.id, key_id: n.key_id.as_deref(), now: n.now, from_row: row_from, idem };
        let mut tx = self.begin_write().await?;
        let steps: Step<i64> = async {
            let tx = &mut tx;
            crate::admission::lock_account(tx, self.backend, &n.user_id).await?;
            let used = reserve(tx, &n.charge(op)).await??;
            // The quota comes first: a client out of actions learns that, not "retry later".
            if let Some(limit) = n.max_active {
                let (pending,): (i64,) = sqlx::query_as(
                    "SELECT COUNT(*) FROM adshots WHERE user_id = $1 AND kind = $2 \
                     AND status IN ('pending', 'processing')",
                )
                .bind(&n.user_id)
                .bind(&n.kind)
                .fetch_one(&mut **tx)
                .await?;
                if pending >= limit {
                    return Err(QueueFull { scope: QueueScope::Account, pending, limit }.into());
                }
            }
            sqlx::query(
                "INSERT INTO adshots (id, user_id, key_id, kind, draft_id, status, progress, input, actions, \
                 usage_month, created_at) VALUES ($1, $2, $3, $4, $5, 'pending', 0, $6, $7, $8, $9)",
            )
            .bind(&n.id)
            .bind(&n.user_id)
            .bind(n.key_id.clone())
            .bind(&n.kind)
            .bind(n.draft_id.clone())
            .bind(&n.input)
            .bind(n.actions)
            .bind(&n.month)
            .bind(n.now)
            .execute(&mut **tx)
            .await?;
            crate::queue::enqueue(tx, op, &n.id, Some(&n.user_id), &n.task_payload, n.now).await?;
            append_event(tx, &n.user_id, &n.id, "adshot.status", &serde_json::json!({ "status": "pending" }), n.now)
                .await?;
            Ok(used)
        }
        .await;
        settle(finish(tx, made, steps).await)
    }

    /// A draft or render by id, whoever owns it (workers).
    pub async fn adshot(&self, id: &str) -> Result<Option<AdshotRow>> {
        TABLE.get(&self.pool, id, None, row_from).await
    }

    /// A draft or render of `user_id` (None for someone else's).
    pub async fn adshot_of(&self, user_id: &str, id: &str) -> Result<Option<AdshotRow>> {
        TABLE.get(&self.pool, id, Some(user_id), row_from).await
    }

    /// The newest drafts and renders of `user_id` (`kind`: only one kind), newest first.
    pub async fn list_adshots(&self, user_id: &str, kind: Option<&str>, limit: i64) -> Result<Vec<AdshotRow>> {
        let and = kind.map(|k| ("kind = $5", k));
        TABLE.page(&self.pool, user_id, None, and, limit, row_from).await
    }

    /// Record what the worker is doing (`stage`, `progress` 0–100) with a status event, as
    /// long as `worker` holds the task. A pending job becomes `processing`. False when the
    /// lease was lost or the job is over.
    pub async fn adshot_progress(
        &self,
        task_id: &str,
        worker: &str,
        id: &str,
        stage: &str,
        progress: i64,
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
        let progress = progress.clamp(0, 100);
        let row: Option<(String,)> = sqlx::query_as(
            "UPDATE adshots SET status = 'processing', stage = $1, progress = $2, \
             started_at = COALESCE(started_at, $3) \
             WHERE id = $4 AND status IN ('pending', 'processing') RETURNING user_id",
        )
        .bind(stage)
        .bind(progress)
        .bind(now)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((user_id,)) = row else {
            tx.rollback().await?;
            return Ok(false);
        };
        let data = serde_json::json!({ "status": "processing", "stage": stage, "progress": progress });
        append_event(&mut tx, &user_id, id, "adshot.status", &data, now).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Record a finished draft or render with its `adshot.completed` event, fenced on the
    /// lease. False when the lease was lost.
    pub async fn complete_adshot(
        &self,
        task_id: &str,
        worker: &str,
        id: &str,
        done: &AdshotDone,
        completed_event: &serde_json::Value,
        now: i64,
    ) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        if !Self::finish_task(&mut tx, task_id, worker, "done", None, now).await? {
            tx.rollback().await?;
            return Ok(false);
        }
        let row: Option<(String,)> = sqlx::query_as(
            "UPDATE adshots SET status = 'done', stage = NULL, progress = 100, draft = COALESCE($1, draft), \
             files = $2, video_key = $3, thumb_key = $4, duration_ms = $5, width = $6, height = $7, \
             meta = $8, error = NULL, completed_at = $9 \
             WHERE id = $10 AND status IN ('pending', 'processing') RETURNING user_id",
        )
        .bind(done.draft.clone())
        .bind(Json(&done.files))
        .bind(done.video_key.clone())
        .bind(done.thumb_key.clone())
        .bind(done.duration_ms)
        .bind(done.width)
        .bind(done.height)
        .bind(done.meta.clone())
        .bind(now)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((user_id,)) = &row {
            append_event(&mut tx, user_id, id, "adshot.status", &serde_json::json!({"status": "done"}), now).await?;
            crate::webhooks::emit(&mut tx, user_id, "adshot.completed", completed_event, now, None).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Record a permanent failure with its `adshot.failed` event (`failed_event`, to which
    /// `error` is added), fenced on the lease. `refund` gives the job's actions back.
    #[allow(clippy::too_many_arguments)]
    pub async fn fail_adshot(
        &self,
        task_id: &str,
        worker: &str,
        id: &str,
        error: &str,
        refund_actions: bool,
        failed_event: &serde_json::Value,
        now: i64,
    ) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        if !Self::finish_task(&mut tx, task_id, worker, "failed", Some(error), now).await? {
            tx.rollback().await?;
            return Ok(false);
        }
        let row: Option<(String, Option<String>, i64, String)> = sqlx::query_as(
            "UPDATE adshots SET status = 'failed', error = $1, completed_at = $2 \
             WHERE id = $3 AND status IN ('pending', 'processing') \
             RETURNING user_id, key_id, actions, usage_month",
        )
        .bind(error)
        .bind(now)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((user_id, key_id, actions, month)) = &row {
            if refund_actions {
                crate::ledger::give_back(&mut tx, user_id, key_id.as_deref(), "refund", id, *actions, month, now)
                    .await?;
            }
            let data = serde_json::json!({"status": "failed", "error": error});
            append_event(&mut tx, user_id, id, "adshot.status", &data, now).await?;
            let mut event = failed_event.clone();
            if let Some(obj) = event.as_object_mut() {
                obj.insert("error".into(), error.into());
            }
            crate::webhooks::emit(&mut tx, user_id, "adshot.failed", &event, now, None).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Ad job counts by kind and status (metrics).
    pub async fn count_adshots_by_status(&self) -> Result<Vec<(String, String, i64)>> {
        let rows: Vec<(String, String, i64)> =
            sqlx::query_as("SELECT kind, status, COUNT(*) FROM adshots GROUP BY kind, status")
                .fetch_all(&self.pool)
                .await?;
        Ok(rows)
    }
}
