//! The sessions a node holds, kept by its [`crate::cluster::node::Cluster`] (per app, not per
//! process): what each is, and the starts under way. Nothing here reaches the application's
//! state, so the state can hold it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capture_browser::session::{Device, Session};
use tokio_util::sync::CancellationToken;

/// A session this node holds.
pub struct Live {
    pub id: String,
    pub user_id: String,
    /// The OAuth client that started it (None: not started over OAuth).
    pub client_id: Option<String>,
    /// Open to the account's other clients too.
    pub shared: bool,
    pub session: Session,
    pub device: Mutex<Device>,
    pub preset: Mutex<Option<String>>,
    pub started_at: i64,
    pub expires_at: i64,
    pub idle: Duration,
    pub record_video: bool,
    /// Permissions granted so far (DevTools replaces the whole set on each grant).
    pub granted: Mutex<std::collections::BTreeSet<String>>,
    /// The last snapshot taken of each part of the page (`""` for the whole page, the ref or
    /// selector of a part), for `snapshot` with `mode: diff`.
    pub snapshots: Mutex<HashMap<String, Vec<crate::automation::snapshot::Entry>>>,
    pub(super) last_used: Mutex<Instant>,
    /// Tool calls using it now (a long wait_for is not idleness).
    pub(super) busy: AtomicUsize,
    /// Cancelled by `session_end`.
    pub(super) end: CancellationToken,
    /// Cancelled once the run is finalised.
    pub(super) finished: CancellationToken,
}

impl Live {
    pub(super) fn touch(&self) {
        *self.last_used.lock().unwrap() = Instant::now();
    }

    /// Idle: no tool is using it and none used it for its idle timeout.
    pub(super) fn idle(&self) -> bool {
        self.busy.load(Ordering::SeqCst) == 0 && self.last_used.lock().unwrap().elapsed() >= self.idle
    }
}

/// The sessions a node holds (its [`crate::cluster::node::Cluster`]'s; per app, not per process).
#[derive(Default)]
pub struct Registry {
    /// By run id.
    pub(super) live: Mutex<HashMap<String, Arc<Live>>>,
    /// Sessions being started, by account.
    pub(super) starting: Mutex<HashMap<String, usize>>,
    /// Their supervisors, so shutdown can let them finalise.
    pub(super) tasks: tokio_util::task::TaskTracker,
    /// Every browser session this node holds (scripted and live runs, MCP sessions), by run
    /// id: what a live view watches.
    pub views: Mutex<HashMap<String, Session>>,
    /// Hand-offs waiting for a person (`request_human`), by run id: set when the person
    /// presses Done on the live view.
    pub handoffs: Mutex<HashMap<String, tokio::sync::watch::Sender<bool>>>,
}

/// One session start of an account, counted while it lasts.
pub(super) struct Starting<'a>(&'a Registry, String);

impl Starting<'_> {
    pub(super) fn new<'a>(registry: &'a Registry, user: &str) -> Starting<'a> {
        *registry.starting.lock().unwrap().entry(user.to_string()).or_insert(0) += 1;
        Starting(registry, user.to_string())
    }
}

impl Drop for Starting<'_> {
    fn drop(&mut self) {
        let mut m = self.0.starting.lock().unwrap();
        if let Some(n) = m.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.1);
            }
        }
    }
}
