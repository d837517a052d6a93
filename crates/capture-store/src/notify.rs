//! Coordination between nodes on PostgreSQL: notifications that wake other nodes at once
//! (`LISTEN/NOTIFY`), and the session-level advisory lock that makes one node the
//! scheduler leader.
//!
//! Notifications are sent with `pg_notify` inside the transaction of the change, so
//! PostgreSQL delivers them when (and only if) it commits. They only shorten waits: every
//! consumer also polls, so a missed notification (listener reconnecting, database
//! restarting) costs at most one poll interval. On SQLite (one node) nothing is sent,
//! there is no listener and the process always leads.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection, PgListener, PgPoolOptions};
use sqlx::{Any, ConnectOptions, Connection, Transaction};

use crate::db::{PgUrl, Result, Store, StoreError};

/// Channel of "a task of this kind can be claimed now" (payload: the task kind).
pub const WORK_CHANNEL: &str = "capture_work";
/// Channel of "this job has a new status event" (payload: the job id).
pub const JOB_CHANNEL: &str = "capture_job";
/// Channel of "a key was revoked or an account's plan changed": cached key lookups on every
/// node are dropped (see `authver`).
pub const AUTH_CHANNEL: &str = "capture_auth";
/// The advisory lock key whose holder runs the scheduler ("capture" in ASCII, then 1).
pub const SCHEDULER_LOCK: i64 = 0x6361_7074_7572_6501;

/// How long connecting a listener or a leader connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a leader's liveness check may take before the lock counts as lost.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait between listener reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Queue `payload` on `channel` in the caller's transaction (delivered on commit; nothing
/// on SQLite). PostgreSQL folds identical notifications of one transaction into one.
pub(crate) async fn notify(tx: &mut Transaction<'static, Any>, channel: &str, payload: &str) -> Result<()> {
    if tx.backend_name() != <sqlx::Postgres as sqlx::Database>::NAME {
        return Ok(());
    }
    sqlx::query("SELECT pg_notify($1, $2)").bind(channel).bind(payload).execute(&mut **tx).await?;
    Ok(())
}

/// What a notification asks of this node. A node hears its own notifications too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wakeup {
    /// A task of this kind can be claimed.
    Work(String),
    /// This job has a new status event.
    Job(String),
    /// The listener (re)connected: notifications may have been missed, so look at everything.
    Resync,
}

/// Receives the notifications of every node on its own connection (not from the pool),
/// reconnecting with backoff when the connection drops.
pub struct Listener {
    url: PgUrl,
    inner: Option<PgListener>,
    /// Told of every connection, loss and auth change (cached key lookups follow it).
    auth: std::sync::Arc<crate::authver::AuthState>,
    /// Failed connection attempts in a row (drives the backoff).
    failures: u32,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener").field("url", &self.url).field("connected", &self.inner.is_some()).finish()
    }
}

impl Listener {
    /// Connect and `LISTEN` on every channel (also done by [`Listener::recv`] when needed).
    pub async fn connect(&mut self) -> Result<()> {
        let opts = PgConnectOptions::from_str(&self.url.0)?.application_name("capture listener");
        let connect = async {
            // A pool of one, used by PgListener only to re-establish its connection.
            let pool = PgPoolOptions::new()
                .max_connections(1)
                .min_connections(0)
                .max_lifetime(None)
                .idle_timeout(None)
                .acquire_timeout(CONNECT_TIMEOUT)
                .connect_with(opts)
                .await?;
            let mut l = PgListener::connect_with(&pool).await?;
            l.ignore_pool_close_event(true);
            // We reconnect ourselves, so the loss is logged and followed by a resync.
            l.eager_reconnect(false);
            l.listen_all([WORK_CHANNEL, JOB_CHANNEL, AUTH_CHANNEL]).await?;
            Ok::<_, sqlx::Error>(l)
        };
        let l = tokio::time::timeout(CONNECT_TIMEOUT, connect)
            .await
            .map_err(|_| StoreError::Conflict("connecting the notification listener timed out".into()))??;
        self.inner = Some(l);
        self.auth.listening(true);
        Ok(())
    }

    fn lost(&mut self) {
        self.inner = None;
        self.auth.listening(false);
    }

