//! The shared application state.

use std::sync::Arc;

use capture_browser::BrowserPool;
use capture_store::Store;
use tokio::sync::broadcast;

use crate::blob::BlobStore;
use crate::config::Config;
use crate::crypto::MasterKey;
use crate::metrics::Metrics;

/// Everything handlers, workers and the scheduler share. Cheap to clone.
#[derive(Clone)]
pub struct AppState(pub Arc<Inner>);

/// The fields behind [`AppState`].
pub struct Inner {
    pub cfg: Config,
    pub store: Store,
    pub blobs: Arc<dyn BlobStore>,
    pub master: MasterKey,
    /// Absolute base of every URL we hand out (no trailing slash).
    pub base_url: String,
    /// Job ids whose state changed, on this node or (through PostgreSQL notifications) on
    /// another; an empty id means "any job may have changed". Feeds event streams here.
    pub job_events: broadcast::Sender<String>,
    /// Wakes the idle workers of each kind of queued work when some is queued (here, or on
    /// another node through PostgreSQL), the campaign loops when a campaign starts.
    pub wake: crate::queues::Wakeups,
    pub metrics: Metrics,
    /// The browser side of this node: its pool and its video encodes' budget.
    pub browser: Arc<Browser>,
    /// The mail side: outgoing mail and the inbound SMTP server's address.
    pub mail: Arc<Mail>,
    /// Key lookups, usage and finished jobs for the hot read path.
    pub hot: crate::hotcache::HotCache,
    /// What the service's own outbound requests may reach (see `egress`).
    pub egress: Arc<capture_core::egress::EgressPolicy>,
    /// Cancelled when the process starts shutting down (ends event streams, stops claims).
    pub shutdown: tokio_util::sync::CancellationToken,
    /// The service's clock (`CAPTURE_CLOCK_OFFSET`): campaigns, their sending, audits and the
    /// usage month read "now" here.
    pub clock: capture_core::clock::Clock,
    /// The front page's example capture, once this app has made it (api + worker roles).
    pub front_example: std::sync::OnceLock<Example>,
    /// What this install can do: the axe-core audits inject, and each feature's status for
    /// `/readyz` and the dashboard.
    pub features: Features,
    /// This app's node of the cluster: its id, the internal channel, the sessions it holds.
    pub cluster: Arc<crate::cluster::node::Cluster>,
    /// Where this app's traces go (`OTEL_*`; off: nothing is traced).
    pub traces: crate::traces::Traces,
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    /// The absolute URL a client downloads a stored file from: the service's `/files/{name}`
    /// or, with `CAPTURE_STORAGE_PUBLIC_URLS=presigned`, a presigned S3 URL (the blob store decides).
    pub async fn file_url(&self, name: &str) -> String {
        self.blobs.public_url(name).await
    }

    /// The service's own URL of a stored file (`/files/NAME`, streamed from storage), which
    /// never expires: for what is stored and sent later, like webhook events, where a
    /// presigned URL could expire before a retry delivers it.
    pub fn lasting_file_url(&self, name: &str) -> String {
        crate::blob::proxy_url(&self.base_url, name)
    }

    /// Tell streams on this node (and idle workers) that a job changed.
    pub fn job_changed(&self, id: &str) {
        let _ = self.job_events.send(id.to_string());
        // A state change may have queued webhook deliveries.
        self.wake.queued(crate::queues::Queue::Webhook);
    }

    /// Wait for the next sign that job `id` may have changed: its own (or an "any job")
    /// notice on `changes`, or the next `poll` tick (a worker on another node may have
    /// changed it). False at `until` or when the service shuts down. The caller subscribed
    /// `changes` before it created or last read the job, so no change is missed.
    pub async fn next_change(
        &self,
        changes: &mut broadcast::Receiver<String>,
        id: &str,
        poll: &mut tokio::time::Interval,
        until: tokio::time::Instant,
    ) -> bool {
        use broadcast::error::RecvError;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => return false,
                _ = self.shutdown.cancelled() => return false,
                _ = poll.tick() => return true,
                r = changes.recv() => match r {
                    Ok(changed) if changed == id || changed.is_empty() => return true,
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => return true,
                    Err(RecvError::Closed) => {
                        poll.tick().await;
                        return true;
                    }
                },
            }
        }
    }
}

