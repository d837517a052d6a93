//! Client errors: a message for people and the exit code to leave with.

/// Exit codes of client commands.
pub mod exit {
    /// A generic failure (network, server error, bad response, a full queue: try again later).
    pub const FAILURE: u8 = 1;
    /// Not signed in, or the credential was refused (401).
    pub const AUTH: u8 = 3;
    /// The monthly quota is used up (429).
    pub const QUOTA: u8 = 4;
    /// The capture itself failed.
    pub const CAPTURE_FAILED: u8 = 5;
    /// The request was refused as invalid (4xx other than the above and 429).
    pub const INVALID: u8 = 6;
}

/// A client error: a message for people and the exit code to leave with.
#[derive(Debug)]
pub struct ClientError {
    pub message: String,
    pub code: u8,
}

impl ClientError {
    /// An error with `code`.
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        ClientError { message: message.into(), code }
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<reqwest::Error> for ClientError {
    fn from(e: reqwest::Error) -> Self {
        ClientError::from(&e)
    }
}

/// Result alias.
pub type Result<T> = std::result::Result<T, ClientError>;

impl From<&reqwest::Error> for ClientError {
    fn from(e: &reqwest::Error) -> Self {
        let what = if e.is_connect() {
            "cannot reach the server (is it running? check --server)"
        } else if e.is_timeout() {
            "the server did not answer in time"
        } else {
            "the request failed"
        };
        ClientError::new(exit::FAILURE, format!("{what}: {e}"))
    }
}
