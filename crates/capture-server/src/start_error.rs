//! Why the service could not start. Low in the crate: the layers that read settings and
//! files at start-up (the master key, the inbound SMTP listener) return it, and the
//! application that builds every role passes it on.

/// Why the service could not start: the setting (`CAPTURE_…`) or step it concerns; the cause
/// is its [`source`](std::error::Error::source), so `{:#}` prints "what: cause" as before.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A setting whose value cannot be used, with the value when it helps
    /// (`CAPTURE_LISTEN 0.0.0.0:80`).
    #[error("{setting}")]
    Setting {
        setting: String,
        #[source]
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The master key file the service keeps in its data folder cannot be used.
    #[error("{}", path.display())]
    KeyFile {
        path: std::path::PathBuf,
        #[source]
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Chromium did not start (worker role).
    #[error("starting Chromium ({})", path.display())]
    Chromium {
        path: std::path::PathBuf,
        #[source]
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Reading or writing a local file or socket outside any one setting.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl StartError {
    /// A setting that cannot be used: `setting` names it (and its value), `cause` says why.
    pub fn setting(setting: impl Into<String>, cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        StartError::Setting { setting: setting.into(), cause: cause.into() }
    }
}
