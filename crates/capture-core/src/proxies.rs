//! The client's address behind load balancers. The socket's peer is the balancer, so sign-in
//! backoff, sign-up limits and logs keyed on it would treat every visitor as one (30 failed
//! sign-ins by one stranger locked out the whole site). `CAPTURE_TRUSTED_PROXIES` names the
//! balancers (CIDRs); only a request whose peer is one of them has its forwarding header
//! believed, and then only as far as the hops it lists are trusted too:
//!
//! - the header's addresses are walked from the right (the hop nearest to us) to the left,
//!   skipping trusted ones; the first address that is not a trusted proxy is the client. What a
//!   client writes in the header itself lands to the left of what the balancer appends, so it
//!   is never reached while an untrusted hop stands to its right;
//! - a header from a peer that is not trusted is ignored entirely: anyone on the internet can
//!   send one, and believing it would let a guesser pick a new address for every try;
//! - one header is believed, the one the balancers write (`X-Forwarded-For` by default, or
//!   RFC 7239 `Forwarded`): a balancer passes the other through as the client sent it.
//!
//! Nothing here does I/O; the server reads the headers and calls [`TrustedProxies::client`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A `CAPTURE_TRUSTED_PROXIES` entry that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{entry}': {reason}")]
pub struct TrustedProxiesError {
    /// The entry as written.
    pub entry: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Which forwarding header the trusted proxies write (`CAPTURE_FORWARDED_HEADER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ForwardedHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2` (what most balancers write).
    #[default]
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=client, for=proxy1;proto=https`.
    Forwarded,
}

impl ForwardedHeader {
    /// `x-forwarded-for` or `forwarded` (any case).
    pub fn parse(s: &str) -> Option<ForwardedHeader> {
        match s.trim().to_ascii_lowercase().as_str() {
            "x-forwarded-for" => Some(ForwardedHeader::XForwardedFor),
            "forwarded" => Some(ForwardedHeader::Forwarded),
            _ => None,
        }
    }

    /// The header's name, lower case.
    pub fn name(self) -> &'static str {
        match self {
            ForwardedHeader::XForwardedFor => "x-forwarded-for",
            ForwardedHeader::Forwarded => "forwarded",
        }
    }
}

/// A network: an address and a prefix length, host bits cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Net {
    addr: IpAddr,
    prefix: u8,
}

impl Net {
    fn contains(self, ip: IpAddr) -> bool {
        match (self.addr, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => mask_v4(ip, self.prefix) == net,
            (IpAddr::V6(net), IpAddr::V6(ip)) => mask_v6(ip, self.prefix) == net,
            _ => false,
        }
    }
}

fn mask_v4(ip: Ipv4Addr, prefix: u8) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(ip) & u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0))
}

fn mask_v6(ip: Ipv6Addr, prefix: u8) -> Ipv6Addr {
    Ipv6Addr::from(u128::from(ip) & u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0))
}

/// An IPv4 address seen through a dual-stack socket (`::ffff:a.b.c.d`) is that IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The load balancers whose forwarding header is believed (`CAPTURE_TRUSTED_PROXIES`; none
/// by default: the socket's peer is the client).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies {
    nets: Vec<Net>,
    header: ForwardedHeader,
}

impl TrustedProxies {
    /// Parse comma-separated CIDRs (`10.0.0.0/8`) or single addresses (`192.0.2.7`, `::1`).
    pub fn parse(s: &str, header: ForwardedHeader) -> Result<TrustedProxies, TrustedProxiesError> {
        let mut nets = Vec::new();
        for raw in s.split(',').map(str::trim).filter(|r| !r.is_empty()) {
            let bad = |reason: String| TrustedProxiesError { entry: raw.to_string(), reason };
            let (addr, prefix) = match raw.split_once('/') {
                Some((a, p)) => {
                    let addr: IpAddr =
                        a.parse().map_err(|_| bad(format!("'{a}' is not an IP address (a CIDR is address/length)")))?;
                    let prefix: u8 = p.parse().map_err(|_| bad(format!("'{p}' is not a prefix length")))?;
                    (addr, prefix)
                }
                None => {
                    let addr: IpAddr = raw.parse().map_err(|_| {
                        bad("is not an IP address or a CIDR (host names are not accepted: name the addresses)".into())
                    })?;
                    (addr, if addr.is_ipv4() { 32 } else { 128 })
                }
            };
            let bits = if addr.is_ipv4() { 32 } else { 128 };
            if prefix > bits {
                return Err(bad(format!("prefix /{prefix} is longer than the address ({bits} bits)")));
            }
            // An IPv4-mapped range is the IPv4 range it maps.
            let (addr, prefix) = match addr {
                IpAddr::V6(v6) if prefix >= 96 && v6.to_ipv4_mapped().is_some() => (canonical(addr), prefix - 96),
                other => (other, prefix),
            };
            let addr = match addr {
                IpAddr::V4(v4) => IpAddr::V4(mask_v4(v4, prefix)),
                IpAddr::V6(v6) => IpAddr::V6(mask_v6(v6, prefix)),
            };
            let net = Net { addr, prefix };
            if !nets.contains(&net) {
                nets.push(net);
            }
        }
        Ok(TrustedProxies { nets, header })
    }

    /// True when no proxy is trusted (every forwarding header is ignored).
    pub fn is_empty(&self) -> bool {
        self.nets.is_empty()
    }

    /// The header the proxies write.
    pub fn header(&self) -> ForwardedHeader {
        self.header
    }

    /// Whether `ip` is one of the trusted proxies.
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.nets.iter().any(|n| n.contains(ip))
    }

    /// The client's address of a request that came from `peer` with `values`, every value of
    /// the [`header`](Self::header) in the order received: the peer unless it is a trusted
    /// proxy; then, walking the header from the right, the first address that is not a
    /// trusted proxy. When every listed hop is trusted the leftmost one is the client; an
    /// entry that is not an address (`unknown`, an obfuscated name, garbage) stops the walk at
    /// the trusted hop that reported it.
    pub fn client(&self, peer: IpAddr, values: &[&str]) -> IpAddr {
        let mut client = canonical(peer);
        if !self.contains(client) {
            return client;
        }
        let hops: Vec<Option<IpAddr>> = match self.header {
            ForwardedHeader::XForwardedFor => {
                values.iter().flat_map(|v| v.split(',')).map(|h| parse_node(h.trim().trim_matches('"'))).collect()
            }
            ForwardedHeader::Forwarded => {
                values.iter().flat_map(|v| split_outside_quotes(v, ',')).map(forwarded_for).collect()
            }
        };
        for hop in hops.into_iter().rev() {
            let Some(ip) = hop else { break };
            client = canonical(ip);
            if !self.contains(client) {
                break;
            }
        }
        client
    }
}

/// The `for=` node of one `Forwarded` element, when it is an address.
fn forwarded_for(element: &str) -> Option<IpAddr> {
    split_outside_quotes(element, ';').into_iter().find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        k.trim().eq_ignore_ascii_case("for").then(|| parse_node(v.trim().trim_matches('"'))).flatten()
    })
}

/// Split on `sep` where it is not inside a quoted string.
fn split_outside_quotes(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in s.char_indices() {
        if c == '"' {
            quoted = !quoted;
        } else if c == sep && !quoted {
            out.push(&s[start..i]);
            start = i + c.len_utf8();
        }
    }
    out.push(&s[start..]);
    out
}

/// An address as proxies write it: `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1`,
/// `[2001:db8::1]` or `[2001:db8::1]:4711`; None for anything else.
fn parse_node(s: &str) -> Option<IpAddr> {
    if let Some(rest) = s.strip_prefix('[') {
        let (inside, tail) = rest.split_once(']')?;
        if !(tail.is_empty() || tail.strip_prefix(':').is_some_and(|p| p.parse::<u16>().is_ok())) {
            return None;
        }
        return inside.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip);
    }
    let (host, port) = s.split_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse::<Ipv4Addr>().ok().map(IpAddr::V4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn xff(s: &str) -> TrustedProxies {
        TrustedProxies::parse(s, ForwardedHeader::XForwardedFor).unwrap()
    }

    #[test]
    fn without_trusted_proxies_the_peer_is_the_client_whatever_the_header_says() {
        let t = TrustedProxies::default();
        assert_eq!(t.client(ip("203.0.113.9"), &["198.51.100.1"]), ip("203.0.113.9"));
        let t = xff("10.0.0.0/8");
        // An untrusted peer's header is ignored entirely.
        assert_eq!(t.client(ip("203.0.113.9"), &["198.51.100.1, 10.0.0.2"]), ip("203.0.113.9"));
    }

    #[test]
    fn the_walk_goes_from_the_right_and_stops_at_the_first_untrusted_hop() {
        let t = xff("10.0.0.0/8, 192.0.2.7");
        // The client forged "1.1.1.1" before the balancer appended its real address.
        assert_eq!(t.client(ip("10.0.0.1"), &["1.1.1.1, 198.51.100.4"]), ip("198.51.100.4"));
        // Two trusted hops, then the client; several header lines are one list.
        assert_eq!(t.client(ip("10.0.0.1"), &["1.1.1.1, 198.51.100.4", "192.0.2.7, 10.1.2.3"]), ip("198.51.100.4"));
        // Every hop trusted: the leftmost is the client (a machine inside the trusted network).
        assert_eq!(t.client(ip("10.0.0.1"), &["10.9.9.9, 10.0.0.5"]), ip("10.9.9.9"));
        // No header: the proxy itself.
        assert_eq!(t.client(ip("10.0.0.1"), &[]), ip("10.0.0.1"));
        // Garbage stops the walk at the trusted hop that reported it.
        assert_eq!(t.client(ip("10.0.0.1"), &["198.51.100.4, unknown, 10.0.0.5"]), ip("10.0.0.5"));
        assert_eq!(t.client(ip("10.0.0.1"), &["nonsense"]), ip("10.0.0.1"));
        // Ports and brackets as some proxies write them; IPv4-mapped peers.
        assert_eq!(t.client(ip("::ffff:10.0.0.1"), &["198.51.100.4:5555"]), ip("198.51.100.4"));
        assert_eq!(t.client(ip("10.0.0.1"), &["[2001:db8::7]:443"]), ip("2001:db8::7"));
        assert_eq!(t.client(ip("10.0.0.1"), &["2001:db8::7"]), ip("2001:db8::7"));
    }

    #[test]
    fn rfc7239_forwarded_is_read_when_it_is_the_configured_header() {
        let t = TrustedProxies::parse("10.0.0.0/8", ForwardedHeader::Forwarded).unwrap();
        let h = r#"for=1.1.1.1;proto=http, For="[2001:db8:cafe::17]:4711";by=10.0.0.1, for=10.0.0.9"#;
        assert_eq!(t.client(ip("10.0.0.1"), &[h]), ip("2001:db8:cafe::17"));
        assert_eq!(t.client(ip("10.0.0.1"), &["for=unknown, for=10.0.0.9"]), ip("10.0.0.9"));
        assert_eq!(t.client(ip("10.0.0.1"), &["for=_hidden;proto=https"]), ip("10.0.0.1"));
        assert_eq!(t.client(ip("10.0.0.1"), &[r#"for="198.51.100.4:80";proto="a,b""#]), ip("198.51.100.4"));
    }

    #[test]
    fn entries_are_cidrs_or_addresses_and_bad_ones_say_why() {
        let t = xff("192.0.2.0/24,2001:db8::/32,::ffff:198.51.100.0/120,127.0.0.1");
        for yes in ["192.0.2.200", "2001:db8:1::1", "198.51.100.3", "::ffff:192.0.2.1", "127.0.0.1"] {
            assert!(t.contains(ip(yes)), "{yes}");
        }
        for no in ["192.0.3.1", "2001:db9::1", "198.51.101.3", "127.0.0.2"] {
            assert!(!t.contains(ip(no)), "{no}");
        }
        assert!(xff("").is_empty() && xff(" , ").is_empty());
        for bad in ["10.0.0.0/33", "10.0.0.0/x", "lb.internal", "10.0.0.300", "::/129", "10.0.0.1:80"] {
            let e = TrustedProxies::parse(bad, ForwardedHeader::XForwardedFor).unwrap_err();
            assert_eq!(e.entry, bad);
        }
        assert_eq!(ForwardedHeader::parse("Forwarded"), Some(ForwardedHeader::Forwarded));
        assert_eq!(ForwardedHeader::parse("X-Forwarded-For"), Some(ForwardedHeader::XForwardedFor));
        assert_eq!(ForwardedHeader::parse("x-real-ip"), None);
    }
}
