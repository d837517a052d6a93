//! Customer proxies for tests, on 127.0.0.1: an HTTP proxy (CONNECT tunnels and
//! absolute-form requests) and a SOCKS5 proxy, each optionally requiring credentials, each
//! recording what it was asked for; and a proxy that fails (answers every CONNECT `403`, or
//! a closed port). Real protocol code, as a customer's Squid or Dante would speak it.
//!
//! The HTTP proxy adds `X-Proxy-Exit: <name>` to the answers of plain requests it forwards,
//! so a page can show which proxy it came through.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use base64::Engine;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What a test proxy saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// `CONNECT host:port`, `GET http://…` or `SOCKS5 host:port`.
    pub request: String,
    /// Whether it was let through (credentials right, target allowed).
    pub allowed: bool,
}

/// A running test proxy; stops when dropped.
pub struct TestProxy {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::AbortHandle,
}

impl Drop for TestProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestProxy {
    /// Everything asked of it so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// How many requests it let through.
    pub fn passed(&self) -> usize {
        self.seen.lock().unwrap().iter().filter(|s| s.allowed).count()
    }

    /// `http://[user:pass@]127.0.0.1:port` (or `socks5://…`).
    pub fn url(&self, scheme: &str, creds: Option<(&str, &str)>) -> String {
        match creds {
            Some((u, p)) => format!("{scheme}://{u}:{p}@{}", self.addr),
            None => format!("{scheme}://{}", self.addr),
        }
    }

    async fn start<F, Fut>(handler: F) -> TestProxy
    where
        F: Fn(TcpStream, Arc<Mutex<Vec<Seen>>>) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = seen.clone();
        let handler = Arc::new(handler);
        let task = tokio::spawn(async move {
            loop {
                let Ok((s, _)) = l.accept().await else { continue };
                let _ = s.set_nodelay(true);
                tokio::spawn(handler(s, log.clone()));
            }
        })
        .abort_handle();
        TestProxy { addr, seen, task }
    }

    /// An HTTP proxy named `name`; with `creds`, it answers `407` without them.
    pub async fn http(name: &str, creds: Option<(&str, &str)>) -> TestProxy {
        let name = name.to_string();
        let expected = creds
            .map(|(u, p)| format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))));
        TestProxy::start(move |s, log| http_conn(s, log, name.clone(), expected.clone())).await
    }

    /// An HTTP proxy spoken in TLS (an `https://` proxy), its certificate for `127.0.0.1`
    /// and `localhost` issued by the test CA ([`TEST_CA_PEM`], which nothing trusts unless
    /// told to); with `creds`, it answers `407` without them.
    pub async fn https(name: &str, creds: Option<(&str, &str)>) -> TestProxy {
        use tokio_rustls::rustls::pki_types::pem::PemObject;
        use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(PROXY_CERT_PEM.as_bytes()).map(Result::unwrap).collect();
        let key = PrivateKeyDer::from_pem_slice(PROXY_KEY_PEM.as_bytes()).unwrap();
        let provider = Arc::new(tokio_rustls::rustls::crypto::aws_lc_rs::default_provider());
        let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let name = name.to_string();
        let expected = creds
            .map(|(u, p)| format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))));
        TestProxy::start(move |s, log| {
            let (acceptor, name, expected) = (acceptor.clone(), name.clone(), expected.clone());
            async move {
                // A client that does not trust the certificate ends here.
                let Ok(tls) = acceptor.accept(s).await else { return };
                http_conn(tls, log, name, expected).await
            }
        })
        .await
    }

    /// A SOCKS5 proxy; with `creds`, only username/password authentication with them.
    pub async fn socks5(creds: Option<(&str, &str)>) -> TestProxy {
        let creds = creds.map(|(u, p)| (u.to_string(), p.to_string()));
        TestProxy::start(move |s, log| socks_conn(s, log, creds.clone())).await
    }

    /// An HTTP proxy that refuses every request: `403 Forbidden` (a proxy whose rules do not
    /// allow the destination).
    pub async fn refusing() -> TestProxy {
        TestProxy::start(|mut s, log| async move {
            let Some(head) = read_head(&mut s).await else { return };
            let line = head.lines().next().unwrap_or("").to_string();
            log.lock().unwrap().push(Seen { request: strip_version(&line), allowed: false });
            let _ = s.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
        })
        .await
    }
}

