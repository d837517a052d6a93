//! Per-account suppressions of recipient addresses. A suppression's reason says who made it
//! ([`SuppressionSource`]): only the account's own (`manual`) can be lifted; one the recipient
//! made (unsubscribe, complaint) or the mail system reported (a hard bounce) is permanent, and
//! it replaces a `manual` one for the same address. The delete is conditional on the reason in
//! the same statement, so an unsubscribe that lands while the tenant lifts its own suppression
//! is never lost.

use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};

use super::OPEN_STATES;
use crate::db::{Result, Store, StoreError};
use crate::shape::{Before, Table};

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

impl Store {
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
}

pub(super) async fn insert_suppression(
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
