//! The scheduler role: periodic housekeeping (expired idempotency records, OAuth codes and
//! tokens, web sessions) and monitors (due checks started, ended ones compared:
//! [`crate::monitors::check`]). Webhook retries need no scheduler: delivery loops claim them from
//! the queue when they come due.
//!
//! Exactly one node runs these duties at a time: on PostgreSQL the one holding the
//! scheduler's advisory lock on a dedicated connection. The others try to take the lock
//! every `CAPTURE_LEADER_RETRY`, so when the leader dies (its connection closes and the
//! lock with it) another takes over; a leader whose connection stops answering stops its
//! duties at once. On SQLite the process always leads.

use std::time::Duration;

use capture_store::{LeaderLock, SCHEDULER_LOCK};
use tokio_util::sync::CancellationToken;

use crate::state::AppState;

/// Longest time a leader goes without checking that its lock connection still answers.
const MAX_LEADER_CHECK: Duration = Duration::from_secs(1);

/// Campaign for leadership and run the scheduler's duties while leading, until `stop`.
pub async fn run(state: AppState, stop: CancellationToken) {
    let mut lock = state.store.leader_lock(SCHEDULER_LOCK);
    let retry = state.cfg.queue.leader_retry;
    let check = retry.min(MAX_LEADER_CHECK);
    let mut standing_by = false;
    loop {
        if !campaign(&mut lock, retry, &stop, &mut standing_by).await {
            return;
        }
        standing_by = false;
        state.metrics.set_scheduler_leader(true);
        tracing::info!(backend = ?state.store.backend(), "this node is now the scheduler leader");
        let lost = tokio::select! {
            _ = housekeeping(&state) => None,
            _ = crate::monitors::check::run(&state) => None,
            e = lock.lost(check) => Some(e),
            _ = stop.cancelled() => None,
        };
        state.metrics.set_scheduler_leader(false);
        match lost {
            Some(e) => tracing::warn!(error = %e, "lost the scheduler leadership; scheduler duties stopped"),
            None => {
                lock.release().await;
                tracing::info!("scheduler leadership released (shutting down)");
                return;
            }
        }
    }
}

/// Try to take the lock every `retry` until it is ours (true) or `stop` (false).
async fn campaign(lock: &mut LeaderLock, retry: Duration, stop: &CancellationToken, standing_by: &mut bool) -> bool {
    loop {
        if stop.is_cancelled() {
            return false;
        }
        match lock.try_acquire().await {
            Ok(true) => return true,
            Ok(false) => {
                if !*standing_by {
                    tracing::info!(retry = ?retry, "another node is the scheduler leader; standing by");
                    *standing_by = true;
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot try for the scheduler leadership; retrying"),
        }
        tokio::select! {
            _ = tokio::time::sleep(retry) => {}
            _ = stop.cancelled() => return false,
        }
    }
}

/// The leader's duties: housekeeping now and every few minutes. Never returns.
async fn housekeeping(state: &AppState) {
    let mut tick = tokio::time::interval(Duration::from_secs(300));
    loop {
        tick.tick().await;
        match state.store.idem_purge(state.clock.now_ms() - 24 * 3600 * 1000).await {
            Ok(n) if n > 0 => tracing::info!(purged = n, "expired idempotency records removed"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "idempotency purge failed"),
        }
        if let Err(e) = state.store.purge_oauth_state(state.clock.now_ms()).await {
            tracing::warn!(error = %e, "purging expired OAuth codes and tokens failed");
        }
        if let Err(e) = state.store.purge_web_state(state.clock.now_ms(), state.clock.now_ms() - 24 * 3600 * 1000).await
        {
            tracing::warn!(error = %e, "purging expired sessions failed");
        }
    }
}
