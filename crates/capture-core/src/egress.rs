//! The egress address policy: which addresses outbound connections may reach — captures
//! and every request their pages make, webhook deliveries, OAuth metadata fetches, audit
//! crawls, mail.
//!
//! Pure: callers resolve a host themselves, check every resolved address here, then
//! connect to exactly the addresses they checked (so DNS rebinding cannot slip past).
//!
//! The rules, in order:
//! 1. The service's own listeners ([`EgressPolicy::deny_listeners`]) are refused whatever
//!    the allowlist says. A listener bound to an unspecified address (`0.0.0.0:p`,
//!    `[::]:p`) refuses port `p` on every local address (loopback, the host's own
//!    interface addresses, and `0.0.0.0`/`::`, which the kernel sends to loopback).
//! 2. Public addresses are allowed.
//! 3. Cloud metadata addresses, the unspecified range (`0.0.0.0/8`, `::`), multicast and
//!    broadcast are refused unless an *exact* entry — a single IP address, with or without
//!    a port — names them. A CIDR or a host name never opens them.
//! 4. Every other non-public address (loopback, private, shared/CGNAT, link-local,
//!    unique-local, documentation and other reserved ranges) is allowed only when an
//!    [`EgressAllow`] entry matches it.
//!
//! [`EgressAllow`] is the `CAPTURE_EGRESS_ALLOW` syntax: comma-separated entries, each
//! - a host name (`localhost`, `intranet.example`): matches a request for exactly that
//!   name, whatever addresses it resolves to (not requests for other names that resolve to
//!   the same addresses);
//! - an IP address or CIDR (`127.0.0.1`, `10.0.0.0/8`, `::1`, `::1/128`): matches resolved
//!   addresses in it (IPv4-mapped IPv6 addresses count as their IPv4 address);
//! - either with a port (`localhost:8080`, `127.0.0.1:9000`, `[::1]:8080`): the same, on that
//!   port only.
//!
//! IPv4 addresses in host names are read the way a URL parser reads them (`2130706433`,
//! `0x7f.1`, `0177.0.0.1` are all 127.0.0.1), so such a spelling is an address, never a name.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

/// How reachable an address is, by its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressKind {
    /// A public address: reachable (unless it is one of the service's listeners).
    Public,
    /// Loopback, private, shared, link-local, reserved…: reachable when an allowlist entry
    /// matches. The text names the range ("a loopback address").
    Internal(&'static str),
    /// Cloud metadata, unspecified, multicast, broadcast: reachable only through an exact
    /// address entry.
    Sensitive(&'static str),
}

impl AddressKind {
    /// The range's name for messages, None for a public address.
    pub fn reason(self) -> Option<&'static str> {
        match self {
            AddressKind::Public => None,
            AddressKind::Internal(r) | AddressKind::Sensitive(r) => Some(r),
        }
    }
}

/// The address ranges of `ip` that matter to the policy.
pub fn classify(ip: IpAddr) -> AddressKind {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

/// Why `ip` is not a public address (None when it is one). Kept for callers that only
/// need the strict answer (no allowlist).
pub fn forbidden_reason(ip: IpAddr) -> Option<&'static str> {
    classify(ip).reason()
}

/// Metadata services of the big clouds (AWS/GCP/Azure/OpenStack, AWS ECS task
/// credentials, Alibaba Cloud).
const METADATA_V4: [Ipv4Addr; 3] =
    [Ipv4Addr::new(169, 254, 169, 254), Ipv4Addr::new(169, 254, 170, 2), Ipv4Addr::new(100, 100, 100, 200)];
/// AWS's IPv6 instance metadata endpoint, `fd00:ec2::254`.
const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);

