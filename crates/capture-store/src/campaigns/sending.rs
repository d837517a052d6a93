//! Sending campaign mail, with its guarantees in single transactions:
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
//! Also the senders' limits and warmup schedules, and the daily counters they are held to.

use sqlx::{Any, Transaction};

use capture_core::TargetState;

use super::suppressions::{SuppressionReason, insert_suppression};
use super::{ANY_ROW, OPEN_STATES, READY_ROW, RowChange};
use crate::db::{Result, Store};

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

impl Store {
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
