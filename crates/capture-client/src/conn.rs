//! Where and as whom a client command connects (`--server`, `--api-key`), and how its requests
//! are retried.

use crate::{client, error, retry};

/// Where and as whom a client command connects.
#[derive(clap::Args, Clone)]
pub struct Conn {
    /// Server base URL (default: the signed-in server, else http://127.0.0.1:8080).
    #[arg(long, env = "CAPTURE_SERVER", global = true)]
    pub server: Option<String>,
    /// An API key instead of the stored session.
    #[arg(long, env = "CAPTURE_API_KEY", hide_env_values = true, global = true)]
    pub api_key: Option<String>,
    #[command(flatten)]
    pub retry: RetryArgs,
}

/// How requests that are safe to repeat are retried (5xx, 429, lost connections).
#[derive(clap::Args, Clone)]
pub struct RetryArgs {
    /// Attempts per request in all (1: no retries).
    #[arg(long, global = true, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub max_attempts: u32,
    /// Give up retrying when the next wait would end later than this many seconds after the
    /// first attempt (a longer Retry-After is reported, not waited for).
    #[arg(long, global = true, default_value_t = 120, value_name = "SECS")]
    pub max_retry_time: u64,
    /// The longest one attempt may take, in seconds.
    #[arg(long, global = true, default_value_t = 30, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub request_timeout: u64,
}

impl Conn {
    /// A client for this server and credential, retrying by these settings.
    pub async fn connect(self, quiet: bool) -> Result<client::Client, error::ClientError> {
        let policy = retry::RetryPolicy {
            max_attempts: self.retry.max_attempts,
            max_elapsed: std::time::Duration::from_secs(self.retry.max_retry_time),
            quiet,
            ..retry::RetryPolicy::default()
        };
        let timeout = std::time::Duration::from_secs(self.retry.request_timeout);
        client::Client::connect(self.api_key, self.server, policy, timeout).await
    }
}