    /// The next wake-up. Never fails: connection trouble is logged and retried with
    /// backoff (callers keep polling meanwhile), and a reconnection yields [`Wakeup::Resync`].
    pub async fn recv(&mut self) -> Wakeup {
        loop {
            let Some(l) = self.inner.as_mut() else {
                if self.failures > 0 {
                    tokio::time::sleep(backoff(self.failures)).await;
                }
                match self.connect().await {
                    Ok(()) => {
                        if self.failures > 0 {
                            tracing::info!(failures = self.failures, "notification listener reconnected");
                        }
                        self.failures = 0;
                        return Wakeup::Resync;
                    }
                    Err(e) => {
                        self.failures += 1;
                        tracing::warn!(error = %e, retry_in = ?backoff(self.failures),
                            "notification listener cannot connect; nodes fall back to polling");
                        continue;
                    }
                }
            };
            match l.try_recv().await {
                Ok(Some(n)) => match n.channel() {
                    WORK_CHANNEL => return Wakeup::Work(n.payload().to_string()),
                    JOB_CHANNEL => return Wakeup::Job(n.payload().to_string()),
                    AUTH_CHANNEL => self.auth.heard_change(),
                    _ => {}
                },
                Ok(None) => {
                    tracing::warn!("notification listener lost its connection; reconnecting");
                    self.lost();
                }
                Err(e) => {
                    tracing::warn!(error = %e, "notification listener failed; reconnecting");
                    self.lost();
                    self.failures += 1;
                }
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // Nobody hears changes any more: cached lookups stop being trusted.
        if self.inner.is_some() {
            self.auth.listening(false);
        }
    }
}

fn backoff(failures: u32) -> Duration {
    let ms = 250u64.saturating_mul(1 << failures.saturating_sub(1).min(16));
    Duration::from_millis(ms).min(MAX_BACKOFF)
}

/// A session-level advisory lock on a dedicated connection: held while that connection
/// lives, so a node that dies (or loses the database) gives it up and another can take it.
pub struct LeaderLock {
    url: Option<PgUrl>,
    key: i64,
    conn: Option<PgConnection>,
    held: bool,
}

impl std::fmt::Debug for LeaderLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderLock").field("key", &self.key).field("held", &self.held).finish()
    }
}

impl LeaderLock {
    /// Try once to take the lock; true when this process leads (always on SQLite).
    pub async fn try_acquire(&mut self) -> Result<bool> {
        let Some(url) = &self.url else {
            self.held = true;
            return Ok(true);
        };
        if self.held {
            // Session locks stack: never take it twice on one connection.
            return Ok(true);
        }
        if self.conn.is_none() {
            let opts = PgConnectOptions::from_str(&url.0)?.application_name("capture leader");
            let conn = tokio::time::timeout(CONNECT_TIMEOUT, opts.connect())
                .await
                .map_err(|_| StoreError::Conflict("connecting for the leader lock timed out".into()))??;
            self.conn = Some(conn);
        }
        let conn = self.conn.as_mut().expect("connected above");
        let got: std::result::Result<(bool,), sqlx::Error> =
            sqlx::query_as("SELECT pg_try_advisory_lock($1)").bind(self.key).fetch_one(conn).await;
        match got {
            Ok((got,)) => {
                self.held = got;
                Ok(got)
            }
            Err(e) => {
                self.conn = None;
                Err(e.into())
            }
        }
    }

    /// Whether the lock was held at the last check.
    pub fn is_held(&self) -> bool {
        self.held
    }

    /// Resolves when a held lock is lost: its connection stopped answering (checked every
    /// `every`). Pending forever on SQLite or when the lock is not held.
    pub async fn lost(&mut self, every: Duration) -> StoreError {
        let Some(conn) = self.conn.as_mut().filter(|_| self.held) else {
            return std::future::pending().await;
        };
        let reason = loop {
            tokio::time::sleep(every).await;
            match tokio::time::timeout(CHECK_TIMEOUT, conn.ping()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => break e.into(),
                Err(_) => break StoreError::Conflict(format!("the database did not answer within {CHECK_TIMEOUT:?}")),
            }
        };
        // Whatever the server thinks, this process no longer counts on the lock.
        self.held = false;
        self.conn = None;
        reason
    }

    /// Give the lock up and close its connection, so another node can take over at once.
    pub async fn release(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            if self.held {
                let _ = sqlx::query("SELECT pg_advisory_unlock($1)").bind(self.key).execute(&mut conn).await;
            }
            let _ = conn.close().await;
        }
        self.held = false;
    }
}

impl Store {
    /// A listener for the notifications of every node; None on SQLite. Not connected yet:
    /// [`Listener::connect`] (or the first [`Listener::recv`]) does that.
    pub fn listener(&self) -> Option<Listener> {
        self.pg_url.clone().map(|url| Listener { url, inner: None, auth: self.auth.clone(), failures: 0 })
    }

    /// The advisory lock `key` (see [`SCHEDULER_LOCK`]), not taken yet.
    pub fn leader_lock(&self, key: i64) -> LeaderLock {
        LeaderLock { url: self.pg_url.clone(), key, conn: None, held: false }
    }
}