fn classify_v4(ip: Ipv4Addr) -> AddressKind {
    use AddressKind::{Internal, Public, Sensitive};
    let [a, b, c, _] = ip.octets();
    if METADATA_V4.contains(&ip) {
        return Sensitive("the cloud metadata address");
    }
    if a == 0 {
        return Sensitive("an unspecified address");
    }
    if ip.is_broadcast() {
        return Sensitive("a broadcast address");
    }
    if (224..=239).contains(&a) {
        return Sensitive("a multicast address");
    }
    if a == 127 {
        return Internal("a loopback address");
    }
    if a == 10 || (a == 172 && (16..=31).contains(&b)) || (a == 192 && b == 168) {
        return Internal("a private address");
    }
    if a == 100 && (64..=127).contains(&b) {
        return Internal("a shared (carrier-grade NAT) address");
    }
    if a == 169 && b == 254 {
        return Internal("a link-local address");
    }
    if a >= 240
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 0 && c == 2)
        || (a == 198 && (b == 18 || b == 19))
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
        || (a == 192 && b == 88 && c == 99)
    {
        return Internal("a reserved address");
    }
    Public
}

fn embedded_v4(hi: u16, lo: u16) -> Ipv4Addr {
    Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)
}

fn classify_v6(ip: Ipv6Addr) -> AddressKind {
    use AddressKind::{Internal, Public, Sensitive};
    let s = ip.segments();
    if ip.is_unspecified() {
        return Sensitive("an unspecified address");
    }
    if ip == METADATA_V6 {
        return Sensitive("the cloud metadata address");
    }
    if ip.is_loopback() {
        return Internal("a loopback address");
    }
    // IPv4-mapped ::ffff:a.b.c.d and the old IPv4-compatible ::a.b.c.d.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    if s[..6] == [0, 0, 0, 0, 0, 0] {
        return classify_v4(embedded_v4(s[6], s[7]));
    }
    // NAT64 64:ff9b::/96 embeds an IPv4 address; 64:ff9b:1::/48 is local-use.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return classify_v4(embedded_v4(s[6], s[7]));
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 {
        return Internal("a reserved address");
    }
    // 6to4 2002::/16 embeds an IPv4 address in bits 16..48.
    if s[0] == 0x2002 {
        return classify_v4(embedded_v4(s[1], s[2]));
    }
    if (s[0] & 0xff00) == 0xff00 {
        return Sensitive("a multicast address");
    }
    if (s[0] & 0xfe00) == 0xfc00 {
        return Internal("a private (unique local) address");
    }
    if (s[0] & 0xffc0) == 0xfe80 {
        return Internal("a link-local address");
    }
    if (s[0] & 0xffc0) == 0xfec0 {
        return Internal("a private (site-local) address");
    }
    // Teredo 2001::/32, documentation 2001:db8::/32, ORCHIDs, discard 100::/64.
    let teredo_doc_orchid =
        s[0] == 0x2001 && (s[1] == 0 || s[1] == 0xdb8 || (s[1] & 0xfff0) == 0x0010 || (s[1] & 0xfff0) == 0x0020);
    let discard = s[0] == 0x0100 && s[1] == 0 && s[2] == 0 && s[3] == 0;
    if teredo_doc_orchid || discard {
        return Internal("a reserved address");
    }
    Public
}

/// `ip` with an IPv4-mapped IPv6 address turned into its IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

/// Where a connection to `ip` really goes: the kernel sends `0.0.0.0` to 127.0.0.1 and
/// `::` to `::1`.
fn effective(ip: IpAddr) -> IpAddr {
    match canonical(ip) {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        other => other,
    }
}

