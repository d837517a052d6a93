//! Working with other nodes on PostgreSQL. One listener per process turns the
//! notifications every node sends on commit into the wake-ups this node gives itself: an
//! idle worker or webhook sender claims at once, event streams re-read their job. So a job
//! submitted on one API node starts on an idle worker elsewhere without waiting for a poll,
//! and a stream opened on one node sees a job finished on another at once. Polling
//! (`CAPTURE_QUEUE_POLL`) stays as the fallback, and is all there is on SQLite.

use capture_store::{Listener, Wakeup};
use tokio_util::sync::CancellationToken;

use crate::state::AppState;

/// Dispatch notifications until `stop`.
pub async fn listen(state: AppState, mut listener: Listener, stop: CancellationToken) {
    loop {
        let wakeup = tokio::select! {
            w = listener.recv() => w,
            _ = stop.cancelled() => return,
        };
        match wakeup {
            Wakeup::Work(kind) => match crate::queues::Queue::of_task_kind(&kind) {
                Some(queue) => state.wake.queued(queue),
                None => tracing::debug!(kind = %kind, "work of a kind this version does not run"),
            },
            Wakeup::Job(id) => {
                let _ = state.job_events.send(id);
            }
            Wakeup::Resync => {
                // Notifications may have been missed while disconnected: everyone looks.
                state.wake.everyone();
                // The empty id: any job may have changed.
                let _ = state.job_events.send(String::new());
            }
        }
    }
}
