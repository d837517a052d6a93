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
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const DNS_TIMEOUT: Duration = Duration::from_secs(5);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_HEAD: usize = 64 * 1024;
const COPY_BUF: usize = 64 * 1024;

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
    fn record(&self, host: &str, reason: &str) {
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

    fn clear(&self, host: &str) {
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

/// A running egress proxy on 127.0.0.1; stops when dropped.
pub struct EgressProxy {
    addr: SocketAddr,
    failures: Arc<FailureLog>,
    task: tokio::task::AbortHandle,
}

impl EgressProxy {
    /// Listen on 127.0.0.1:0 and serve until dropped, checking every connection against
    /// `policy` (plus the proxy's own address, refused whatever the policy allows).
    pub async fn start(policy: EgressPolicy) -> std::io::Result<EgressProxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let mut policy = policy;
        policy.deny_listener(addr);
        let policy = Arc::new(policy);
        let failures = Arc::new(FailureLog::default());
        let log = failures.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let log = log.clone();
                let policy = policy.clone();
                tokio::spawn(async move {
                    let _ = handle(stream, &policy, &log).await;
                });
            }
        })
        .abort_handle();
        Ok(EgressProxy { addr, failures, task })
    }

    /// The proxy's listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Recent failures per host.
    pub fn failures(&self) -> &Arc<FailureLog> {
        &self.failures
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn find_head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

/// Read until the end of an HTTP head; returns its length (bytes after it are body).
async fn read_head<S: AsyncReadExt + Unpin>(s: &mut S, buf: &mut Vec<u8>) -> std::io::Result<Option<usize>> {
    let mut scanned: usize = 0;
    loop {
        if let Some(end) = find_head_end(&buf[scanned.saturating_sub(3)..]) {
            return Ok(Some(scanned.saturating_sub(3) + end));
        }
        scanned = buf.len();
        if buf.len() >= MAX_HEAD {
            return Ok(None);
        }
        buf.reserve(4096);
        let n = s.read_buf(buf).await?;
        if n == 0 {
            return Ok(None);
        }
    }
}

fn header_safe(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' }).collect()
}

async fn refuse(client: &mut TcpStream, refusal: &Refusal) {
    let (status, text) = match refusal {
        Refusal::Policy(_) => (403, "Forbidden"),
        Refusal::Failed(_) => (502, "Bad Gateway"),
    };
    let reason = header_safe(refusal.message());
    let resp = format!(
        "HTTP/1.1 {status} {text}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\nX-Capture-Egress-Error: {reason}\r\n\r\n{reason}",
        reason.len()
    );
    let _ = client.write_all(resp.as_bytes()).await;
    let _ = client.shutdown().await;
}

async fn connect_checked(host: &str, port: u16, policy: &EgressPolicy) -> Result<TcpStream, Refusal> {
    let addrs = resolve_checked(host, port, policy).await?;
    let mut last = String::new();
    for addr in addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                last = format!("connection refused by {host} ({addr})");
            }
            Ok(Err(e)) => last = format!("cannot connect to {host} ({addr}): {e}"),
            Err(_) => last = format!("connection to {host} ({addr}) timed out"),
        }
    }
    Err(Refusal::Failed(last))
}

/// Split `host:port` (IPv6 in brackets) with a default port.
fn split_authority(auth: &str, default_port: u16) -> Option<(String, u16)> {
    if let Some(rest) = auth.strip_prefix('[') {
        let (h, tail) = rest.split_once(']')?;
        let port = match tail.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if tail.is_empty() => default_port,
            None => return None,
        };
        return Some((h.to_owned(), port));
    }
    match auth.rsplit_once(':') {
        Some((h, p)) => Some((h.to_owned(), p.parse().ok()?)),
        None => Some((auth.to_owned(), default_port)),
    }
}

