//! The whole egress policy: the allowlist, the service's own listeners and the host's own
//! addresses, and the check of a connection against them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::allow::{EgressAllow, normalize_host};
use super::ranges::{AddressKind, canonical, classify};

/// Where a connection to `ip` really goes: the kernel sends `0.0.0.0` to 127.0.0.1 and
/// `::` to `::1`.
fn effective(ip: IpAddr) -> IpAddr {
    match canonical(ip) {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        other => other,
    }
}

/// A connection the policy refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("blocked by egress policy: {what} is {reason}")]
pub struct EgressRefusal {
    /// The refused address (`127.0.0.1`, or `127.0.0.1:8080` for a listener).
    pub what: String,
    /// Why, readable by end users ("a loopback address").
    pub reason: String,
}

/// The whole egress policy: the allowlist, the service's own listeners and the host's
/// own addresses; see the module docs for the rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressPolicy {
    allow: EgressAllow,
    deny_listeners: Vec<SocketAddr>,
    local_addrs: Vec<IpAddr>,
    /// Trust anchors (DER certificates) for `https://` customer proxies beside the system's
    /// roots: a proxy behind a private CA (`CAPTURE_PROXY_CA_FILE`).
    proxy_roots: Vec<Vec<u8>>,
}

impl EgressPolicy {
    /// A policy from an allowlist and the service's listeners (API, egress proxy, inbound
    /// SMTP): those are refused whatever the allowlist says.
    pub fn new(allow: EgressAllow, deny_listeners: Vec<SocketAddr>) -> EgressPolicy {
        let mut p =
            EgressPolicy { allow, deny_listeners: Vec::new(), local_addrs: Vec::new(), proxy_roots: Vec::new() };
        for l in deny_listeners {
            p.deny_listener(l);
        }
        p
    }

    /// Public addresses only (no allowlist, no listeners known yet).
    pub fn strict() -> EgressPolicy {
        EgressPolicy::default()
    }

    /// The old all-or-nothing switch: `true` allows every non-public range except the
    /// ones that need an exact entry ([`EgressAllow::all_networks`]).
    pub fn from_allow_private_networks(allow: bool) -> EgressPolicy {
        EgressPolicy::new(if allow { EgressAllow::all_networks() } else { EgressAllow::none() }, Vec::new())
    }

    /// Refuse `addr`, one of the service's own listening sockets.
    pub fn deny_listener(&mut self, addr: SocketAddr) {
        let addr = SocketAddr::new(canonical(addr.ip()), addr.port());
        if !self.deny_listeners.contains(&addr) {
            self.deny_listeners.push(addr);
        }
    }

    /// Add the host's own interface addresses, where a listener bound to `0.0.0.0` or
    /// `[::]` can also be reached.
    pub fn with_local_addrs(mut self, addrs: impl IntoIterator<Item = IpAddr>) -> EgressPolicy {
        for a in addrs {
            let a = canonical(a);
            if !self.local_addrs.contains(&a) {
                self.local_addrs.push(a);
            }
        }
        self
    }

    /// Trust `roots` (DER certificates) for `https://` customer proxies too.
    pub fn with_proxy_roots(mut self, roots: Vec<Vec<u8>>) -> EgressPolicy {
        self.proxy_roots = roots;
        self
    }

    /// The extra trust anchors for `https://` customer proxies.
    pub fn proxy_roots(&self) -> &[Vec<u8>] {
        &self.proxy_roots
    }

    /// The allowlist.
    pub fn allow(&self) -> &EgressAllow {
        &self.allow
    }

    /// The service's listeners this policy refuses.
    pub fn deny_listeners(&self) -> &[SocketAddr] {
        &self.deny_listeners
    }

    fn is_local(&self, ip: IpAddr) -> bool {
        ip.is_loopback() || self.local_addrs.contains(&ip)
    }

    /// The listener a connection to `addr` would reach, if any.
    fn listener_hit(&self, addr: SocketAddr) -> Option<SocketAddr> {
        let target = effective(addr.ip());
        self.deny_listeners.iter().copied().find(|l| {
            l.port() == addr.port() && if l.ip().is_unspecified() { self.is_local(target) } else { target == l.ip() }
        })
    }

    /// Rule 1 alone: is `addr` (an address and port a connection reached or would reach)
    /// one of the service's own listeners? Clients whose resolver cannot know the port check
    /// the connected peer address with this before they send anything.
    pub fn check_listener(&self, addr: SocketAddr) -> Result<(), EgressRefusal> {
        match self.listener_hit(addr) {
            None => Ok(()),
            Some(l) => Err(EgressRefusal {
                what: SocketAddr::new(canonical(addr.ip()), addr.port()).to_string(),
                reason: if l.ip().is_unspecified() {
                    format!("this service's own listener (port {} on every local address)", l.port())
                } else {
                    "this service's own listener".into()
                },
            }),
        }
    }

    /// May a request for `host` (as written in its URL: a name or an address) connect to
    /// `addr`, one of the addresses `host` resolved to?
    pub fn check(&self, host: &str, addr: SocketAddr) -> Result<(), EgressRefusal> {
        self.check_listener(addr)?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = match normalize_host(&host.to_ascii_lowercase()) {
            Ok(Ok(name)) => Some(name),
            _ => None,
        };
        let ip = canonical(addr.ip());
        let refuse = |reason: &str| Err(EgressRefusal { what: ip.to_string(), reason: reason.to_owned() });
        match classify(ip) {
            AddressKind::Public => Ok(()),
            AddressKind::Internal(reason) => {
                if self.allow.allows(name.as_deref(), addr, false) {
                    Ok(())
                } else {
                    refuse(reason)
                }
            }
            AddressKind::Sensitive(reason) => {
                if self.allow.allows(None, addr, true) {
                    Ok(())
                } else {
                    refuse(reason)
                }
            }
        }
    }

    /// [`check`](Self::check) every address `host` resolved to; the first refusal wins
    /// (a name that resolves to one forbidden address is refused as a whole, so a client
    /// cannot be steered to it by retries).
    pub fn check_all(&self, host: &str, addrs: &[SocketAddr]) -> Result<(), EgressRefusal> {
        addrs.iter().try_for_each(|a| self.check(host, *a))
    }
}
