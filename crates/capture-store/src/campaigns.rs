//! Audit campaigns: campaigns and their rows (a website and a recipient), per-account
//! suppressions, sender limits, the daily send counters and the outbox of campaign mail.
//!
//! The sending guarantees live here, in single transactions:
//! - [`Store::reserve_send`] checks the row is still sendable and its address not suppressed,
//!   claims the row's outbox entry (one per row: two workers can never both hold it) and takes
//!   one unit of the sender's and of the recipient domain's daily counter with a conditional
//!   increment (`sent < cap`), so the caps hold exactly whatever the number of workers or nodes;
//! - [`Store::finish_send_ok`] / [`Store::finish_send_rejected`] / [`Store::finish_send_retry`]
//!   record the outcome of the SMTP transaction on the outbox entry and the row together;
//! - [`Store::sweep_interrupted_sends`] settles entries whose worker died mid-send as
//!   `interrupted` (the row fails with `send_interrupted`): never re-sent, so a crash between
//!   SMTP acceptance and the commit cannot mail anyone twice.
//!
//! A suppression's reason says who made it ([`SuppressionSource`]): only the account's own
//! (`manual`) can be lifted; one the recipient made (unsubscribe, complaint) or the mail system
//! reported (a hard bounce) is permanent, and it replaces a `manual` one for the same address.
//! The delete is conditional on the reason in the same statement, so an unsubscribe that lands
//! while the tenant lifts its own suppression is never lost.

use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};

use capture_core::{CampaignStatus, TargetState};

use crate::db::{Result, Store, StoreError};
use crate::shape::{Before, Table, created};

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

/// A suppressed address of an account.
#[derive(Debug, Clone, PartialEq)]
pub struct Suppression {
    pub email: String,
    pub email_key: String,
    pub reason: SuppressionReason,
    pub detail: Option<String>,
    pub created_at: i64,
}

/// Why an address is suppressed (the `reason` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuppressionReason {
    /// The account suppressed it (`manual`).
    Manual,
    /// The recipient used the unsubscribe link (`unsubscribed`).
    Unsubscribed,
    /// The recipient reported the mail as spam (`complained`).
    Complained,
    /// The receiving server refused the address for good, a 5xx (`bounced`).
    Bounced,
}

/// Who made a suppression, which decides who may lift it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuppressionSource {
    /// The account itself: it may lift it.
    Tenant,
    /// The recipient (unsubscribe, complaint): permanent for the account.
    Recipient,
    /// The mail system (a hard bounce): permanent for the account.
    MailSystem,
}

impl SuppressionReason {
    /// The stored and wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            SuppressionReason::Manual => "manual",
            SuppressionReason::Unsubscribed => "unsubscribed",
            SuppressionReason::Complained => "complained",
            SuppressionReason::Bounced => "bounced",
        }
    }

    /// The reason a stored value names.
    pub fn parse(s: &str) -> Option<SuppressionReason> {
        [Self::Manual, Self::Unsubscribed, Self::Complained, Self::Bounced].into_iter().find(|r| r.as_str() == s)
    }

    /// Who makes suppressions for this reason.
    pub fn source(self) -> SuppressionSource {
        match self {
            SuppressionReason::Manual => SuppressionSource::Tenant,
            SuppressionReason::Unsubscribed | SuppressionReason::Complained => SuppressionSource::Recipient,
            SuppressionReason::Bounced => SuppressionSource::MailSystem,
        }
    }
}

impl SuppressionSource {
    /// The wire value (`tenant`, `recipient`, `mail_system`).
    pub fn as_str(self) -> &'static str {
        match self {
            SuppressionSource::Tenant => "tenant",
            SuppressionSource::Recipient => "recipient",
            SuppressionSource::MailSystem => "mail_system",
        }
    }

    /// Whether the account may lift a suppression from this source.
    pub fn liftable(self) -> bool {
        self == SuppressionSource::Tenant
    }
}

