//! Address ranges: how reachable an address is by its range (public, internal, sensitive),
//! and the address arithmetic the allowlist and the policy share.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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
pub(super) fn canonical(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

pub(super) fn in_net(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
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

pub(super) fn full_prefix(ip: IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}
