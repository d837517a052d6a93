//! Idempotency records: the first response to a key is stored and replayed for 24 h.

use crate::db::{Result, Store};

/// `(request_hash, state, response_status, response_body, created_at)` of a stored key.
type IdemRow = (String, String, Option<i64>, Option<String>, i64);

/// Outcome of starting a request under an Idempotency-Key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdemBegin {
    /// This request owns the key: run it, then `idem_complete` or `idem_abort`.
    Owned,
    /// Another request with this key is still running.
    InFlight,
    /// The key was used with a different request body.
    Mismatch,
    /// The stored response to replay: `(status, body)`.
    Replay(u16, String),
}

impl Store {
    /// Claim `key` for this request, or report what an earlier request left.
    pub async fn idem_begin(
        &self,
        user_id: &str,
        route: &str,
        key: &str,
        request_hash: &str,
        now: i64,
        ttl_ms: i64,
    ) -> Result<IdemBegin> {
        for _ in 0..3 {
            let res = sqlx::query(
                "INSERT INTO idempotency_keys (user_id, route, idem_key, request_hash, state, created_at) \
                 VALUES ($1, $2, $3, $4, 'in_flight', $5) ON CONFLICT (user_id, route, idem_key) DO NOTHING",
            )
            .bind(user_id)
            .bind(route)
            .bind(key)
            .bind(request_hash)
            .bind(now)
            .execute(&self.pool)
            .await?;
            if res.rows_affected() == 1 {
                return Ok(IdemBegin::Owned);
            }
            let row: Option<IdemRow> = sqlx::query_as(
                "SELECT request_hash, state, response_status, response_body, created_at FROM idempotency_keys \
                 WHERE user_id = $1 AND route = $2 AND idem_key = $3",
            )
            .bind(user_id)
            .bind(route)
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
            let Some((hash, state, status, body, created)) = row else {
                continue;
            };
            if created + ttl_ms <= now {
                // Expired: forget it and try again as a fresh key.
                sqlx::query(
                    "DELETE FROM idempotency_keys WHERE user_id = $1 AND route = $2 AND idem_key = $3 AND created_at = $4",
                )
                .bind(user_id)
                .bind(route)
                .bind(key)
                .bind(created)
                .execute(&self.pool)
                .await?;
                continue;
            }
            if hash != request_hash {
                return Ok(IdemBegin::Mismatch);
            }
            return Ok(match (state.as_str(), status, body) {
                ("done", Some(s), Some(b)) => IdemBegin::Replay(s as u16, b),
                _ => IdemBegin::InFlight,
            });
        }
        Ok(IdemBegin::InFlight)
    }

    /// Store the response of the request that owned `key`.
    pub async fn idem_complete(&self, user_id: &str, route: &str, key: &str, status: u16, body: &str) -> Result<()> {
        sqlx::query(
            "UPDATE idempotency_keys SET state = 'done', response_status = $1, response_body = $2 \
             WHERE user_id = $3 AND route = $4 AND idem_key = $5",
        )
        .bind(i64::from(status))
        .bind(body)
        .bind(user_id)
        .bind(route)
        .bind(key)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Forget `key` (the request failed before doing anything; a retry may run it).
    pub async fn idem_abort(&self, user_id: &str, route: &str, key: &str) -> Result<()> {
        sqlx::query(
            "DELETE FROM idempotency_keys WHERE user_id = $1 AND route = $2 AND idem_key = $3 AND state = 'in_flight'",
        )
        .bind(user_id)
        .bind(route)
        .bind(key)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Delete idempotency records older than `cutoff` (housekeeping).
    pub async fn idem_purge(&self, cutoff: i64) -> Result<u64> {
        let res =
            sqlx::query("DELETE FROM idempotency_keys WHERE created_at < $1").bind(cutoff).execute(&self.pool).await?;
        Ok(res.rows_affected())
    }
}