/// What [`Store::unsuppress`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Unsuppressed {
    /// The account's own suppression is gone.
    Lifted,
    /// The address is not suppressed for the account.
    NotSuppressed,
    /// The suppression came from the recipient or the mail system and stays.
    Permanent(Suppression),
}

/// A sender's manual limit and warmup schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct SenderLimits {
    pub sender: String,
    pub daily_limit: Option<i64>,
    pub warmup_start: i64,
    pub warmup_growth: i64,
    pub warmup_max: i64,
    /// The sender's first sending day (`YYYY-MM-DD`, UTC), once it sent.
    pub first_day: Option<String>,
    pub updated_at: i64,
}

/// One mail to reserve: the row, its outbox entry and the two counters with today's caps.
#[derive(Debug, Clone)]
pub struct Reservation<'a> {
    pub outbox_id: &'a str,
    pub row_id: &'a str,
    pub worker: &'a str,
    pub sender: &'a str,
    pub sender_cap: i64,
    pub domain_cap: i64,
    /// The counting day (`YYYY-MM-DD`).
    pub day: &'a str,
    pub now: i64,
}

/// What [`Store::reserve_send`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reserved {
    /// The row is ours to send; one unit of each cap is taken.
    Yes,
    /// Another worker holds (or already sent) this row.
    Taken,
    /// The row is no longer ready, or its campaign no longer running.
    NotSendable,
    /// The address is suppressed (the row is now skipped).
    Suppressed,
    /// The sender's cap for the day is spent.
    SenderCap,
    /// The recipient domain's cap for the day is spent.
    DomainCap,
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

const SUPPRESSION_COLS: &str = "email, email_key, reason, detail, created_at";

