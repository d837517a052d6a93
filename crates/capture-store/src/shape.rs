//! The shapes every resource's store code shares: a row by id (an account's own, or any for
//! workers), an account's rows a page at a time, newest first, from a cursor; and the end of
//! a create — the key marked used, the row read back in the creating transaction and the
//! Idempotency-Key's response stored with it.

use sqlx::any::AnyRow;
use sqlx::{Any, AnyPool, Transaction};

use crate::db::Result;

/// How a create stores the response of an idempotent request in its own transaction: the
/// key it owns and how to render the response from the created row.
pub struct IdemResponse<'a, R> {
    pub claim: &'a crate::IdemClaim,
    /// `(status, JSON body)` of the response to store and replay.
    pub render: &'a (dyn Fn(&R) -> (u16, String) + Send + Sync),
}

impl<R> Clone for IdemResponse<'_, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for IdemResponse<'_, R> {}

/// Where a page of a newest-first list starts: `(created_at, Some(key))` from a cursor (the
/// rows after that one), `(ts, None)` from a time (the rows created before it); `None` from
/// the newest.
pub(crate) type Before = Option<(i64, Option<String>)>;

/// A resource's table as its reads see it: the columns of a row, and the unique column that
/// orders rows created in the same millisecond and ends a cursor (`id` unless said).
pub(crate) struct Table<'a> {
    pub table: &'a str,
    pub cols: &'a str,
    pub key: &'a str,
}

impl<'a> Table<'a> {
    /// The table `table` with the row columns `cols`, keyed by `id`.
    pub(crate) const fn new(table: &'a str, cols: &'a str) -> Self {
        Table { table, cols, key: "id" }
    }

    /// The row `id`: any account's (`owner` None: workers, streams after their own check) or
    /// only `owner`'s (None for someone else's).
    pub(crate) async fn get<T>(
        &self,
        pool: &AnyPool,
        id: &str,
        owner: Option<&str>,
        from_row: impl Fn(&AnyRow) -> Result<T>,
    ) -> Result<Option<T>> {
        let Table { table, cols, .. } = self;
        let owned = if owner.is_some() { " AND user_id = $2" } else { "" };
        let mut query = sqlx::query(sqlf!("SELECT {cols} FROM {table} WHERE id = $1{owned}")).bind(id);
        if let Some(owner) = owner {
            query = query.bind(owner);
        }
        query.fetch_optional(pool).await?.as_ref().map(from_row).transpose()
    }

    /// At most `limit` rows of `user_id` before `before`, newest first; `and` narrows the
    /// list with a condition on `$5` and its value (e.g. `("kind = $5", "draft")`).
    pub(crate) async fn page<T>(
        &self,
        pool: &AnyPool,
        user_id: &str,
        before: Before,
        and: Option<(&str, &str)>,
        limit: i64,
        from_row: impl Fn(&AnyRow) -> Result<T>,
    ) -> Result<Vec<T>> {
        let Table { table, cols, key } = self;
        let (ts, after) = before.unwrap_or((i64::MAX, None));
        let filter = and.map(|(condition, _)| format!(" AND {condition}")).unwrap_or_default();
        let sql = sqlf!(
            "SELECT {cols} FROM {table} WHERE user_id = $1{filter} \
             AND (created_at < $2 OR (created_at = $2 AND $3 IS NOT NULL AND {key} < $3)) \
             ORDER BY created_at DESC, {key} DESC LIMIT $4"
        );
        let mut query = sqlx::query(sql).bind(user_id).bind(ts).bind(after).bind(limit);
        if let Some((_, value)) = and {
            query = query.bind(value);
        }
        query.fetch_all(pool).await?.iter().map(from_row).collect()
    }
}

/// How often a key's `last_used_at` is written: at most once a minute, so one key's creates
/// do not all queue on its row.
const KEY_USE_EVERY_MS: i64 = 60_000;

/// Record that API key `key_id` was used at `now` (to the minute).
pub(crate) async fn key_used(tx: &mut Transaction<'static, Any>, key_id: &str, now: i64) -> Result<()> {
    sqlx::query("UPDATE api_keys SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at <= $3)")
        .bind(now)
        .bind(key_id)
        .bind(now - KEY_USE_EVERY_MS)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The end of a create, inside its transaction: the API key marked used (when a key made
/// it), the new row of `table` read back — before the commit, since once committed a worker
/// on another node (woken by NOTIFY) may change it — and, with `idem`, the response stored
/// for the Idempotency-Key in the same transaction. `None` when the key's lease was taken
/// over by another request: the caller rolls back and reports it.
pub(crate) async fn created<T>(
    tx: &mut Transaction<'static, Any>,
    Table { table, cols, .. }: &Table<'_>,
    id: &str,
    key: Option<(&str, i64)>,
    from_row: fn(&AnyRow) -> Result<T>,
    idem: Option<IdemResponse<'_, T>>,
) -> Result<Option<T>> {
    if let Some((key_id, now)) = key {
        key_used(tx, key_id, now).await?;
    }
    let row = sqlx::query(sqlf!("SELECT {cols} FROM {table} WHERE id = $1")).bind(id).fetch_one(&mut **tx).await?;
    let row = from_row(&row)?;
    if let Some(idem) = idem {
        let (status, body) = (idem.render)(&row);
        if !crate::Store::idem_complete_tx(tx, idem.claim, status, &body).await? {
            return Ok(None);
        }
    }
    Ok(Some(row))
}
