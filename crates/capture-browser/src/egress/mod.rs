//! The egress guard: a checking forward proxy that every Chromium connection goes
//! through. The address policy itself ([`EgressPolicy`], pure) lives in
//! `capture_core::egress`, shared with the other outbound components (webhooks, OAuth
//! metadata fetches, audits, mail); it is re-exported here.
//!
//! Each connection's host is resolved once, every resolved address is checked, and the
//! proxy connects to the checked address itself, so DNS rebinding and redirects to
//! private addresses are covered. The proxy refuses its own address whatever the
//! allowlist says.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

mod proxy;
mod upstream;

pub use proxy::{EgressProxy, EgressRoute, Routes, TUNNEL_IDLE};
pub use upstream::parse_pem_roots;

const DNS_TIMEOUT: Duration = Duration::from_secs(5);

pub use capture_core::egress::{
    AddressKind, EgressAllow, EgressAllowError, EgressPolicy, EgressRefusal, classify, forbidden_reason,
};

/// A refused or failed outbound connection.
#[derive(Debug, Clone)]
enum Refusal {
    /// The egress policy forbids the address (HTTP 403).
    Policy(String),
    /// DNS or connect failure (HTTP 502).
    Failed(String),
}

impl Refusal {
    fn message(&self) -> &str {
        match self {
            Refusal::Policy(m) | Refusal::Failed(m) => m,
        }
    }
}

async fn resolve_checked(host: &str, port: u16, policy: &EgressPolicy) -> Result<Vec<SocketAddr>, Refusal> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(Refusal::Failed("empty host name".into()));
    }
    let addrs: Vec<SocketAddr> = if let Ok(ip) = host.parse::<IpAddr>() {
        vec![SocketAddr::new(ip, port)]
    } else {
        match tokio::time::timeout(DNS_TIMEOUT, tokio::net::lookup_host((host, port))).await {
            Err(_) => return Err(Refusal::Failed(format!("DNS lookup timed out for {host}"))),
            Ok(Err(_)) => return Err(Refusal::Failed(format!("DNS lookup failed for {host}"))),
            Ok(Ok(it)) => it.collect(),
        }
    };
    if addrs.is_empty() {
        return Err(Refusal::Failed(format!("DNS lookup failed for {host}")));
    }
    policy.check_all(host, &addrs).map_err(|e| Refusal::Policy(e.to_string()))?;
    Ok(addrs)
}

/// Resolve `host` (5 s DNS timeout) and check every address against `policy`. Connect
/// to one of the returned addresses (do not resolve again).
pub async fn resolve_checked_host(policy: &EgressPolicy, host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    resolve_checked(host, port, policy).await.map_err(|r| r.message().to_owned())
}

/// [`resolve_checked_host`] under the old all-or-nothing switch
/// ([`EgressPolicy::from_allow_private_networks`]), for callers not yet given a policy.
pub async fn check_url_host(host: &str, port: u16, allow_private: bool) -> Result<Vec<SocketAddr>, String> {
    resolve_checked_host(&EgressPolicy::from_allow_private_networks(allow_private), host, port).await
}

/// This host's own interface addresses (Linux: `/proc/net/fib_trie` and
/// `/proc/net/if_inet6`), where a listener bound to `0.0.0.0`/`[::]` can be reached:
/// give them to [`EgressPolicy::with_local_addrs`]. Empty where `/proc` cannot be read.
pub fn local_addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    if let Ok(trie) = std::fs::read_to_string("/proc/net/fib_trie") {
        // "|-- 10.0.2.15" followed by "/32 host LOCAL" marks a local address.
        let mut last: Option<Ipv4Addr> = None;
        for line in trie.lines() {
            let t = line.trim();
            if let Some(a) = t.strip_prefix("|-- ") {
                last = a.trim().parse().ok();
            } else if t.contains("host LOCAL")
                && let Some(a) = last
                && !out.contains(&IpAddr::V4(a))
            {
                out.push(IpAddr::V4(a));
            }
        }
    }
    if let Ok(v6) = std::fs::read_to_string("/proc/net/if_inet6") {
        for line in v6.lines() {
            let Some(hex) = line.split_whitespace().next() else { continue };
            if let Ok(n) = u128::from_str_radix(hex, 16) {
                let a = IpAddr::V6(std::net::Ipv6Addr::from(n));
                if !out.contains(&a) {
                    out.push(a);
                }
            }
        }
    }
    out
}

/// The latest failure per host, so a capture can explain a generic browser error.
#[derive(Default)]
pub struct FailureLog {
    map: Mutex<HashMap<String, (String, Instant)>>,
}

impl FailureLog {
    pub(crate) fn record(&self, host: &str, reason: &str) {
        let mut map = self.map.lock().unwrap();
        if map.len() > 4096 {
            let cutoff = Instant::now() - Duration::from_secs(60);
            map.retain(|_, (_, t)| *t > cutoff);
            if map.len() > 4096 {
                map.clear();
            }
        }
        map.insert(normalize_host(host), (reason.to_owned(), Instant::now()));
    }

    pub(crate) fn clear(&self, host: &str) {
        let mut map = self.map.lock().unwrap();
        if !map.is_empty() {
            map.remove(&normalize_host(host));
        }
    }

    /// The latest failure reason for `host` recorded at or after `since`.
    pub fn since(&self, host: &str, since: Instant) -> Option<String> {
        let map = self.map.lock().unwrap();
        map.get(&normalize_host(host)).filter(|(_, t)| *t >= since).map(|(r, _)| r.clone())
    }
}

fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn check_host() {
        assert!(check_url_host("127.0.0.1", 80, false).await.unwrap_err().contains("loopback"));
        assert!(check_url_host("localhost", 80, false).await.is_err());
        assert!(check_url_host("127.0.0.1", 80, true).await.is_ok());
        assert!(check_url_host("[::1]", 80, false).await.is_err());
        // The old switch no longer opens the metadata address.
        assert!(check_url_host("169.254.169.254", 80, true).await.unwrap_err().contains("metadata"));
        let e = check_url_host("host.invalid", 80, false).await.unwrap_err();
        assert!(e.contains("DNS lookup failed for host.invalid"), "{e}");
        // Names resolved by the system resolver are checked as addresses: `localhost`
        // is allowed by name, a numeric spelling of 127.0.0.1 only by an address entry.
        let by_name = EgressPolicy::new(EgressAllow::parse("localhost").unwrap(), vec![]);
        assert!(resolve_checked_host(&by_name, "localhost", 80).await.is_ok());
        assert!(resolve_checked_host(&by_name, "2130706433", 80).await.is_err());
        let by_addr = EgressPolicy::new(EgressAllow::parse("127.0.0.1").unwrap(), vec![]);
        assert!(resolve_checked_host(&by_addr, "2130706433", 80).await.is_ok());
        let listener: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let denied = EgressPolicy::new(EgressAllow::parse("127.0.0.1").unwrap(), vec![listener]);
        let e = resolve_checked_host(&denied, "127.0.0.1", 8080).await.unwrap_err();
        assert!(e.contains("own listener"), "{e}");
    }

    #[test]
    fn local_addresses_include_loopback() {
        let local = local_addresses();
        assert!(local.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)), "{local:?}");
    }
}
