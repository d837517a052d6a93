//! This app's node of the cluster, as its state holds it: no call into the state from here
//! (the calls between nodes are in the parent module).

use std::time::Duration;

/// How far a signed request's time may be from ours.
pub(super) const SKEW: i64 = 60;
/// Longest a forwarded tool call may take (tools that wait are bounded below this).
const CALL_TIMEOUT: Duration = Duration::from_secs(150);
/// Nonces a node remembers at most; past that it refuses internal calls until old ones expire
/// (far above any real rate: each is one forwarded tool call within two minutes).
const MAX_NONCES: usize = 200_000;

/// The nonces of the internal calls this node accepted, with their times.
#[derive(Default)]
pub(super) struct Nonces(std::sync::Mutex<std::collections::HashMap<String, i64>>);

impl Nonces {
    /// Record `nonce` of a call signed at `t`; false when it was seen already (a replay) or
    /// the node remembers too many to take another.
    pub(super) fn first_use(&self, nonce: &str, t: i64, now: i64) -> bool {
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if seen.len() >= MAX_NONCES / 2 {
            // A nonce older than the skew on both sides can no longer pass the time check.
            seen.retain(|_, at| (now - *at).abs() <= SKEW);
        }
        if seen.len() >= MAX_NONCES || seen.contains_key(nonce) {
            return false;
        }
        seen.insert(nonce.to_string(), t);
        true
    }
}

/// This app's place in the cluster, owned by its state (two apps in one process are two
/// nodes): its node id, the internal client and the nonces it accepted, the sessions it holds
/// and the wake-up of its inbox waits. Whether a call runs here or on a node with a browser is
/// decided beside it ([`to_browser_node`], `profiles::login::anywhere`).
pub struct Cluster {
    node_id: String,
    pub(super) nonces: Nonces,
    pub(super) client: reqwest::Client,
    /// The automation sessions this node holds (MCP `session_*`).
    pub sessions: crate::automation::sessions::registry::Registry,
    /// The live runs this node serves (`/v1/runs/{id}/live`), so shutdown can let them finish.
    pub live_runs: tokio_util::task::TaskTracker,
    /// Wakes the inbox's waits when a message arrived on this node.
    pub inbox_arrived: std::sync::Arc<tokio::sync::Notify>,
    /// Where the other nodes reach this one (see `cluster`); unset when unknown.
    pub internal_url: std::sync::OnceLock<String>,
}

impl Cluster {
    /// A new node (its id random), whose inbound server wakes `inbox_arrived`.
    pub fn new(inbox_arrived: std::sync::Arc<tokio::sync::Notify>) -> Cluster {
        Cluster {
            node_id: format!("node-{}", capture_core::ids::random_string(10)),
            nonces: Nonces::default(),
            client: reqwest::Client::builder()
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(Duration::from_secs(5))
                .timeout(CALL_TIMEOUT)
                .user_agent("Capture-Cluster/1")
                .build()
                .expect("the internal HTTP client builds"),
            sessions: Default::default(),
            live_runs: tokio_util::task::TaskTracker::new(),
            inbox_arrived,
            internal_url: std::sync::OnceLock::new(),
        }
    }

    /// This node's id: the worker name of its leases and the owner of the sessions it holds.
    pub fn node_id(&self) -> &str {
        &self.node_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_call_is_accepted_once() {
        let seen = Nonces::default();
        assert!(seen.first_use("n1", 1000, 1000));
        assert!(!seen.first_use("n1", 1000, 1030), "replayed within the window");
        assert!(seen.first_use("n2", 1000, 1030));
    }

    #[test]
    fn two_apps_are_two_nodes() {
        let (a, b) = (Cluster::new(Default::default()), Cluster::new(Default::default()));
        assert_ne!(a.node_id(), b.node_id());
        assert!(a.node_id().starts_with("node-") && a.node_id().len() == 15, "{}", a.node_id());
        // A nonce one node accepted is still new to the other.
        assert!(a.nonces.first_use("n1", 1000, 1000));
        assert!(b.nonces.first_use("n1", 1000, 1000));
    }
}
