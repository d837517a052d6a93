//! Monitors and their checks (issue 42). A monitor is owned by one account; its schedule,
//! capture options, comparison and notifications are stored as the server checked them (JSON
//! where they are structured). The scheduler reads the due ones and claims each run by moving
//! `next_run_at` on from the value it read: a compare-and-set, so one check runs per due time
//! however many nodes look, and a monitor paused or deleted meanwhile is not run.

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::db::{Backend, Result, Store, placeholders};

/// A monitor.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorRow {
    pub id: String,
    pub user_id: String,
    pub name: String,
    pub url: String,
    /// The schedule as JSON (`{"every": "15m"}` or `{"cron": …, "timezone": …}`).
    pub schedule: String,
    /// The checked capture options as JSON.
    pub capture: String,
    /// `pixels`, `text` or `both`.
    pub compare: String,
    pub threshold: f64,
    /// JSON list of CSS selectors.
    pub ignore_selectors: String,
    /// JSON `{email: [...]}`.
    pub notify: String,
    /// `auto` (a changed check becomes the baseline) or `manual`.
    pub baseline_mode: String,
    /// `active` or `paused`.
    pub status: String,
    pub baseline_check_id: Option<String>,
    /// When the next check is due (ms); None while paused.
    pub next_run_at: Option<i64>,
    /// Failed checks in a row.
    pub failures: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A check of a monitor.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorCheckRow {
    pub id: String,
    pub monitor_id: String,
    pub user_id: String,
    /// `pending`, `baseline`, `unchanged`, `changed` or `failed`.
    pub status: String,
    pub screenshot_id: Option<String>,
    pub diff_ratio: Option<f64>,
    /// JSON `[{x, y, w, h}]`.
    pub regions: Option<String>,
    pub diff_key: Option<String>,
    pub text_key: Option<String>,
    pub text_diff: Option<String>,
    pub error: Option<String>,
    pub created_at: i64,
    pub completed_at: Option<i64>,
    /// The file of the check's capture, and of the baseline's it was compared with.
    pub image_key: Option<String>,
    pub baseline_key: Option<String>,
}

/// How a check ended.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CheckOutcome {
    pub status: String,
    pub diff_ratio: Option<f64>,
    pub regions: Option<String>,
    pub diff_key: Option<String>,
    pub text_key: Option<String>,
    pub text_diff: Option<String>,
    pub error: Option<String>,
    pub image_key: Option<String>,
    pub baseline_key: Option<String>,
}

/// The webhook events a check's end emits in the same transaction: `monitor.changed` (when
/// it changed), and `monitor.failing` when its failure makes `at` failures in a row (once
/// per run of failures; `failures` is added to the data).
#[derive(Debug, Clone, Default)]
pub struct CheckEvents {
    /// The account the events go to (None: none are emitted).
    pub user_id: Option<String>,
    pub changed: Option<serde_json::Value>,
    pub failing: Option<(i64, serde_json::Value)>,
}

const COLS: &str = "id, user_id, name, url, schedule, capture, compare, threshold, ignore_selectors, notify, \
                    baseline_mode, status, baseline_check_id, next_run_at, failures, created_at, updated_at";
const CHECK_COLS: &str = "id, monitor_id, user_id, status, screenshot_id, diff_ratio, regions, diff_key, text_key, \
                          text_diff, error, created_at, completed_at, image_key, baseline_key";

