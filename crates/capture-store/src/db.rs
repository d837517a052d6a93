//! Connection, backend detection and transactions.

use std::sync::Arc;
use std::time::Duration;

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{AnyPool, Executor};

use crate::authver::{AuthState, AuthVersion};

/// Which database is behind the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A store failure. Callers map it to an opaque 500; the message is for logs.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Db(sqlx::Error),
    /// The database could not be reached or gave no connection in time (every connection
    /// busy, the server refusing more, the pool closing at shutdown): a transient condition
    /// the caller may retry, not a fault in the request or the data.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("{0}")]
    Conflict(String),
    #[error("not found")]
    NotFound,
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> StoreError {
        match e {
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => {
                StoreError::Unavailable(e.to_string())
            }
            e => StoreError::Db(e),
        }
    }
}

impl StoreError {
    /// See [`StoreError::Unavailable`].
    pub fn is_unavailable(&self) -> bool {
        matches!(self, StoreError::Unavailable(_))
    }
}

/// Result alias for store calls.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The one persistence API. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    pub(crate) pool: AnyPool,
    pub(crate) backend: Backend,
    pub(crate) auth: Arc<AuthState>,
    /// The PostgreSQL URL, for the connections that must not come from the pool (the
    /// notification listener, the scheduler leader's lock).
    pub(crate) pg_url: Option<PgUrl>,
    /// Slots of each gate this store's creates use ([`crate::gate`]).
    pub(crate) slots: i64,
}

/// Slots per gate at most (the queue gate's rows), and a store's number unless set
/// (`crate::gate`).
pub const MAX_GATE_SLOTS: i64 = 16;

/// A database URL that never prints its password.
#[derive(Clone)]
pub(crate) struct PgUrl(pub(crate) Arc<str>);

impl std::fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&redact(&self.0))
    }
}

impl Store {
    /// Connect to `sqlite://path` or `postgres://…` and run migrations.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Store> {
        install_default_drivers();
        let backend = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Backend::Postgres
        } else if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else {
            return Err(StoreError::Conflict(format!(
                "unsupported database URL (use sqlite:// or postgres://): {}",
                redact(url)
            )));
        };
        let url = if backend == Backend::Sqlite && !url.contains("mode=") {
            let sep = if url.contains('?') { '&' } else { '?' };
            format!("{url}{sep}mode=rwc")
        } else {
            url.to_string()
        };
        let mut opts =
            AnyPoolOptions::new().max_connections(max_connections.max(2)).acquire_timeout(Duration::from_secs(15));
        if backend == Backend::Sqlite {
            opts = opts.after_connect(|conn, _| {
                Box::pin(async move {
                    conn.execute("PRAGMA journal_mode=WAL").await?;
                    conn.execute("PRAGMA synchronous=NORMAL").await?;
                    conn.execute("PRAGMA busy_timeout=10000").await?;
                    conn.execute("PRAGMA foreign_keys=ON").await?;
                    Ok(())
                })
            });
        }
        let pool = opts.connect(&url).await?;
        let auth = Arc::new(match backend {
            Backend::Sqlite => AuthState::sqlite(&url),
            Backend::Postgres => AuthState::postgres(),
        });
        let pg_url = (backend == Backend::Postgres).then(|| PgUrl(Arc::from(url.as_str())));
        let store = Store { pool, backend, auth, pg_url, slots: MAX_GATE_SLOTS };
        store.migrate().await?;
        Ok(store)
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// A cheap query that proves the database answers (readiness).
    pub async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Whether this store's connections to the database are encrypted (PostgreSQL over TLS;
    /// always false for SQLite). Readiness and tests report it.
    pub async fn connection_uses_tls(&self) -> Result<bool> {
        if self.backend == Backend::Sqlite {
            return Ok(false);
        }
        let (ssl,): (bool,) =
            sqlx::query_as("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetch_one(&self.pool).await?;
        Ok(ssl)
    }

    /// The current auth version, or None when lookups must not be cached (PostgreSQL).
    pub fn auth_version(&self) -> Option<AuthVersion> {
        self.auth.version()
    }

    /// Record that keys or accounts changed (after the change committed).
    pub(crate) fn auth_changed(&self) {
        self.auth.changed();
    }

    /// Close the pool.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Begin a write transaction: `BEGIN IMMEDIATE` on SQLite so read-then-write
    /// transactions never hit a busy-snapshot error, plain `BEGIN` on PostgreSQL.
    pub(crate) async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>> {
        Ok(match self.backend {
            Backend::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await?,
            Backend::Postgres => self.pool.begin().await?,
        })
    }
}

/// Hide the password in a database URL for messages.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}

pub(crate) fn b(v: bool) -> i64 {
    i64::from(v)
}

/// `n` bind parameters numbered from `first`, for an `IN (…)` list: `$2, $3, $4`.
pub(crate) fn placeholders(first: usize, n: usize) -> String {
    (first..first + n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::StoreError;

    #[test]
    fn a_database_that_gives_no_connection_is_unavailable_and_other_failures_are_not() {
        for e in [
            sqlx::Error::PoolTimedOut,
            sqlx::Error::PoolClosed,
            sqlx::Error::Io(std::io::ErrorKind::ConnectionRefused.into()),
        ] {
            assert!(StoreError::from(e).is_unavailable());
        }
        assert!(!StoreError::from(sqlx::Error::RowNotFound).is_unavailable());
        assert!(!StoreError::Corrupt("x".into()).is_unavailable());
    }
}
