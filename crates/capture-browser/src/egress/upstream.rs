//! Connecting **through** a customer's proxy ([`UpstreamProxy`]) once the egress guard has
//! checked the destination: HTTP `CONNECT` (in TLS for an `https://` proxy) or SOCKS5 with
//! username/password authentication. The proxy's own address is checked like any
//! destination first (a proxy on a private network needs the operator's allow-list).
//!
//! Every failure here is the proxy's: its message is `proxy_failed: <label>: <why>`.

use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use base64::Engine;
use capture_core::egress::{ProxyScheme, UpstreamProxy};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

use super::{EgressPolicy, Refusal, resolve_checked};

/// A byte stream to the proxy (TCP, or TLS over TCP).
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}
pub(crate) type Stream = Pin<Box<dyn Io>>;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the proxy may take to answer a handshake (CONNECT or SOCKS5).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(15);
/// Largest answer head read from a proxy.
const MAX_HEAD: usize = 16 * 1024;

fn failed(up: &UpstreamProxy, why: impl std::fmt::Display) -> Refusal {
    Refusal::Failed(up.failed(why))
}

/// Trust anchors as DER certificates.
type Roots = Vec<Vec<u8>>;

/// The system's trust anchors, read once.
fn native_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| rustls_native_certs::load_native_certs().certs)
}

/// The TLS settings for `https://` proxies: the system's roots and the operator's
/// (`CAPTURE_PROXY_CA_FILE`, in the policy). Without extra roots the one shared config.
fn tls(policy: &EgressPolicy) -> Arc<ClientConfig> {
    static SYSTEM: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    let build = |extra: &[Vec<u8>]| {
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(native_roots().iter().cloned());
        roots.add_parsable_certificates(extra.iter().map(|d| CertificateDer::from(d.clone())));
        let provider = Arc::new(tokio_rustls::rustls::crypto::aws_lc_rs::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map(|b| b.with_root_certificates(roots).with_no_client_auth());
        Arc::new(config.unwrap_or_else(|_| {
            ClientConfig::builder().with_root_certificates(RootCertStore::empty()).with_no_client_auth()
        }))
    };
    // With the operator's roots: made once per set of roots (one per process in practice),
    // not per tunnel, which a page opens many of.
    static WITH_EXTRA: Mutex<Option<(Roots, Arc<ClientConfig>)>> = Mutex::new(None);
    match policy.proxy_roots() {
        [] => SYSTEM.get_or_init(|| build(&[])).clone(),
        extra => {
            let mut cached = WITH_EXTRA.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match cached.as_ref() {
                Some((roots, config)) if roots.as_slice() == extra => config.clone(),
                _ => cached.insert((extra.to_vec(), build(extra))).1.clone(),
            }
        }
    }
}

/// The certificates of a PEM bundle (`CAPTURE_PROXY_CA_FILE`), as DER; an error when it
/// holds none or one is malformed.
pub fn parse_pem_roots(pem: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    let mut out = Vec::new();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| format!("not a PEM certificate bundle: {e}"))?;
        let mut store = RootCertStore::empty();
        store.add(cert.clone()).map_err(|e| format!("a certificate cannot be a trust anchor: {e}"))?;
        out.push(cert.to_vec());
    }
    if out.is_empty() {
        return Err("holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into());
    }
    Ok(out)
}

/// A connection to the proxy itself (checked, TCP, TLS for `https://`), before any
/// handshake.
async fn open(up: &UpstreamProxy, policy: &EgressPolicy) -> Result<Stream, Refusal> {
    let addrs = resolve_checked(&up.host, up.port, policy).await.map_err(|r| match r {
        Refusal::Policy(m) => Refusal::Policy(
            up.failed(format!("{m} (a proxy on a private network needs the operator's CAPTURE_EGRESS_ALLOW)")),
        ),
        Refusal::Failed(m) => failed(up, m),
    })?;
    let mut last = String::new();
    let mut tcp = None;
    for addr in addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => {
                let _ = s.set_nodelay(true);
                tcp = Some(s);
                break;
            }
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                last = format!("connection refused by {} ({addr})", up.host);
            }
            Ok(Err(e)) => last = format!("cannot connect to {} ({addr}): {e}", up.host),
            Err(_) => last = format!("connection to {} ({addr}) timed out", up.host),
        }
    }
    let tcp = tcp.ok_or_else(|| failed(up, last))?;
    match up.scheme {
        ProxyScheme::Https => {
            let name = tokio_rustls::rustls::pki_types::ServerName::try_from(up.host.clone())
                .map_err(|_| failed(up, format!("{} is not a valid TLS server name", up.host)))?;
            let tls = tokio::time::timeout(
                HANDSHAKE_TIMEOUT,
                tokio_rustls::TlsConnector::from(tls(policy)).connect(name, tcp),
            )
            .await
            .map_err(|_| failed(up, "the TLS handshake with the proxy timed out"))?
            .map_err(|e| failed(up, format!("TLS with the proxy failed: {e}")))?;
            Ok(Box::pin(tls))
        }
        ProxyScheme::Http | ProxyScheme::Socks5 => Ok(Box::pin(tcp)),
    }
}

/// `Proxy-Authorization` for an HTTP proxy with credentials.
fn basic_auth(up: &UpstreamProxy) -> Option<String> {
    let user = up.username.as_deref()?;
    let pass = up.password.as_deref().unwrap_or("");
    Some(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))))
}

