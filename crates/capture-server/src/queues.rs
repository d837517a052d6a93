//! The kinds of work the service queues, as one table, and the wake-ups of their idle workers
//! (one per kind, kept by the state). A job queued here, or on another node through
//! PostgreSQL's notifications (`nodes`), wakes its kind's idle workers at once; polling
//! (`CAPTURE_QUEUE_POLL`) stays as the fallback. Adding a kind of work is a row here.

use tokio::sync::Notify;

/// A kind of queued work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Queue {
    /// Captures (`screenshot` tasks).
    Screenshot,
    /// Webhook deliveries.
    Webhook,
    /// Site audits.
    Audit,
    /// Scripted runs.
    Run,
    /// Ad drafts and renders (their workers share one wake-up).
    Ad,
    /// Copies of captures to customers' buckets.
    StorageCopy,
    /// Campaign loops (they read due rows, not queue tasks).
    Campaign,
    /// The monitors' scheduler (it reads due monitors and ended checks, not queue tasks).
    Monitor,
}

/// Each kind: the store's task kinds that are its work, and whether one queued task wakes every
/// idle worker (kinds whose workers take different task kinds, or read rows) or just one.
const TABLE: [(Queue, &[&str], bool); 8] = [
    (Queue::Screenshot, &["screenshot"], false),
    (Queue::Webhook, &["webhook"], false),
    (Queue::Audit, &["audit"], false),
    (Queue::Run, &["run"], false),
    (Queue::Ad, &["ad_draft", "ad_render"], true),
    (Queue::StorageCopy, &["storage_copy"], false),
    (Queue::Campaign, &[], true),
    (Queue::Monitor, &[], true),
];

impl Queue {
    /// The kind whose work the store's task kind `kind` is (None: a kind this version does not run).
    pub fn of_task_kind(kind: &str) -> Option<Queue> {
        TABLE.iter().find(|(_, kinds, _)| kinds.contains(&kind)).map(|(q, _, _)| *q)
    }

    fn index(self) -> usize {
        TABLE.iter().position(|(q, _, _)| *q == self).unwrap_or(0)
    }
}

/// The wake-ups of idle workers, one per [`Queue`].
#[derive(Default)]
pub struct Wakeups([Notify; TABLE.len()]);

impl Wakeups {
    /// What the idle workers of `queue` wait on.
    pub fn of(&self, queue: Queue) -> &Notify {
        &self.0[queue.index()]
    }

    /// Work of `queue` was queued: wake one idle worker, or all of them for the kinds that
    /// need it (see [`TABLE`]).
    pub fn queued(&self, queue: Queue) {
        match TABLE[queue.index()].2 {
            true => self.0[queue.index()].notify_waiters(),
            false => self.0[queue.index()].notify_one(),
        }
    }

    /// Every idle worker looks (notifications may have been missed).
    pub fn everyone(&self) {
        self.0.iter().for_each(Notify::notify_waiters);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_task_kind_belongs_to_one_queue() {
        assert_eq!(Queue::of_task_kind("screenshot"), Some(Queue::Screenshot));
        assert_eq!(Queue::of_task_kind("ad_render"), Some(Queue::Ad));
        assert_eq!(Queue::of_task_kind(crate::jobs::storage_copy::KIND), Some(Queue::StorageCopy));
        assert_eq!(Queue::of_task_kind("fax"), None);
        let mut seen = std::collections::HashSet::new();
        for (q, kinds, _) in TABLE {
            assert!(seen.insert(q), "{q:?} twice");
            assert_eq!(TABLE[q.index()].0, q);
            for k in kinds {
                assert_eq!(Queue::of_task_kind(k), Some(q));
            }
        }
    }
}