fn in_net(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

fn full_prefix(ip: IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

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
fn normalize_host(h: &str) -> Result<Result<String, IpAddr>, String> {
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
    fn allows(&self, host: Option<&str>, addr: SocketAddr, exact: bool) -> bool {
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
}

impl EgressPolicy {
    /// A policy from an allowlist and the service's listeners (API, egress proxy, inbound
    /// SMTP): those are refused whatever the allowlist says.
    pub fn new(allow: EgressAllow, deny_listeners: Vec<SocketAddr>) -> EgressPolicy {
        let mut p = EgressPolicy { allow, deny_listeners: Vec::new(), local_addrs: Vec::new() };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    fn allow(s: &str) -> EgressAllow {
        EgressAllow::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn policy(s: &str, listeners: &[&str]) -> EgressPolicy {
        EgressPolicy::new(allow(s), listeners.iter().map(|l| sa(l)).collect())
    }

    #[track_caller]
    fn ok(p: &EgressPolicy, host: &str, addr: &str) {
        if let Err(e) = p.check(host, sa(addr)) {
            panic!("{host} → {addr} should be allowed: {e}");
        }
    }

    #[track_caller]
    fn refused(p: &EgressPolicy, host: &str, addr: &str) -> String {
        match p.check(host, sa(addr)) {
            Ok(()) => panic!("{host} → {addr} should be refused"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn ranges() {
        for s in [
            "127.0.0.1",
            "127.255.0.9",
            "10.0.0.1",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.254",
            "169.254.1.1",
            "240.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::127.0.0.1",
            "::10.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::192.168.0.1",
            "64:ff9b:1::1",
            "2002:7f00:1::1",
            "2001:db8::1",
            "2001::1",
            "100::1",
        ] {
            assert!(matches!(classify(ip(s)), AddressKind::Internal(_)), "{s} should be internal");
        }
        for s in [
            "169.254.169.254",
            "169.254.170.2",
            "100.100.100.200",
            "fd00:ec2::254",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "0.0.0.0",
            "0.1.2.3",
            "::",
            "::ffff:0.0.0.0",
            "224.0.0.1",
            "239.255.255.250",
            "ff02::1",
            "255.255.255.255",
        ] {
            assert!(matches!(classify(ip(s)), AddressKind::Sensitive(_)), "{s} should be sensitive");
        }
        for s in [
            "8.8.8.8",
            "1.1.1.1",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.253.1.1",
            "93.184.216.34",
            "2606:4700:4700::1111",
            "2001:4860:4860::8888",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert_eq!(classify(ip(s)), AddressKind::Public, "{s} should be public");
        }
        assert_eq!(forbidden_reason(ip("10.0.0.1")), Some("a private address"));
        assert_eq!(forbidden_reason(ip("127.0.0.1")), Some("a loopback address"));
        assert_eq!(forbidden_reason(ip("169.254.169.254")), Some("the cloud metadata address"));
        assert_eq!(forbidden_reason(ip("8.8.8.8")), None);
    }

    #[test]
    fn parser_reads_every_entry_form() {
        let a = allow(
            " localhost , Intranet.Example., 127.0.0.1/32,10.0.0.0/8, ::1/128, db.local:5432, 10.1.2.3:8080, [::1]:9000, [fd00::1], fe80::1 ,,",
        );
        assert_eq!(
            a.to_string(),
            "localhost,intranet.example,127.0.0.1,10.0.0.0/8,::1,db.local:5432,10.1.2.3:8080,[::1]:9000,fd00::1,fe80::1"
        );
        // Round trip.
        assert_eq!(allow(&a.to_string()), a);
        // A CIDR with host bits set is its network; a mapped range is the IPv4 range.
        assert_eq!(allow("10.1.2.3/8").to_string(), "10.0.0.0/8");
        assert_eq!(allow("::ffff:192.168.0.0/112").to_string(), "192.168.0.0/16");
        assert_eq!(allow("[::ffff:127.0.0.1]:80").to_string(), "127.0.0.1:80");
        // Numeric IPv4 spellings are addresses, as a URL parser reads them.
        assert_eq!(allow("2130706433").to_string(), "127.0.0.1");
        assert_eq!(allow("0x7f.1:8080").to_string(), "127.0.0.1:8080");
        assert_eq!(allow("0177.0.0.1").to_string(), "127.0.0.1");
        // IDN host names in their ASCII form.
        assert_eq!(allow("BÜCHER.example").to_string(), "xn--bcher-kva.example");
        assert_eq!(allow("0.0.0.0/0,::/0"), EgressAllow::all_networks());
        assert!(allow("").is_empty());
        assert!(allow(" , ").is_empty());
        assert_eq!(allow("localhost,LOCALHOST").to_string(), "localhost");
    }

    #[test]
    fn parser_names_the_bad_entry() {
        for (s, bad, why) in [
            ("localhost,10.0.0.0/33", "10.0.0.0/33", "longer than the address"),
            ("::1/129", "::1/129", "longer than the address"),
            ("10.0.0.0/x", "10.0.0.0/x", "prefix length"),
            ("nonsense/8", "nonsense/8", "not an IP address"),
            ("::1:8080", "", ""),
            ("fe80::1%eth0", "fe80::1%eth0", ""),
            ("[::1]:0", "[::1]:0", "not a port"),
            ("[::1]8080", "[::1]8080", "':port'"),
            ("[::1", "[::1", "missing ']'"),
            ("[10.0.0.1]:80", "[10.0.0.1]:80", "not an IPv6 address"),
            ("host:99999", "host:99999", "not a port"),
            ("host:", "host:", "not a port"),
            (":80", ":80", "empty host"),
            ("http://localhost", "http://localhost", "not a URL"),
            ("*.example.com", "*.example.com", "wildcards"),
            ("a b", "a b", "white space"),
            ("ex ample.com:80", "ex ample.com:80", "white space"),
            ("bad_char!.com", "bad_char!.com", "not a host name"),
            ("a..b", "a..b", "not a host name"),
            ("1.2.3.4.5/8", "1.2.3.4.5/8", "not an IP address"),
        ] {
            match EgressAllow::parse(s) {
                // `::1:8080` is a valid IPv6 address (no port without brackets).
                Ok(a) if s == "::1:8080" => assert_eq!(a.to_string(), "::1:8080"),
                Ok(a) => panic!("{s} parsed as {a}"),
                Err(e) => {
                    assert_eq!(e.entry, bad, "{s}");
                    assert!(e.reason.contains(why), "{s}: {e}");
                    assert!(e.to_string().starts_with(&format!("'{bad}': ")), "{e}");
                }
            }
        }
        assert!(EgressAllow::parse("2001:db8::1:80").is_ok(), "a bare IPv6 address");
        assert!(EgressAllow::parse("host.example:80:81").unwrap_err().reason.contains("brackets"));
    }

    #[test]
    fn strict_policy_allows_only_public_addresses() {
        let p = EgressPolicy::strict();
        ok(&p, "example.com", "93.184.216.34:443");
        ok(&p, "2606:4700:4700::1111", "[2606:4700:4700::1111]:443");
        assert_eq!(
            refused(&p, "127.0.0.1", "127.0.0.1:80"),
            "blocked by egress policy: 127.0.0.1 is a loopback address"
        );
        refused(&p, "localhost", "[::1]:80");
        refused(&p, "x", "[::ffff:127.0.0.1]:80");
        refused(&p, "x", "10.0.0.1:80");
        assert!(refused(&p, "x", "169.254.169.254:80").contains("cloud metadata"));
        refused(&p, "x", "0.0.0.0:80");
        refused(&p, "x", "[::]:80");
        refused(&p, "x", "[fe80::1]:80");
    }

    #[test]
    fn cidr_entries_match_resolved_addresses() {
        let p = policy("127.0.0.1/32,10.0.0.0/8,::1/128", &[]);
        ok(&p, "anything.example", "127.0.0.1:1");
        ok(&p, "127.0.0.1", "127.0.0.1:65535");
        ok(&p, "x", "10.200.3.4:80");
        ok(&p, "x", "[::1]:80");
        // An IPv4-mapped IPv6 address is its IPv4 address.
        ok(&p, "x", "[::ffff:127.0.0.1]:80");
        ok(&p, "x", "[::ffff:10.0.0.9]:80");
        refused(&p, "x", "127.0.0.2:80");
        refused(&p, "x", "192.168.0.1:80");
        refused(&p, "x", "[::2]:80");
        refused(&p, "x", "[fe80::1]:80");
        // A broad range never opens what needs an exact entry.
        let wide = EgressPolicy::from_allow_private_networks(true);
        ok(&wide, "x", "192.168.1.1:80");
        ok(&wide, "x", "[fd00::1]:80");
        ok(&wide, "x", "169.254.1.1:80");
        ok(&wide, "x", "240.0.0.1:80");
        for s in [
            "169.254.169.254:80",
            "[fd00:ec2::254]:80",
            "0.0.0.0:80",
            "0.1.2.3:80",
            "[::]:80",
            "224.0.0.1:80",
            "[ff02::1]:80",
            "255.255.255.255:80",
        ] {
            refused(&wide, "x", s);
        }
        assert_eq!(EgressPolicy::from_allow_private_networks(false), EgressPolicy::strict());
    }

    #[test]
    fn host_entries_match_the_requested_name_only() {
        let p = policy("localhost,intranet.example", &[]);
        ok(&p, "localhost", "127.0.0.1:8080");
        ok(&p, "localhost", "[::1]:8080");
        ok(&p, "LOCALHOST.", "127.0.0.1:8080");
        ok(&p, "[localhost]", "127.0.0.1:8080");
        ok(&p, "intranet.example", "10.9.8.7:443");
        ok(&p, "intranet.example", "[fd00::5]:443");
        // Another name, or the address itself, is not the named host.
        refused(&p, "evil.example", "127.0.0.1:8080");
        refused(&p, "127.0.0.1", "127.0.0.1:8080");
        refused(&p, "sub.intranet.example", "10.9.8.7:443");
        // A numeric spelling of an address is an address, not a name.
        let q = policy("2130706433", &[]);
        ok(&q, "127.0.0.1", "127.0.0.1:80");
        // Names never open metadata, unspecified or multicast addresses.
        let meta = policy("metadata.internal,localhost", &[]);
        refused(&meta, "metadata.internal", "169.254.169.254:80");
        refused(&meta, "localhost", "0.0.0.0:80");
    }

    #[test]
    fn requested_hosts_in_odd_spellings_are_addresses() {
        // What a URL parser hands over for http://2130706433/, http://0x7f.1/,
        // http://0177.0.0.1/: the proxy may see the spelling or the canonical form.
        let p = policy("localhost", &[]);
        for host in ["2130706433", "0x7f.1", "0177.0.0.1", "0x7f000001", "127.1", "[::ffff:7f00:1]"] {
            refused(&p, host, "127.0.0.1:80");
        }
        let q = policy("127.0.0.1", &[]);
        for host in ["2130706433", "0x7f.1", "0177.0.0.1", "127.1"] {
            ok(&q, host, "127.0.0.1:80");
        }
    }

    #[test]
    fn port_entries_allow_that_port_only() {
        let p = policy("localhost:8080,10.0.0.1:5432,[::1]:9000,10.1.0.0/16", &[]);
        ok(&p, "localhost", "127.0.0.1:8080");
        refused(&p, "localhost", "127.0.0.1:8081");
        ok(&p, "x", "10.0.0.1:5432");
        refused(&p, "x", "10.0.0.1:5433");
        ok(&p, "x", "[::1]:9000");
        refused(&p, "x", "[::1]:9001");
        refused(&p, "x", "127.0.0.1:9000");
        ok(&p, "x", "10.1.255.255:1");
    }

    #[test]
    fn sensitive_addresses_need_an_exact_entry() {
        let p = policy("169.254.169.254,0.0.0.0:8080,[ff02::1]:5353,224.0.0.251", &[]);
        ok(&p, "x", "169.254.169.254:80");
        ok(&p, "x", "[::ffff:169.254.169.254]:80");
        ok(&p, "x", "0.0.0.0:8080");
        refused(&p, "x", "0.0.0.0:8081");
        ok(&p, "x", "[ff02::1]:5353");
        ok(&p, "x", "224.0.0.251:5353");
        refused(&p, "x", "224.0.0.252:5353");
        refused(&p, "x", "169.254.170.2:80");
        // Exact /32 counts as an exact entry; /31 does not.
        ok(&policy("169.254.169.254/32", &[]), "x", "169.254.169.254:80");
        refused(&policy("169.254.169.254/31", &[]), "x", "169.254.169.254:80");
        refused(&policy("169.254.0.0/16", &[]), "x", "169.254.169.254:80");
        ok(&policy("169.254.0.0/16", &[]), "x", "169.254.1.1:80");
    }

    #[test]
    fn listeners_are_refused_whatever_the_allowlist_says() {
        let p = policy("0.0.0.0/0,::/0,127.0.0.1:8080,localhost,0.0.0.0", &["127.0.0.1:8080", "127.0.0.1:39999"]);
        let msg = refused(&p, "localhost", "127.0.0.1:8080");
        assert_eq!(msg, "blocked by egress policy: 127.0.0.1:8080 is this service's own listener");
        refused(&p, "x", "[::ffff:127.0.0.1]:8080");
        refused(&p, "x", "127.0.0.1:39999");
        // 0.0.0.0 goes to 127.0.0.1.
        refused(&p, "x", "0.0.0.0:8080");
        // Another loopback address or port is another socket.
        ok(&p, "x", "127.0.0.2:8080");
        ok(&p, "x", "127.0.0.1:8081");
        ok(&p, "x", "[::1]:8080");

        // An unspecified bind refuses its port on every local address.
        let any = policy("0.0.0.0/0,::/0,0.0.0.0,::", &["0.0.0.0:2525", "[::]:8443"])
            .with_local_addrs([ip("10.0.0.5"), ip("fd00::5")]);
        for s in [
            "127.0.0.1:2525",
            "127.9.9.9:2525",
            "0.0.0.0:2525",
            "[::1]:2525",
            "[::]:2525",
            "10.0.0.5:2525",
            "[::ffff:10.0.0.5]:2525",
            "[fd00::5]:2525",
            "127.0.0.1:8443",
            "10.0.0.5:8443",
        ] {
            assert!(refused(&any, "x", s).contains("own listener"), "{s}");
        }
        ok(&any, "x", "10.0.0.6:2525");
        ok(&any, "x", "10.0.0.5:2526");
        // A public address of this host (given as local) is covered too.
        let public =
            EgressPolicy::new(EgressAllow::none(), vec![sa("0.0.0.0:443")]).with_local_addrs([ip("203.0.114.7")]);
        refused(&public, "me.example", "203.0.114.7:443");
        ok(&public, "me.example", "203.0.114.8:443");
        // A listener bound to a public address is refused like any other.
        let bound = EgressPolicy::new(EgressAllow::none(), vec![sa("93.184.216.34:8080")]);
        refused(&bound, "x", "93.184.216.34:8080");
        ok(&bound, "x", "93.184.216.34:80");
        assert_eq!(bound.deny_listeners(), &[sa("93.184.216.34:8080")]);
    }

    #[test]
    fn check_all_refuses_a_name_with_one_forbidden_address() {
        let p = EgressPolicy::strict();
        assert!(p.check_all("mixed.example", &[sa("93.184.216.34:80"), sa("10.0.0.1:80")]).is_err());
        assert!(p.check_all("public.example", &[sa("93.184.216.34:80"), sa("[2606:4700::1]:80")]).is_ok());
        assert!(p.check_all("none.example", &[]).is_ok());
    }
}
