//! In-memory caches for the hot read path (`GET /v1/screenshot/:id` polled by clients):
//! API key lookups, monthly usage for the rate-limit headers, and finished jobs.
//!
//! - Key lookups are trusted only while the store's [`AuthVersion`] is unchanged, so a
//!   revocation or plan change (in this process, or by the admin CLI on the same SQLite
//!   file) takes effect on the next call. On PostgreSQL there is no version (another node's
//!   change could only be learnt a moment after it commits), so keys are looked up every time.
//! - Usage feeds only the `X-RateLimit-*` headers: it is refreshed from the database at
//!   most every [`USAGE_TTL`] and set directly when this process changes it. Quotas are
//!   enforced in the database, never from this cache; the balance endpoint reads live.
//! - Finished (done/failed) jobs never change, so their rows are kept; others are not.
//!
//! Each map is bounded: when full it is cleared (cheap, and refilled by the next reads).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use capture_store::{AuthVersion, ScreenshotRow, User};

/// How stale the usage behind the rate-limit headers may be (changes made elsewhere).
pub const USAGE_TTL: Duration = Duration::from_secs(1);
const MAX_ENTRIES: usize = 50_000;

struct KeyEntry {
    user: User,
    key_id: String,
    version: AuthVersion,
}

struct UsageEntry {
    month: String,
    used: i64,
    at: Instant,
}

/// The caches; one per process.
#[derive(Default)]
pub struct HotCache {
    keys: RwLock<HashMap<String, KeyEntry>>,
    usage: RwLock<HashMap<String, UsageEntry>>,
    jobs: RwLock<HashMap<String, Arc<ScreenshotRow>>>,
}

fn bounded_insert<V>(map: &RwLock<HashMap<String, V>>, k: String, v: V) {
    let mut m = map.write().unwrap();
    if m.len() >= MAX_ENTRIES && !m.contains_key(&k) {
        m.clear();
    }
    m.insert(k, v);
}

impl HotCache {
    /// The account and key id behind key hash `hash`, if cached at `version`.
    pub fn key(&self, hash: &str, version: AuthVersion) -> Option<(User, String)> {
        let m = self.keys.read().unwrap();
        m.get(hash).filter(|e| e.version == version).map(|e| (e.user.clone(), e.key_id.clone()))
    }

    /// Remember a successful lookup made after reading `version`.
    pub fn put_key(&self, hash: &str, user: &User, key_id: &str, version: AuthVersion) {
        bounded_insert(
            &self.keys,
            hash.to_owned(),
            KeyEntry { user: user.clone(), key_id: key_id.to_owned(), version },
        );
    }

    /// The account's usage in `month`, if known and fresh.
    pub fn usage(&self, user_id: &str, month: &str) -> Option<i64> {
        let m = self.usage.read().unwrap();
        m.get(user_id).filter(|e| e.month == month && e.at.elapsed() < USAGE_TTL).map(|e| e.used)
    }

    /// Record the account's usage in `month` as just read or changed.
    pub fn put_usage(&self, user_id: &str, month: &str, used: i64) {
        bounded_insert(
            &self.usage,
            user_id.to_owned(),
            UsageEntry { month: month.to_owned(), used, at: Instant::now() },
        );
    }

    /// Forget an account's usage (it changed here in a way not worth computing).
    pub fn forget_usage(&self, user_id: &str) {
        self.usage.write().unwrap().remove(user_id);
    }

    /// A finished job of `user_id`, if cached.
    pub fn job(&self, id: &str, user_id: &str) -> Option<Arc<ScreenshotRow>> {
        let m = self.jobs.read().unwrap();
        m.get(id).filter(|r| r.user_id == user_id).cloned()
    }

    /// Keep a job row if it is finished (done or failed); others are ignored. The share
    /// token can still change, so cached rows carry none: read it from the database.
    pub fn put_job(&self, row: &ScreenshotRow) {
        if row.status == "done" || row.status == "failed" {
            let row = ScreenshotRow { share_token: None, ..row.clone() };
            bounded_insert(&self.jobs, row.id.clone(), Arc::new(row));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: &str) -> ScreenshotRow {
        ScreenshotRow {
            id: "scr_1".into(),
            user_id: "usr_1".into(),
            key_id: None,
            status: status.into(),
            url: "https://example.com/".into(),
            options: "{}".into(),
            format: "png".into(),
            result_key: None,
            thumb_key: None,
            page_title: None,
            tags: vec![],
            width: None,
            height: None,
            error: None,
            actions: 1,
            usage_month: "2026-11".into(),
            share_token: None,
            created_at: 0,
            started_at: None,
            completed_at: None,
        }
    }

    #[test]
    fn only_finished_jobs_of_their_owner_are_served() {
        let c = HotCache::default();
        c.put_job(&row("processing"));
        assert!(c.job("scr_1", "usr_1").is_none());
        c.put_job(&row("done"));
        assert!(c.job("scr_1", "usr_1").is_some());
        assert!(c.job("scr_1", "usr_2").is_none(), "another account's job is never served");
    }

    #[test]
    fn usage_is_per_month_and_expires() {
        let c = HotCache::default();
        c.put_usage("usr_1", "2026-11", 5);
        assert_eq!(c.usage("usr_1", "2026-11"), Some(5));
        assert_eq!(c.usage("usr_1", "2026-12"), None);
        c.forget_usage("usr_1");
        assert_eq!(c.usage("usr_1", "2026-11"), None);
    }
}
