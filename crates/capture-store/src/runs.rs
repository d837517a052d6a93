//! Browser session runs: creation with their actions reserved (and the account's bound on
//! active runs checked) in one transaction, reads and a stable cursor, the worker's claim
//! and lease, step progress, stop requests, and finalisation **exactly once**: every end —
//! the worker's own, a stop of a run nobody holds, the sweep of a run whose worker died —
//! is one conditional update from an active state, so only the first wins and only it
//! emits `run.completed` or `run.failed`, settles the actions and appends the final event.

use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};

use capture_core::{EndReason, RunKind, RunStatus};

use crate::db::{Result, Store, StoreError};
use crate::events::append_event;
use crate::ledger::{Charge, QuotaExceeded};
use crate::paid::{Made, Refused, Step, finish, settle};
use crate::shape::{Before, IdemResponse, Table};

/// A run as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub id: String,
    pub user_id: String,
    pub key_id: Option<String>,
    pub kind: RunKind,
    pub status: RunStatus,
    pub start_url: String,
    /// The emulated device (JSON).
    pub device: String,
    pub record_video: bool,
    pub timeout_ms: i64,
    /// The steps as requested (JSON array).
    pub steps: String,
    /// Each step's outcome so far (JSON array).
    pub step_results: String,
    pub final_url: Option<String>,
    pub page_title: Option<String>,
    pub video_key: Option<String>,
    pub console_error_count: i64,
    pub network_error_count: i64,
    /// JSON arrays of the entries behind the counts.
    pub console_errors: String,
    pub network_errors: String,
    /// Why the run failed on its own account (a step, the page).
    pub error: Option<String>,
    /// Why finishing it failed (the encoder, the browser, storage, a lost worker).
    pub finalization_error: Option<String>,
    /// How it ended.
    pub end_reason: Option<EndReason>,
    pub connect_token_hash: Option<String>,
    pub connect_expires_at: Option<i64>,
    pub stop_requested: bool,
    pub actions_reserved: i64,
    pub actions_charged: i64,
    pub usage_month: String,
    pub worker: Option<String>,
    pub lease_until: Option<i64>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub ended_at: Option<i64>,
    /// The OAuth client that started it as an automation session (None: an API key, the website).
    pub client_id: Option<String>,
    /// Whether the account's other OAuth clients may use it too.
    pub shared: bool,
    /// The profile it starts from (its id).
    pub profile_id: Option<String>,
    /// The profile (id or name) its state is saved into when it ends.
    pub save_profile: Option<String>,
    /// Its `cookieConsent` (the wire name: auto, reject, accept, hide, none).
    pub cookie_consent: String,
    /// The customer's proxy it leaves through (its id), and the pool member chosen.
    pub proxy_id: Option<String>,
    pub proxy_member: Option<i64>,
}

impl RunRow {
    /// Whether the run has ended.
    pub fn is_final(&self) -> bool {
        self.status.is_final()
    }
}

/// A run to create.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub id: String,
    pub user_id: String,
    pub key_id: Option<String>,
    pub kind: RunKind,
    pub start_url: String,
    pub device: String,
    pub record_video: bool,
    pub timeout_ms: i64,
    pub steps: String,
    /// SHA-256 (hex) of the live run's connect token, and when it expires.
    pub connect_token_hash: Option<String>,
    pub connect_expires_at: Option<i64>,
    /// Actions wanted (1 per started minute of the timeout); fewer are reserved when only
    /// fewer remain in the month (the run is then cut off when they run out), none refused.
    pub actions_wanted: i64,
    pub month: String,
    /// The monthly cap (None: unlimited).
    pub limit: Option<i64>,
    /// ISO time the monthly window resets (for `quota.warning`).
    pub reset_at: String,
    pub now: i64,
    /// Runs one account may have pending or running at once (None: unbounded).
    pub max_active: Option<i64>,
    /// Queue a `run` task with this payload (scripted runs); live runs wait for their client.
    pub task_payload: Option<String>,
    /// The OAuth client that started it as an automation session (None: an API key, the website).
    pub client_id: Option<String>,
    /// Whether the account's other OAuth clients may use it too.
    pub shared: bool,
    /// The profile it starts from (its id).
    pub profile_id: Option<String>,
    /// The profile (id or name) its state is saved into when it ends.
    pub save_profile: Option<String>,
    /// Its `cookieConsent` (the wire name).
    pub cookie_consent: String,
    /// The customer's proxy (its id) and the pool member chosen.
    pub proxy_id: Option<String>,
    pub proxy_member: Option<i64>,
}

