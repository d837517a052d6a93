//! The saved test inbox of each account (one address, one generated password kept encrypted
//! by the caller), the mail its inbound SMTP server stored, and the auth history an agent
//! records per normalized origin. Listing with a stable `(received_at, id)` cursor; the
//! oldest unseen message for long-polls; purging by age (retention).

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::db::{Result, Store};

/// An account's inbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxRow {
    pub user_id: String,
    /// `local@domain`, lower-case.
    pub address: String,
    /// The password for sites under test, encrypted with the master key.
    pub password_enc: String,
    pub created_at: i64,
    pub address_rotated_at: i64,
    pub password_rotated_at: i64,
}

/// A stored message (the parsed form as JSON; the raw bytes are not kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxMessageRow {
    pub id: String,
    pub user_id: String,
    /// The inbox address it was delivered to.
    pub address: String,
    /// The envelope sender (`MAIL FROM`, may be empty for bounces).
    pub mail_from: String,
    /// The `From:` header's address, lower-case.
    pub from_address: Option<String>,
    /// The domain of `from_address` (else of the envelope sender), lower-case.
    pub from_domain: Option<String>,
    pub subject: Option<String>,
    pub size_bytes: i64,
    /// The parsed message (headers, text, HTML, links, codes…) as JSON.
    pub parsed: String,
    pub received_at: i64,
    /// When a client first read it (`GET` of the message or a long-poll answer).
    pub seen_at: Option<i64>,
}

/// A recorded auth attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthAttemptRow {
    pub id: String,
    pub user_id: String,
    pub origin: String,
    pub action: String,
    pub outcome: String,
    pub method: Option<String>,
    pub note: Option<String>,
    pub created_at: i64,
}

/// What a delete of messages removed: how many, and the parsed JSON of those whose
/// attachments are kept in blob storage (`"blob":` names), for the caller to delete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemovedMessages {
    pub deleted: u64,
    pub parsed: Vec<String>,
}

/// Which messages a listing or a wait returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageFilter {
    /// Only received strictly after this time (ms).
    pub since: Option<i64>,
    /// Only from this sender: an address (exact) or a domain (itself or a subdomain).
    pub from: Option<String>,
}

const INBOX_COLS: &str = "user_id, address, password_enc, created_at, address_rotated_at, password_rotated_at";
const MSG_COLS: &str = "id, user_id, address, mail_from, from_address, from_domain, subject, size_bytes, parsed, \
    received_at, seen_at";
const AUTH_COLS: &str = "id, user_id, origin, action, outcome, method, note, created_at";

fn inbox_from(r: &AnyRow) -> Result<InboxRow> {
    Ok(InboxRow {
        user_id: r.try_get("user_id")?,
        address: r.try_get("address")?,
        password_enc: r.try_get("password_enc")?,
        created_at: r.try_get("created_at")?,
        address_rotated_at: r.try_get("address_rotated_at")?,
        password_rotated_at: r.try_get("password_rotated_at")?,
    })
}

fn msg_from(r: &AnyRow) -> Result<InboxMessageRow> {
    Ok(InboxMessageRow {
        id: r.try_get("id")?,
        user_id: r.try_get("user_id")?,
        address: r.try_get("address")?,
        mail_from: r.try_get("mail_from")?,
        from_address: r.try_get("from_address")?,
        from_domain: r.try_get("from_domain")?,
        subject: r.try_get("subject")?,
        size_bytes: r.try_get("size_bytes")?,
        parsed: r.try_get("parsed")?,
        received_at: r.try_get("received_at")?,
        seen_at: r.try_get("seen_at")?,
    })
}

fn auth_from(r: &AnyRow) -> Result<AuthAttemptRow> {
    Ok(AuthAttemptRow {
        id: r.try_get("id")?,
        user_id: r.try_get("user_id")?,
        origin: r.try_get("origin")?,
        action: r.try_get("action")?,
        outcome: r.try_get("outcome")?,
        method: r.try_get("method")?,
        note: r.try_get("note")?,
        created_at: r.try_get("created_at")?,
    })
}

