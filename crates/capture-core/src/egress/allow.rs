//! The allowlist of non-public destinations (`CAPTURE_EGRESS_ALLOW`): its entries, their
//! parsing and matching.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

use super::ranges::{canonical, full_prefix, in_net};

/// What one allowlist entry names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// A host name, lower case, no trailing dot.
    Host(String),
    /// An address range (a single address at its full prefix length).
    Net(IpAddr, u8),
}

/// One `CAPTURE_EGRESS_ALLOW` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    target: Target,
    port: Option<u16>,
}

impl Entry {
    fn port_ok(&self, port: u16) -> bool {
        self.port.is_none_or(|p| p == port)
    }

    /// Does this entry let a request for `host` connect to `addr`?
    fn matches(&self, host: Option<&str>, addr: SocketAddr) -> bool {
        if !self.port_ok(addr.port()) {
            return false;
        }
        match &self.target {
            Target::Host(h) => host == Some(h.as_str()),
            Target::Net(net, prefix) => in_net(canonical(addr.ip()), *net, *prefix),
        }
    }

    /// Does this entry name exactly `addr`'s address (and allow its port)?
    fn names_exactly(&self, addr: SocketAddr) -> bool {
        match &self.target {
            Target::Net(net, prefix) => {
                *prefix == full_prefix(*net) && *net == canonical(addr.ip()) && self.port_ok(addr.port())
            }
            Target::Host(_) => false,
        }
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.target, self.port) {
            (Target::Host(h), None) => f.write_str(h),
            (Target::Host(h), Some(p)) => write!(f, "{h}:{p}"),
            (Target::Net(ip, prefix), None) if *prefix == full_prefix(*ip) => write!(f, "{ip}"),
            (Target::Net(ip, prefix), None) => write!(f, "{ip}/{prefix}"),
            (Target::Net(IpAddr::V6(ip), _), Some(p)) => write!(f, "[{ip}]:{p}"),
            (Target::Net(ip, _), Some(p)) => write!(f, "{ip}:{p}"),
        }
    }
}

/// A `CAPTURE_EGRESS_ALLOW` entry that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{entry}': {reason}")]
pub struct EgressAllowError {
    /// The entry as written.
    pub entry: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The allowlist of non-public destinations (`CAPTURE_EGRESS_ALLOW`); see the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressAllow {
    entries: Vec<Entry>,
}

fn parse_port(p: &str) -> Result<u16, String> {
    match p.parse::<u16>() {
        Ok(0) | Err(_) => Err(format!("'{p}' is not a port (1-65535)")),
        Ok(n) => Ok(n),
    }
}

/// Normalise a host name the way a URL parser does (lower case, IDNA, IPv4 number forms);
/// an IP address comes back as `Err(ip)`.
pub(super) fn normalize_host(h: &str) -> Result<Result<String, IpAddr>, String> {
    let h = h.strip_suffix('.').unwrap_or(h);
    if h.is_empty() {
        return Err("empty host name".into());
    }
    if h.contains('*') {
        return Err("wildcards are not supported: name each host".into());
    }
    if let Ok(ip) = h.parse::<IpAddr>() {
        return Ok(Err(canonical(ip)));
    }
    match url::Host::parse(h) {
        Ok(url::Host::Ipv4(v4)) => Ok(Err(IpAddr::V4(v4))),
        Ok(url::Host::Ipv6(v6)) => Ok(Err(canonical(IpAddr::V6(v6)))),
        Ok(url::Host::Domain(d)) => {
            let ok = d.split('.').all(|label| {
                !label.is_empty() && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
            if !ok {
                return Err(format!("'{d}' is not a host name"));
            }
            Ok(Ok(d))
        }
        Err(e) => Err(format!("not a host name ({e})")),
    }
}

fn parse_entry(s: &str) -> Result<Entry, String> {
    if s.contains("://") {
        return Err("expected a host, an address, a CIDR or host:port, not a URL".into());
    }
    if s.contains(char::is_whitespace) {
        return Err("contains white space".into());
    }
    if let Some(rest) = s.strip_prefix('[') {
        let (inside, tail) = rest.split_once(']').ok_or("missing ']'")?;
        let ip: Ipv6Addr = inside.parse().map_err(|_| format!("'{inside}' is not an IPv6 address"))?;
        let port = match tail {
            "" => None,
            t => Some(parse_port(t.strip_prefix(':').ok_or("expected ':port' after ']'")?)?),
        };
        let ip = canonical(IpAddr::V6(ip));
        return Ok(Entry { target: Target::Net(ip, full_prefix(ip)), port });
    }
    if let Some((a, p)) = s.split_once('/') {
        let ip: IpAddr = a.parse().map_err(|_| format!("'{a}' is not an IP address (CIDR: address/length)"))?;
        let prefix: u8 = p.parse().map_err(|_| format!("'{p}' is not a prefix length"))?;
        if prefix > full_prefix(ip) {
            return Err(format!("prefix /{prefix} is longer than the address ({} bits)", full_prefix(ip)));
        }
        // An IPv4-mapped IPv6 range is the IPv4 range it maps.
        let (ip, prefix) = match ip {
            IpAddr::V6(v6) if prefix >= 96 && v6.to_ipv4_mapped().is_some() => {
                (IpAddr::V4(v6.to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED)), prefix - 96)
            }
            other => (other, prefix),
        };
        let masked = match ip {
            IpAddr::V4(v4) => {
                IpAddr::V4(Ipv4Addr::from(u32::from(v4) & u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)))
            }
            IpAddr::V6(v6) => {
                IpAddr::V6(Ipv6Addr::from(u128::from(v6) & u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0)))
            }
        };
        return Ok(Entry { target: Target::Net(masked, prefix), port: None });
    }
    if let Ok(ip) = s.parse::<IpAddr>() {
        let ip = canonical(ip);
        return Ok(Entry { target: Target::Net(ip, full_prefix(ip)), port: None });
    }
    let (host, port) = match s.rsplit_once(':') {
        Some((h, _)) if h.contains(':') => {
            return Err("an IPv6 address with a port goes in brackets, like [::1]:8080".into());
        }
        Some((h, p)) => (h, Some(parse_port(p)?)),
        None => (s, None),
    };
    let target = match normalize_host(host)? {
        Ok(name) => Target::Host(name),
        Err(ip) => Target::Net(ip, full_prefix(ip)),
    };
    Ok(Entry { target, port })
}

