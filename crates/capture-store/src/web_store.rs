//! Website queries beyond single sessions: ending every session of an account.

use crate::db::{Result, Store};

impl Store {
    /// End every website session of `user_id` ("sign out everywhere"); returns how many.
    pub async fn delete_web_sessions_of(&self, user_id: &str) -> Result<u64> {
        let res = sqlx::query("DELETE FROM web_sessions WHERE user_id = $1").bind(user_id).execute(&self.pool).await?;
        Ok(res.rows_affected())
    }
}
