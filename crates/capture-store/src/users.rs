//! Accounts and API keys.

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::db::{Result, Store, StoreError, b};

/// An account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: String,
    pub email: String,
    pub plan: String,
    pub legacy_free: bool,
    pub password_hash: Option<String>,
    pub created_at: i64,
}

/// An API key record (never the key itself, only its encrypted copy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRow {
    pub id: String,
    pub user_id: String,
    pub name: String,
    pub prefix: String,
    pub key_enc: String,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
    pub last_used_at: Option<i64>,
}

/// What authenticating a key yields: the account, the key id and this month's usage.
#[derive(Debug, Clone)]
pub struct AuthRecord {
    pub user: User,
    pub key_id: String,
    pub used: i64,
}

const USER_COLS: &str = "u.id, u.email, u.plan, u.legacy_free, u.password_hash, u.created_at";

fn user_from(r: &AnyRow) -> Result<User> {
    Ok(User {
        id: r.try_get("id")?,
        email: r.try_get("email")?,
        plan: r.try_get("plan")?,
        legacy_free: r.try_get::<i64, _>("legacy_free")? != 0,
        password_hash: r.try_get("password_hash")?,
        created_at: r.try_get("created_at")?,
    })
}

fn key_from(r: &AnyRow) -> Result<ApiKeyRow> {
    Ok(ApiKeyRow {
        id: r.try_get("id")?,
        user_id: r.try_get("user_id")?,
        name: r.try_get("name")?,
        prefix: r.try_get("prefix")?,
        key_enc: r.try_get("key_enc")?,
        created_at: r.try_get("created_at")?,
        revoked_at: r.try_get("revoked_at")?,
        last_used_at: r.try_get("last_used_at")?,
    })
}

impl Store {
    /// Create an account; a taken e-mail is a `Conflict`.
    pub async fn create_user(&self, user: &User) -> Result<()> {
        let res = sqlx::query(
            "INSERT INTO users (id, email, password_hash, plan, legacy_free, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (email) DO NOTHING",
        )
        .bind(&user.id)
        .bind(&user.email)
        .bind(user.password_hash.clone())
        .bind(&user.plan)
        .bind(b(user.legacy_free))
        .bind(user.created_at)
        .execute(&self.pool)
        .await?;
        if res.rows_affected() == 0 {
            return Err(StoreError::Conflict(format!("an account with e-mail {} exists", user.email)));
        }
        Ok(())
    }

    /// Find an account by e-mail (case-insensitive; e-mails are stored lower-case).
    pub async fn user_by_email(&self, email: &str) -> Result<Option<User>> {
        let row = sqlx::query(sqlf!("SELECT {USER_COLS} FROM users u WHERE u.email = $1"))
            .bind(email.to_lowercase())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(user_from).transpose()
    }

