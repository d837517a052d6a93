//! Render-link keys: per account, named, with a signing secret sealed by the service's
//! master key. A link names its key's id; a revoked key signs nothing.

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::db::{Result, Store};

/// A render-link key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderKey {
    pub id: String,
    pub user_id: String,
    pub name: String,
    /// The signing secret, sealed with the master key.
    pub secret_enc: String,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

const COLS: &str = "id, user_id, name, secret_enc, created_at, revoked_at";

fn key_from(r: &AnyRow) -> Result<RenderKey> {
    Ok(RenderKey {
        id: r.try_get("id")?,
        user_id: r.try_get("user_id")?,
        name: r.try_get("name")?,
        secret_enc: r.try_get("secret_enc")?,
        created_at: r.try_get("created_at")?,
        revoked_at: r.try_get("revoked_at")?,
    })
}

impl Store {
    /// Store a new key.
    pub async fn create_render_key(&self, k: &RenderKey) -> Result<()> {
        sqlx::query(
            "INSERT INTO render_keys (id, user_id, name, secret_enc, created_at, revoked_at) \
             VALUES ($1, $2, $3, $4, $5, NULL)",
        )
        .bind(&k.id)
        .bind(&k.user_id)
        .bind(&k.name)
        .bind(&k.secret_enc)
        .bind(k.created_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// An account's keys in force, oldest first.
    pub async fn list_render_keys(&self, user_id: &str) -> Result<Vec<RenderKey>> {
        let rows = sqlx::query(sqlf!(
            "SELECT {COLS} FROM render_keys WHERE user_id = $1 AND revoked_at IS NULL ORDER BY created_at, id"
        ))
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(key_from).collect()
    }

    /// A key by id, whoever owns it, revoked or not (a link names only the id: the caller
    /// checks the signature, then the owner's account).
    pub async fn render_key(&self, id: &str) -> Result<Option<RenderKey>> {
        let row = sqlx::query(sqlf!("SELECT {COLS} FROM render_keys WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(key_from).transpose()
    }

    /// Revoke a key of `user_id`; false when it is not theirs or already revoked.
    pub async fn revoke_render_key(&self, user_id: &str, id: &str, now: i64) -> Result<bool> {
        let res =
            sqlx::query("UPDATE render_keys SET revoked_at = $1 WHERE user_id = $2 AND id = $3 AND revoked_at IS NULL")
                .bind(now)
                .bind(user_id)
                .bind(id)
                .execute(&self.pool)
                .await?;
        Ok(res.rows_affected() > 0)
    }
}
