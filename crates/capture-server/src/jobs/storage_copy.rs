//! The `storage_copy` queue: a done capture's copy to the customer's own bucket (`storage`).
//! The capture worker records the job `done` as soon as the service's own file is stored and
//! queues this task in the same transaction, so a slow or hanging bucket never holds a capture
//! slot: the copy runs here, on its own bounded set of workers (`CAPTURE_STORAGE_COPY_WORKERS`
//! per node), each attempt bounded by the client's timeout, a transient failure tried again
//! after [`RETRY_AFTER`]. When it ends the job carries `storageUrl` or `storageError`
//! (`storageStatus` `stored` or `failed`) and `screenshot.stored` is sent.

use std::time::Duration;

use capture_core::ScreenshotId;
use capture_core::options::StorageTarget;
use capture_store::Task;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::claim_loop;
use crate::screenshots::types::ScreenshotStored;
use crate::state::AppState;
use crate::storage::service::{CopyFailed, FileOut, copy_once};

/// The queue's kind.
pub const KIND: &str = "storage_copy";
/// The waits before the second and third attempts; a copy is tried at most once more than
/// this holds.
pub const RETRY_AFTER: [Duration; 2] = [Duration::from_secs(2), Duration::from_secs(10)];
/// Claims beyond this many (workers that died mid-copy) end the copy as failed.
const MAX_CLAIMS: i64 = 6;

/// What a copy needs besides the job (the task's payload).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CopyPayload {
    pub target: StorageTarget,
    pub ext: String,
    pub content_type: String,
    /// When the capture finished (its `{date}`).
    pub finished_ms: i64,
}
/// Copies to customers' buckets: `CAPTURE_STORAGE_COPY_WORKERS` workers on scheduler and worker nodes.
pub const WORKERS: super::Kind = super::Kind {
    name: "storage_copy",
    runs_on: super::RunsOn::Background,
    start: |s| {
        Box::pin(async move {
            let n = s.state.cfg.storage.copy_workers;
            run(s.state, n, s.stop).await
        })
    },
};

/// Run `n` copy loops until `stop`.
pub async fn run(state: AppState, n: usize, stop: CancellationToken) {
    let node = capture_core::ids::random_string(8);
    // An attempt is bounded by the bucket client's timeout (30 s) and its own retries.
    let lease = Duration::from_secs(120).max(state.cfg.queue.lease).as_millis() as i64;
    let mut handles = Vec::new();
    for i in 0..n.max(1) {
        let (state, stop) = (state.clone(), stop.clone());
        let worker = format!("copy-{node}-{i}");
        handles.push(tokio::spawn(async move {
            claim_loop(
                &state,
                KIND,
                &worker,
                lease,
                None,
                state.wake.of(crate::queues::Queue::StorageCopy),
                &stop,
                |task| copy(&state, &worker, task),
            )
            .await
        }));
    }
    for h in handles {
        let _ = h.await;
    }
}

async fn copy(state: &AppState, worker: &str, task: Task) {
    let _lease = super::keep_lease(state, &task.id, worker);
    let job_id = task.subject_id.clone();
    let outcome = attempt(state, &task).await;
    let (url, error) = match outcome {
        Ok(url) => (Some(url), None),
        Err(f) if f.transient && task.attempts <= RETRY_AFTER.len() as i64 && task.attempts < MAX_CLAIMS => {
            let wait = RETRY_AFTER[(task.attempts.max(1) - 1) as usize];
            let at = state.clock.now_ms() + wait.as_millis() as i64;
            if let Err(e) = state.store.copy_again(&task.id, worker, at, &f.message).await {
                tracing::error!(job = %job_id, error = %e, "scheduling a copy's next attempt failed; its lease will expire");
            }
            return;
        }
        Err(f) => (None, Some(f.reported(task.attempts))),
    };
    let event = ScreenshotStored {
        screenshot_id: ScreenshotId::from_stored(job_id.clone()),
        storage_url: url.clone(),
        storage_error: error.clone(),
    };
    let event = serde_json::to_value(&event).unwrap_or_default();
    match state
        .store
        .copy_ended(&task.id, worker, &job_id, url.as_deref(), error.as_deref(), &event, state.clock.now_ms())
        .await
    {
        Ok(true) => state.job_changed(&job_id),
        Ok(false) => tracing::warn!(job = %job_id, "lease lost before recording the copy"),
        Err(e) => tracing::error!(job = %job_id, error = %e, "recording a copy failed"),
    }
}

/// One attempt: read the service's file back and write it to the bucket.
async fn attempt(state: &AppState, task: &Task) -> Result<String, CopyFailed> {
    let broken = |message: String| CopyFailed { object: None, message, transient: false };
    let payload: CopyPayload =
        serde_json::from_str(&task.payload).map_err(|e| broken(format!("the copy's task is corrupt: {e}")))?;
    let job = match state.store.screenshot(&task.subject_id).await {
        Ok(Some(j)) => j,
        Ok(None) => return Err(broken("the job no longer exists".into())),
        Err(e) => {
            tracing::error!(error = %e, "loading a job to copy failed");
            return Err(CopyFailed { object: None, message: "the job could not be read".into(), transient: true });
        }
    };
    let Some(key) = job.result_key.as_deref() else { return Err(broken("the job has no file".into())) };
    let bytes = match state.blobs.get(key).await {
        Ok(Some(b)) => b,
        Ok(None) => return Err(broken("the service's copy of the file is gone".into())),
        Err(e) => {
            tracing::error!(error = %e, "reading a file to copy failed");
            return Err(CopyFailed {
                object: None,
                message: "the service's file could not be read".into(),
                transient: true,
            });
        }
    };
    let file = FileOut {
        job_id: &job.id,
        page_url: &job.url,
        ext: &payload.ext,
        content_type: &payload.content_type,
        bytes: bytes::Bytes::from(bytes),
        finished_ms: payload.finished_ms,
    };
    copy_once(state, &job.user_id, &payload.target, file).await
}