crate::ledger::charged_by!(NewRun, actions_wanted);

/// How a run ends: everything the final update writes.
#[derive(Debug, Clone, Default)]
pub struct RunEnd {
    pub id: String,
    /// Completed, failed or stopped.
    pub status: RunStatus,
    pub end_reason: EndReason,
    pub final_url: Option<String>,
    pub page_title: Option<String>,
    pub video_key: Option<String>,
    pub console_error_count: i64,
    pub network_error_count: i64,
    pub console_errors: Option<String>,
    pub network_errors: Option<String>,
    /// Replaces the stored step results when Some.
    pub step_results: Option<String>,
    pub error: Option<String>,
    pub finalization_error: Option<String>,
    /// Actions the run costs (at most the reserved ones; the rest are given back).
    pub charged: i64,
    /// `run.completed` or `run.failed`, and its data.
    pub event_type: String,
    pub event: Value,
    /// The worker's task, closed in the same transaction (fenced on its lease).
    pub task: Option<(String, String)>,
    /// End the run only if nobody has started it (a stop before a worker took it).
    pub only_if_pending: bool,
    pub now: i64,
}

const COLS: &str = "id, user_id, key_id, kind, status, start_url, device, record_video, timeout_ms, steps, \
    step_results, final_url, page_title, video_key, console_error_count, network_error_count, console_errors, \
    network_errors, error, finalization_error, end_reason, connect_token_hash, connect_expires_at, stop_requested, \
    actions_reserved, actions_charged, usage_month, worker, lease_until, created_at, started_at, ended_at, client_id, shared, \
    profile_id, save_profile, cookie_consent, proxy_id, proxy_member";
/// The reads of a row by id, of a page, and of a created row.
const TABLE: Table = Table::new("runs", COLS);

const ACTIVE: &str = "status IN ('pending', 'running')";

/// A state column read as its enum (an unknown name is corrupt data).
fn state<T>(r: &AnyRow, col: &str, parse: fn(&str) -> Option<T>) -> Result<T> {
    let s: String = r.try_get(col)?;
    parse(&s).ok_or_else(|| StoreError::Corrupt(format!("run {col} '{s}'")))
}

