//! Audit campaigns: campaigns and their rows (a website and a recipient), their scheduling
//! and the row states the scheduler moves them through. Sending (the outbox, the daily
//! counters and sender limits) is in [`sending`]; per-account suppressions in [`suppressions`].

mod sending;
mod suppressions;

use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};

use capture_core::{CampaignStatus, TargetState};

use crate::db::{Result, Store, StoreError};
use crate::shape::{Before, Table, created};

pub use sending::{Reservation, Reserved, SenderLimits};
pub use suppressions::{Suppression, SuppressionReason, SuppressionSource, Unsuppressed};

/// A campaign.
#[derive(Debug, Clone, PartialEq)]
pub struct CampaignRecord {
    pub id: String,
    pub user_id: String,
    pub key_id: Option<String>,
    pub name: String,
    pub status: CampaignStatus,
    pub send_at: i64,
    pub timezone: String,
    pub report_type: String,
    pub send_hours: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub launched_at: Option<i64>,
    pub completed_at: Option<i64>,
}

/// A row of a campaign: a website, a recipient, and where its report and mail stand.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetRecord {
    pub id: String,
    pub campaign_id: String,
    pub user_id: String,
    pub website_url: String,
    pub recipient_email: String,
    /// The address lower-cased (suppressions and duplicates compare on it).
    pub email_key: String,
    pub recipient_domain: String,
    pub report_type: String,
    pub state: TargetState,
    /// Why it waits (non-final states) or why it ended (skipped, failed).
    pub reason: Option<String>,
    pub audit_id: Option<String>,
    pub unsubscribe_token: String,
    pub message_id: Option<String>,
    pub next_check_at: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub sent_at: Option<i64>,
}

/// A row to add.
#[derive(Debug, Clone)]
pub struct NewTarget {
    pub id: String,
    pub website_url: String,
    pub recipient_email: String,
    pub email_key: String,
    pub recipient_domain: String,
    pub report_type: String,
    pub unsubscribe_token: String,
}

/// A campaign to create.
#[derive(Debug, Clone)]
pub struct NewCampaign {
    pub id: String,
    pub user_id: String,
    pub key_id: Option<String>,
    pub name: String,
    pub send_at: i64,
    pub timezone: String,
    pub report_type: String,
    pub send_hours: String,
    pub now: i64,
}

/// Why rows were not added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddRefused {
    /// No such campaign for this account.
    NotFound,
    /// The campaign is completed or cancelled.
    Closed(CampaignStatus),
    /// The campaign would hold more than its bound.
    TooMany { existing: i64, max: i64 },
}

/// A row due for the scheduler, with what it needs of its campaign.
#[derive(Debug, Clone, PartialEq)]
pub struct DueTarget {
    pub target: TargetRecord,
    pub campaign_status: CampaignStatus,
    pub campaign_name: String,
    pub send_at: i64,
    pub timezone: String,
    pub send_hours: String,
}

const CAMPAIGN_COLS: &str = "id, user_id, key_id, name, status, send_at, timezone, report_type, send_hours, \
    created_at, updated_at, launched_at, completed_at";
/// The reads of a row by id, of a page, and of a created row.
const TABLE: Table = Table::new("campaigns", CAMPAIGN_COLS);
const TARGET_COLS: &str = "t.id, t.campaign_id, t.user_id, t.website_url, t.recipient_email, t.email_key, \
    t.recipient_domain, t.report_type, t.state, t.reason, t.audit_id, t.unsubscribe_token, t.message_id, \
    t.next_check_at, t.created_at, t.updated_at, t.sent_at";

/// Row states the scheduler still works on.
pub const OPEN_STATES: &str = "('pending', 'auditing', 'ready')";

