//! Idempotency records: the first response to a key is stored and replayed for 24 h.
//!
//! A request that owns a key holds it under a short lease. Its response is best stored in the
//! same transaction as the change it made ([`Store::idem_complete_tx`], used by every create),
//! so a job can never exist without the response that names it. A request that vanished
//! without storing or releasing its key (its process died) leaves an in-flight record whose
//! lease runs out; the next request with the key then takes it over instead of getting
//! `409 in flight` for a day.

use sqlx::{Any, Transaction};

use crate::db::{Result, Store};

/// `(request_hash, state, response_status, response_body, created_at, locked_until)` of a stored key.
type IdemRow = (String, String, Option<i64>, Option<String>, i64, Option<i64>);

/// The key a request owns: pass it back to complete or release the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdemClaim {
    pub user_id: String,
    pub route: String,
    pub key: String,
    /// Random; completion and release are fenced on it, so a request whose lease was taken
    /// over cannot overwrite the new owner's response.
    pub owner: String,
}

/// Outcome of starting a request under an Idempotency-Key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdemBegin {
    /// This request owns the key: run it, then complete (ideally in the transaction of its
    /// change) or abort.
    Owned(IdemClaim),
    /// Another request with this key is still running.
    InFlight,
    /// The key was used with a different request body.
    Mismatch,
    /// The stored response to replay: `(status, body)`.
    Replay(u16, String),
}

impl Store {
    /// Claim `key` for this request, or report what an earlier request left. The claim is
    /// held for `lease_ms`; past it an unfinished record may be taken over.
    #[allow(clippy::too_many_arguments)]
    pub async fn idem_begin(
        &self,
        user_id: &str,
        route: &str,
        key: &str,
        request_hash: &str,
        now: i64,
        ttl_ms: i64,
        lease_ms: i64,
    ) -> Result<IdemBegin> {
        let claim = |owner: String| IdemClaim {
            user_id: user_id.to_string(),
            route: route.to_string(),
            key: key.to_string(),
            owner,
        };
        for _ in 0..3 {
            let owner = capture_core::ids::random_string(16);
            let res = sqlx::query(
                "INSERT INTO idempotency_keys (user_id, route, idem_key, request_hash, state, created_at, owner, \
                 locked_until) VALUES ($1, $2, $3, $4, 'in_flight', $5, $6, $7) \
                 ON CONFLICT (user_id, route, idem_key) DO NOTHING",
            )
            .bind(user_id)
            .bind(route)
            .bind(key)
            .bind(request_hash)
            .bind(now)
            .bind(&owner)
            .bind(now + lease_ms)
            .execute(&self.pool)
            .await?;
            if res.rows_affected() == 1 {
                return Ok(IdemBegin::Owned(claim(owner)));
            }
            let row: Option<IdemRow> = sqlx::query_as(
                "SELECT request_hash, state, response_status, response_body, created_at, locked_until \
                 FROM idempotency_keys WHERE user_id = $1 AND route = $2 AND idem_key = $3",
            )
            .bind(user_id)
            .bind(route)
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
            let Some((hash, state, status, body, created, locked_until)) = row else {
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
            if let ("done", Some(s), Some(b)) = (state.as_str(), status, body) {
                return Ok(IdemBegin::Replay(s as u16, b));
            }
            // In flight. Records from before leases existed count from their creation.
            let lease_end = locked_until.unwrap_or(created + lease_ms);
            if lease_end > now {
                return Ok(IdemBegin::InFlight);
            }
            // Its owner is gone: take it over (one taker wins).
            let res = sqlx::query(
                "UPDATE idempotency_keys SET owner = $1, locked_until = $2 WHERE user_id = $3 AND route = $4 \
                 AND idem_key = $5 AND state = 'in_flight' AND COALESCE(locked_until, created_at + $6) <= $7",
            )
            .bind(&owner)
            .bind(now + lease_ms)
            .bind(user_id)
            .bind(route)
            .bind(key)
            .bind(lease_ms)
            .bind(now)
            .execute(&self.pool)
            .await?;
            if res.rows_affected() == 1 {
                tracing::warn!(route, "took over an idempotency key whose request never finished");
                return Ok(IdemBegin::Owned(claim(owner)));
            }
        }
        Ok(IdemBegin::InFlight)
    }

    /// Store the response of the request that owns `claim`. False when its lease was taken
    /// over (nothing written).
    pub async fn idem_complete(&self, claim: &IdemClaim, status: u16, body: &str) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let ok = Self::idem_complete_tx(&mut tx, claim, status, body).await?;
        tx.commit().await?;
        Ok(ok)
    }

    /// Store the response of the request that owns `claim` in the caller's transaction (the
    /// one that makes the change). False when its lease was taken over: the caller should
    /// roll back.
    pub async fn idem_complete_tx(
        tx: &mut Transaction<'static, Any>,
        claim: &IdemClaim,
        status: u16,
        body: &str,
    ) -> Result<bool> {
        let res = sqlx::query(
            "UPDATE idempotency_keys SET state = 'done', response_status = $1, response_body = $2, locked_until = NULL \
             WHERE user_id = $3 AND route = $4 AND idem_key = $5 AND owner = $6 AND state = 'in_flight'",
        )
        .bind(i64::from(status))
        .bind(body)
        .bind(&claim.user_id)
        .bind(&claim.route)
        .bind(&claim.key)
        .bind(&claim.owner)
        .execute(&mut **tx)
        .await?;
        Ok(res.rows_affected() == 1)
    }

    /// Forget the key `claim` owns (the request failed before doing anything; a retry may run
    /// it). Does nothing if the key was completed or taken over.
    pub async fn idem_abort(&self, claim: &IdemClaim) -> Result<()> {
        sqlx::query(
            "DELETE FROM idempotency_keys WHERE user_id = $1 AND route = $2 AND idem_key = $3 AND owner = $4 \
             AND state = 'in_flight'",
        )
        .bind(&claim.user_id)
        .bind(&claim.route)
        .bind(&claim.key)
        .bind(&claim.owner)
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