fn row_from(r: &AnyRow) -> Result<RunRow> {
    Ok(RunRow {
        id: r.try_get("id")?,
        user_id: r.try_get("user_id")?,
        key_id: r.try_get("key_id")?,
        kind: state(r, "kind", RunKind::parse)?,
        status: state(r, "status", RunStatus::parse)?,
        start_url: r.try_get("start_url")?,
        device: r.try_get("device")?,
        record_video: r.try_get::<i64, _>("record_video")? != 0,
        timeout_ms: r.try_get("timeout_ms")?,
        steps: r.try_get("steps")?,
        step_results: r.try_get("step_results")?,
        final_url: r.try_get("final_url")?,
        page_title: r.try_get("page_title")?,
        video_key: r.try_get("video_key")?,
        console_error_count: r.try_get("console_error_count")?,
        network_error_count: r.try_get("network_error_count")?,
        console_errors: r.try_get("console_errors")?,
        network_errors: r.try_get("network_errors")?,
        error: r.try_get("error")?,
        finalization_error: r.try_get("finalization_error")?,
        end_reason: match r.try_get::<Option<String>, _>("end_reason")? {
            None => None,
            Some(s) => Some(EndReason::parse(&s).ok_or_else(|| StoreError::Corrupt(format!("run end_reason '{s}'")))?),
        },
        connect_token_hash: r.try_get("connect_token_hash")?,
        connect_expires_at: r.try_get("connect_expires_at")?,
        stop_requested: r.try_get::<i64, _>("stop_requested")? != 0,
        actions_reserved: r.try_get("actions_reserved")?,
        actions_charged: r.try_get("actions_charged")?,
        usage_month: r.try_get("usage_month")?,
        worker: r.try_get("worker")?,
        lease_until: r.try_get("lease_until")?,
        created_at: r.try_get("created_at")?,
        started_at: r.try_get("started_at")?,
        ended_at: r.try_get("ended_at")?,
        client_id: r.try_get("client_id")?,
        shared: r.try_get::<i64, _>("shared")? != 0,
        profile_id: r.try_get("profile_id")?,
        save_profile: r.try_get("save_profile")?,
        cookie_consent: r.try_get("cookie_consent")?,
        proxy_id: r.try_get("proxy_id")?,
        proxy_member: r.try_get("proxy_member")?,
    })
}

async fn status_event(
    tx: &mut Transaction<'static, Any>,
    user_id: &str,
    id: &str,
    data: &Value,
    now: i64,
) -> Result<()> {
    append_event(tx, user_id, id, "run.status", data, now).await
}

impl Store {
    /// Create a run: check the account's bound on active runs, reserve its actions (as many
    /// of `actions_wanted` as the month has left, at least one), insert it, queue its task
    /// (scripted) and its first event, and store the idempotent response — one transaction.
    /// Returns the row and the month's usage after it.
    pub async fn create_run(
        &self,
        n: &NewRun,
        idem: Option<IdemResponse<'_, RunRow>>,
    ) -> Result<std::result::Result<(RunRow, i64), Refused>> {
        let made = Made { table: &TABLE, id: &n.id, key_id: n.key_id.as_deref(), now: n.now, from_row: row_from, idem };
        let mut tx = self.begin_write().await?;
        let steps: Step<i64> = async {
            let tx = &mut tx;
            crate::admission::lock_account(tx, self.backend, &n.user_id).await?;
            if let Some(limit) = n.max_active {
                let (active,): (i64,) =
                    sqlx::query_as(sqlf!("SELECT COUNT(*) FROM runs WHERE user_id = $1 AND {ACTIVE}"))
                        .bind(&n.user_id)
                        .fetch_one(&mut **tx)
                        .await?;
                if active >= limit {
                    return Err(Refused::TooManyActive { active, limit }.into());
                }
            }
            // As many actions as the month has left, up to the wanted ones: the account row
            // lock (PostgreSQL) or the single writer (SQLite) keeps this read and the
            // reservation together.
            let wanted = n.actions_wanted.max(1);
            let actions = match n.limit {
                None => wanted,
                Some(limit) => {
                    let used = crate::ledger::month_used(tx, &n.user_id, &n.month).await?;
                    if limit - used < 1 {
                        return Err(QuotaExceeded { used }.into());
                    }
                    wanted.min(limit - used)
                }
            };
            let used = crate::ledger::reserve(tx, &Charge { actions, ..n.charge("run") }).await??;
            sqlx::query(
            "INSERT INTO runs (id, user_id, key_id, kind, status, start_url, device, record_video, timeout_ms, steps, \
             connect_token_hash, connect_expires_at, actions_reserved, usage_month, created_at, client_id, shared, \
             profile_id, save_profile, cookie_consent, proxy_id, proxy_member) \
             VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)",
        )
        .bind(&n.id)
        .bind(&n.user_id)
        .bind(n.key_id.clone())
        .bind(n.kind.as_str())
        .bind(&n.start_url)
        .bind(&n.device)
        .bind(crate::db::b(n.record_video))
        .bind(n.timeout_ms)
        .bind(&n.steps)
        .bind(n.connect_token_hash.clone())
        .bind(n.connect_expires_at)
        .bind(actions)
        .bind(&n.month)
        .bind(n.now)
        .bind(n.client_id.clone())
        .bind(crate::db::b(n.shared))
        .bind(n.profile_id.clone())
        .bind(n.save_profile.clone())
        .bind(&n.cookie_consent)
        .bind(n.proxy_id.clone())
        .bind(n.proxy_member)
        .execute(&mut **tx)
        .await?;
            if let Some(payload) = &n.task_payload {
                crate::queue::enqueue(tx, "run", &n.id, Some(&n.user_id), payload, n.now).await?;
            }
            status_event(tx, &n.user_id, &n.id, &serde_json::json!({"status": "pending"}), n.now).await?;
            Ok(used)
        }
        .await;
        settle(finish(tx, made, steps).await)
    }