    /// Find an account by id.
    pub async fn user_by_id(&self, id: &str) -> Result<Option<User>> {
        let row = sqlx::query(sqlf!("SELECT {USER_COLS} FROM users u WHERE u.id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(user_from).transpose()
    }

    /// Change an account's plan; false when there is no such account.
    pub async fn set_plan(&self, email: &str, plan: &str) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let res = sqlx::query("UPDATE users SET plan = $1 WHERE email = $2")
            .bind(plan)
            .bind(email.to_lowercase())
            .execute(&mut *tx)
            .await?;
        let changed = res.rows_affected() > 0;
        if changed {
            // Every node drops its cached lookups when this commits.
            crate::notify::notify(&mut tx, crate::notify::AUTH_CHANNEL, "").await?;
        }
        tx.commit().await?;
        if changed {
            self.auth_changed();
        }
        Ok(changed)
    }

    /// Store a new key (hash for lookup, encrypted copy for reveal).
    pub async fn create_key(&self, key: &ApiKeyRow, key_hash: &str) -> Result<()> {
        sqlx::query(
            "INSERT INTO api_keys (id, user_id, name, key_hash, key_enc, prefix, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&key.id)
        .bind(&key.user_id)
        .bind(&key.name)
        .bind(key_hash)
        .bind(&key.key_enc)
        .bind(&key.prefix)
        .bind(key.created_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Revoke a key (of `user_id` when given); false when no live key matched.
    pub async fn revoke_key(&self, key_id: &str, user_id: Option<&str>, now: i64) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let res = sqlx::query(
            "UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL \
             AND ($3 IS NULL OR user_id = $3)",
        )
        .bind(now)
        .bind(key_id)
        .bind(user_id.map(str::to_string))
        .execute(&mut *tx)
        .await?;
        let changed = res.rows_affected() > 0;
        if changed {
            // Every node drops its cached lookups when this commits.
            crate::notify::notify(&mut tx, crate::notify::AUTH_CHANNEL, "").await?;
        }
        tx.commit().await?;
        if changed {
            self.auth_changed();
        }
        Ok(changed)
    }

    /// Keys of an account, newest first, revoked ones included.
    pub async fn list_keys(&self, user_id: &str) -> Result<Vec<ApiKeyRow>> {
        let rows = sqlx::query(
            "SELECT id, user_id, name, prefix, key_enc, created_at, revoked_at, last_used_at \
             FROM api_keys WHERE user_id = $1 ORDER BY created_at DESC, id DESC",
        )
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(key_from).collect()
    }

    /// One key of an account.
    pub async fn key_of(&self, user_id: &str, key_id: &str) -> Result<Option<ApiKeyRow>> {
        let row = sqlx::query(
            "SELECT id, user_id, name, prefix, key_enc, created_at, revoked_at, last_used_at \
             FROM api_keys WHERE user_id = $1 AND id = $2",
        )
        .bind(user_id)
        .bind(key_id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(key_from).transpose()
    }

    /// Authenticate by key hash: the live key's account and its usage in `month`, in one query.
    pub async fn authenticate(&self, key_hash: &str, month: &str) -> Result<Option<AuthRecord>> {
        let row = sqlx::query(sqlf!(
            "SELECT {USER_COLS}, k.id AS key_id, COALESCE({USED}, 0) AS used \
             FROM api_keys k JOIN users u ON u.id = k.user_id \
             LEFT JOIN usage_counters c ON c.user_id = u.id AND c.month = $1 \
             WHERE k.key_hash = $2 AND k.revoked_at IS NULL",
            USED = crate::gate::USED
        ))
        .bind(month)
        .bind(key_hash)
        .fetch_optional(&self.pool)
        .await?;
        match row {
            None => Ok(None),
            Some(r) => {
                Ok(Some(AuthRecord { user: user_from(&r)?, key_id: r.try_get("key_id")?, used: r.try_get("used")? }))
            }
        }
    }

    /// Actions used by an account in `month` (the shared monthly pool).
    pub async fn month_usage(&self, user_id: &str, month: &str) -> Result<i64> {
        let row: Option<(i64,)> = sqlx::query_as(sqlf!(
            "SELECT {USED} FROM usage_counters c WHERE c.user_id = $1 AND c.month = $2",
            USED = crate::gate::USED
        ))
        .bind(user_id)
        .bind(month)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map_or(0, |r| r.0))
    }

    /// Net actions per key of an account in `month`: `(key_id, actions)`.
    pub async fn usage_by_key(&self, user_id: &str, month: &str) -> Result<Vec<(String, i64)>> {
        let rows: Vec<(Option<String>, i64)> = sqlx::query_as(
            "SELECT key_id, CAST(SUM(actions) AS BIGINT) FROM usage_ledger \
             WHERE user_id = $1 AND month = $2 GROUP BY key_id",
        )
        .bind(user_id)
        .bind(month)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().filter_map(|(k, n)| k.map(|k| (k, n))).collect())
    }
}

impl Store {
    /// The origins an account's live views may be embedded in (a JSON array), if set.
    pub async fn live_view_frame_ancestors(&self, user_id: &str) -> Result<Option<String>> {
        let row: Option<(Option<String>,)> =
            sqlx::query_as("SELECT live_view_frame_ancestors FROM users WHERE id = $1")
                .bind(user_id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.and_then(|r| r.0))
    }

    /// Set (or clear, with None) the origins an account's live views may be embedded in.
    pub async fn set_live_view_frame_ancestors(&self, user_id: &str, origins: Option<&str>) -> Result<()> {
        sqlx::query("UPDATE users SET live_view_frame_ancestors = $1 WHERE id = $2")
            .bind(origins.map(str::to_string))
            .bind(user_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
