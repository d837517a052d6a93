//! In-memory caches for the hot read path (`GET /v1/screenshot/:id` polled by clients):
//! API key lookups, monthly usage for the rate-limit headers, and finished jobs.
//!
//! - Key lookups are trusted only while the store's [`AuthVersion`] is unchanged, so a
//!   revocation or plan change (in this process, or by the admin CLI on the same SQLite
//!   file) takes effect on the next call. On PostgreSQL the version also moves when any
//!   node's change is heard (a `capture_auth` notification sent on commit, milliseconds
//!   later), and there is no version while the node's listener is disconnected, so keys are
//!   then looked up every time.
//! - Usage feeds only the `X-RateLimit-*` headers: it is refreshed from the database at
//!   most every [`USAGE_TTL`] and set directly when this process changes it. Quotas are
//!   enforced in the database, never from this cache; the balance endpoint reads live.
//! - Finished (done/failed) jobs never change once their copy to a customer's bucket (if
//!   any) ended, so their rows are kept; others are not.
//!
//! Each cache is bounded (`quick_cache`, which evicts the least useful entries one at a time
//! instead of dropping everything when full) and its entries expire after a TTL, so a burst of
//! new keys never sends every lookup back to the database at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use capture_store::{AuthVersion, ScreenshotRow, User};
use quick_cache::sync::Cache;

/// How stale the usage behind the rate-limit headers may be (changes made elsewhere).
pub const USAGE_TTL: Duration = Duration::from_secs(1);
/// How long a key lookup is trusted even at an unchanged [`AuthVersion`].
const KEY_TTL: Duration = Duration::from_secs(300);
/// How long a finished job row is kept.
const JOB_TTL: Duration = Duration::from_secs(600);
const MAX_KEYS: usize = 50_000;
const MAX_USAGE: usize = 50_000;
const MAX_JOBS: usize = 10_000;

struct KeyEntry {
    user: User,
    key_id: String,
    version: AuthVersion,
    at: Instant,
}

#[derive(Clone)]
struct UsageEntry {
    month: String,
    used: i64,
    at: Instant,
}

#[derive(Clone)]
struct JobEntry {
    row: Arc<ScreenshotRow>,
    at: Instant,
}

/// The caches; one per process.
pub struct HotCache {
    keys: Cache<String, Arc<KeyEntry>>,
    usage: Cache<String, UsageEntry>,
    jobs: Cache<String, JobEntry>,
}

impl Default for HotCache {
    fn default() -> Self {
        HotCache { keys: Cache::new(MAX_KEYS), usage: Cache::new(MAX_USAGE), jobs: Cache::new(MAX_JOBS) }
    }
}

impl HotCache {
    /// The account and key id behind key hash `hash`, if cached at `version`.
    pub fn key(&self, hash: &str, version: AuthVersion) -> Option<(User, String)> {
        let e = self.keys.get(hash)?;
        if e.at.elapsed() >= KEY_TTL {
            self.keys.remove(hash);
            return None;
        }
        (e.version == version).then(|| (e.user.clone(), e.key_id.clone()))
    }

    /// Remember a successful lookup made after reading `version`.
    pub fn put_key(&self, hash: &str, user: &User, key_id: &str, version: AuthVersion) {
        let e = KeyEntry { user: user.clone(), key_id: key_id.to_owned(), version, at: Instant::now() };
        self.keys.insert(hash.to_owned(), Arc::new(e));
    }

    /// The account's usage in `month`, if known and fresh.
    pub fn usage(&self, user_id: &str, month: &str) -> Option<i64> {
        self.usage.get(user_id).filter(|e| e.month == month && e.at.elapsed() < USAGE_TTL).map(|e| e.used)
    }

    /// Record the account's usage in `month` as just read or changed.
    pub fn put_usage(&self, user_id: &str, month: &str, used: i64) {
        self.usage.insert(user_id.to_owned(), UsageEntry { month: month.to_owned(), used, at: Instant::now() });
    }

    /// Forget an account's usage (it changed here in a way not worth computing).
    pub fn forget_usage(&self, user_id: &str) {
        self.usage.remove(user_id);
    }

    /// A finished job of `user_id`, if cached.
    pub fn job(&self, id: &str, user_id: &str) -> Option<Arc<ScreenshotRow>> {
        let e = self.jobs.get(id)?;
        if e.at.elapsed() >= JOB_TTL {
            self.jobs.remove(id);
            return None;
        }
        (e.row.user_id == user_id).then_some(e.row)
    }

    /// Keep a job row if it is finished (done or failed) and its copy to a customer's bucket,
    /// if any, ended; others are ignored. The share token can still change, so cached rows
    /// carry none: read it from the database.
    pub fn put_job(&self, row: &ScreenshotRow) {
        if row.status.is_final() && row.storage_status.as_deref() != Some("pending") {
            let row = ScreenshotRow { share_token: None, ..row.clone() };
            self.jobs.insert(row.id.clone(), JobEntry { row: Arc::new(row), at: Instant::now() });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capture_core::JobStatus;

    fn row(status: JobStatus) -> ScreenshotRow {
        ScreenshotRow {
            id: "scr_1".into(),
            user_id: "usr_1".into(),
            key_id: None,
            status,
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
            metadata: None,
            credentials: None,
            cache_hash: None,
            cache_until: None,
            cached_from: None,
            batch_id: None,
            batch_index: None,
            storage_url: None,
            storage_error: None,
            storage_status: None,
            traceparent: None,
        }
    }

    #[test]
    fn only_finished_jobs_of_their_owner_are_served() {
        let c = HotCache::default();
        c.put_job(&row(JobStatus::Processing));
        assert!(c.job("scr_1", "usr_1").is_none());
        c.put_job(&row(JobStatus::Done));
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

    #[test]
    fn a_full_cache_evicts_some_entries_not_all() {
        let c = HotCache::default();
        for i in 0..(MAX_JOBS + 500) {
            let mut r = row(JobStatus::Done);
            r.id = format!("scr_{i}");
            c.put_job(&r);
        }
        let kept = (0..(MAX_JOBS + 500)).filter(|i| c.job(&format!("scr_{i}"), "usr_1").is_some()).count();
        assert!(kept > MAX_JOBS / 2 && kept <= MAX_JOBS, "kept {kept}");
        assert!(c.job(&format!("scr_{}", MAX_JOBS + 499), "usr_1").is_some(), "the newest entry is kept");
    }
}
