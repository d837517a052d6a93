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

mod allow;
mod policy;
mod ranges;
mod upstream;

pub use allow::{EgressAllow, EgressAllowError};
pub use policy::{EgressPolicy, EgressRefusal};
pub use ranges::{AddressKind, classify, forbidden_reason};
pub use upstream::{PROXY_FAILED, PROXY_URL_MAX, ProxyScheme, UpstreamProxy};

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, SocketAddr};

    use super::{AddressKind, EgressAllow, EgressPolicy, classify, forbidden_reason};

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
