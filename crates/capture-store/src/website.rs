//! Queries of the website's working pages: usage per day (split by key and product) for
//! the usage chart, the screenshots list with filters and search, and the webhook
//! deliveries one job caused.

use sqlx::Row;

use crate::db::{Result, Store};
use crate::screenshots::{COLS, ScreenshotRow, row_from};
use crate::webhooks::{DELIVERY_COLS, Delivery, delivery_from};

/// A day in milliseconds.
const DAY_MS: i64 = 86_400_000;

/// Net actions of one day, one key and one product, from the usage ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageDay {
    /// Days since 1970-01-01 (UTC) of the ledger entries.
    pub day: i64,
    /// The API key that spent them (`None`: the website or an OAuth client).
    pub key_id: Option<String>,
    /// `screenshots`, `audits`, `ads`, `runs` or `other`, from the subject's id prefix.
    pub product: String,
    /// Reserved minus given back.
    pub actions: i64,
}

/// Which screenshots a list shows. Empty fields do not filter.
#[derive(Debug, Clone, Default)]
pub struct ScreenshotFilter {
    /// `pending`, `processing`, `done` or `failed`.
    pub status: Option<String>,
    /// `png`, `jpeg`, `webp` or `pdf`.
    pub format: Option<String>,
    /// Words found (case-insensitively) in the URL or the page title.
    pub search: Option<String>,
}

/// `s` as a `LIKE` pattern matching it anywhere, with `!` escaping `%`, `_` and `!`.
fn contains_pattern(s: &str) -> String {
    let mut p = String::with_capacity(s.len() + 2);
    p.push('%');
    for c in s.chars() {
        if matches!(c, '%' | '_' | '!') {
            p.push('!');
        }
        p.push(c);
    }
    p.push('%');
    p
}

impl Store {
    /// Net actions per day, key and product of `user_id`'s ledger entries counted against
    /// `month` (`YYYY-MM`), oldest day first. A refund counts on the day it was given back.
    pub async fn usage_per_day(&self, user_id: &str, month: &str) -> Result<Vec<UsageDay>> {
        let rows = sqlx::query(sqlf!(
            "SELECT CAST(created_at / {DAY_MS} AS BIGINT) AS day, key_id, \
             CASE WHEN subject_id LIKE 'scr!_%' ESCAPE '!' THEN 'screenshots' \
                  WHEN subject_id LIKE 'aud!_%' ESCAPE '!' THEN 'audits' \
                  WHEN subject_id LIKE 'run!_%' ESCAPE '!' THEN 'runs' \
                  WHEN subject_id LIKE 'drf!_%' ESCAPE '!' OR subject_id LIKE 'ad!_%' ESCAPE '!' THEN 'ads' \
                  ELSE 'other' END AS product, \
             CAST(SUM(actions) AS BIGINT) AS actions \
             FROM usage_ledger WHERE user_id = $1 AND month = $2 \
             GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
        ))
        .bind(user_id)
        .bind(month)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(UsageDay {
                    day: r.try_get("day")?,
                    key_id: r.try_get("key_id")?,
                    product: r.try_get("product")?,
                    actions: r.try_get("actions")?,
                })
            })
            .collect()
    }

    /// `user_id`'s jobs matching `filter`, newest first, `limit` at a time after the cursor
    /// `before` (`(created_at, id)`, as [`Store::list_screenshots`]).
    pub async fn search_screenshots(
        &self,
        user_id: &str,
        filter: &ScreenshotFilter,
        before: Option<(i64, Option<String>)>,
        limit: i64,
    ) -> Result<Vec<ScreenshotRow>> {
        let (ts, id) = before.unwrap_or((i64::MAX, None));
        let nonempty = |s: &Option<String>| s.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
        let search = nonempty(&filter.search).map(|s| contains_pattern(&s.to_lowercase()));
        let rows = sqlx::query(sqlf!(
            "SELECT {COLS} FROM screenshots WHERE user_id = $1 \
             AND (created_at < $2 OR (created_at = $2 AND $3 IS NOT NULL AND id < $3)) \
             AND ($4 IS NULL OR status = $4) AND ($5 IS NULL OR format = $5) \
             AND ($6 IS NULL OR LOWER(url) LIKE $6 ESCAPE '!' OR LOWER(COALESCE(page_title, '')) LIKE $6 ESCAPE '!') \
             ORDER BY created_at DESC, id DESC LIMIT $7"
        ))
        .bind(user_id)
        .bind(ts)
        .bind(id)
        .bind(nonempty(&filter.status))
        .bind(nonempty(&filter.format))
        .bind(search)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(row_from).collect()
    }

    /// The webhook deliveries whose payload names `subject_id` (a job's events), newest
    /// first.
    pub async fn deliveries_about(&self, user_id: &str, subject_id: &str, limit: i64) -> Result<Vec<Delivery>> {
        let rows = sqlx::query(sqlf!(
            "SELECT {DELIVERY_COLS} FROM webhook_deliveries WHERE user_id = $1 AND payload LIKE $2 ESCAPE '!' \
             ORDER BY created_at DESC, id DESC LIMIT $3"
        ))
        .bind(user_id)
        .bind(contains_pattern(&format!("\"{subject_id}\"")))
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(delivery_from).collect()
    }

    /// Every event of a subject as `(id, type, data, created_at)`, oldest first.
    pub async fn events_of(&self, user_id: &str, subject_id: &str) -> Result<Vec<(i64, String, String, i64)>> {
        let rows: Vec<(i64, String, String, i64)> = sqlx::query_as(
            "SELECT id, event_type, data, created_at FROM events WHERE subject_id = $1 AND user_id = $2 ORDER BY id",
        )
        .bind(subject_id)
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::contains_pattern;

    #[test]
    fn patterns_escape_like_wildcards() {
        assert_eq!(contains_pattern("a_b%c!d"), "%a!_b!%c!!d%");
        assert_eq!(contains_pattern(""), "%%");
    }
}