/// The `from` condition of a filter as SQL over `$n` (address or domain, lower-case).
fn from_clause(n: usize) -> String {
    format!(
        "(${n} IS NULL OR from_address = ${n} OR mail_from = ${n} OR from_domain = ${n} \
         OR from_domain LIKE '%.' || ${n})"
    )
}

impl Store {
    /// The account's inbox, if it has one.
    pub async fn inbox_of(&self, user_id: &str) -> Result<Option<InboxRow>> {
        let row = sqlx::query(sqlf!("SELECT {INBOX_COLS} FROM inboxes WHERE user_id = $1"))
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(inbox_from).transpose()
    }

    /// The inbox an address belongs to (lower-case), if any.
    pub async fn inbox_by_address(&self, address: &str) -> Result<Option<InboxRow>> {
        let row = sqlx::query(sqlf!("SELECT {INBOX_COLS} FROM inboxes WHERE address = $1"))
            .bind(address.to_ascii_lowercase())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(inbox_from).transpose()
    }

    /// The account's inbox, created with `address` and `password_enc` when it has none yet
    /// (two first uses at once: one wins, both get its row). None only when the address is
    /// taken by another account (the caller tries another).
    pub async fn ensure_inbox(
        &self,
        user_id: &str,
        address: &str,
        password_enc: &str,
        now: i64,
    ) -> Result<Option<InboxRow>> {
        if let Some(row) = self.inbox_of(user_id).await? {
            return Ok(Some(row));
        }
        let mut tx = self.begin_write().await?;
        let taken: Option<(String,)> = sqlx::query_as("SELECT user_id FROM inboxes WHERE address = $1")
            .bind(address)
            .fetch_optional(&mut *tx)
            .await?;
        if taken.is_some() {
            tx.rollback().await?;
            return Ok(None);
        }
        sqlx::query(
            "INSERT INTO inboxes (user_id, address, password_enc, created_at, address_rotated_at, password_rotated_at) \
             VALUES ($1, $2, $3, $4, $4, $4) ON CONFLICT (user_id) DO NOTHING",
        )
        .bind(user_id)
        .bind(address)
        .bind(password_enc)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        self.inbox_of(user_id).await
    }

    /// Give the inbox a new address (mail to the old one is refused from now on). False when
    /// the address is taken or the account has no inbox.
    pub async fn rotate_inbox_address(&self, user_id: &str, address: &str, now: i64) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let taken: Option<(String,)> = sqlx::query_as("SELECT user_id FROM inboxes WHERE address = $1")
            .bind(address)
            .fetch_optional(&mut *tx)
            .await?;
        if taken.is_some() {
            tx.rollback().await?;
            return Ok(false);
        }
        let r = sqlx::query("UPDATE inboxes SET address = $1, address_rotated_at = $2 WHERE user_id = $3")
            .bind(address)
            .bind(now)
            .bind(user_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(r.rows_affected() == 1)
    }

    /// Replace the inbox's password (encrypted by the caller).
    pub async fn rotate_inbox_password(&self, user_id: &str, password_enc: &str, now: i64) -> Result<bool> {
        let r = sqlx::query("UPDATE inboxes SET password_enc = $1, password_rotated_at = $2 WHERE user_id = $3")
            .bind(password_enc)
            .bind(now)
            .bind(user_id)
            .execute(&self.pool)
            .await?;
        Ok(r.rows_affected() == 1)
    }

