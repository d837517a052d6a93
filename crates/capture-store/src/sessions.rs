//! Website sessions and sign-in throttling.

use crate::db::{Result, Store, b};
use crate::users::User;

/// `(id, email, plan, password_hash, legacy_free, csrf, expires_at, user id again, created_at)`.
type SessionJoin = (String, String, String, Option<String>, i64, String, i64, String, i64);

/// A live website session.
#[derive(Debug, Clone)]
pub struct WebSessionRow {
    pub user: User,
    pub csrf_token: String,
    pub expires_at: i64,
}

impl Store {
    /// Store a session by the SHA-256 of its cookie value.
    pub async fn create_web_session(
        &self,
        id_hash: &str,
        user_id: &str,
        csrf: &str,
        now: i64,
        expires_at: i64,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO web_sessions (id_hash, user_id, csrf_token, created_at, expires_at, last_seen_at) \
             VALUES ($1, $2, $3, $4, $5, $4)",
        )
        .bind(id_hash)
        .bind(user_id)
        .bind(csrf)
        .bind(now)
        .bind(expires_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The unexpired session with this hash and its account.
    pub async fn web_session(&self, id_hash: &str, now: i64) -> Result<Option<WebSessionRow>> {
        let row: Option<SessionJoin> = sqlx::query_as(
            "SELECT u.id, u.email, u.plan, u.password_hash, u.legacy_free, s.csrf_token, s.expires_at, u.id, u.created_at \
             FROM web_sessions s JOIN users u ON u.id = s.user_id WHERE s.id_hash = $1 AND s.expires_at > $2",
        )
        .bind(id_hash)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|(id, email, plan, password_hash, legacy, csrf, expires_at, _, created_at)| WebSessionRow {
            user: User { id, email, plan, legacy_free: legacy != 0, password_hash, created_at },
            csrf_token: csrf,
            expires_at,
        }))
    }

    /// End a session.
    pub async fn delete_web_session(&self, id_hash: &str) -> Result<()> {
        sqlx::query("DELETE FROM web_sessions WHERE id_hash = $1").bind(id_hash).execute(&self.pool).await?;
        Ok(())
    }

    /// Record a sign-in attempt for a throttling key (an e-mail or a client address).
    pub async fn record_login_attempt(&self, key: &str, succeeded: bool, now: i64) -> Result<()> {
        sqlx::query("INSERT INTO login_attempts (attempt_key, succeeded, created_at) VALUES ($1, $2, $3)")
            .bind(key)
            .bind(b(succeeded))
            .bind(now)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Failed attempts for `key` since `since`.
    pub async fn failed_login_attempts(&self, key: &str, since: i64) -> Result<i64> {
        let (n,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM login_attempts WHERE attempt_key = $1 AND succeeded = 0 AND created_at >= $2",
        )
        .bind(key)
        .bind(since)
        .fetch_one(&self.pool)
        .await?;
        Ok(n)
    }

    /// The failures for `key` since `since` that came after its last success, and the time
    /// of the latest: what a backoff is computed from (a success starts the count again).
    pub async fn login_failures_since_success(&self, key: &str, since: i64) -> Result<(i64, Option<i64>)> {
        let (n, last): (i64, Option<i64>) = sqlx::query_as(
            "SELECT COUNT(*), MAX(created_at) FROM login_attempts WHERE attempt_key = $1 AND succeeded = 0 \
             AND created_at >= $2 AND created_at >= COALESCE((SELECT MAX(created_at) FROM login_attempts \
             WHERE attempt_key = $1 AND succeeded = 1), 0)",
        )
        .bind(key)
        .bind(since)
        .fetch_one(&self.pool)
        .await?;
        Ok((n, last))
    }

    /// The failures for `key` since `since` (successes do not reset them), and the latest.
    pub async fn login_failures(&self, key: &str, since: i64) -> Result<(i64, Option<i64>)> {
        let (n, last): (i64, Option<i64>) = sqlx::query_as(
            "SELECT COUNT(*), MAX(created_at) FROM login_attempts WHERE attempt_key = $1 AND succeeded = 0 \
             AND created_at >= $2",
        )
        .bind(key)
        .bind(since)
        .fetch_one(&self.pool)
        .await?;
        Ok((n, last))
    }

    /// Leave `user_id` unverified until the link whose token hashes to `token_hash` is
    /// opened (before `expires_at`); a new link replaces the last.
    pub async fn start_email_verification(
        &self,
        user_id: &str,
        token_hash: &str,
        now: i64,
        expires_at: i64,
    ) -> Result<()> {
        let mut tx = self.begin_write().await?;
        sqlx::query("DELETE FROM email_verifications WHERE user_id = $1").bind(user_id).execute(&mut *tx).await?;
        sqlx::query(
            "INSERT INTO email_verifications (user_id, token_hash, created_at, expires_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(user_id)
        .bind(token_hash)
        .bind(now)
        .bind(expires_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Is `user_id` waiting for its e-mail to be verified? (Accounts made any other way,
    /// and those that opened their link, are not.)
    pub async fn email_unverified(&self, user_id: &str) -> Result<bool> {
        let row: Option<(String,)> = sqlx::query_as("SELECT user_id FROM email_verifications WHERE user_id = $1")
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.is_some())
    }

    /// Open a verification link: the account it verifies, when the token is known and
    /// has not expired (it works once).
    pub async fn verify_email(&self, token_hash: &str, now: i64) -> Result<Option<String>> {
        let mut tx = self.begin_write().await?;
        let row: Option<(String,)> = sqlx::query_as(
            "DELETE FROM email_verifications WHERE token_hash = $1 AND expires_at > $2 RETURNING user_id",
        )
        .bind(token_hash)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(row.map(|(u,)| u))
    }

    /// Delete expired sessions and old sign-in attempts (housekeeping).
    pub async fn purge_web_state(&self, now: i64, attempts_before: i64) -> Result<()> {
        sqlx::query("DELETE FROM web_sessions WHERE expires_at <= $1").bind(now).execute(&self.pool).await?;
        sqlx::query("DELETE FROM login_attempts WHERE created_at < $1")
            .bind(attempts_before)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