fn campaign_from(r: &AnyRow) -> Result<CampaignRecord> {
    Ok(CampaignRecord {
        id: r.try_get("id")?,
        user_id: r.try_get("user_id")?,
        key_id: r.try_get("key_id")?,
        name: r.try_get("name")?,
        status: {
            let s: String = r.try_get("status")?;
            CampaignStatus::parse(&s).ok_or_else(|| StoreError::Corrupt(format!("campaign status '{s}'")))?
        },
        send_at: r.try_get("send_at")?,
        timezone: r.try_get("timezone")?,
        report_type: r.try_get("report_type")?,
        send_hours: r.try_get("send_hours")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
        launched_at: r.try_get("launched_at")?,
        completed_at: r.try_get("completed_at")?,
    })
}

fn target_from(r: &AnyRow) -> Result<TargetRecord> {
    Ok(TargetRecord {
        id: r.try_get("id")?,
        campaign_id: r.try_get("campaign_id")?,
        user_id: r.try_get("user_id")?,
        website_url: r.try_get("website_url")?,
        recipient_email: r.try_get("recipient_email")?,
        email_key: r.try_get("email_key")?,
        recipient_domain: r.try_get("recipient_domain")?,
        report_type: r.try_get("report_type")?,
        state: {
            let s: String = r.try_get("state")?;
            TargetState::parse(&s).ok_or_else(|| StoreError::Corrupt(format!("campaign row state '{s}'")))?
        },
        reason: r.try_get("reason")?,
        audit_id: r.try_get("audit_id")?,
        unsubscribe_token: r.try_get("unsubscribe_token")?,
        message_id: r.try_get("message_id")?,
        next_check_at: r.try_get("next_check_at")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
        sent_at: r.try_get("sent_at")?,
    })
}

/// Insert rows (duplicates of the campaign, same address and website, are skipped); the
/// number inserted.
async fn insert_targets(
    tx: &mut Transaction<'static, Any>,
    campaign_id: &str,
    user_id: &str,
    rows: &[NewTarget],
    now: i64,
) -> Result<i64> {
    let mut inserted = 0;
    for t in rows {
        let res = sqlx::query(
            "INSERT INTO campaign_rows (id, campaign_id, user_id, website_url, recipient_email, email_key, \
             recipient_domain, report_type, state, unsubscribe_token, next_check_at, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, 0, $10, $10) \
             ON CONFLICT (campaign_id, email_key, website_url) DO NOTHING",
        )
        .bind(&t.id)
        .bind(campaign_id)
        .bind(user_id)
        .bind(&t.website_url)
        .bind(&t.recipient_email)
        .bind(&t.email_key)
        .bind(&t.recipient_domain)
        .bind(&t.report_type)
        .bind(&t.unsubscribe_token)
        .bind(now)
        .execute(&mut **tx)
        .await?;
        inserted += res.rows_affected() as i64;
    }
    Ok(inserted)
}

async fn count_targets(tx: &mut Transaction<'static, Any>, campaign_id: &str) -> Result<i64> {
    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM campaign_rows WHERE campaign_id = $1")
        .bind(campaign_id)
        .fetch_one(&mut **tx)
        .await?;
    Ok(n)
}

impl Store {
    /// Create a campaign (`draft`) with its first rows, duplicates stored once — one
    /// transaction. Returns the campaign and the number of rows stored.
    pub async fn create_campaign(&self, c: &NewCampaign, rows: &[NewTarget]) -> Result<(CampaignRecord, i64)> {
        let mut tx = self.begin_write().await?;
        sqlx::query(
            "INSERT INTO campaigns (id, user_id, key_id, name, status, send_at, timezone, report_type, send_hours, \
             created_at, updated_at) VALUES ($1, $2, $3, $4, 'draft', $5, $6, $7, $8, $9, $9)",
        )
        .bind(&c.id)
        .bind(&c.user_id)
        .bind(c.key_id.clone())
        .bind(&c.name)
        .bind(c.send_at)
        .bind(&c.timezone)
        .bind(&c.report_type)
        .bind(&c.send_hours)
        .bind(c.now)
        .execute(&mut *tx)
        .await?;
        let inserted = insert_targets(&mut tx, &c.id, &c.user_id, rows, c.now).await?;
        // Without an Idempotency-Key here: the route stores the campaign's response itself.
        let rec = created(&mut tx, &TABLE, &c.id, None, campaign_from, None).await?;
        tx.commit().await?;
        Ok((rec.ok_or(StoreError::NotFound)?, inserted))
    }

