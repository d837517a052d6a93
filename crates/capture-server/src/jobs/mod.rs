//! Background work from the one durable queue: a handler per kind of task. Each kind runs
//! [`claim_loop`]s: claim a task with a lease, hand it to the kind's handler (which commits
//! its outcome fenced on that lease), and when the queue is empty wait for a wake-up (this
//! node's, or another node's through PostgreSQL) or the poll.
//!
//! A kind of work is one file here: its handler, its workers and its [`Kind`] row, listed in
//! [`KINDS`]; the app starts every row on the nodes it runs on ([`spawn_all`]). Its wake-up is a
//! row of `queues`.

pub mod ads;
pub mod audit;
pub mod campaign;
pub mod capture;
pub mod model;
pub mod run;
pub mod storage_copy;
pub mod webhook;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use capture_browser::BrowserPool;
use capture_store::{FairShare, Task};
use futures_util::future::BoxFuture;
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::state::AppState;

/// The nodes a kind of work runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunsOn {
    /// Nodes with a browser (the worker role, its pool started).
    Browser,
    /// Scheduler and worker nodes.
    Background,
}

/// What a kind's workers start with.
#[derive(Clone)]
pub struct Start {
    pub state: AppState,
    /// Stop claiming (shutdown began).
    pub stop: CancellationToken,
    /// Stop what is in flight (the shutdown grace ran out).
    pub hard_stop: CancellationToken,
}

impl Start {
    /// The node's browser pool, for a [`RunsOn::Browser`] kind (started only where there is one).
    fn pool(&self) -> Arc<BrowserPool> {
        self.state.browser.pool.clone().expect("browser kinds start only on nodes with a browser")
    }
}

/// A kind of background work: its name (for logs), the nodes it runs on, and how its workers
/// start (the future ends when they have all stopped).
pub struct Kind {
    pub name: &'static str,
    pub runs_on: RunsOn,
    pub start: fn(Start) -> BoxFuture<'static, ()>,
}

/// Every kind of background work this version runs.
pub const KINDS: &[Kind] = &[
    capture::WORKERS,
    run::WORKERS,
    run::SWEEP,
    audit::WORKERS,
    ads::WORKERS,
    webhook::WORKERS,
    storage_copy::WORKERS,
    campaign::WORKERS,
];

/// Start the workers of every kind that runs on this node, into `tasks`.
pub fn spawn_all(tasks: &mut JoinSet<()>, start: &Start) {
    let roles = &start.state.cfg.roles;
    for kind in KINDS {
        let here = match kind.runs_on {
            RunsOn::Browser => start.state.browser.pool.is_some(),
            RunsOn::Background => roles.scheduler || roles.worker,
        };
        if here {
            tracing::debug!(kind = kind.name, "starting workers");
            tasks.spawn((kind.start)(start.clone()));
        }
    }
}

/// Claim tasks of `kind` as `worker` with a lease of `lease_ms` until `stop`, running
/// `handle` on each; between claims on an empty queue, wait for `wake` or the poll. With a
/// `share`, claims are fair across accounts and capped per account (browser work).
#[allow(clippy::too_many_arguments)]
pub async fn claim_loop<F, Fut>(
    state: &AppState,
    kind: &str,
    worker: &str,
    lease_ms: i64,
    share: Option<&FairShare>,
    wake: &Notify,
    stop: &CancellationToken,
    mut handle: F,
) where
    F: FnMut(Task) -> Fut,
    Fut: Future<Output = ()>,
{
    while !stop.is_cancelled() {
        let claimed = match share {
            Some(share) => state.store.claim_fair(&[kind], worker, state.clock.now_ms(), lease_ms, share).await,
            None => state.store.claim(kind, worker, state.clock.now_ms(), lease_ms).await,
        };
        match claimed {
            Ok(Some(task)) => handle(task).await,
            Ok(None) => {
                tokio::select! {
                    _ = wake.notified() => {}
                    _ = tokio::time::sleep(state.cfg.queue.poll) => {}
                    _ = stop.cancelled() => {}
                }
            }
            Err(e) => {
                tracing::error!(error = %e, kind, "claiming a task failed");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = stop.cancelled() => {}
                }
            }
        }
    }
}

/// Keep a claimed task's lease alive (extended every third of `CAPTURE_QUEUE_LEASE`) until
/// the guard drops, or until the worker no longer holds it. Every queue handler whose work
/// outlasts a lease holds one.
pub(crate) fn keep_lease(state: &AppState, task_id: &str, worker: &str) -> DropGuard {
    let stop = CancellationToken::new();
    let (st, tid, w, s) = (state.clone(), task_id.to_string(), worker.to_string(), stop.clone());
    tokio::spawn(async move {
        let lease = st.cfg.queue.lease;
        loop {
            tokio::select! {
                _ = s.cancelled() => return,
                _ = tokio::time::sleep(lease / 3) => {}
            }
            match st.store.extend_lease(&tid, &w, st.clock.now_ms() + lease.as_millis() as i64).await {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => tracing::warn!(error = %e, "extending a lease failed"),
            }
        }
    });
    stop.drop_guard()
}
