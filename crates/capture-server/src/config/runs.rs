//! Browser session runs and MCP automation sessions: how many an account may hold, and how
//! long a node's hold, a connect token and an idle session last.

use std::time::Duration;

use super::parse::{ConfigError, Reader};

/// How runs and automation sessions are bounded.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Browser session runs one account may have pending or running at once (None = unbounded).
    pub max_active_per_account: Option<i64>,
    /// How long a node's hold on a run lasts without a heartbeat; a run whose node died is
    /// failed this long after (plus the sweep's period).
    pub lease: Duration,
    /// How long a live session's connect token is good for.
    pub connect_ttl: Duration,
    /// MCP automation sessions one account may have open at once (None = unbounded; they
    /// are runs too, so `max_active_per_account` also bounds them).
    pub automation_max_sessions: Option<i64>,
    /// An automation session no tool has used for this long is ended (and the longest idle
    /// timeout a session may ask for).
    pub automation_idle_timeout: Duration,
}

impl RunSettings {
    pub(super) fn read(r: &Reader) -> Result<RunSettings, ConfigError> {
        let hour = Duration::from_secs(3600);
        let max_active_per_account = r.bound("CAPTURE_RUNS_MAX_ACTIVE_PER_ACCOUNT", 3)?;
        let lease = r.dur_in("CAPTURE_RUN_LEASE", "15s", Duration::from_secs(2), hour, "must be between 2s and 1h")?;
        let connect_ttl =
            r.dur_in("CAPTURE_RUN_CONNECT_TTL", "60s", Duration::from_secs(1), hour, "must be between 1s and 1h")?;
        let automation_max_sessions = r.bound("CAPTURE_AUTOMATION_MAX_SESSIONS", 2)?;
        let automation_idle_timeout = r.dur_in(
            "CAPTURE_AUTOMATION_IDLE_TIMEOUT",
            "120s",
            Duration::from_secs(1),
            hour,
            "must be between 1s and 1h",
        )?;
        Ok(RunSettings { max_active_per_account, lease, connect_ttl, automation_max_sessions, automation_idle_timeout })
    }
}