/// The test CA that issued [`TestProxy::https`]'s certificate (PEM), valid until 2126.
pub const TEST_CA_PEM: &str = include_str!("../fixtures/tls/ca.pem");
const PROXY_CERT_PEM: &str = include_str!("../fixtures/tls/proxy.pem");
const PROXY_KEY_PEM: &str = include_str!("../fixtures/tls/proxy.key");

/// A port nothing listens on (bound, then closed).
pub async fn closed_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let a = l.local_addr().unwrap();
    drop(l);
    a
}

fn strip_version(line: &str) -> String {
    line.rsplit_once(' ').map_or(line, |(a, _)| a).to_string()
}

async fn read_head<S: AsyncRead + Unpin>(s: &mut S) -> Option<String> {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut b).await.ok()? == 0 || head.len() > 64 * 1024 {
            return None;
        }
        head.push(b[0]);
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

async fn pipe<A, B>(a: A, b: B)
where
    A: AsyncRead + AsyncWrite + Unpin,
    B: AsyncRead + AsyncWrite + Unpin,
{
    let (mut a, mut b) = (a, b);
    let _ = tokio::io::copy_bidirectional(&mut a, &mut b).await;
}

async fn http_conn<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    log: Arc<Mutex<Vec<Seen>>>,
    name: String,
    expected: Option<String>,
) {
    // Keep-alive for plain requests: one upstream connection per request.
    loop {
        let Some(head) = read_head(&mut s).await else { return };
        let line = head.lines().next().unwrap_or("").to_string();
        let request = strip_version(&line);
        if let Some(want) = &expected
            && header(&head, "proxy-authorization") != Some(want.as_str())
        {
            log.lock().unwrap().push(Seen { request, allowed: false });
            let _ = s
                .write_all(
                    b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
            return;
        }
        let mut parts = line.split(' ');
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        if method == "CONNECT" {
            let Ok(up) = TcpStream::connect(target).await else {
                log.lock().unwrap().push(Seen { request, allowed: false });
                let _ = s.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n").await;
                return;
            };
            log.lock().unwrap().push(Seen { request, allowed: true });
            if s.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await.is_err() {
                return;
            }
            return pipe(s, up).await;
        }
        // Absolute form: forward in origin form, read the whole answer (Content-Length),
        // add our header, pass it back.
        let Ok(u) = url::Url::parse(target) else { return };
        let authority = format!("{}:{}", u.host_str().unwrap_or(""), u.port_or_known_default().unwrap_or(80));
        let Ok(mut up) = TcpStream::connect(&authority).await else {
            log.lock().unwrap().push(Seen { request, allowed: false });
            let _ = s.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n").await;
            return;
        };
        log.lock().unwrap().push(Seen { request, allowed: true });
        let path = match u.query() {
            Some(q) => format!("{}?{q}", u.path()),
            None => u.path().to_string(),
        };
        let mut out = format!("{method} {path} HTTP/1.1\r\n");
        for l in head.lines().skip(1).filter(|l| !l.is_empty()) {
            let k = l.split(':').next().unwrap_or("").trim().to_ascii_lowercase();
            if !k.starts_with("proxy-") && k != "connection" {
                out.push_str(l);
                out.push_str("\r\n");
            }
        }
        out.push_str("Connection: close\r\n\r\n");
        let body_len: usize = header(&head, "content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        let mut body = vec![0u8; body_len];
        if s.read_exact(&mut body).await.is_err() {
            return;
        }
        if up.write_all(out.as_bytes()).await.is_err() || up.write_all(&body).await.is_err() {
            return;
        }
        let mut answer = Vec::new();
        let _ = up.read_to_end(&mut answer).await;
        let Some(split) = answer.windows(4).position(|w| w == b"\r\n\r\n") else { return };
        let (resp_head, resp_body) = answer.split_at(split + 4);
        let resp_head = String::from_utf8_lossy(resp_head);
        let mut fixed = String::new();
        for l in resp_head.lines().filter(|l| !l.is_empty()) {
            let k = l.split(':').next().unwrap_or("").trim().to_ascii_lowercase();
            if k != "connection" && k != "content-length" && k != "transfer-encoding" && k != "keep-alive" {
                fixed.push_str(l);
                fixed.push_str("\r\n");
            }
        }
        // A chunked answer is passed as it came (the test pages answer with lengths).
        let chunked = header(&resp_head, "transfer-encoding").is_some_and(|v| v.contains("chunked"));
        if chunked {
            fixed.push_str("Transfer-Encoding: chunked\r\n");
        } else {
            fixed.push_str(&format!("Content-Length: {}\r\n", resp_body.len()));
        }
        fixed.push_str(&format!("X-Proxy-Exit: {name}\r\n\r\n"));
        if s.write_all(fixed.as_bytes()).await.is_err() || s.write_all(resp_body).await.is_err() {
            return;
        }
    }
}

async fn socks_conn(mut s: TcpStream, log: Arc<Mutex<Vec<Seen>>>, creds: Option<(String, String)>) {
    let mut head = [0u8; 2];
    if s.read_exact(&mut head).await.is_err() || head[0] != 5 {
        return;
    }
    let mut methods = vec![0u8; usize::from(head[1])];
    if s.read_exact(&mut methods).await.is_err() {
        return;
    }
    let want = if creds.is_some() { 2 } else { 0 };
    if !methods.contains(&want) {
        let _ = s.write_all(&[5, 0xff]).await;
        log.lock().unwrap().push(Seen { request: "SOCKS5 no acceptable method".into(), allowed: false });
        return;
    }
    if s.write_all(&[5, want]).await.is_err() {
        return;
    }
    if let Some((user, pass)) = &creds {
        let mut v = [0u8; 2];
        if s.read_exact(&mut v).await.is_err() {
            return;
        }
        let mut u = vec![0u8; usize::from(v[1])];
        let _ = s.read_exact(&mut u).await;
        let mut n = [0u8; 1];
        let _ = s.read_exact(&mut n).await;
        let mut p = vec![0u8; usize::from(n[0])];
        let _ = s.read_exact(&mut p).await;
        if u != user.as_bytes() || p != pass.as_bytes() {
            let _ = s.write_all(&[1, 1]).await;
            log.lock().unwrap().push(Seen { request: "SOCKS5 bad credentials".into(), allowed: false });
            return;
        }
        if s.write_all(&[1, 0]).await.is_err() {
            return;
        }
    }
    let mut req = [0u8; 4];
    if s.read_exact(&mut req).await.is_err() {
        return;
    }
    let host = match req[3] {
        1 => {
            let mut a = [0u8; 4];
            let _ = s.read_exact(&mut a).await;
            std::net::Ipv4Addr::from(a).to_string()
        }
        4 => {
            let mut a = [0u8; 16];
            let _ = s.read_exact(&mut a).await;
            format!("[{}]", std::net::Ipv6Addr::from(a))
        }
        3 => {
            let mut n = [0u8; 1];
            let _ = s.read_exact(&mut n).await;
            let mut name = vec![0u8; usize::from(n[0])];
            let _ = s.read_exact(&mut name).await;
            String::from_utf8_lossy(&name).into_owned()
        }
        _ => return,
    };
    let mut port = [0u8; 2];
    if s.read_exact(&mut port).await.is_err() {
        return;
    }
    let target = format!("{host}:{}", u16::from_be_bytes(port));
    match TcpStream::connect(&target).await {
        Ok(up) => {
            log.lock().unwrap().push(Seen { request: format!("SOCKS5 {target}"), allowed: true });
            if s.write_all(&[5, 0, 0, 1, 127, 0, 0, 1, 0, 0]).await.is_ok() {
                pipe(s, up).await;
            }
        }
        Err(_) => {
            log.lock().unwrap().push(Seen { request: format!("SOCKS5 {target}"), allowed: false });
            let _ = s.write_all(&[5, 5, 0, 1, 0, 0, 0, 0, 0, 0]).await;
        }
    }
}