    /// Store a delivered message.
    pub async fn insert_inbox_message(&self, m: &InboxMessageRow) -> Result<()> {
        sqlx::query(sqlf!(
            "INSERT INTO inbox_messages ({MSG_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
        ))
        .bind(&m.id)
        .bind(&m.user_id)
        .bind(&m.address)
        .bind(&m.mail_from)
        .bind(m.from_address.clone())
        .bind(m.from_domain.clone())
        .bind(m.subject.clone())
        .bind(m.size_bytes)
        .bind(&m.parsed)
        .bind(m.received_at)
        .bind(m.seen_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// One message of the account (None for someone else's).
    pub async fn inbox_message(&self, user_id: &str, id: &str) -> Result<Option<InboxMessageRow>> {
        let row = sqlx::query(sqlf!("SELECT {MSG_COLS} FROM inbox_messages WHERE id = $1 AND user_id = $2"))
            .bind(id)
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(msg_from).transpose()
    }

    /// Newest first; `before` is `(received_at, Some(id))` from a cursor or `(ts, None)`.
    pub async fn list_inbox_messages(
        &self,
        user_id: &str,
        before: Option<(i64, Option<String>)>,
        filter: &MessageFilter,
        limit: i64,
    ) -> Result<Vec<InboxMessageRow>> {
        let (ts, id) = before.unwrap_or((i64::MAX, None));
        let rows = sqlx::query(sqlf!(
            "SELECT {MSG_COLS} FROM inbox_messages WHERE user_id = $1 \
             AND (received_at < $2 OR (received_at = $2 AND $3 IS NOT NULL AND id < $3)) \
             AND ($4 IS NULL OR received_at > $4) AND {} \
             ORDER BY received_at DESC, id DESC LIMIT $6",
            from_clause(5)
        ))
        .bind(user_id)
        .bind(ts)
        .bind(id)
        .bind(filter.since)
        .bind(filter.from.clone())
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(msg_from).collect()
    }

    /// The oldest message matching `filter` (and, without `since`, not yet seen), for a
    /// long-poll.
    pub async fn next_inbox_message(&self, user_id: &str, filter: &MessageFilter) -> Result<Option<InboxMessageRow>> {
        let row = sqlx::query(sqlf!(
            "SELECT {MSG_COLS} FROM inbox_messages WHERE user_id = $1 \
             AND (($2 IS NULL AND seen_at IS NULL) OR received_at > $2) AND {} \
             ORDER BY received_at, id LIMIT 1",
            from_clause(3)
        ))
        .bind(user_id)
        .bind(filter.since)
        .bind(filter.from.clone())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(msg_from).transpose()
    }

    /// Mark a message seen (the first time only).
    pub async fn mark_inbox_message_seen(&self, user_id: &str, id: &str, now: i64) -> Result<()> {
        sqlx::query("UPDATE inbox_messages SET seen_at = $1 WHERE id = $2 AND user_id = $3 AND seen_at IS NULL")
            .bind(now)
            .bind(id)
            .bind(user_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Delete one message of the account; false when there is none.
    pub async fn delete_inbox_message(&self, user_id: &str, id: &str) -> Result<bool> {
        Ok(self.remove_inbox_message(user_id, id).await?.deleted == 1)
    }

    /// Delete every message of the account; how many there were.
    pub async fn delete_inbox_messages(&self, user_id: &str) -> Result<u64> {
        Ok(self.remove_inbox_messages(user_id).await?.deleted)
    }

    /// `(messages, unseen, newest received_at)` of the account.
    pub async fn inbox_counts(&self, user_id: &str) -> Result<(i64, i64, Option<i64>)> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS total, COALESCE(SUM(CASE WHEN seen_at IS NULL THEN 1 ELSE 0 END), 0) AS unseen, \
             MAX(received_at) AS newest FROM inbox_messages WHERE user_id = $1",
        )
        .bind(user_id)
        .fetch_one(&self.pool)
        .await?;
        Ok((row.try_get("total")?, row.try_get("unseen")?, row.try_get("newest")?))
    }

    /// Messages of the account received after `since` whose sender is `domain` or a
    /// subdomain of it, or whose text links to `origin_prefix` — newest first, at most `limit`.
    pub async fn inbox_messages_about(
        &self,
        user_id: &str,
        domain: &str,
        origin_prefix: &str,
        limit: i64,
    ) -> Result<Vec<InboxMessageRow>> {
        let rows = sqlx::query(sqlf!(
            "SELECT {MSG_COLS} FROM inbox_messages WHERE user_id = $1 \
             AND (from_domain = $2 OR from_domain LIKE '%.' || $2 OR parsed LIKE '%' || $3 || '%') \
             ORDER BY received_at DESC, id DESC LIMIT $4"
        ))
        .bind(user_id)
        .bind(domain)
        .bind(origin_prefix)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(msg_from).collect()
    }

    /// Delete messages received before `before` (retention); how many.
    pub async fn purge_inbox_messages(&self, before: i64) -> Result<u64> {
        Ok(self.remove_old_inbox_messages(before).await?.deleted)
    }

    /// Keep at most `keep` messages of the account (the newest); how many were deleted.
    pub async fn trim_inbox(&self, user_id: &str, keep: i64) -> Result<u64> {
        Ok(self.remove_inbox_overflow(user_id, keep).await?.deleted)
    }

    /// Delete one message of the account (`deleted` 0 when there is none), with its parsed
    /// JSON when it names attachment blobs.
    pub async fn remove_inbox_message(&self, user_id: &str, id: &str) -> Result<RemovedMessages> {
        self.remove_where("id = $1 AND user_id = $2", |q| q.bind(id.to_string()).bind(user_id.to_string())).await
    }

    /// Delete every message of the account.
    pub async fn remove_inbox_messages(&self, user_id: &str) -> Result<RemovedMessages> {
        self.remove_where("user_id = $1", |q| q.bind(user_id.to_string())).await
    }

    /// Delete messages received before `before` (retention).
    pub async fn remove_old_inbox_messages(&self, before: i64) -> Result<RemovedMessages> {
        self.remove_where("received_at < $1", |q| q.bind(before)).await
    }

    /// Keep at most `keep` messages of the account (the newest).
    pub async fn remove_inbox_overflow(&self, user_id: &str, keep: i64) -> Result<RemovedMessages> {
        self.remove_where(
            "user_id = $1 AND id NOT IN \
             (SELECT id FROM inbox_messages WHERE user_id = $1 ORDER BY received_at DESC, id DESC LIMIT $2)",
            |q| q.bind(user_id.to_string()).bind(keep),
        )
        .await
    }

    /// Delete the messages matching `cond` in one transaction, first reading the parsed JSON
    /// of those that name attachment blobs (so the caller can delete the blobs too).
    async fn remove_where<F>(&self, cond: &str, bind: F) -> Result<RemovedMessages>
    where
        F: for<'q> Fn(
            sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>,
        ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>,
    {
        let mut tx = self.begin_write().await?;
        let select = sqlf!("SELECT parsed FROM inbox_messages WHERE ({cond}) AND parsed LIKE '%\"blob\":\"%'");
        let rows = bind(sqlx::query(select)).fetch_all(&mut *tx).await?;
        let parsed = rows.iter().map(|r| r.try_get::<String, _>("parsed")).collect::<std::result::Result<_, _>>()?;
        let r = bind(sqlx::query(sqlf!("DELETE FROM inbox_messages WHERE {cond}"))).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(RemovedMessages { deleted: r.rows_affected(), parsed })
    }

    /// Record an auth attempt.
    pub async fn insert_auth_attempt(&self, a: &AuthAttemptRow) -> Result<()> {
        sqlx::query(sqlf!("INSERT INTO auth_history ({AUTH_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"))
            .bind(&a.id)
            .bind(&a.user_id)
            .bind(&a.origin)
            .bind(&a.action)
            .bind(&a.outcome)
            .bind(a.method.clone())
            .bind(a.note.clone())
            .bind(a.created_at)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The account's attempts on every site, newest first, at most `limit`.
    pub async fn recent_auth_attempts(&self, user_id: &str, limit: i64) -> Result<Vec<AuthAttemptRow>> {
        let rows = sqlx::query(sqlf!(
            "SELECT {AUTH_COLS} FROM auth_history WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2"
        ))
        .bind(user_id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(auth_from).collect()
    }

    /// The account's attempts on `origin`, newest first, at most `limit`.
    pub async fn auth_history(&self, user_id: &str, origin: &str, limit: i64) -> Result<Vec<AuthAttemptRow>> {
        let rows = sqlx::query(sqlf!(
            "SELECT {AUTH_COLS} FROM auth_history WHERE user_id = $1 AND origin = $2 \
             ORDER BY created_at DESC, id DESC LIMIT $3"
        ))
        .bind(user_id)
        .bind(origin)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(auth_from).collect()
    }
}