/// The browser side of a node (a sub-state handlers can extract on their own).
pub struct Browser {
    /// The browser pool (worker role only).
    pub pool: Option<Arc<BrowserPool>>,
    /// The memory video encodes of this node may hold at once, in MiB permits
    /// (`CAPTURE_VIDEO_MEMORY`): an encode takes what it may use before it starts.
    pub video_memory: tokio::sync::Semaphore,
    /// Videos captured on this node whose encode has not ended, at most one per capture slot
    /// (a capture worker waits for a place before it hands its frames over).
    pub video_waiting: Arc<tokio::sync::Semaphore>,
}

/// The mail side of an app (a sub-state handlers can extract on their own).
pub struct Mail {
    /// Outgoing mail (`CAPTURE_SMTP_URL`); None when no SMTP server is configured.
    pub mailer: Option<Arc<dyn capture_mail::Mailer>>,
    /// The address this app's inbound SMTP server is bound to (inbound role), for the inbox
    /// view. Kept per app, not per process, so several apps in one process stay apart.
    pub inbound_addr: Option<std::net::SocketAddr>,
}

/// The sub-states a handler may take instead of the whole state (axum's `State<T>`), so it
/// says which side of the service it needs.
macro_rules! sub_state {
    ($($ty:ty => |$s:ident| $get:expr),* $(,)?) => {
        $(impl axum::extract::FromRef<AppState> for $ty {
            fn from_ref($s: &AppState) -> $ty {
                $get
            }
        })*
    };
}

sub_state! {
    Store => |s| s.store.clone(),
    Arc<dyn BlobStore> => |s| s.blobs.clone(),
    capture_core::clock::Clock => |s| s.clock,
    Arc<Browser> => |s| s.browser.clone(),
    Arc<Mail> => |s| s.mail.clone(),
    Arc<crate::cluster::node::Cluster> => |s| s.cluster.clone(),
}

/// The front page's example capture, once made (by `web::front::render_example`).
pub struct Example {
    pub png: Vec<u8>,
    pub width: u32,
    pub height: u32,
    pub url: String,
    pub captured_at: i64,
}

/// What the features need that is loaded once per process: axe-core, and the last mail check
/// (what each feature's status is: `features.rs`).
pub struct Features {
    axe: capture_audit::axe::AxeSource,
    /// The language model's HTTP client (`CAPTURE_LLM_URL`), built once with its timeout.
    llm: Option<reqwest::Client>,
    pub(crate) mail_checked: std::sync::Mutex<Option<(std::time::Instant, String)>>,
}

impl Features {
    /// Load axe-core (the bundled copy, or `CAPTURE_AXE_PATH`) and say which one runs.
    pub fn new(cfg: &crate::config::Config) -> Features {
        let axe = capture_audit::axe::AxeSource::load(cfg.browser.axe_path.as_deref());
        match &axe {
            capture_audit::axe::AxeSource::Unavailable { reason } => {
                tracing::warn!(reason = %reason, "audits will not score accessibility (campaign rows will be skipped: report_has_scores)")
            }
            other => tracing::info!(axe = %other.describe(), "accessibility checks of audits"),
        }
        let llm = cfg.llm.url.as_ref().and_then(|_| {
            reqwest::Client::builder()
                .timeout(cfg.llm.timeout)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| tracing::warn!(error = %e, "the language model's client could not be built"))
                .ok()
        });
        Features { axe, llm, mail_checked: std::sync::Mutex::new(None) }
    }

    /// The language model's client, when one is configured.
    pub fn llm(&self) -> Option<&reqwest::Client> {
        self.llm.as_ref()
    }

    /// The axe-core audits inject.
    pub fn axe(&self) -> &capture_audit::axe::AxeSource {
        &self.axe
    }
}
