//! Webhook deliveries: plain-http endpoints, the retry schedule and each attempt's timeout.

use std::time::Duration;

use super::parse::{ConfigError, Reader, err, parse_bool, parse_duration};

/// How webhook events are delivered.
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// `CAPTURE_WEBHOOK_ALLOW_HTTP`: endpoints may be `http://` (else `https://` only).
    pub allow_http: bool,
    /// `CAPTURE_WEBHOOK_RETRY_DELAYS`: the 5 waits between 6 attempts.
    pub retry_delays: Vec<Duration>,
    /// `CAPTURE_WEBHOOK_TIMEOUT`: one attempt's time.
    pub timeout: Duration,
}

impl WebhookSettings {
    pub(super) fn read(r: &Reader) -> Result<WebhookSettings, ConfigError> {
        let allow_http =
            parse_bool("CAPTURE_WEBHOOK_ALLOW_HTTP", &r.get("CAPTURE_WEBHOOK_ALLOW_HTTP").unwrap_or_default())?;
        let retry_delays = r
            .get("CAPTURE_WEBHOOK_RETRY_DELAYS")
            .unwrap_or_else(|| "1m,5m,30m,2h,12h".into())
            .split(',')
            .map(|d| parse_duration(d).map_err(|e| err("CAPTURE_WEBHOOK_RETRY_DELAYS", e)))
            .collect::<Result<Vec<_>, _>>()?;
        if retry_delays.len() != 5 {
            return Err(err("CAPTURE_WEBHOOK_RETRY_DELAYS", "needs exactly 5 waits (6 attempts)"));
        }
        let timeout = r.dur("CAPTURE_WEBHOOK_TIMEOUT", "15s")?;
        Ok(WebhookSettings { allow_http, retry_delays, timeout })
    }
}
