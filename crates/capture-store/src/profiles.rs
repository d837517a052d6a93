//! Browser profiles: a signed-in browser state per account, named (unique per account), its
//! state sealed by the service's master key. Captures, audits, runs and sessions name one
//! by id or name; only its owner finds it.

use sqlx::any::AnyRow;
use sqlx::{Executor, Row};

use crate::db::{Backend, Result, Store, StoreError};

/// A profile.
#[derive(Clone, PartialEq, Eq)]
pub struct ProfileRow {
    pub id: String,
    pub user_id: String,
    pub name: String,
    /// The state (Playwright's storage-state JSON), sealed; None until one was saved.
    pub state_enc: Option<String>,
    /// What the state holds, without values (JSON).
    pub summary: String,
    /// What saved the state: `run_…`, `import` or `login`.
    pub saved_from: Option<String>,
    pub saved_at: Option<i64>,
    /// When a job found the state signed out (cleared by the next save).
    pub expired_at: Option<i64>,
    /// The job that found it.
    pub expired_by: Option<String>,
    pub last_used_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl std::fmt::Debug for ProfileRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProfileRow").field("id", &self.id).field("name", &self.name).finish_non_exhaustive()
    }
}

const COLS: &str = "id, user_id, name, state_enc, summary, saved_from, saved_at, expired_at, expired_by, last_used_at, \
                    created_at, updated_at";