fn monitor_from(r: &AnyRow) -> Result<MonitorRow> {
    Ok(MonitorRow {
        id: r.try_get("id")?,
        user_id: r.try_get("user_id")?,
        name: r.try_get("name")?,
        url: r.try_get("url")?,
        schedule: r.try_get("schedule")?,
        capture: r.try_get("capture")?,
        compare: r.try_get("compare")?,
        threshold: r.try_get("threshold")?,
        ignore_selectors: r.try_get("ignore_selectors")?,
        notify: r.try_get("notify")?,
        baseline_mode: r.try_get("baseline_mode")?,
        status: r.try_get("status")?,
        baseline_check_id: r.try_get("baseline_check_id")?,
        next_run_at: r.try_get("next_run_at")?,
        failures: r.try_get("failures")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

fn check_from(r: &AnyRow) -> Result<MonitorCheckRow> {
    Ok(MonitorCheckRow {
        id: r.try_get("id")?,
        monitor_id: r.try_get("monitor_id")?,
        user_id: r.try_get("user_id")?,
        status: r.try_get("status")?,
        screenshot_id: r.try_get("screenshot_id")?,
        diff_ratio: r.try_get("diff_ratio")?,
        regions: r.try_get("regions")?,
        diff_key: r.try_get("diff_key")?,
        text_key: r.try_get("text_key")?,
        text_diff: r.try_get("text_diff")?,
        error: r.try_get("error")?,
        created_at: r.try_get("created_at")?,
        completed_at: r.try_get("completed_at")?,
        image_key: r.try_get("image_key")?,
        baseline_key: r.try_get("baseline_key")?,
    })
}

impl Store {
    /// Store a new monitor unless its account already has `max` (None: no bound); false when
    /// it has. Creates of one account are serialised, so the bound holds under concurrency.
    pub async fn create_monitor(&self, m: &MonitorRow, max: Option<i64>) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        if let Some(max) = max {
            if self.backend == Backend::Postgres {
                sqlx::query("SELECT id FROM users WHERE id = $1 FOR UPDATE").bind(&m.user_id).execute(&mut *tx).await?;
            }
            let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM monitors WHERE user_id = $1")
                .bind(&m.user_id)
                .fetch_one(&mut *tx)
                .await?;
            if n >= max {
                tx.rollback().await?;
                return Ok(false);
            }
        }
        sqlx::query(sqlf!(
            "INSERT INTO monitors ({COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)"
        ))
        .bind(&m.id)
        .bind(&m.user_id)
        .bind(&m.name)
        .bind(&m.url)
        .bind(&m.schedule)
        .bind(&m.capture)
        .bind(&m.compare)
        .bind(m.threshold)
        .bind(&m.ignore_selectors)
        .bind(&m.notify)
        .bind(&m.baseline_mode)
        .bind(&m.status)
        .bind(m.baseline_check_id.clone())
        .bind(m.next_run_at)
        .bind(m.failures)
        .bind(m.created_at)
        .bind(m.updated_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// A monitor of `user_id`; None when there is none or it is another's.
    pub async fn monitor(&self, user_id: &str, id: &str) -> Result<Option<MonitorRow>> {
        let row = sqlx::query(sqlf!("SELECT {COLS} FROM monitors WHERE user_id = $1 AND id = $2"))
            .bind(user_id)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(monitor_from).transpose()
    }

    /// An account's monitors, newest first, `limit` of them created before `before`
    /// (`(created_at, id)` of the last one of the previous page).
    pub async fn list_monitors(
        &self,
        user_id: &str,
        before: Option<(i64, &str)>,
        limit: i64,
    ) -> Result<Vec<MonitorRow>> {
        let (at, id) = before.unwrap_or((i64::MAX, ""));
        let rows = sqlx::query(sqlf!(
            "SELECT {COLS} FROM monitors WHERE user_id = $1 AND (created_at < $2 OR (created_at = $2 AND id < $3) \
             OR CAST($4 AS BIGINT) = 1) ORDER BY created_at DESC, id DESC LIMIT $5"
        ))
        .bind(user_id)
        .bind(at)
        .bind(id)
        .bind(i64::from(before.is_none()))
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(monitor_from).collect()
    }

    /// Write a monitor's settings, status, next run and baseline (its owner's; false when not theirs).
    pub async fn update_monitor(&self, m: &MonitorRow) -> Result<bool> {
        let res = sqlx::query(
            "UPDATE monitors SET name = $1, url = $2, schedule = $3, capture = $4, compare = $5, threshold = $6, \
             ignore_selectors = $7, notify = $8, baseline_mode = $9, status = $10, next_run_at = $11, updated_at = $12, \
             baseline_check_id = $15 WHERE user_id = $13 AND id = $14",
        )
        .bind(&m.name)
        .bind(&m.url)
        .bind(&m.schedule)
        .bind(&m.capture)
        .bind(&m.compare)
        .bind(m.threshold)
        .bind(&m.ignore_selectors)
        .bind(&m.notify)
        .bind(&m.baseline_mode)
        .bind(&m.status)
        .bind(m.next_run_at)
        .bind(m.updated_at)
        .bind(&m.user_id)
        .bind(&m.id)
        .bind(m.baseline_check_id.clone())
        .execute(&self.pool)
        .await?;
        Ok(res.rows_affected() > 0)
    }

    /// Delete a monitor of `user_id` and its checks; false when it is not theirs. A run
    /// already claimed finds it gone and records nothing.
    pub async fn delete_monitor(&self, user_id: &str, id: &str) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let res = sqlx::query("DELETE FROM monitors WHERE user_id = $1 AND id = $2")
            .bind(user_id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if res.rows_affected() == 0 {
            tx.rollback().await?;
            return Ok(false);
        }
        sqlx::query("DELETE FROM monitor_checks WHERE monitor_id = $1").bind(id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Active monitors due at `now`, the longest waiting first.
    pub async fn due_monitors(&self, now: i64, limit: i64) -> Result<Vec<MonitorRow>> {
        let rows = sqlx::query(sqlf!(
            "SELECT {COLS} FROM monitors WHERE status = 'active' AND next_run_at IS NOT NULL AND next_run_at <= $1 \
             ORDER BY next_run_at, id LIMIT $2"
        ))
        .bind(now)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(monitor_from).collect()
    }

    /// Claim the run of a monitor due at `due` (as read): its next run moves to `next`. False
    /// when another node claimed it first, or it was paused, changed or deleted meanwhile.
    pub async fn claim_monitor_run(&self, id: &str, due: i64, next: i64) -> Result<bool> {
        let res = sqlx::query(
            "UPDATE monitors SET next_run_at = $1 WHERE id = $2 AND status = 'active' AND next_run_at = $3",
        )
        .bind(next)
        .bind(id)
        .bind(due)
        .execute(&self.pool)
        .await?;
        Ok(res.rows_affected() > 0)
    }

    /// Store a new check (pending, or already failed when its capture was refused).
    pub async fn insert_monitor_check(&self, c: &MonitorCheckRow) -> Result<()> {
        sqlx::query(sqlf!(
            "INSERT INTO monitor_checks ({CHECK_COLS}) VALUES ($1, $2, $3, $4, $5, CASE WHEN $6 < 0 THEN NULL ELSE $6 END, \
             $7, $8, $9, $10, $11, $12, $13, $14, $15)"
        ))
        .bind(&c.id)
        .bind(&c.monitor_id)
        .bind(&c.user_id)
        .bind(&c.status)
        .bind(c.screenshot_id.clone())
        .bind(c.diff_ratio.unwrap_or(-1.0))
        .bind(c.regions.clone())
        .bind(c.diff_key.clone())
        .bind(c.text_key.clone())
        .bind(c.text_diff.clone())
        .bind(c.error.clone())
        .bind(c.created_at)
        .bind(c.completed_at)
        .bind(c.image_key.clone())
        .bind(c.baseline_key.clone())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// A pending check ended as `outcome` says. A `baseline` check, and a `changed` one when
    /// the monitor's baseline mode is `auto`, becomes the monitor's baseline; a `failed` one
    /// counts a failure in a row (any other ends the run of failures). Answers the monitor's
    /// failures in a row after it, or None when the check was not pending (ended already) or
    /// the monitor is gone.
    pub async fn complete_monitor_check(
        &self,
        check_id: &str,
        outcome: &CheckOutcome,
        now: i64,
        events: &CheckEvents,
    ) -> Result<Option<i64>> {
        let mut tx = self.begin_write().await?;
        let row: Option<(String,)> = sqlx::query_as(
            "UPDATE monitor_checks SET status = $1, diff_ratio = CASE WHEN $2 < 0 THEN NULL ELSE $2 END, regions = $3, diff_key = $4, text_key = $5, \
             text_diff = $6, error = $7, completed_at = $8, image_key = $10, baseline_key = $11 \
             WHERE id = $9 AND status = 'pending' RETURNING monitor_id",
        )
        .bind(&outcome.status)
        // Always a number (a missing ratio is -1): PostgreSQL keeps a parameter's type per
        // prepared statement, and a NULL first bound would fix it as another type.
        .bind(outcome.diff_ratio.unwrap_or(-1.0))
        .bind(outcome.regions.clone())
        .bind(outcome.diff_key.clone())
        .bind(outcome.text_key.clone())
        .bind(outcome.text_diff.clone())
        .bind(outcome.error.clone())
        .bind(now)
        .bind(check_id)
        .bind(outcome.image_key.clone())
        .bind(outcome.baseline_key.clone())
        .fetch_optional(&mut *tx)
        .await?;
        let Some((monitor_id,)) = row else {
            tx.rollback().await?;
            return Ok(None);
        };
        let failed = outcome.status == "failed";
        let became_baseline = outcome.status == "baseline" || outcome.status == "changed";
        let updated: Option<(i64,)> = sqlx::query_as(
            "UPDATE monitors SET failures = CASE WHEN CAST($1 AS BIGINT) = 1 THEN failures + 1 ELSE 0 END, \
             baseline_check_id = CASE WHEN CAST($2 AS BIGINT) = 1 AND (CAST($3 AS TEXT) = 'baseline' OR baseline_mode = 'auto') THEN $4 \
             ELSE baseline_check_id END WHERE id = $5 RETURNING failures",
        )
        .bind(i64::from(failed))
        .bind(i64::from(became_baseline))
        .bind(&outcome.status)
        .bind(check_id)
        .bind(&monitor_id)
        .fetch_optional(&mut *tx)
        .await?;
        if let (Some((failures,)), Some(user_id)) = (updated, &events.user_id) {
            if let Some(changed) = &events.changed {
                crate::webhooks::emit(&mut tx, user_id, "monitor.changed", changed, now, None).await?;
            }
            if let Some((at, failing)) = &events.failing
                && failures == *at
            {
                let mut data = failing.clone();
                data["failures"] = serde_json::Value::from(failures);
                crate::webhooks::emit(&mut tx, user_id, "monitor.failing", &data, now, None).await?;
            }
        }
        tx.commit().await?;
        Ok(updated.map(|(n,)| n))
    }

    /// Pending checks whose capture has ended (done or failed) or is gone, oldest first: the
    /// ones to compare now.
    pub async fn monitor_checks_ready(&self, limit: i64) -> Result<Vec<MonitorCheckRow>> {
        let cols = CHECK_COLS.split(", ").map(|c| format!("c.{c}")).collect::<Vec<_>>().join(", ");
        let rows = sqlx::query(sqlf!(
            "SELECT {cols} FROM monitor_checks c LEFT JOIN screenshots s ON s.id = c.screenshot_id \
             WHERE c.status = 'pending' AND (s.id IS NULL OR s.status IN ('done', 'failed')) \
             ORDER BY c.created_at, c.id LIMIT $1"
        ))
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(check_from).collect()
    }

    /// The check a screenshot was taken for, if any (of `user_id`'s).
    pub async fn monitor_check_of_screenshot(
        &self,
        user_id: &str,
        screenshot_id: &str,
    ) -> Result<Option<MonitorCheckRow>> {
        let row =
            sqlx::query(sqlf!("SELECT {CHECK_COLS} FROM monitor_checks WHERE user_id = $1 AND screenshot_id = $2"))
                .bind(user_id)
                .bind(screenshot_id)
                .fetch_optional(&self.pool)
                .await?;
        row.as_ref().map(check_from).transpose()
    }

    /// Is any check (of any monitor) waiting for its capture? (The scheduler listens for ended
    /// jobs only while one is.)
    pub async fn monitor_checks_waiting(&self) -> Result<bool> {
        let row: Option<(String,)> = sqlx::query_as("SELECT id FROM monitor_checks WHERE status = 'pending' LIMIT 1")
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.is_some())
    }

    /// Is a check of this monitor still waiting for its capture? (A due run is skipped while one is.)
    pub async fn monitor_check_pending(&self, monitor_id: &str) -> Result<bool> {
        let row: Option<(String,)> =
            sqlx::query_as("SELECT id FROM monitor_checks WHERE monitor_id = $1 AND status = 'pending' LIMIT 1")
                .bind(monitor_id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.is_some())
    }

    /// A check of `user_id`'s by id.
    pub async fn monitor_check(&self, user_id: &str, id: &str) -> Result<Option<MonitorCheckRow>> {
        let row = sqlx::query(sqlf!("SELECT {CHECK_COLS} FROM monitor_checks WHERE user_id = $1 AND id = $2"))
            .bind(user_id)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(check_from).transpose()
    }

    /// A monitor's checks, newest first, `limit` of them created before `before`.
    pub async fn monitor_checks(
        &self,
        user_id: &str,
        monitor_id: &str,
        before: Option<(i64, &str)>,
        limit: i64,
    ) -> Result<Vec<MonitorCheckRow>> {
        let (at, id) = before.unwrap_or((i64::MAX, ""));
        let rows = sqlx::query(sqlf!(
            "SELECT {CHECK_COLS} FROM monitor_checks WHERE user_id = $1 AND monitor_id = $2 \
             AND (created_at < $3 OR (created_at = $3 AND id < $4) OR CAST($5 AS BIGINT) = 1) ORDER BY created_at DESC, id DESC LIMIT $6"
        ))
        .bind(user_id)
        .bind(monitor_id)
        .bind(at)
        .bind(id)
        .bind(i64::from(before.is_none()))
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(check_from).collect()
    }

    /// The newest check of each of `user_id`'s monitors named (one query for a page of
    /// monitors, not one per monitor); a monitor with no check, or another account's, is absent.
    pub async fn latest_monitor_checks(
        &self,
        user_id: &str,
        monitor_ids: &[&str],
    ) -> Result<std::collections::HashMap<String, MonitorCheckRow>> {
        if monitor_ids.is_empty() {
            return Ok(Default::default());
        }
        let list = placeholders(2, monitor_ids.len());
        let sql = sqlf!(
            "SELECT {CHECK_COLS} FROM (SELECT {CHECK_COLS}, \
             ROW_NUMBER() OVER (PARTITION BY monitor_id ORDER BY created_at DESC, id DESC) AS newest \
             FROM monitor_checks WHERE user_id = $1 AND monitor_id IN ({list})) latest WHERE newest = 1"
        );
        let mut q = sqlx::query(sql).bind(user_id);
        for id in monitor_ids {
            q = q.bind(*id);
        }
        let rows = q.fetch_all(&self.pool).await?;
        rows.iter().map(check_from).map(|c| c.map(|c| (c.monitor_id.clone(), c))).collect()
    }

    /// Accept a done check (not a failed or pending one) of the monitor as its baseline; false
    /// when the check is not one of this monitor's, of this account, or did not succeed.
    pub async fn set_monitor_baseline(
        &self,
        user_id: &str,
        monitor_id: &str,
        check_id: &str,
        now: i64,
    ) -> Result<bool> {
        let res = sqlx::query(
            "UPDATE monitors SET baseline_check_id = $1, updated_at = $2 WHERE user_id = $3 AND id = $4 AND EXISTS \
             (SELECT 1 FROM monitor_checks c WHERE c.id = $1 AND c.monitor_id = $4 AND c.user_id = $3 \
              AND c.status IN ('baseline', 'unchanged', 'changed'))",
        )
        .bind(check_id)
        .bind(now)
        .bind(user_id)
        .bind(monitor_id)
        .execute(&self.pool)
        .await?;
        Ok(res.rows_affected() > 0)
    }
}
