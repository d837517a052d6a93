//! The saved test inbox's settings: `CAPTURE_INBOX_DOMAIN`, `CAPTURE_INBOUND_LISTEN`,
//! `CAPTURE_INBOX_RETENTION`, `CAPTURE_INBOX_MAX_MESSAGES`, `CAPTURE_INBOUND_MAX_MESSAGE_BYTES`
//! and `CAPTURE_INBOUND_RATE`.

use std::net::SocketAddr;
use std::time::Duration;

use super::parse::{ConfigError, err, parse_duration, parse_size};

/// How the inbox and its inbound SMTP server behave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxSettings {
    /// The domain of every inbox address (lower-case, `xn--` for Unicode).
    pub domain: String,
    /// Where the `inbound` role listens for SMTP.
    pub listen: SocketAddr,
    /// Whether `CAPTURE_INBOUND_LISTEN` was set: a default port that is taken only warns.
    pub listen_explicit: bool,
    /// Messages older than this are deleted.
    pub retention: Duration,
    /// Most messages one inbox keeps (the oldest go first).
    pub max_messages: i64,
    /// Largest message accepted (`552` past it).
    pub max_message_bytes: usize,
    /// Messages a minute one client address may send (`450` past it).
    pub rate_per_minute: u32,
}

impl InboxSettings {
    /// Read the settings through `get` (trimmed, empty = unset).
    pub fn from_get(get: &dyn Fn(&str) -> Option<String>) -> Result<InboxSettings, ConfigError> {
        let domain = get("CAPTURE_INBOX_DOMAIN").unwrap_or_else(|| "inbox.localhost".into());
        let probe = format!("probe@{domain}");
        let domain = match capture_core::sending::validate_email(&probe) {
            Ok(a) => a.key().rsplit_once('@').map(|(_, d)| d.to_string()).unwrap_or_default(),
            Err(e) => return Err(err("CAPTURE_INBOX_DOMAIN", format!("'{domain}' is not a mail domain: {e}"))),
        };
        let listen_explicit = get("CAPTURE_INBOUND_LISTEN").is_some();
        let listen_s = get("CAPTURE_INBOUND_LISTEN").unwrap_or_else(|| "127.0.0.1:2525".into());
        let listen = listen_s.parse::<SocketAddr>().map_err(|_| {
            err("CAPTURE_INBOUND_LISTEN", format!("'{listen_s}' is not host:port (e.g. 127.0.0.1:2525)"))
        })?;
        let retention_s = get("CAPTURE_INBOX_RETENTION").unwrap_or_else(|| "7d".into());
        let retention = parse_duration(&retention_s).map_err(|e| err("CAPTURE_INBOX_RETENTION", e))?;
        if retention < Duration::from_secs(60) || retention > Duration::from_secs(365 * 86400) {
            return Err(err("CAPTURE_INBOX_RETENTION", "must be between 1m and 365d"));
        }
        let whole = |k: &str, def: u64, min: u64, max: u64| -> Result<u64, ConfigError> {
            match get(k) {
                None => Ok(def),
                Some(v) => match v.parse::<u64>() {
                    Ok(n) if (min..=max).contains(&n) => Ok(n),
                    _ => Err(err(k, format!("'{v}' is not a whole number in {min}..={max}"))),
                },
            }
        };
        let max_messages = whole("CAPTURE_INBOX_MAX_MESSAGES", 500, 1, 100_000)? as i64;
        let rate_per_minute = whole("CAPTURE_INBOUND_RATE", 30, 1, 100_000)? as u32;
        let max_message_bytes = match get("CAPTURE_INBOUND_MAX_MESSAGE_BYTES") {
            None => 10 * 1024 * 1024,
            Some(v) => match parse_size(&v) {
                Ok(Some(n)) if (1024..=(64 << 20)).contains(&n) => n as usize,
                Ok(_) => return Err(err("CAPTURE_INBOUND_MAX_MESSAGE_BYTES", "must be between 1KB and 64MB")),
                Err(e) => return Err(err("CAPTURE_INBOUND_MAX_MESSAGE_BYTES", e)),
            },
        };
        Ok(InboxSettings {
            domain,
            listen,
            listen_explicit,
            retention,
            max_messages,
            max_message_bytes,
            rate_per_minute,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<InboxSettings, ConfigError> {
        let m: std::collections::BTreeMap<String, String> =
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        InboxSettings::from_get(&|k: &str| m.get(k).cloned())
    }

    #[test]
    fn defaults_and_bounds() {
        let s = read(&[]).unwrap();
        assert_eq!(s.domain, "inbox.localhost");
        assert_eq!(s.listen.to_string(), "127.0.0.1:2525");
        assert!(!s.listen_explicit);
        assert_eq!(s.retention, Duration::from_secs(7 * 86400));
        assert_eq!(s.max_message_bytes, 10 << 20);
        let s =
            read(&[("CAPTURE_INBOX_DOMAIN", "Mail.Example.COM"), ("CAPTURE_INBOUND_LISTEN", "127.0.0.1:0")]).unwrap();
        assert_eq!(s.domain, "mail.example.com");
        assert!(s.listen_explicit);
        assert_eq!(read(&[("CAPTURE_INBOX_DOMAIN", "not a domain")]).unwrap_err().var, "CAPTURE_INBOX_DOMAIN");
        assert_eq!(read(&[("CAPTURE_INBOUND_LISTEN", "2525")]).unwrap_err().var, "CAPTURE_INBOUND_LISTEN");
        assert_eq!(read(&[("CAPTURE_INBOX_RETENTION", "5s")]).unwrap_err().var, "CAPTURE_INBOX_RETENTION");
        assert_eq!(read(&[("CAPTURE_INBOUND_RATE", "0")]).unwrap_err().var, "CAPTURE_INBOUND_RATE");
    }
}