fn suppression_from(r: &AnyRow) -> Result<Suppression> {
    let reason: String = r.try_get("reason")?;
    Ok(Suppression {
        email: r.try_get("email")?,
        email_key: r.try_get("email_key")?,
        reason: SuppressionReason::parse(&reason)
            .ok_or_else(|| StoreError::Corrupt(format!("suppression reason '{reason}'")))?,
        detail: r.try_get("detail")?,
        created_at: r.try_get("created_at")?,
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

    /// Take one mail: see the module docs. One transaction; anything but [`Reserved::Yes`]
    /// writes nothing (but the row's skip when suppressed).
    pub async fn reserve_send(&self, r: &Reservation<'_>) -> Result<Reserved> {
        let mut tx = self.begin_write().await?;
        let row: Option<(String, String, String, String, String)> = sqlx::query_as(
            "SELECT t.user_id, t.campaign_id, t.email_key, t.recipient_email, t.recipient_domain \
             FROM campaign_rows t JOIN campaigns c ON c.id = t.campaign_id \
             WHERE t.id = $1 AND t.state = 'ready' AND c.status = 'running'",
        )
        .bind(r.row_id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((user_id, campaign_id, email_key, email, domain)) = row else {
            tx.rollback().await?;
            return Ok(Reserved::NotSendable);
        };
        let suppressed: Option<(String,)> =
            sqlx::query_as("SELECT reason FROM suppressions WHERE user_id = $1 AND email_key = $2")
                .bind(&user_id)
                .bind(&email_key)
                .fetch_optional(&mut *tx)
                .await?;
        if suppressed.is_some() {
            let change = RowChange { state: Some(TargetState::Skipped), reason: Some("suppressed"), ..ANY_ROW };
            change.apply(&mut *tx, r.row_id, r.now).await?;
            tx.commit().await?;
            return Ok(Reserved::Suppressed);
        }
        // The outbox entry is the fence: one per row, re-armed only after a retryable failure.
        let claimed = sqlx::query(
            "INSERT INTO campaign_outbox (id, row_id, campaign_id, user_id, sender, recipient, day, state, worker, \
             claimed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 'sending', $8, $9) \
             ON CONFLICT (row_id) DO UPDATE SET state = 'sending', worker = excluded.worker, \
             claimed_at = excluded.claimed_at, day = excluded.day, sender = excluded.sender, \
             attempts = campaign_outbox.attempts + 1 WHERE campaign_outbox.state = 'retry'",
        )
        .bind(r.outbox_id)
        .bind(r.row_id)
        .bind(&campaign_id)
        .bind(&user_id)
        .bind(r.sender)
        .bind(&email)
        .bind(r.day)
        .bind(r.worker)
        .bind(r.now)
        .execute(&mut *tx)
        .await?;
        if claimed.rows_affected() == 0 {
            tx.rollback().await?;
            return Ok(Reserved::Taken);
        }
        if !take_unit(&mut tx, "sender", r.sender, r.day, r.sender_cap).await? {
            tx.rollback().await?;
            return Ok(Reserved::SenderCap);
        }
        if !take_unit(&mut tx, "domain", &domain, r.day, r.domain_cap).await? {
            tx.rollback().await?;
            return Ok(Reserved::DomainCap);
        }
        // Day 0 of the sender's warmup is its first sending day.
        sqlx::query("UPDATE sender_limits SET first_day = $1 WHERE sender = $2 AND first_day IS NULL")
            .bind(r.day)
            .bind(r.sender)
            .execute(&mut *tx)
            .await?;
        RowChange { reason: Some("sending"), ..ANY_ROW }.apply(&mut *tx, r.row_id, r.now).await?;
        tx.commit().await?;
        Ok(Reserved::Yes)
    }

    /// The mail of a reserved row was accepted: the outbox entry and the row are `sent`.
    pub async fn finish_send_ok(&self, row_id: &str, message_id: &str, response: &str, now: i64) -> Result<()> {
        let mut tx = self.begin_write().await?;
        settle_outbox(&mut tx, row_id, "sent", response, Some(message_id), now).await?;
        let change =
            RowChange { state: Some(TargetState::Sent), reason: None, message_id: Some(message_id), ..ANY_ROW };
        change.apply(&mut *tx, row_id, now).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The receiving server refused the recipient for good (5xx): the row fails with
    /// `reason` and the address is suppressed for the account (`bounced`).
    pub async fn finish_send_rejected(&self, row_id: &str, reason: &str, detail: &str, now: i64) -> Result<()> {
        let mut tx = self.begin_write().await?;
        settle_outbox(&mut tx, row_id, "failed", detail, None, now).await?;
        let change = RowChange { state: Some(TargetState::Failed), reason: Some(reason), ..ANY_ROW };
        if let Some((user_id, key, email)) = change.apply(&mut *tx, row_id, now).await? {
            insert_suppression(&mut tx, &user_id, &key, &email, SuppressionReason::Bounced, Some(detail), now).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The mail of a reserved row could not be made (our side): the row fails with `reason`;
    /// nothing was sent and the address is not suppressed.
    pub async fn finish_send_rejected_no_suppress(
        &self,
        row_id: &str,
        reason: &str,
        detail: &str,
        now: i64,
    ) -> Result<()> {
        let mut tx = self.begin_write().await?;
        settle_outbox(&mut tx, row_id, "failed", detail, None, now).await?;
        RowChange { state: Some(TargetState::Failed), reason: Some(reason), ..ANY_ROW }
            .apply(&mut *tx, row_id, now)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// A retryable failure (4xx, connection, configuration): the outbox entry is re-armed and
    /// the row waits with `reason` until `next_check_at`. The units taken stay spent.
    pub async fn finish_send_retry(
        &self,
        row_id: &str,
        reason: &str,
        detail: &str,
        next_check_at: i64,
        now: i64,
    ) -> Result<()> {
        let mut tx = self.begin_write().await?;
        settle_outbox(&mut tx, row_id, "retry", detail, None, now).await?;
        let change = RowChange { reason: Some(reason), next_check_at: Some(next_check_at), ..READY_ROW };
        change.apply(&mut *tx, row_id, now).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Settle outbox entries still `sending` that were claimed before `claimed_before` (their
    /// worker died): `interrupted`, and their rows fail with `send_interrupted`. Never re-sent.
    pub async fn sweep_interrupted_sends(&self, claimed_before: i64, now: i64) -> Result<u64> {
        let mut tx = self.begin_write().await?;
        let rows: Vec<(String,)> = sqlx::query_as(
            "UPDATE campaign_outbox SET state = 'interrupted', finished_at = $1 \
             WHERE state = 'sending' AND claimed_at < $2 RETURNING row_id",
        )
        .bind(now)
        .bind(claimed_before)
        .fetch_all(&mut *tx)
        .await?;
        for (row_id,) in &rows {
            let change = RowChange { state: Some(TargetState::Failed), reason: Some("send_interrupted"), ..READY_ROW };
            change.apply(&mut *tx, row_id, now).await?;
        }
        tx.commit().await?;
        Ok(rows.len() as u64)
    }

    /// The outbox entry of a row: (state, attempts, message id).
    pub async fn outbox_entry(&self, row_id: &str) -> Result<Option<(String, i64, Option<String>)>> {
        Ok(sqlx::query_as("SELECT state, attempts, message_id FROM campaign_outbox WHERE row_id = $1")
            .bind(row_id)
            .fetch_optional(&self.pool)
            .await?)
    }

    // ---- suppressions ----

    /// Suppress an address for an account; true when it was not suppressed before. A
    /// permanent reason (the recipient's, the mail system's) replaces a `manual` suppression of
    /// the address; nothing replaces a permanent one.
    pub async fn suppress(
        &self,
        user_id: &str,
        email_key: &str,
        email: &str,
        reason: SuppressionReason,
        detail: Option<&str>,
        now: i64,
    ) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let new = insert_suppression(&mut tx, user_id, email_key, email, reason, detail, now).await?;
        tx.commit().await?;
        Ok(new)
    }

    /// Lift the account's own (`manual`) suppression of an address. One the recipient or the
    /// mail system made is left in place and returned.
    pub async fn unsuppress(&self, user_id: &str, email_key: &str) -> Result<Unsuppressed> {
        let mut tx = self.begin_write().await?;
        // Conditional on the reason in the statement itself: a permanent suppression written
        // by a concurrent unsubscribe is never deleted.
        let res = sqlx::query("DELETE FROM suppressions WHERE user_id = $1 AND email_key = $2 AND reason = $3")
            .bind(user_id)
            .bind(email_key)
            .bind(SuppressionReason::Manual.as_str())
            .execute(&mut *tx)
            .await?;
        if res.rows_affected() > 0 {
            tx.commit().await?;
            return Ok(Unsuppressed::Lifted);
        }
        let row =
            sqlx::query(sqlf!("SELECT {SUPPRESSION_COLS} FROM suppressions WHERE user_id = $1 AND email_key = $2"))
                .bind(user_id)
                .bind(email_key)
                .fetch_optional(&mut *tx)
                .await?;
        tx.commit().await?;
        Ok(match row.as_ref().map(suppression_from).transpose()? {
            Some(s) => Unsuppressed::Permanent(s),
            None => Unsuppressed::NotSuppressed,
        })
    }

    /// Whether an address is suppressed for an account.
    pub async fn suppression(&self, user_id: &str, email_key: &str) -> Result<Option<Suppression>> {
        let row =
            sqlx::query(sqlf!("SELECT {SUPPRESSION_COLS} FROM suppressions WHERE user_id = $1 AND email_key = $2"))
                .bind(user_id)
                .bind(email_key)
                .fetch_optional(&self.pool)
                .await?;
        row.as_ref().map(suppression_from).transpose()
    }

    /// An account's suppressions, newest first; `before` is `(created_at, Some(email_key))`.
    pub async fn list_suppressions(&self, user_id: &str, before: Before, limit: i64) -> Result<Vec<Suppression>> {
        Table { table: "suppressions", cols: SUPPRESSION_COLS, key: "email_key" }
            .page(&self.pool, user_id, before, None, limit, suppression_from)
            .await
    }

    /// The row a one-click unsubscribe token names: (user id, address, its key).
    pub async fn target_by_unsubscribe_token(&self, token: &str) -> Result<Option<(String, String, String)>> {
        Ok(sqlx::query_as("SELECT user_id, recipient_email, email_key FROM campaign_rows WHERE unsubscribe_token = $1")
            .bind(token)
            .fetch_optional(&self.pool)
            .await?)
    }

    // ---- senders ----

    /// A sender's limits, created with `defaults` (warmup start, growth, max) when absent.
    pub async fn sender_limits(&self, sender: &str, defaults: (i64, i64, i64), now: i64) -> Result<SenderLimits> {
        sqlx::query(
            "INSERT INTO sender_limits (sender, daily_limit, warmup_start, warmup_growth, warmup_max, updated_at) \
             VALUES ($1, NULL, $2, $3, $4, $5) ON CONFLICT (sender) DO NOTHING",
        )
        .bind(sender)
        .bind(defaults.0)
        .bind(defaults.1)
        .bind(defaults.2)
        .bind(now)
        .execute(&self.pool)
        .await?;
        let (sender, daily_limit, warmup_start, warmup_growth, warmup_max, first_day, updated_at): (
            String,
            Option<i64>,
            i64,
            i64,
            i64,
            Option<String>,
            i64,
        ) = sqlx::query_as(
            "SELECT sender, daily_limit, warmup_start, warmup_growth, warmup_max, first_day, updated_at \
             FROM sender_limits WHERE sender = $1",
        )
        .bind(sender)
        .fetch_one(&self.pool)
        .await?;
        Ok(SenderLimits { sender, daily_limit, warmup_start, warmup_growth, warmup_max, first_day, updated_at })
    }

    /// Set a sender's manual limit (`Some(None)` removes it) and/or its warmup schedule.
    pub async fn set_sender_limits(
        &self,
        sender: &str,
        defaults: (i64, i64, i64),
        daily_limit: Option<Option<i64>>,
        warmup: Option<(i64, i64, i64)>,
        now: i64,
    ) -> Result<SenderLimits> {
        self.sender_limits(sender, defaults, now).await?;
        if let Some(limit) = daily_limit {
            sqlx::query("UPDATE sender_limits SET daily_limit = $1, updated_at = $2 WHERE sender = $3")
                .bind(limit)
                .bind(now)
                .bind(sender)
                .execute(&self.pool)
                .await?;
        }
        if let Some((start, growth, max)) = warmup {
            sqlx::query(
                "UPDATE sender_limits SET warmup_start = $1, warmup_growth = $2, warmup_max = $3, updated_at = $4 \
                 WHERE sender = $5",
            )
            .bind(start)
            .bind(growth)
            .bind(max)
            .bind(now)
            .bind(sender)
            .execute(&self.pool)
            .await?;
        }
        self.sender_limits(sender, defaults, now).await
    }

    /// What was sent (or reserved) on `day` for a counter (`sender` or `domain` scope).
    pub async fn send_count(&self, scope: &str, name: &str, day: &str) -> Result<i64> {
        let row: Option<(i64,)> =
            sqlx::query_as("SELECT sent FROM send_counts WHERE scope = $1 AND name = $2 AND day = $3")
                .bind(scope)
                .bind(name)
                .bind(day)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map_or(0, |(n,)| n))
    }

    /// The recipient domains an account has open rows for or sent to on `day`.
    pub async fn campaign_domains(&self, user_id: &str, day_start: i64) -> Result<Vec<String>> {
        let rows: Vec<(String,)> = sqlx::query_as(sqlf!(
            "SELECT DISTINCT recipient_domain FROM campaign_rows WHERE user_id = $1 \
             AND (state IN {OPEN_STATES} OR (state = 'sent' AND sent_at >= $2)) ORDER BY recipient_domain LIMIT 500"
        ))
        .bind(user_id)
        .bind(day_start)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|(d,)| d).collect())
    }
}

/// Take one unit of a daily counter if it is below `cap` (atomic: a conditional increment
/// that PostgreSQL re-checks after waiting for a concurrent one, and that SQLite's write lock
/// serialises).
async fn take_unit(tx: &mut Transaction<'static, Any>, scope: &str, name: &str, day: &str, cap: i64) -> Result<bool> {
    sqlx::query(
        "INSERT INTO send_counts (scope, name, day, sent) VALUES ($1, $2, $3, 0) \
         ON CONFLICT (scope, name, day) DO NOTHING",
    )
    .bind(scope)
    .bind(name)
    .bind(day)
    .execute(&mut **tx)
    .await?;
    let res =
        sqlx::query("UPDATE send_counts SET sent = sent + 1 WHERE scope = $1 AND name = $2 AND day = $3 AND sent < $4")
            .bind(scope)
            .bind(name)
            .bind(day)
            .bind(cap)
            .execute(&mut **tx)
            .await?;
    Ok(res.rows_affected() == 1)
}

async fn insert_suppression(
    tx: &mut Transaction<'static, Any>,
    user_id: &str,
    email_key: &str,
    email: &str,
    reason: SuppressionReason,
    detail: Option<&str>,
    now: i64,
) -> Result<bool> {
    let res = sqlx::query(
        "INSERT INTO suppressions (user_id, email_key, email, reason, detail, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (user_id, email_key) DO NOTHING",
    )
    .bind(user_id)
    .bind(email_key)
    .bind(email)
    .bind(reason.as_str())
    .bind(detail)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    if res.rows_affected() == 0 && !reason.source().liftable() {
        // The recipient's or the mail system's word outranks the account's own entry: once
        // replaced, the account can no longer lift it (and so undo the recipient's choice).
        sqlx::query(
            "UPDATE suppressions SET reason = $1, detail = $2 WHERE user_id = $3 AND email_key = $4 AND reason = $5",
        )
        .bind(reason.as_str())
        .bind(detail)
        .bind(user_id)
        .bind(email_key)
        .bind(SuppressionReason::Manual.as_str())
        .execute(&mut **tx)
        .await?;
    }
    if res.rows_affected() > 0 {
        // Rows of the account waiting for this address will never be mailed.
        sqlx::query(sqlf!(
            "UPDATE campaign_rows SET state = 'skipped', reason = 'suppressed', updated_at = $1 \
             WHERE user_id = $2 AND email_key = $3 AND state IN {OPEN_STATES} \
             AND NOT EXISTS (SELECT 1 FROM campaign_outbox o WHERE o.row_id = campaign_rows.id AND o.state = 'sending')"
        ))
        .bind(now)
        .bind(user_id)
        .bind(email_key)
        .execute(&mut **tx)
        .await?;
    }
    Ok(res.rows_affected() > 0)
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

/// Close a row's `sending` outbox entry as `state` (sent, failed, retry) with the receiving
/// server's `response`, and the Message-ID of an accepted mail.
async fn settle_outbox(
    tx: &mut Transaction<'static, Any>,
    row_id: &str,
    state: &str,
    response: &str,
    message_id: Option<&str>,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "UPDATE campaign_outbox SET state = $1, response = $2, finished_at = $3, \
         message_id = COALESCE($4, message_id) WHERE row_id = $5 AND state = 'sending'",
    )
    .bind(state)
    .bind(response)
    .bind(now)
    .bind(message_id)
    .bind(row_id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