    /// A run by id, whoever owns it (workers, the relay endpoint after its token check).
    pub async fn run(&self, id: &str) -> Result<Option<RunRow>> {
        TABLE.get(&self.pool, id, None, row_from).await
    }

    /// A run of `user_id` (None for someone else's).
    pub async fn run_of(&self, user_id: &str, id: &str) -> Result<Option<RunRow>> {
        TABLE.get(&self.pool, id, Some(user_id), row_from).await
    }

    /// Newest first; `before` is `(created_at, Some(id))` from a cursor or `(ts, None)`.
    pub async fn list_runs(&self, user_id: &str, before: Before, limit: i64) -> Result<Vec<RunRow>> {
        TABLE.page(&self.pool, user_id, before, None, limit, row_from).await
    }

    /// Start a pending scripted run on `worker`, holding it until `lease_until`. None when
    /// it is not pending any more (ended, stopped, or started by a worker that died: the
    /// caller then fails it with [`Store::finish_run`] if it is still active).
    pub async fn start_run(&self, id: &str, worker: &str, lease_until: i64, now: i64) -> Result<Option<RunRow>> {
        let mut tx = self.begin_write().await?;
        let row = sqlx::query(sqlf!(
            "UPDATE runs SET status = 'running', worker = $1, lease_until = $2, started_at = $3 \
             WHERE id = $4 AND status = 'pending' AND kind = 'scripted' AND stop_requested = 0 RETURNING {COLS}"
        ))
        .bind(worker)
        .bind(lease_until)
        .bind(now)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let row = row.as_ref().map(row_from).transpose()?;
        if let Some(r) = &row {
            status_event(&mut tx, &r.user_id, id, &serde_json::json!({"status": "running"}), now).await?;
        }
        tx.commit().await?;
        Ok(row)
    }

    /// A live run's client connects: spend the single-use token (its hash must match and
    /// it must not have expired) and start the run on `worker`. None when the token is
    /// wrong, used or expired, or the run is not waiting for its client.
    pub async fn claim_live_run(
        &self,
        id: &str,
        token_hash: &str,
        worker: &str,
        lease_until: i64,
        now: i64,
    ) -> Result<Option<RunRow>> {
        let mut tx = self.begin_write().await?;
        let row = sqlx::query(sqlf!(
            "UPDATE runs SET status = 'running', worker = $1, lease_until = $2, started_at = $3, \
             connect_token_hash = NULL WHERE id = $4 AND status = 'pending' AND kind = 'live' \
             AND connect_token_hash = $5 AND connect_expires_at > $3 AND stop_requested = 0 RETURNING {COLS}"
        ))
        .bind(worker)
        .bind(lease_until)
        .bind(now)
        .bind(id)
        .bind(token_hash)
        .fetch_optional(&mut *tx)
        .await?;
        let row = row.as_ref().map(row_from).transpose()?;
        if let Some(r) = &row {
            status_event(&mut tx, &r.user_id, id, &serde_json::json!({"status": "running"}), now).await?;
        }
        tx.commit().await?;
        Ok(row)
    }

