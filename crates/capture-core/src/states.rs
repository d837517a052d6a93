//! The states things move through, as enums: a screenshot job, a webhook delivery, and the
//! format of a job's result. Stored as their lower-case names.

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
    }
}
