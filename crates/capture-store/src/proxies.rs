//! Customers' own proxies (`/v1/proxies`): per account, named (unique per account), one URL
//! or a pool of URLs with a rotation. The URLs with their credentials are sealed by the
//! service with its master key before they reach the store (`members_enc`); what is shown
//! (`members_shown`, JSON) carries no credentials.

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::db::{Result, Store, StoreError};

/// A stored proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyRow {
    pub id: String,
    pub user_id: String,
    pub name: String,
    /// The members' whole URLs (a JSON array), sealed with the master key.
    pub members_enc: String,
    /// The members as shown (a JSON array, no credentials).
    pub members_shown: String,
    /// `single` (one URL), `per-job` or `sticky` (a pool).
    pub rotation: String,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLS: &str = "id, user_id, name, members_enc, members_shown, rotation, created_at, updated_at";

fn proxy_from(r: &AnyRow) -> Result<ProxyRow> {
    Ok(ProxyRow {
        id: r.try_get("id")?,
        user_id: r.try_get("user_id")?,
        name: r.try_get("name")?,
        members_enc: r.try_get("members_enc")?,
        members_shown: r.try_get("members_shown")?,
        rotation: r.try_get("rotation")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

fn name_taken(e: sqlx::Error, name: &str) -> StoreError {
    match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => {
            StoreError::Conflict(format!("a proxy named '{name}' exists already"))
        }
        _ => e.into(),
    }
}

impl Store {
    /// Store a new proxy; `Conflict` when the owner has one of that name.
    pub async fn create_proxy(&self, p: &ProxyRow) -> Result<()> {
        sqlx::query(sqlf!("INSERT INTO proxies ({COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"))
            .bind(&p.id)
            .bind(&p.user_id)
            .bind(&p.name)
            .bind(&p.members_enc)
            .bind(&p.members_shown)
            .bind(&p.rotation)
            .bind(p.created_at)
            .bind(p.updated_at)
            .execute(&self.pool)
            .await
            .map_err(|e| name_taken(e, &p.name))?;
        Ok(())
    }

    /// An account's proxies, oldest first.
    pub async fn list_proxies(&self, user_id: &str) -> Result<Vec<ProxyRow>> {
        let rows = sqlx::query(sqlf!("SELECT {COLS} FROM proxies WHERE user_id = $1 ORDER BY created_at, id"))
            .bind(user_id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(proxy_from).collect()
    }

    /// A proxy of `user_id` by id or name (the id wins); None when it is not theirs.
    pub async fn find_proxy(&self, user_id: &str, id_or_name: &str) -> Result<Option<ProxyRow>> {
        let row = sqlx::query(sqlf!(
            "SELECT {COLS} FROM proxies WHERE user_id = $1 AND (id = $2 OR name = $2) ORDER BY CASE WHEN id = $2 THEN 0 ELSE 1 END LIMIT 1"
        ))
        .bind(user_id)
        .bind(id_or_name)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(proxy_from).transpose()
    }

    /// Replace a proxy's name, members and rotation; false when it is not theirs,
    /// `Conflict` when the name is taken.
    pub async fn update_proxy(&self, p: &ProxyRow) -> Result<bool> {
        let res = sqlx::query(
            "UPDATE proxies SET name = $1, members_enc = $2, members_shown = $3, rotation = $4, updated_at = $5 \
             WHERE user_id = $6 AND id = $7",
        )
        .bind(&p.name)
        .bind(&p.members_enc)
        .bind(&p.members_shown)
        .bind(&p.rotation)
        .bind(p.updated_at)
        .bind(&p.user_id)
        .bind(&p.id)
        .execute(&self.pool)
        .await
        .map_err(|e| name_taken(e, &p.name))?;
        Ok(res.rows_affected() > 0)
    }

    /// Take the next turn of `user_id`'s proxy `id` (0, 1, 2, … across every node): a
    /// `per-job` pool gives its members jobs in turn. None when it is not theirs.
    pub async fn take_proxy_turn(&self, user_id: &str, id: &str) -> Result<Option<i64>> {
        let row = sqlx::query(
            "UPDATE proxies SET turns = turns + 1 WHERE user_id = $1 AND id = $2 RETURNING turns - 1 AS turn",
        )
        .bind(user_id)
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|r| r.try_get("turn")).transpose()?)
    }

    /// Delete a proxy of `user_id`; false when it is not theirs.
    pub async fn delete_proxy(&self, user_id: &str, id: &str) -> Result<bool> {
        let res = sqlx::query("DELETE FROM proxies WHERE user_id = $1 AND id = $2")
            .bind(user_id)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(res.rows_affected() > 0)
    }
}