    /// Extend the worker's hold on a running run. None when it no longer holds it (the run
    /// ended or was taken); otherwise whether a stop was requested.
    pub async fn heartbeat_run(&self, id: &str, worker: &str, lease_until: i64) -> Result<Option<bool>> {
        let row: Option<(i64,)> = sqlx::query_as(
            "UPDATE runs SET lease_until = $1 WHERE id = $2 AND worker = $3 AND status = 'running' \
             RETURNING stop_requested",
        )
        .bind(lease_until)
        .bind(id)
        .bind(worker)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|(s,)| s != 0))
    }

    /// Record the step results so far (with a `run.step` event for streams), while the
    /// worker holds the run. False when it does not.
    pub async fn record_run_step(&self, id: &str, worker: &str, results: &str, step: &Value, now: i64) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let row: Option<(String,)> = sqlx::query_as(
            "UPDATE runs SET step_results = $1 WHERE id = $2 AND worker = $3 AND status = 'running' RETURNING user_id",
        )
        .bind(results)
        .bind(id)
        .bind(worker)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((user_id,)) = row else {
            tx.rollback().await?;
            return Ok(false);
        };
        append_event(&mut tx, &user_id, id, "run.step", step, now).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Ask an active run of `user_id` to stop: its worker sees the request at its next
    /// heartbeat. Returns the run (None: not the user's), so the caller can end at once a
    /// run nobody holds yet.
    pub async fn request_run_stop(&self, user_id: &str, id: &str) -> Result<Option<RunRow>> {
        sqlx::query(sqlf!("UPDATE runs SET stop_requested = 1 WHERE id = $1 AND user_id = $2 AND {ACTIVE}"))
            .bind(id)
            .bind(user_id)
            .execute(&self.pool)
            .await?;
        self.run_of(user_id, id).await
    }

    /// End a run, once: the first end of an active run wins (later ones, and ends of a run
    /// already over, change nothing and return false). In the same transaction: the final
    /// fields, the settlement of its actions (the reserved ones beyond `charged` are given
    /// back), the final `run.status` event, `run.completed`/`run.failed` to the webhook
    /// outbox and, when given, the worker's task.
    pub async fn finish_run(&self, end: &RunEnd) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let row = sqlx::query(sqlf!(
            "UPDATE runs SET status = $1, end_reason = $2, final_url = COALESCE($3, final_url), \
             page_title = COALESCE($4, page_title), video_key = COALESCE($5, video_key), \
             console_error_count = $6, network_error_count = $7, \
             console_errors = COALESCE($8, console_errors), network_errors = COALESCE($9, network_errors), \
             step_results = COALESCE($10, step_results), error = $11, finalization_error = $12, \
             actions_charged = CASE WHEN $13 < actions_reserved THEN $13 ELSE actions_reserved END, \
             connect_token_hash = NULL, lease_until = NULL, ended_at = $14 \
             WHERE id = $15 AND {ACTIVE} AND ($16 = 0 OR status = 'pending') RETURNING {COLS}"
        ))
        .bind(end.status.as_str())
        .bind(end.end_reason.as_str())
        .bind(end.final_url.clone())
        .bind(end.page_title.clone())
        .bind(end.video_key.clone())
        .bind(end.console_error_count)
        .bind(end.network_error_count)
        .bind(end.console_errors.clone())
        .bind(end.network_errors.clone())
        .bind(end.step_results.clone())
        .bind(end.error.clone())
        .bind(end.finalization_error.clone())
        .bind(end.charged.max(0))
        .bind(end.now)
        .bind(&end.id)
        .bind(crate::db::b(end.only_if_pending))
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row.as_ref().map(row_from).transpose()? else {
            // Already ended: still close the caller's task, so it is not run again.
            if let Some((task, worker)) = &end.task {
                Self::finish_task(&mut tx, task, worker, "done", Some("the run had already ended"), end.now).await?;
            }
            tx.commit().await?;
            return Ok(false);
        };
        crate::ledger::give_back(
            &mut tx,
            &row.user_id,
            row.key_id.as_deref(),
            "run_settle",
            &row.id,
            row.actions_reserved - row.actions_charged,
            &row.usage_month,
            end.now,
        )
        .await?;
        let data = serde_json::json!({
            "status": end.status,
            "error": end.error,
            "finalizationError": end.finalization_error,
        });
        status_event(&mut tx, &row.user_id, &row.id, &data, end.now).await?;
        crate::webhooks::emit(&mut tx, &row.user_id, &end.event_type, &end.event, end.now, None).await?;
        if let Some((task, worker)) = &end.task {
            Self::finish_task(&mut tx, task, worker, "done", end.error.as_deref(), end.now).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Active runs nobody will end: running with an expired hold (their worker died or
    /// lost the database), or live runs whose client never came before the token expired
    /// (nor within `grace_ms` after it). The sweeper fails them with [`Store::finish_run`].
    pub async fn abandoned_runs(&self, now: i64, grace_ms: i64, limit: i64) -> Result<Vec<RunRow>> {
        let rows = sqlx::query(sqlf!(
            "SELECT {COLS} FROM runs WHERE (status = 'running' AND lease_until < $1) \
             OR (status = 'pending' AND kind = 'live' AND connect_expires_at < $2) \
             OR (status = 'pending' AND stop_requested = 1) \
             ORDER BY created_at LIMIT $3"
        ))
        .bind(now)
        .bind(now - grace_ms)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(row_from).collect()
    }

    /// Active runs of `user_id` (the concurrency bound, the dashboard).
    pub async fn active_runs(&self, user_id: &str) -> Result<i64> {
        let (n,): (i64,) = sqlx::query_as(sqlf!("SELECT COUNT(*) FROM runs WHERE user_id = $1 AND {ACTIVE}"))
            .bind(user_id)
            .fetch_one(&self.pool)
            .await?;
        Ok(n)
    }
}

impl Store {
    /// Record (or refresh) where node `node_id` can be reached by the other nodes.
    pub async fn advertise_node(&self, node_id: &str, internal_url: &str, has_browser: bool, now: i64) -> Result<()> {
        sqlx::query(
            "INSERT INTO cluster_nodes (node_id, internal_url, has_browser, seen_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (node_id) DO UPDATE SET internal_url = excluded.internal_url, \
             has_browser = excluded.has_browser, seen_at = excluded.seen_at",
        )
        .bind(node_id)
        .bind(internal_url)
        .bind(i64::from(has_browser))
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The internal address node `node_id` advertised, if it did.
    pub async fn node_url(&self, node_id: &str) -> Result<Option<String>> {
        let row: Option<(String,)> = sqlx::query_as("SELECT internal_url FROM cluster_nodes WHERE node_id = $1")
            .bind(node_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.0))
    }

    /// A node with a browser seen since `since` (one at random when there are several): its
    /// id and internal address.
    pub async fn browser_node(&self, since: i64) -> Result<Option<(String, String)>> {
        let row: Option<(String, String)> = sqlx::query_as(
            "SELECT node_id, internal_url FROM cluster_nodes WHERE has_browser = 1 AND seen_at >= $1 \
             ORDER BY random() LIMIT 1",
        )
        .bind(since)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row)
    }

    /// `user_id`'s running live runs held by nodes other than `node_id`, oldest first.
    pub async fn live_runs_elsewhere(&self, user_id: &str, node_id: &str) -> Result<Vec<RunRow>> {
        let rows = sqlx::query(sqlf!(
            "SELECT {COLS} FROM runs WHERE user_id = $1 AND kind = 'live' AND status = 'running' \
             AND worker IS NOT NULL AND worker <> $2 ORDER BY started_at, id"
        ))
        .bind(user_id)
        .bind(node_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(row_from).collect()
    }
}