impl EgressAllow {
    /// Nothing non-public allowed (the default).
    pub fn none() -> EgressAllow {
        EgressAllow::default()
    }

    /// Every non-public range (`0.0.0.0/0,::/0`): what the old
    /// `CAPTURE_ALLOW_PRIVATE_NETWORKS=true` meant, minus the ranges that need an exact
    /// entry (metadata, unspecified, multicast, broadcast) and the service's listeners.
    pub fn all_networks() -> EgressAllow {
        EgressAllow {
            entries: vec![
                Entry { target: Target::Net(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0), port: None },
                Entry { target: Target::Net(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0), port: None },
            ],
        }
    }

    /// Parse the `CAPTURE_EGRESS_ALLOW` syntax (comma-separated; empty entries ignored).
    pub fn parse(s: &str) -> Result<EgressAllow, EgressAllowError> {
        let mut entries = Vec::new();
        for raw in s.split(',') {
            let raw = raw.trim();
            if raw.is_empty() {
                continue;
            }
            let e = parse_entry(raw).map_err(|reason| EgressAllowError { entry: raw.to_owned(), reason })?;
            if !entries.contains(&e) {
                entries.push(e);
            }
        }
        Ok(EgressAllow { entries })
    }

    /// True when no entry is set.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Would a request for `host` (None: a literal address) be let through to `addr` by
    /// an entry? `exact` asks for an entry naming exactly that address.
    pub(super) fn allows(&self, host: Option<&str>, addr: SocketAddr, exact: bool) -> bool {
        if exact {
            self.entries.iter().any(|e| e.names_exactly(addr))
        } else {
            self.entries.iter().any(|e| e.matches(host, addr))
        }
    }
}

impl FromStr for EgressAllow {
    type Err = EgressAllowError;
    fn from_str(s: &str) -> Result<EgressAllow, EgressAllowError> {
        EgressAllow::parse(s)
    }
}

impl fmt::Display for EgressAllow {
    /// The entries in `CAPTURE_EGRESS_ALLOW` syntax (normalised).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}