fn profile_from(r: &AnyRow) -> Result<ProfileRow> {
    Ok(ProfileRow {
        id: r.try_get("id")?,
        user_id: r.try_get("user_id")?,
        name: r.try_get("name")?,
        state_enc: r.try_get("state_enc")?,
        summary: r.try_get("summary")?,
        saved_from: r.try_get("saved_from")?,
        saved_at: r.try_get("saved_at")?,
        expired_at: r.try_get("expired_at")?,
        expired_by: r.try_get("expired_by")?,
        last_used_at: r.try_get("last_used_at")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

fn name_taken(e: sqlx::Error, name: &str) -> StoreError {
    match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => {
            StoreError::Conflict(format!("a profile named '{name}' exists already"))
        }
        _ => e.into(),
    }
}

impl Store {
    /// Store a new profile; `Conflict` when the owner has one of that name.
    pub async fn create_profile(&self, p: &ProfileRow) -> Result<()> {
        sqlx::query(sqlf!("INSERT INTO profiles ({COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"))
            .bind(&p.id)
            .bind(&p.user_id)
            .bind(&p.name)
            .bind(p.state_enc.clone())
            .bind(&p.summary)
            .bind(p.saved_from.clone())
            .bind(p.saved_at)
            .bind(p.expired_at)
            .bind(p.expired_by.clone())
            .bind(p.last_used_at)
            .bind(p.created_at)
            .bind(p.updated_at)
            .execute(&self.pool)
            .await
            .map_err(|e| name_taken(e, &p.name))?;
        Ok(())
    }

    /// An account's profiles, oldest first.
    pub async fn list_profiles(&self, user_id: &str) -> Result<Vec<ProfileRow>> {
        let rows = sqlx::query(sqlf!("SELECT {COLS} FROM profiles WHERE user_id = $1 ORDER BY created_at, id"))
            .bind(user_id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(profile_from).collect()
    }

    /// A profile of `user_id` by id, or else by name; None when there is none or it is another's.
    pub async fn find_profile(&self, user_id: &str, id_or_name: &str) -> Result<Option<ProfileRow>> {
        let row = sqlx::query(sqlf!(
            "SELECT {COLS} FROM profiles WHERE user_id = $1 AND (id = $2 OR name = $2) ORDER BY CASE WHEN id = $2 THEN 0 ELSE 1 END LIMIT 1"
        ))
        .bind(user_id)
        .bind(id_or_name)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(profile_from).transpose()
    }

    /// Rename a profile of `user_id`; false when it is not theirs, `Conflict` when the name is taken.
    pub async fn rename_profile(&self, user_id: &str, id: &str, name: &str, now: i64) -> Result<bool> {
        let res = sqlx::query("UPDATE profiles SET name = $1, updated_at = $2 WHERE user_id = $3 AND id = $4")
            .bind(name)
            .bind(now)
            .bind(user_id)
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(|e| name_taken(e, name))?;
        Ok(res.rows_affected() > 0)
    }

    /// Replace a profile's state (it is no longer expired); false when it is not `user_id`'s.
    pub async fn save_profile_state(
        &self,
        user_id: &str,
        id: &str,
        state_enc: &str,
        summary: &str,
        saved_from: &str,
        now: i64,
    ) -> Result<bool> {
        let q = sqlx::query(
            "UPDATE profiles SET state_enc = $1, summary = $2, saved_from = $3, saved_at = $4, updated_at = $4, \
             expired_at = NULL, expired_by = NULL WHERE user_id = $5 AND id = $6",
        )
        .bind(state_enc)
        .bind(summary)
        .bind(saved_from)
        .bind(now)
        .bind(user_id)
        .bind(id);
        self.overwriting(q).await
    }

    /// Run `q`, a statement that replaces or deletes a sealed state, and say whether it changed
    /// a row. On SQLite what it frees is overwritten (`secure_delete` on its connection for
    /// that statement) and the write-ahead log is checkpointed, so the old pages leave it too.
    async fn overwriting<'q>(&self, q: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>) -> Result<bool> {
        let mut conn = self.pool.acquire().await?;
        let sqlite = self.backend() == Backend::Sqlite;
        if sqlite {
            conn.execute("PRAGMA secure_delete = ON").await?;
        }
        let res = q.execute(&mut *conn).await;
        let changed = matches!(&res, Ok(r) if r.rows_affected() > 0);
        if sqlite {
            let _ = conn.execute("PRAGMA secure_delete = OFF").await;
            if changed && let Err(e) = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").await {
                tracing::warn!(error = %e, "checkpointing after a profile's state was dropped failed");
            }
        }
        res?;
        Ok(changed)
    }

    /// A profile by id alone, whoever's it is (operators and tests; requests use
    /// [`find_profile`](Self::find_profile)).
    pub async fn profile_by_id(&self, id: &str) -> Result<Option<ProfileRow>> {
        let row =
            sqlx::query(sqlf!("SELECT {COLS} FROM profiles WHERE id = $1")).bind(id).fetch_optional(&self.pool).await?;
        row.as_ref().map(profile_from).transpose()
    }

    /// A job started from the profile (kept to the minute, like an API key's).
    pub async fn profile_used(&self, id: &str, now: i64) -> Result<()> {
        sqlx::query(
            "UPDATE profiles SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $3)",
        )
        .bind(now)
        .bind(id)
        .bind(now - 60_000)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// A job found the profile's session expired (the page went to a sign-in form); only a
    /// state saved before the job started counts (a newer save is not marked).
    pub async fn profile_expired(&self, id: &str, job_id: &str, job_started: i64, now: i64) -> Result<()> {
        sqlx::query(
            "UPDATE profiles SET expired_at = $1, expired_by = $2 WHERE id = $3 AND (saved_at IS NULL OR saved_at <= $4)",
        )
        .bind(now)
        .bind(job_id)
        .bind(id)
        .bind(job_started)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Delete a profile of `user_id`, its state with it; false when it is not theirs. On
    /// SQLite the freed space is overwritten (`secure_delete`) and the write-ahead log
    /// checkpointed, so the sealed state is gone from the files too.
    pub async fn delete_profile(&self, user_id: &str, id: &str) -> Result<bool> {
        self.overwriting(sqlx::query("DELETE FROM profiles WHERE user_id = $1 AND id = $2").bind(user_id).bind(id))
            .await
    }
}