    /// Add rows to a campaign of `user_id` that has not completed (nor been cancelled),
    /// refusing when it would hold more than `max` rows. Returns the rows inserted
    /// (duplicates are not).
    pub async fn add_campaign_targets(
        &self,
        user_id: &str,
        campaign_id: &str,
        rows: &[NewTarget],
        max: i64,
        now: i64,
    ) -> Result<std::result::Result<i64, AddRefused>> {
        let mut tx = self.begin_write().await?;
        // Locks the campaign row on PostgreSQL so the bound and the completion check hold.
        let status: Option<(String,)> =
            sqlx::query_as("UPDATE campaigns SET updated_at = $1 WHERE id = $2 AND user_id = $3 RETURNING status")
                .bind(now)
                .bind(campaign_id)
                .bind(user_id)
                .fetch_optional(&mut *tx)
                .await?;
        let Some((status,)) = status else {
            tx.rollback().await?;
            return Ok(Err(AddRefused::NotFound));
        };
        match CampaignStatus::parse(&status) {
            Some(closed) if closed.is_closed() => {
                tx.rollback().await?;
                return Ok(Err(AddRefused::Closed(closed)));
            }
            Some(_) => {}
            None => return Err(StoreError::Corrupt(format!("campaign status '{status}'"))),
        }
        let inserted = insert_targets(&mut tx, campaign_id, user_id, rows, now).await?;
        let total = count_targets(&mut tx, campaign_id).await?;
        if total > max {
            tx.rollback().await?;
            return Ok(Err(AddRefused::TooMany { existing: total - inserted, max }));
        }
        tx.commit().await?;
        Ok(Ok(inserted))
    }

    /// A campaign of `user_id`.
    pub async fn campaign_of(&self, user_id: &str, id: &str) -> Result<Option<CampaignRecord>> {
        TABLE.get(&self.pool, id, Some(user_id), campaign_from).await
    }

    /// The campaigns of `user_id`, newest first; `before` is `(created_at, Some(id))`.
    pub async fn list_campaigns(&self, user_id: &str, before: Before, limit: i64) -> Result<Vec<CampaignRecord>> {
        TABLE.page(&self.pool, user_id, before, None, limit, campaign_from).await
    }

