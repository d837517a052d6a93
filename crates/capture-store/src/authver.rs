//! Auth versions: a cheap answer to "may a cached key lookup still be trusted?".
//!
//! Callers cache key → account lookups together with the [`AuthVersion`] read *before*
//! the lookup; an entry is used only while the version is unchanged. Every change that
//! can invalidate a lookup (a key revoked, a plan changed) bumps the version after it
//! commits:
//! - in this process, through an in-memory counter;
//! - in other processes on the same SQLite file (the admin CLI), through a marker file
//!   beside the database that is replaced on every change (one `stat` per check);
//! - on PostgreSQL, through a notification (`capture_auth`, sent in the change's own
//!   transaction, so it is delivered when and only if it commits) that every node's listener
//!   turns into a new remote epoch: other nodes stop trusting their cached lookups within the
//!   notification's delivery time (milliseconds; a second at most is the promise). While a
//!   node's listener is not connected, nothing is cacheable there (`Store::auth_version` is
//!   None), and a (re)connection starts a new epoch, since a change may have been missed.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Opaque; two equal versions mean no key or plan changed in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthVersion {
    local: u64,
    file: Option<(u64, i64, i64)>,
    /// PostgreSQL: changes heard from every node (0 on SQLite).
    remote: u64,
}

#[derive(Debug, Default)]
pub(crate) struct AuthState {
    /// SQLite: always. PostgreSQL: while the listener is connected (`listening`).
    cacheable: bool,
    /// PostgreSQL: lookups are cacheable only while the listener hears every change.
    postgres: bool,
    listening: AtomicBool,
    local: AtomicU64,
    remote: AtomicU64,
    /// SQLite: the marker file beside the database (None for in-memory databases).
    marker: Option<PathBuf>,
    /// SQLite: the database file (None for in-memory databases).
    db_file: Option<PathBuf>,
}

impl AuthState {
    /// A SQLite database at `url` (a file, or in memory).
    pub(crate) fn sqlite(url: &str) -> AuthState {
        let db_file = sqlite_path(url);
        let marker = db_file.as_ref().map(|p| {
            let mut m = p.clone().into_os_string();
            m.push("-authv");
            PathBuf::from(m)
        });
        AuthState { cacheable: true, marker, db_file, ..AuthState::default() }
    }

    /// PostgreSQL: cacheable while the listener is connected.
    pub(crate) fn postgres() -> AuthState {
        AuthState { postgres: true, ..AuthState::default() }
    }

    /// PostgreSQL: the listener (re)connected (`true`) or lost its connection. Either way a
    /// change may have gone unheard, so every cached lookup is dropped.
    pub(crate) fn listening(&self, on: bool) {
        self.remote.fetch_add(1, Ordering::SeqCst);
        self.listening.store(on, Ordering::SeqCst);
    }

    /// PostgreSQL: some node changed keys or accounts (a `capture_auth` notification).
    pub(crate) fn heard_change(&self) {
        self.remote.fetch_add(1, Ordering::SeqCst);
    }

    /// The SQLite database file (None for PostgreSQL and in-memory databases).
    pub(crate) fn db_file(&self) -> Option<PathBuf> {
        self.db_file.clone()
    }

    /// The current auth version, or None when lookups must not be cached (PostgreSQL
    /// without its listener).
    pub(crate) fn version(&self) -> Option<AuthVersion> {
        let listening = self.postgres && self.listening.load(Ordering::SeqCst);
        if !self.cacheable && !listening {
            return None;
        }
        Some(AuthVersion {
            local: self.local.load(Ordering::SeqCst),
            file: self.marker.as_ref().and_then(file_stamp),
            remote: self.remote.load(Ordering::SeqCst),
        })
    }

    /// Record that keys or accounts changed (after the change committed).
    pub(crate) fn changed(&self) {
        self.local.fetch_add(1, Ordering::SeqCst);
        if let Some(marker) = &self.marker {
            // Replace the file (a new inode), so a reader can never miss the change even
            // when two changes fall in the same clock tick.
            let tmp = marker.with_extension(format!("tmp{}", rand::random::<u32>()));
            let ok =
                std::fs::write(&tmp, capture_core::ids::random_string(8)).and_then(|()| std::fs::rename(&tmp, marker));
            if let Err(e) = ok {
                let _ = std::fs::remove_file(&tmp);
                tracing::warn!(error = %e, path = %marker.display(), "could not update the auth marker file");
            }
        }
    }
}

/// The file of a `sqlite://PATH?…` URL; None for in-memory databases.
fn sqlite_path(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or("");
    (!path.is_empty() && !path.contains(":memory:")).then(|| PathBuf::from(path))
}

fn file_stamp(path: &PathBuf) -> Option<(u64, i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.ino(), m.mtime(), m.mtime_nsec()))
}

#[cfg(test)]
mod tests {
    use super::sqlite_path;

    #[test]
    fn sqlite_paths() {
        assert_eq!(sqlite_path("sqlite:///tmp/a.db?mode=rwc").unwrap().to_str(), Some("/tmp/a.db"));
        assert_eq!(sqlite_path("sqlite://data/capture.db").unwrap().to_str(), Some("data/capture.db"));
        assert!(sqlite_path("sqlite::memory:").is_none());
        assert!(sqlite_path("postgres://x").is_none());
    }
}