async fn handle(mut client: TcpStream, policy: &EgressPolicy, log: &FailureLog) -> std::io::Result<()> {
    let _ = client.set_nodelay(true);
    let mut buf = Vec::with_capacity(4096);
    let head_len = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client, &mut buf)).await {
        Ok(Ok(Some(n))) => n,
        _ => return Ok(()),
    };
    let head = match std::str::from_utf8(&buf[..head_len]) {
        Ok(h) => h,
        Err(_) => {
            refuse(&mut client, &Refusal::Failed("malformed request".into())).await;
            return Ok(());
        }
    };
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let (method, target, version) = match (parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v)) => (m, t, v),
        _ => {
            refuse(&mut client, &Refusal::Failed("malformed request".into())).await;
            return Ok(());
        }
    };

    if method.eq_ignore_ascii_case("CONNECT") {
        let Some((host, port)) = split_authority(target, 443) else {
            refuse(&mut client, &Refusal::Failed("malformed CONNECT target".into())).await;
            return Ok(());
        };
        let mut upstream = match connect_checked(&host, port, policy).await {
            Ok(s) => s,
            Err(r) => {
                log.record(&host, r.message());
                refuse(&mut client, &r).await;
                return Ok(());
            }
        };
        log.clear(&host);
        client.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await?;
        if buf.len() > head_len {
            upstream.write_all(&buf[head_len..]).await?;
        }
        drop(buf);
        let _ = tokio::io::copy_bidirectional_with_sizes(&mut client, &mut upstream, COPY_BUF, COPY_BUF).await;
        return Ok(());
    }

    // Absolute-form request for plain http.
    let Ok(url) = url::Url::parse(target) else {
        refuse(&mut client, &Refusal::Failed("only absolute http URLs are proxied".into())).await;
        return Ok(());
    };
    if url.scheme() != "http" && url.scheme() != "ws" {
        refuse(&mut client, &Refusal::Failed(format!("scheme {} is not allowed", url.scheme()))).await;
        return Ok(());
    }
    let Some(host) = url.host_str().map(str::to_owned) else {
        refuse(&mut client, &Refusal::Failed("missing host".into())).await;
        return Ok(());
    };
    let port = url.port_or_known_default().unwrap_or(80);
    let mut upstream = match connect_checked(&host, port, policy).await {
        Ok(s) => s,
        Err(r) => {
            log.record(&host, r.message());
            refuse(&mut client, &r).await;
            return Ok(());
        }
    };
    log.clear(&host);

    // Rewrite to origin-form, one request per connection.
    let mut path = url.path().to_owned();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    let mut out = String::with_capacity(head_len + 32);
    out.push_str(method);
    out.push(' ');
    out.push_str(&path);
    out.push(' ');
    out.push_str(version);
    out.push_str("\r\n");
    let mut upgrade = false;
    for line in lines {
        if line.is_empty() {
            continue;
        }
        let name = line.split(':').next().unwrap_or("").trim();
        if name.eq_ignore_ascii_case("upgrade") {
            upgrade = true;
        }
        if name.eq_ignore_ascii_case("proxy-connection")
            || name.eq_ignore_ascii_case("proxy-authorization")
            || name.eq_ignore_ascii_case("keep-alive")
            || (name.eq_ignore_ascii_case("connection") && !upgrade_line(line))
        {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    if !upgrade {
        out.push_str("Connection: close\r\n");
    }
    out.push_str("\r\n");
    upstream.write_all(out.as_bytes()).await?;
    if buf.len() > head_len {
        upstream.write_all(&buf[head_len..]).await?;
    }
    drop(buf);

    let (mut cr, mut cw) = client.split();
    let (mut ur, mut uw) = upstream.split();
    let request_body = async {
        let _ = copy_with_buf(&mut cr, &mut uw).await;
    };
    let response = async {
        let mut rbuf = Vec::with_capacity(4096);
        let n = match read_head(&mut ur, &mut rbuf).await {
            Ok(Some(n)) => n,
            _ => return,
        };
        let head = String::from_utf8_lossy(&rbuf[..n]).into_owned();
        let status_1xx = head.split(' ').nth(1).is_some_and(|s| s.starts_with('1'));
        let mut out = String::with_capacity(n + 24);
        let mut hl = head.split("\r\n");
        out.push_str(hl.next().unwrap_or("HTTP/1.1 502 Bad Gateway"));
        out.push_str("\r\n");
        for line in hl {
            if line.is_empty() {
                continue;
            }
            let name = line.split(':').next().unwrap_or("").trim();
            if name.eq_ignore_ascii_case("x-capture-egress-error")
                || (!status_1xx
                    && (name.eq_ignore_ascii_case("connection")
                        || name.eq_ignore_ascii_case("keep-alive")
                        || name.eq_ignore_ascii_case("proxy-connection")))
            {
                continue;
            }
            out.push_str(line);
            out.push_str("\r\n");
        }
        if !status_1xx {
            out.push_str("Connection: close\r\n");
        }
        out.push_str("\r\n");
        if cw.write_all(out.as_bytes()).await.is_err() {
            return;
        }
        if rbuf.len() > n && cw.write_all(&rbuf[n..]).await.is_err() {
            return;
        }
        drop(rbuf);
        let _ = copy_with_buf(&mut ur, &mut cw).await;
        let _ = cw.shutdown().await;
    };
    tokio::select! {
        _ = request_body => {}
        _ = response => {}
    }
    Ok(())
}

fn upgrade_line(line: &str) -> bool {
    line.to_ascii_lowercase().contains("upgrade")
}

async fn copy_with_buf<R, W>(r: &mut R, w: &mut W) -> std::io::Result<u64>
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut br = tokio::io::BufReader::with_capacity(COPY_BUF, r);
    tokio::io::copy_buf(&mut br, w).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authority() {
        assert_eq!(split_authority("a.com:443", 1), Some(("a.com".into(), 443)));
        assert_eq!(split_authority("[::1]:8080", 1), Some(("::1".into(), 8080)));
        assert_eq!(split_authority("a.com", 80), Some(("a.com".into(), 80)));
    }

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