    /// The rows of a campaign, oldest first (at most `limit`), each with its audit's public
    /// report token once it has an audit.
    pub async fn campaign_targets(&self, campaign_id: &str, limit: i64) -> Result<Vec<(TargetRecord, Option<String>)>> {
        let rows = sqlx::query(sqlf!(
            "SELECT {TARGET_COLS}, a.share_token AS a_token FROM campaign_rows t \
             LEFT JOIN audits a ON a.id = t.audit_id \
             WHERE t.campaign_id = $1 ORDER BY t.created_at, t.id LIMIT $2"
        ))
        .bind(campaign_id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(|r| Ok((target_from(r)?, r.try_get("a_token")?))).collect()
    }

    /// A row by id.
    pub async fn campaign_target(&self, id: &str) -> Result<Option<TargetRecord>> {
        let row = sqlx::query(sqlf!("SELECT {TARGET_COLS} FROM campaign_rows t WHERE t.id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(target_from).transpose()
    }

    /// Rows of a campaign by state.
    pub async fn campaign_counts(&self, campaign_id: &str) -> Result<Vec<(String, i64)>> {
        Ok(sqlx::query_as("SELECT state, COUNT(*) FROM campaign_rows WHERE campaign_id = $1 GROUP BY state")
            .bind(campaign_id)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Move a campaign of `user_id` from one of `from` to `to` (stamping `launched_at` on
    /// `scheduled` the first time). Cancelling also skips every row not yet final. Returns the
    /// campaign as it is afterwards and whether it changed; None when it is not the caller's.
    pub async fn transition_campaign(
        &self,
        user_id: &str,
        id: &str,
        from: &[CampaignStatus],
        to: CampaignStatus,
        now: i64,
    ) -> Result<Option<(CampaignRecord, bool)>> {
        let mut tx = self.begin_write().await?;
        let list = from.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ");
        let res = sqlx::query(sqlf!(
            "UPDATE campaigns SET status = $1, updated_at = $2, \
             launched_at = CASE WHEN $1 = 'scheduled' AND launched_at IS NULL THEN $2 ELSE launched_at END, \
             completed_at = CASE WHEN $1 = 'cancelled' THEN $2 ELSE completed_at END \
             WHERE id = $3 AND user_id = $4 AND status IN ({list})"
        ))
        .bind(to.as_str())
        .bind(now)
        .bind(id)
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
        let changed = res.rows_affected() > 0;
        if changed && to == CampaignStatus::Scheduled {
            // Launched or resumed: every open row is looked at again now.
            sqlx::query(sqlf!(
                "UPDATE campaign_rows SET next_check_at = 0 WHERE campaign_id = $1 AND state IN {OPEN_STATES}"
            ))
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        if changed && to == CampaignStatus::Cancelled {
            sqlx::query(sqlf!(
                "UPDATE campaign_rows SET state = 'skipped', reason = 'cancelled', updated_at = $1 \
                 WHERE campaign_id = $2 AND state IN {OPEN_STATES} \
                 AND NOT EXISTS (SELECT 1 FROM campaign_outbox o WHERE o.row_id = campaign_rows.id \
                 AND o.state = 'sending')"
            ))
            .bind(now)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        let row = sqlx::query(sqlf!("SELECT {CAMPAIGN_COLS} FROM campaigns WHERE id = $1 AND user_id = $2"))
            .bind(id)
            .bind(user_id)
            .fetch_optional(&mut *tx)
            .await?;
        let rec = row.as_ref().map(campaign_from).transpose()?;
        tx.commit().await?;
        Ok(rec.map(|r| (r, changed)))
    }

    /// The scheduler's campaign steps: `scheduled` campaigns whose `sendAt` has come start
    /// `running`; `running` campaigns with rows and none left open complete. The number moved.
    ///
    /// Each completion is its own transaction that also queues `campaign.completed` (its row
    /// counts) in the webhook outbox, so the event exists exactly when the campaign is
    /// completed: once, whatever the number of loops and nodes racing here (the status change
    /// is fenced on `running`, and the campaign row is locked first — as adding rows locks it —
    /// so rows added meanwhile keep it running).
    pub async fn advance_campaigns(&self, now: i64) -> Result<u64> {
        let a = sqlx::query(
            "UPDATE campaigns SET status = 'running', updated_at = $1 WHERE status = 'scheduled' AND send_at <= $1",
        )
        .bind(now)
        .execute(&self.pool)
        .await?;
        let due: Vec<(String,)> = sqlx::query_as(sqlf!(
            "SELECT id FROM campaigns WHERE status = 'running' \
             AND EXISTS (SELECT 1 FROM campaign_rows r WHERE r.campaign_id = campaigns.id) \
             AND NOT EXISTS (SELECT 1 FROM campaign_rows r WHERE r.campaign_id = campaigns.id \
             AND r.state IN {OPEN_STATES}) ORDER BY id"
        ))
        .fetch_all(&self.pool)
        .await?;
        let mut moved = a.rows_affected();
        for (id,) in due {
            if self.complete_campaign(&id, now).await? {
                moved += 1;
            }
        }
        Ok(moved)
    }

    /// Complete a running campaign that has no open row, emitting `campaign.completed` in the
    /// same transaction. False when it is not running any more or a row is open again.
    async fn complete_campaign(&self, id: &str, now: i64) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        // Lock the campaign row (PostgreSQL) and fence on its status.
        let locked = sqlx::query(
            "UPDATE campaigns SET updated_at = $1 WHERE id = $2 AND status = 'running' \
             RETURNING user_id, name, send_at, timezone, launched_at",
        )
        .bind(now)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(c) = locked else {
            tx.rollback().await?;
            return Ok(false);
        };
        // A fresh statement after the lock sees rows another transaction added meanwhile.
        let by_state: Vec<(String, Option<String>, i64)> = sqlx::query_as(
            "SELECT state, reason, COUNT(*) FROM campaign_rows WHERE campaign_id = $1 GROUP BY state, reason \
             ORDER BY state, reason",
        )
        .bind(id)
        .fetch_all(&mut *tx)
        .await?;
        if by_state.is_empty() || by_state.iter().any(|(s, _, _)| TargetState::parse(s).is_none_or(|s| !s.is_final())) {
            tx.rollback().await?;
            return Ok(false);
        }
        sqlx::query("UPDATE campaigns SET status = 'completed', completed_at = $1 WHERE id = $2")
            .bind(now)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let user_id: String = c.try_get("user_id")?;
        let launched_at: Option<i64> = c.try_get("launched_at")?;
        let count = |state: &str| by_state.iter().filter(|(s, _, _)| s == state).map(|(_, _, n)| n).sum::<i64>();
        let mut reasons = serde_json::Map::new();
        for (state, reason, n) in &by_state {
            if let Some(r) = reason.as_ref().filter(|r| !r.is_empty() && (state == "skipped" || state == "failed")) {
                let e = reasons.entry(r.clone()).or_insert(serde_json::json!(0));
                *e = serde_json::json!(e.as_i64().unwrap_or(0) + n);
            }
        }
        let data = serde_json::json!({
            "campaignId": id,
            "name": c.try_get::<String, _>("name")?,
            "status": "completed",
            "counts": {
                "pending": 0, "auditing": 0, "ready": 0,
                "sent": count("sent"), "skipped": count("skipped"), "failed": count("failed"),
                "total": by_state.iter().map(|(_, _, n)| n).sum::<i64>(),
            },
            "reasons": reasons,
            "sendAt": capture_core::time::iso(c.try_get("send_at")?),
            "timezone": c.try_get::<String, _>("timezone")?,
            "launchedAt": launched_at.map(capture_core::time::iso),
            "completedAt": capture_core::time::iso(now),
        });
        crate::webhooks::emit(&mut tx, &user_id, "campaign.completed", &data, now, None).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Rows the scheduler should look at now: open rows of scheduled or running campaigns
    /// whose next check has come, soonest first.
    pub async fn due_campaign_targets(&self, now: i64, limit: i64) -> Result<Vec<DueTarget>> {
        let rows = sqlx::query(sqlf!(
            "SELECT {TARGET_COLS}, c.status AS c_status, c.name AS c_name, c.send_at AS c_send_at, \
             c.timezone AS c_timezone, c.send_hours AS c_send_hours \
             FROM campaign_rows t JOIN campaigns c ON c.id = t.campaign_id \
             WHERE t.state IN {OPEN_STATES} AND t.next_check_at <= $1 AND c.status IN ('scheduled', 'running') \
             ORDER BY t.next_check_at, t.id LIMIT $2"
        ))
        .bind(now)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(DueTarget {
                    target: target_from(r)?,
                    campaign_status: {
                        let s: String = r.try_get("c_status")?;
                        CampaignStatus::parse(&s)
                            .ok_or_else(|| StoreError::Corrupt(format!("campaign status '{s}'")))?
                    },
                    campaign_name: r.try_get("c_name")?,
                    send_at: r.try_get("c_send_at")?,
                    timezone: r.try_get("c_timezone")?,
                    send_hours: r.try_get("c_send_hours")?,
                })
            })
            .collect()
    }

    /// Claim a row to start its audit: `pending` (or `auditing` without an audit whose claim
    /// expired) → `auditing`, next check at `lease_until`. False when another worker has it.
    pub async fn claim_target_for_audit(&self, id: &str, now: i64, lease_until: i64) -> Result<bool> {
        let res = sqlx::query(
            "UPDATE campaign_rows SET state = 'auditing', reason = 'audit', next_check_at = $1, updated_at = $2 \
             WHERE id = $3 AND next_check_at <= $2 AND (state = 'pending' OR (state = 'auditing' AND audit_id IS NULL))",
        )
        .bind(lease_until)
        .bind(now)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(res.rows_affected() > 0)
    }

    /// Record the audit started for a row.
    pub async fn set_target_audit(&self, id: &str, audit_id: &str, next_check_at: i64, now: i64) -> Result<()> {
        sqlx::query(
            "UPDATE campaign_rows SET audit_id = $1, next_check_at = $2, updated_at = $3 WHERE id = $4 \
             AND state = 'auditing'",
        )
        .bind(audit_id)
        .bind(next_check_at)
        .bind(now)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Update an open row: its state (open), why it waits and when to look again.
    pub async fn target_wait(
        &self,
        id: &str,
        state: TargetState,
        reason: Option<&str>,
        next_check_at: i64,
        now: i64,
    ) -> Result<bool> {
        let change = RowChange { state: Some(state), reason, next_check_at: Some(next_check_at), ..OPEN_ROW };
        Ok(change.apply(&self.pool, id, now).await?.is_some())
    }

    /// End an open row as `skipped` or `failed` with its reason.
    pub async fn target_end(&self, id: &str, state: TargetState, reason: &str, now: i64) -> Result<bool> {
        let change = RowChange { state: Some(state), reason: Some(reason), ..OPEN_ROW };
        Ok(change.apply(&self.pool, id, now).await?.is_some())
    }
}

/// One change of a campaign row (its `updated_at` always moves). Start from [`ANY_ROW`],
/// [`OPEN_ROW`] or [`READY_ROW`], which say which rows it may change.
#[derive(Clone, Copy)]
struct RowChange<'a> {
    /// The new state; None keeps it.
    state: Option<TargetState>,
    /// Why it waits or ended: always written (None clears it).
    reason: Option<&'a str>,
    /// When the scheduler looks at it again; None keeps it.
    next_check_at: Option<i64>,
    /// The accepted mail's Message-ID (with `sent`, which also stamps `sent_at`).
    message_id: Option<&'a str>,
    /// Only a row in one of these states (a SQL list); None: whatever its state.
    only_in: Option<&'static str>,
}

/// A change of the row whatever its state (the caller holds it: a reserved send).
const ANY_ROW: RowChange<'static> =
    RowChange { state: None, reason: None, next_check_at: None, message_id: None, only_in: None };
/// A change of a row the scheduler still works on.
const OPEN_ROW: RowChange<'static> = RowChange { only_in: Some(OPEN_STATES), ..ANY_ROW };
/// A change of a row ready to send.
const READY_ROW: RowChange<'static> = RowChange { only_in: Some("('ready')"), ..ANY_ROW };

impl RowChange<'_> {
    /// Apply to row `id`: its (user id, address key, address) when it changed, None when it
    /// is gone or not in `only_in`.
    async fn apply<'e, E>(self, ex: E, id: &str, now: i64) -> Result<Option<(String, String, String)>>
    where
        E: sqlx::Executor<'e, Database = Any>,
    {
        let only_in = self.only_in.map(|states| format!(" AND state IN {states}")).unwrap_or_default();
        Ok(sqlx::query_as(sqlf!(
            "UPDATE campaign_rows SET state = COALESCE($1, state), reason = $2, \
             next_check_at = COALESCE($3, next_check_at), message_id = COALESCE($4, message_id), \
             sent_at = CASE WHEN $1 = 'sent' THEN $5 ELSE sent_at END, updated_at = $5 \
             WHERE id = $6{only_in} RETURNING user_id, email_key, recipient_email"
        ))
        .bind(self.state.map(TargetState::as_str))
        .bind(self.reason)
        .bind(self.next_check_at)
        .bind(self.message_id)
        .bind(now)
        .bind(id)
        .fetch_optional(ex)
        .await?)
    }
}