/// A tunnel to `host:port` through the proxy: the stream then carries the destination's
/// bytes (TLS from the browser, a WebSocket, …).
pub(crate) async fn tunnel_to(
    up: &UpstreamProxy,
    policy: &EgressPolicy,
    host: &str,
    port: u16,
) -> Result<Stream, Refusal> {
    let mut s = open(up, policy).await?;
    let handshake = async {
        match up.scheme {
            ProxyScheme::Http | ProxyScheme::Https => http_connect(up, &mut s, host, port).await,
            ProxyScheme::Socks5 => socks5_connect(up, &mut s, host, port).await,
        }
    };
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
        Ok(Ok(())) => Ok(s),
        Ok(Err(why)) => Err(failed(up, why)),
        Err(_) => Err(failed(up, "the proxy did not answer the handshake in time")),
    }
}

fn target(host: &str, port: u16) -> String {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") }
}

/// `CONNECT host:port` and its answer (200 opens the tunnel).
async fn http_connect(up: &UpstreamProxy, s: &mut Stream, host: &str, port: u16) -> Result<(), String> {
    let t = target(host, port);
    let mut req = format!("CONNECT {t} HTTP/1.1\r\nHost: {t}\r\n");
    if let Some(auth) = basic_auth(up) {
        req.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).await.map_err(|e| format!("the proxy closed the connection: {e}"))?;
    // Read exactly the head, byte by byte: what follows belongs to the tunnel.
    let mut head = Vec::with_capacity(256);
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut b).await {
            Ok(0) | Err(_) => return Err("the proxy closed the connection before answering CONNECT".into()),
            Ok(_) => head.push(b[0]),
        }
        if head.len() > MAX_HEAD {
            return Err("the proxy's answer to CONNECT is too long".into());
        }
    }
    let head = String::from_utf8_lossy(&head);
    let line = head.lines().next().unwrap_or("");
    let mut parts = line.splitn(3, ' ');
    let (proto, code) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let reason = parts.next().unwrap_or("").trim();
    if !proto.starts_with("HTTP/") {
        return Err("it did not answer CONNECT in HTTP (is it a SOCKS proxy?)".into());
    }
    match code.parse::<u16>() {
        Ok(200..=299) => Ok(()),
        Ok(407) if up.username.is_some() => {
            Err("it refused the credentials (407 Proxy Authentication Required)".into())
        }
        Ok(407) => Err("it asks for credentials (407 Proxy Authentication Required)".into()),
        Ok(c) => Err(format!("it answered {c} {reason} to CONNECT {t}")),
        Err(_) => Err(format!("it answered CONNECT with '{}'", line.chars().take(80).collect::<String>())),
    }
}

/// RFC 1928 (no authentication or RFC 1929 username/password), then CONNECT by name
/// (or by address for an IP literal).
async fn socks5_connect(up: &UpstreamProxy, s: &mut Stream, host: &str, port: u16) -> Result<(), String> {
    let io = |e: std::io::Error| format!("the proxy closed the connection: {e}");
    let greeting: &[u8] = if up.username.is_some() { &[5, 2, 0, 2] } else { &[5, 1, 0] };
    s.write_all(greeting).await.map_err(io)?;
    let mut reply = [0u8; 2];
    s.read_exact(&mut reply).await.map_err(|_| "it did not answer the SOCKS5 greeting (is it a SOCKS5 proxy?)")?;
    if reply[0] != 5 {
        return Err("it did not answer in SOCKS5 (is it an HTTP proxy?)".into());
    }
    match reply[1] {
        0 => {}
        2 => {
            let (Some(user), pass) = (up.username.as_deref(), up.password.as_deref().unwrap_or("")) else {
                return Err("it asks for credentials".into());
            };
            let mut auth = vec![1, user.len() as u8];
            auth.extend_from_slice(user.as_bytes());
            auth.push(pass.len() as u8);
            auth.extend_from_slice(pass.as_bytes());
            s.write_all(&auth).await.map_err(io)?;
            let mut r = [0u8; 2];
            s.read_exact(&mut r).await.map_err(|_| "it closed the connection during authentication")?;
            if r[1] != 0 {
                return Err("it refused the credentials".into());
            }
        }
        0xff if up.username.is_some() => return Err("it accepts none of our authentication methods".into()),
        0xff => return Err("it asks for credentials".into()),
        m => return Err(format!("it chose an authentication method we did not offer ({m})")),
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let mut req = vec![5, 1, 0];
    match bare.parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => {
            req.push(1);
            req.extend_from_slice(&v4.octets());
        }
        Ok(IpAddr::V6(v6)) => {
            req.push(4);
            req.extend_from_slice(&v6.octets());
        }
        Err(_) => {
            if bare.len() > 255 {
                return Err("the destination's name is too long for SOCKS5".into());
            }
            req.push(3);
            req.push(bare.len() as u8);
            req.extend_from_slice(bare.as_bytes());
        }
    }
    req.extend_from_slice(&port.to_be_bytes());
    s.write_all(&req).await.map_err(io)?;
    let mut head = [0u8; 4];
    s.read_exact(&mut head).await.map_err(|_| "it closed the connection instead of answering CONNECT")?;
    if head[1] != 0 {
        let why = match head[1] {
            1 => "general SOCKS server failure",
            2 => "connection not allowed by its rules",
            3 => "network unreachable",
            4 => "host unreachable",
            5 => "connection refused",
            6 => "TTL expired",
            7 => "command not supported",
            8 => "address type not supported",
            _ => "an unknown error",
        };
        return Err(format!("it could not connect to {}: {why}", target(host, port)));
    }
    // The bound address, which we do not need.
    let rest = match head[3] {
        1 => 4 + 2,
        4 => 16 + 2,
        3 => {
            let mut n = [0u8; 1];
            s.read_exact(&mut n).await.map_err(|_| "it closed the connection")?;
            usize::from(n[0]) + 2
        }
        _ => return Err("it answered with an unknown address type".into()),
    };
    let mut skip = vec![0u8; rest];
    s.read_exact(&mut skip).await.map_err(|_| "it closed the connection")?;
    Ok(())
}
