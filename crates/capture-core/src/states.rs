//! The states things move through, as enums: a screenshot job, a webhook delivery, a run (its
//! status, kind and end), a profile, a campaign and its rows, and the format of a job's result. Stored as their names.

use serde::{Deserialize, Serialize};

/// Declares a state enum stored and sent as its lower-case name.
macro_rules! state_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
        #[serde(rename_all = "lowercase")]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// The name as stored and sent.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The state named `s`, if it is one.
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

state_enum!(
    /// Where a screenshot job is: pending → processing → done or failed.
    JobStatus {
        /// Accepted, waiting for a worker.
        Pending = "pending",
        /// A worker is capturing it.
        Processing = "processing",
        /// Captured; its file is stored.
        Done = "done",
        /// Failed for good (its action was given back unless the page took the time).
        Failed = "failed",
    }
);

impl JobStatus {
    /// Done or failed: nothing more will happen to the job.
    pub fn is_final(self) -> bool {
        matches!(self, JobStatus::Done | JobStatus::Failed)
    }
}

state_enum!(
    /// The format of a job's result.
    OutputFormat {
        Png = "png",
        Jpeg = "jpeg",
        Webp = "webp",
        Pdf = "pdf",
        Mp4 = "mp4",
        Webm = "webm",
        Gif = "gif",
        Markdown = "markdown",
        Text = "text",
        Html = "html",
    }
);

state_enum!(
    /// Where a webhook delivery is: pending (waiting or between attempts), then succeeded,
    /// or exhausted after the last retry (or when its endpoint was deleted).
    DeliveryStatus {
        Pending = "pending",
        Succeeded = "succeeded",
        Exhausted = "exhausted",
    }
);

state_enum!(
    /// Where the copy of a job's file to the request's storage destination is: pending until
    /// the copy ends, then stored or failed.
    StorageStatus {
        Pending = "pending",
        Stored = "stored",
        Failed = "failed",
    }
);

state_enum!(
    /// Where a profile's signed-in state is: empty until saved, ready, or expired once a job
    /// found its session signed out (sign in again).
    ProfileStatus {
        /// Nothing saved yet.
        Empty = "empty",
        /// A saved state, not known to be signed out.
        Ready = "ready",
        /// A job found the session signed out.
        Expired = "expired",
    }
);

state_enum!(
    /// Where a run is: pending → running → completed, failed or stopped.
    RunStatus {
        /// Created; a scripted run waits for a worker, a live one for its client.
        Pending = "pending",
        /// A node drives it.
        Running = "running",
        /// Ran to its end (its steps, or its client left).
        Completed = "completed",
        /// A step, the page, the browser or its node failed it.
        Failed = "failed",
        /// Stopped on request.
        Stopped = "stopped",
    }
);

impl Default for RunStatus {
    /// A new run is pending.
    fn default() -> Self {
        RunStatus::Pending
    }
}

impl Default for EndReason {
    /// A run that ends for no other reason has finished.
    fn default() -> Self {
        EndReason::Finished
    }
}

impl RunStatus {
    /// Completed, failed or stopped: nothing more will happen to the run.
    pub fn is_final(self) -> bool {
        !matches!(self, RunStatus::Pending | RunStatus::Running)
    }
}

state_enum!(
    /// Who drives a run: its own steps, or a DevTools client (or an MCP agent).
    RunKind {
        Scripted = "scripted",
        Live = "live",
    }
);

state_enum!(
    /// Why a run ended.
    EndReason {
        /// Its steps ran (or its client was done).
        Finished = "finished",
        #[serde(rename = "step_failed")]
        StepFailed = "step_failed",
        Stopped = "stopped",
        /// Its time ran out.
        Timeout = "timeout",
        /// Its client left.
        Disconnected = "disconnected",
        /// The month's actions ran out.
        Quota = "quota",
        /// A live run's client never connected.
        #[serde(rename = "not_connected")]
        NotConnected = "not_connected",
        /// The node that drove it died.
        #[serde(rename = "worker_lost")]
        WorkerLost = "worker_lost",
        /// No browser session could be opened, or the browser failed.
        #[serde(rename = "browser_failed")]
        BrowserFailed = "browser_failed",
        /// The service shut down.
        Shutdown = "shutdown",
        /// A live client was closed for not reading its socket.
        #[serde(rename = "client_too_slow")]
        ClientTooSlow = "client_too_slow",
        /// An MCP automation session left unused.
        Idle = "idle",
    }
);

state_enum!(
    /// Where a campaign is: draft → scheduled (launched, waiting for `sendAt`) → running →
    /// completed; paused and cancelled by its owner.
    CampaignStatus {
        Draft = "draft",
        Scheduled = "scheduled",
        Running = "running",
        Paused = "paused",
        Completed = "completed",
        Cancelled = "cancelled",
    }
);

impl CampaignStatus {
    /// Completed or cancelled: no row is added or mailed any more.
    pub fn is_closed(self) -> bool {
        matches!(self, CampaignStatus::Completed | CampaignStatus::Cancelled)
    }
}

state_enum!(
    /// Where a campaign's row is: pending → auditing → ready → sent, or skipped or failed
    /// (with a reason).
    TargetState {
        Pending = "pending",
        Auditing = "auditing",
        Ready = "ready",
        Sent = "sent",
        Skipped = "skipped",
        Failed = "failed",
    }
);

impl TargetState {
    /// Sent, skipped or failed: nothing more will happen to the row.
    pub fn is_final(self) -> bool {
        matches!(self, TargetState::Sent | TargetState::Skipped | TargetState::Failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_through_their_names() {
        for s in ["pending", "processing", "done", "failed"] {
            assert_eq!(JobStatus::parse(s).unwrap().as_str(), s);
            assert_eq!(serde_json::to_string(&JobStatus::parse(s).unwrap()).unwrap(), format!("\"{s}\""));
        }
        assert_eq!(OutputFormat::parse("pdf"), Some(OutputFormat::Pdf));
        assert_eq!(DeliveryStatus::parse("gone"), None);
        for r in
            ["finished", "step_failed", "not_connected", "worker_lost", "browser_failed", "client_too_slow", "idle"]
        {
            let reason = EndReason::parse(r).unwrap();
            assert_eq!((reason.as_str(), serde_json::to_string(&reason).unwrap()), (r, format!("\"{r}\"")));
        }
        assert!(RunStatus::Stopped.is_final() && !RunStatus::Running.is_final());
        assert_eq!(CampaignStatus::parse("cancelled"), Some(CampaignStatus::Cancelled));
        assert!(CampaignStatus::Completed.is_closed() && !CampaignStatus::Paused.is_closed());
        assert_eq!(TargetState::parse("skipped").map(TargetState::is_final), Some(true));
        assert_eq!(serde_json::to_string(&TargetState::Auditing).unwrap(), "\"auditing\"");
    }
}
