//! The egress proxy: an HTTP/1 forward proxy on 127.0.0.1 (hyper) that every Chromium
//! connection goes through — absolute-form `http://` requests and `CONNECT` tunnels
//! (https, WebSockets). Each request's host is resolved once, every resolved address is
//! checked against the [`EgressPolicy`] at connect time, and the proxy connects to a
//! checked address itself (so DNS rebinding and redirects are covered).
//!
//! A refusal is answered `403` (policy) or `502` (DNS or connect failure) with the reason
//! in `X-Capture-Egress-Error`; the same header is stripped from every upstream response,
//! so a site cannot fake one. Tunnels (CONNECT, upgraded WebSockets) close after
//! [`TUNNEL_IDLE`] without a byte either way.

use std::collections::HashSet;
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use super::upstream::{self, Stream};
use super::{EgressPolicy, FailureLog, Refusal, resolve_checked};
use capture_core::egress::UpstreamProxy;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest request head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Copy buffer per tunnel direction.
const COPY_BUF: usize = 64 * 1024;
/// A tunnel with no traffic either way for this long is closed.
pub const TUNNEL_IDLE: Duration = Duration::from_secs(120);
/// The header that carries a refusal's reason to the capture.
const ERROR_HEADER: &str = "x-capture-egress-error";

type Body = BoxBody<Bytes, hyper::Error>;

/// What every connection of one proxy (or one of its routes) shares.
struct Shared {
    policy: EgressPolicy,
    failures: Arc<FailureLog>,
    tunnel_idle: Duration,
    /// The customer's proxy a route connects through; None: connect directly. A route is
    /// made for a browser context before its job is known (a warm spare), so this is set
    /// when the job takes the context, before its first request.
    upstream: RwLock<Option<Arc<UpstreamProxy>>>,
    /// The loopback ports of the live routes: refused as destinations like the proxy's own
    /// port (a page must not borrow another job's route).
    routes: Arc<Mutex<HashSet<u16>>>,
}

/// A running egress proxy on 127.0.0.1; stops when dropped.
pub struct EgressProxy {
    addr: SocketAddr,
    failures: Arc<FailureLog>,
    shared: Arc<Shared>,
    task: tokio::task::AbortHandle,
}

/// A listener of the egress proxy for one browser context (its `proxyServer`): it checks
/// every destination as the egress proxy does, then connects directly or, once
/// [`set_upstream`](Self::set_upstream) named one, through a customer's proxy. Closed when
/// dropped.
pub struct EgressRoute {
    addr: SocketAddr,
    shared: Arc<Shared>,
    routes: Arc<Mutex<HashSet<u16>>>,
    task: tokio::task::AbortHandle,
}

impl EgressRoute {
    /// Where the browser context's `proxyServer` points.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// From now on, connect through `upstream` (failures are named after its label).
    pub fn set_upstream(&self, upstream: UpstreamProxy) {
        *self.shared.upstream.write().unwrap() = Some(Arc::new(upstream));
    }
}

/// Opens routes of one egress proxy (cheap to clone, for the tasks that warm spare pages).
#[derive(Clone)]
pub struct Routes(Arc<Shared>);

impl Routes {
    /// A new route (127.0.0.1, a port of its own), connecting directly until told otherwise.
    pub async fn open(&self) -> std::io::Result<EgressRoute> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let mut policy = self.0.policy.clone();
        policy.deny_listener(addr);
        self.0.routes.lock().unwrap().insert(addr.port());
        let shared = Arc::new(Shared {
            policy,
            failures: self.0.failures.clone(),
            tunnel_idle: self.0.tunnel_idle,
            upstream: RwLock::new(None),
            routes: self.0.routes.clone(),
        });
        let task = spawn_listener(listener, shared.clone());
        Ok(EgressRoute { addr, shared, routes: self.0.routes.clone(), task })
    }
}

impl Drop for EgressRoute {
    fn drop(&mut self) {
        self.task.abort();
        self.routes.lock().unwrap().remove(&self.addr.port());
    }
}

/// Accept connections on `listener` until the task is aborted.
fn spawn_listener(listener: TcpListener, shared: Arc<Shared>) -> tokio::task::AbortHandle {
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(serve(stream, shared.clone()));
        }
    })
    .abort_handle()
}

impl EgressProxy {
    /// Listen on 127.0.0.1:0 and serve until dropped, checking every connection against
    /// `policy` (plus the proxy's own address, refused whatever the policy allows).
    pub async fn start(policy: EgressPolicy) -> std::io::Result<EgressProxy> {
        EgressProxy::start_with(policy, TUNNEL_IDLE).await
    }

    /// [`start`](Self::start) with another idle timeout for tunnels.
    pub async fn start_with(policy: EgressPolicy, tunnel_idle: Duration) -> std::io::Result<EgressProxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let mut policy = policy;
        policy.deny_listener(addr);
        let failures = Arc::new(FailureLog::default());
        let shared = Arc::new(Shared {
            policy,
            failures: failures.clone(),
            tunnel_idle,
            upstream: RwLock::new(None),
            routes: Arc::default(),
        });
        let task = spawn_listener(listener, shared.clone());
        Ok(EgressProxy { addr, failures, shared, task })
    }

    /// A listener of its own (127.0.0.1, a new port) that checks every destination as this
    /// proxy does, then connects through `upstream` instead of directly. Failures are
    /// recorded in this proxy's failure log, `proxy_failed: <label>: <why>`.
    pub async fn route(&self, upstream: UpstreamProxy) -> std::io::Result<EgressRoute> {
        let route = self.routes().open().await?;
        route.set_upstream(upstream);
        Ok(route)
    }

    /// What opens routes of this proxy.
    pub fn routes(&self) -> Routes {
        Routes(self.shared.clone())
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

/// Serve one client connection (keep-alive: each request picks its own upstream).
async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let svc = hyper::service::service_fn(move |req| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(handle(req, &shared).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD)
        .preserve_header_case(true)
        .serve_connection(TokioIo::new(stream), svc)
        .with_upgrades()
        .await;
}

fn empty() -> Body {
    Empty::<Bytes>::new().map_err(|never| match never {}).boxed()
}

/// The answer to a refused or failed request: 403 or 502, the reason in the body and in
/// `X-Capture-Egress-Error`.
fn refusal(r: &Refusal) -> Response<Body> {
    let status = match r {
        Refusal::Policy(_) => StatusCode::FORBIDDEN,
        Refusal::Failed(_) => StatusCode::BAD_GATEWAY,
    };
    let reason: String = r.message().chars().map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' }).collect();
    let mut resp = Response::new(Full::new(Bytes::from(reason.clone())).map_err(|never| match never {}).boxed());
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::CONNECTION, HeaderValue::from_static("close"));
    if let Ok(v) = HeaderValue::from_str(&reason) {
        h.insert(ERROR_HEADER, v);
    }
    resp
}

async fn handle(req: Request<Incoming>, shared: &Shared) -> Response<Body> {
    if req.method() == Method::CONNECT { connect(req, shared).await } else { forward(req, shared).await }
}

/// Resolve `host` and check every address (the routes' ports are refused too).
async fn check_destination(host: &str, port: u16, shared: &Shared) -> Result<Vec<SocketAddr>, Refusal> {
    let addrs = resolve_checked(host, port, &shared.policy).await?;
    let routes = shared.routes.lock().unwrap();
    if let Some(a) = addrs.iter().find(|a| a.ip().to_canonical().is_loopback() && routes.contains(&a.port())) {
        return Err(Refusal::Policy(format!("blocked by egress policy: {a} is this service's own listener")));
    }
    Ok(addrs)
}

/// Check the destination, then connect: through the route's proxy (a tunnel to `host`,
/// named as the page named it), else directly to the first checked address that answers.
async fn connect_checked(host: &str, port: u16, shared: &Shared) -> Result<Stream, Refusal> {
    let result = async {
        let addrs = check_destination(host, port, shared).await?;
        let up = shared.upstream.read().unwrap().clone();
        if let Some(up) = up {
            return upstream::tunnel_to(&up, &shared.policy, host, port).await;
        }
        let mut last = String::new();
        for addr in addrs {
            match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
                Ok(Ok(s)) => {
                    let _ = s.set_nodelay(true);
                    return Ok(Box::pin(s) as Stream);
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
    .await;
    match &result {
        Ok(_) => shared.failures.clear(host),
        Err(r) => shared.failures.record(host, r.message()),
    }
    result
}

/// `CONNECT host:port`: check, connect, answer 200, then tunnel the upgraded connection.
async fn connect(req: Request<Incoming>, shared: &Shared) -> Response<Body> {
    let Some(auth) = req.uri().authority() else {
        return refusal(&Refusal::Failed("malformed CONNECT target".into()));
    };
    let (host, port) = (auth.host().to_owned(), auth.port_u16().unwrap_or(443));
    let upstream = match connect_checked(&host, port, shared).await {
        Ok(s) => s,
        Err(r) => return refusal(&r),
    };
    let idle = shared.tunnel_idle;
    tokio::spawn(async move {
        if let Ok(client) = hyper::upgrade::on(req).await {
            tunnel(TokioIo::new(client), upstream, idle).await;
        }
    });
    Response::new(empty())
}

/// Does this head ask to switch protocols (a WebSocket over plain http)?
fn wants_upgrade(h: &HeaderMap) -> bool {
    h.contains_key(header::UPGRADE)
        && h.get_all(header::CONNECTION)
            .iter()
            .any(|v| v.to_str().is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("upgrade"))))
}

/// Hop-by-hop headers are the proxy's business, not the origin's (kept on an upgrade,
/// which needs `Connection: upgrade`).
fn strip_hop_by_hop(h: &mut HeaderMap, upgrade: bool) {
    for name in ["proxy-connection", "proxy-authorization", "proxy-authenticate", "keep-alive", "te", "trailer"] {
        h.remove(name);
    }
    if !upgrade {
        h.remove(header::CONNECTION);
        h.remove(header::UPGRADE);
    }
}

/// An absolute-form request (`GET http://host/path`): check, connect, send it in
/// origin form on a fresh upstream connection, stream the answer back.
async fn forward(mut req: Request<Incoming>, shared: &Shared) -> Response<Body> {
    let uri = req.uri().clone();
    match uri.scheme_str() {
        Some("http" | "ws") => {}
        Some(other) => return refusal(&Refusal::Failed(format!("scheme {other} is not allowed"))),
        None => return refusal(&Refusal::Failed("only absolute http URLs are proxied".into())),
    }
    let Some(host) = uri.host().map(str::to_owned) else {
        return refusal(&Refusal::Failed("missing host".into()));
    };
    let port = uri.port_u16().unwrap_or(80);
    // Through a customer's proxy too, a plain request goes in origin form inside a tunnel
    // (CONNECT or SOCKS5): whatever the proxy answers is then its own answer, never taken
    // for the page's.
    let upstream = match connect_checked(&host, port, shared).await {
        Ok(s) => s,
        Err(r) => return refusal(&r),
    };
    let origin_form = uri.path_and_query().map_or("/", |p| p.as_str()).parse().unwrap_or_default();
    *req.uri_mut() = origin_form;
    let upgrade = wants_upgrade(req.headers());
    if !req.headers().contains_key(header::HOST)
        && let Some(a) = uri.authority()
        && let Ok(v) = HeaderValue::from_str(a.as_str())
    {
        req.headers_mut().insert(header::HOST, v);
    }
    strip_hop_by_hop(req.headers_mut(), upgrade);
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
    let (mut sender, conn) = match hyper::client::conn::http1::Builder::new()
        .preserve_header_case(true)
        .handshake(TokioIo::new(upstream))
        .await
    {
        Ok(x) => x,
        Err(e) => return refusal(&Refusal::Failed(format!("cannot talk to {host}: {e}"))),
    };
    tokio::spawn(async move {
        let _ = conn.with_upgrades().await;
    });
    let mut resp = match sender.send_request(req).await {
        Ok(r) => r,
        Err(e) => return refusal(&Refusal::Failed(format!("{host} did not answer: {e}"))),
    };
    resp.headers_mut().remove(ERROR_HEADER);
    if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
        if let Some(client) = client_upgrade {
            let server = hyper::upgrade::on(&mut resp);
            let idle = shared.tunnel_idle;
            tokio::spawn(async move {
                if let (Ok(c), Ok(s)) = tokio::join!(client, server) {
                    tunnel(TokioIo::new(c), TokioIo::new(s), idle).await;
                }
            });
        }
    } else {
        strip_hop_by_hop(resp.headers_mut(), false);
    }
    resp.map(BodyExt::boxed)
}

/// Copy both ways until both sides close or nothing moves for `idle`; true when it was
/// closed for idleness.
pub(crate) async fn tunnel<A, B>(a: A, b: B, idle: Duration) -> bool
where
    A: AsyncRead + AsyncWrite + Unpin,
    B: AsyncRead + AsyncWrite + Unpin,
{
    let (mut ar, mut aw) = tokio::io::split(a);
    let (mut br, mut bw) = tokio::io::split(b);
    let start = Instant::now();
    // Milliseconds since `start` of the last byte read either way.
    let last = AtomicU64::new(0);
    let copy =
        futures_util::future::join(one_way(&mut ar, &mut bw, start, &last), one_way(&mut br, &mut aw, start, &last));
    let watchdog = async {
        loop {
            let due = start + Duration::from_millis(last.load(Ordering::Relaxed)) + idle;
            if Instant::now() >= due {
                return;
            }
            tokio::time::sleep_until(due).await;
        }
    };
    tokio::select! {
        _ = copy => false,
        () = watchdog => true,
    }
}

async fn one_way<R, W>(r: &mut R, w: &mut W, start: Instant, last: &AtomicU64)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; COPY_BUF];
    loop {
        let n = match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        last.store(start.elapsed().as_millis() as u64, Ordering::Relaxed);
        if w.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = w.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egress::EgressAllow;

    fn loopback_policy() -> EgressPolicy {
        EgressPolicy::new(EgressAllow::parse("127.0.0.1").unwrap(), vec![])
    }

    /// Send raw bytes to the proxy and read its whole answer (it closes after a refusal).
    async fn raw(proxy: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(proxy).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
        String::from_utf8_lossy(&out).into_owned()
    }

    /// A TCP server that answers one plain HTTP request, echoing its request line and
    /// head (and faking a refusal header), or holds a CONNECT-tunnelled connection open.
    async fn origin() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = l.accept().await else { return };
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let mut head = Vec::new();
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    if head.starts_with("PING") {
                        // Tunnel test: echo each line, then keep the connection open.
                        let _ = s.write_all(b"PONG\r\n\r\n").await;
                        let _ = s.read(&mut buf).await;
                        return;
                    }
                    let body = head.replace("\r\n", "|");
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nX-Capture-Egress-Error: fake\r\nKeep-Alive: timeout=5\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = s.write_all(resp.as_bytes()).await;
                });
            }
        });
        addr
    }

    #[tokio::test]
    async fn forwards_absolute_form_requests_in_origin_form() {
        let origin = origin().await;
        let proxy = EgressProxy::start(loopback_policy()).await.unwrap();
        let resp = raw(
            proxy.addr(),
            &format!("GET http://{origin}/a/b?c=d HTTP/1.1\r\nHost: {origin}\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: x\r\nConnection: close\r\n\r\n"),
        )
        .await;
        assert!(resp.starts_with("HTTP/1.1 200 OK"), "{resp}");
        assert!(resp.contains("GET /a/b?c=d HTTP/1.1|"), "{resp}");
        assert!(!resp.to_ascii_lowercase().contains("proxy-"), "{resp}");
        // A site cannot fake a refusal.
        assert!(!resp.to_ascii_lowercase().contains("x-capture-egress-error"), "{resp}");
        assert!(!resp.to_ascii_lowercase().contains("keep-alive: timeout"), "{resp}");
    }

    #[tokio::test]
    async fn refuses_forbidden_addresses_and_its_own_port_with_a_reason() {
        let origin = origin().await;
        let strict = EgressProxy::start(EgressPolicy::strict()).await.unwrap();
        let resp = raw(strict.addr(), &format!("GET http://{origin}/ HTTP/1.1\r\nHost: {origin}\r\n\r\n")).await;
        assert!(resp.starts_with("HTTP/1.1 403"), "{resp}");
        assert!(
            resp.contains("x-capture-egress-error: blocked by egress policy: 127.0.0.1 is a loopback address"),
            "{resp}"
        );
        let resp = raw(strict.addr(), &format!("CONNECT {origin} HTTP/1.1\r\nHost: {origin}\r\n\r\n")).await;
        assert!(resp.starts_with("HTTP/1.1 403"), "{resp}");
        assert!(strict.failures().since("127.0.0.1", std::time::Instant::now() - Duration::from_secs(5)).is_some());

        let open = EgressProxy::start(loopback_policy()).await.unwrap();
        let me = open.addr();
        for req in [
            format!("GET http://{me}/ HTTP/1.1\r\nHost: {me}\r\n\r\n"),
            format!("CONNECT {me} HTTP/1.1\r\nHost: {me}\r\n\r\n"),
            format!("CONNECT 0.0.0.0:{} HTTP/1.1\r\n\r\n", me.port()),
        ] {
            let resp = raw(me, &req).await;
            assert!(resp.starts_with("HTTP/1.1 403"), "{req}: {resp}");
        }
        let resp = raw(me, &format!("CONNECT 127.0.0.1:{} HTTP/1.1\r\n\r\n", me.port())).await;
        assert!(resp.contains("this service's own listener"), "{resp}");
        let resp = raw(me, "GET ftp://127.0.0.1/ HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(resp.starts_with("HTTP/1.1 502") && resp.contains("scheme ftp is not allowed"), "{resp}");
        let resp = raw(me, "GET /relative HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(resp.starts_with("HTTP/1.1 502") && resp.contains("only absolute http URLs"), "{resp}");
        let resp = raw(me, "GET http://host.invalid/ HTTP/1.1\r\nHost: host.invalid\r\n\r\n").await;
        assert!(resp.contains("DNS lookup failed for host.invalid"), "{resp}");
    }

    #[tokio::test]
    async fn tunnels_close_when_idle() {
        let origin = origin().await;
        let proxy = EgressProxy::start_with(loopback_policy(), Duration::from_millis(400)).await.unwrap();
        let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
        s.write_all(format!("CONNECT {origin} HTTP/1.1\r\nHost: {origin}\r\n\r\n").as_bytes()).await.unwrap();
        let mut buf = vec![0u8; 1024];
        let n = s.read(&mut buf).await.unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
        s.write_all(b"PING\r\n\r\n").await.unwrap();
        let n = s.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"PONG\r\n\r\n");
        // Neither side says anything more: the proxy closes the tunnel.
        let t = Instant::now();
        let n =
            tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf)).await.expect("closed in time").unwrap_or(0);
        assert_eq!(n, 0);
        let waited = t.elapsed();
        assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(5), "{waited:?}");
    }

    fn upstream(url: &str, label: &str) -> UpstreamProxy {
        UpstreamProxy::parse(url, label).unwrap()
    }

    /// Through a route: a CONNECT tunnel's first line back, or a plain request's answer.
    async fn through(route: &EgressRoute, origin: SocketAddr) -> (String, String) {
        let mut s = TcpStream::connect(route.addr()).await.unwrap();
        s.write_all(format!("CONNECT {origin} HTTP/1.1\r\nHost: {origin}\r\n\r\n").as_bytes()).await.unwrap();
        let mut buf = vec![0u8; 4096];
        let n = s.read(&mut buf).await.unwrap();
        let head = String::from_utf8_lossy(&buf[..n]).into_owned();
        let mut tunnelled = String::new();
        if head.starts_with("HTTP/1.1 200") {
            s.write_all(b"PING\r\n\r\n").await.unwrap();
            let n = s.read(&mut buf).await.unwrap();
            tunnelled = String::from_utf8_lossy(&buf[..n]).into_owned();
        }
        (head, tunnelled)
    }

    #[tokio::test]
    async fn a_route_tunnels_and_forwards_through_an_http_proxy_with_credentials() {
        use capture_testkit::proxies::TestProxy;
        let origin = origin().await;
        let squid = TestProxy::http("office", Some(("bob", "s3cret"))).await;
        let egress = EgressProxy::start(loopback_policy()).await.unwrap();
        let route = egress.route(upstream(&squid.url("http", Some(("bob", "s3cret"))), "office")).await.unwrap();
        let (head, tunnelled) = through(&route, origin).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(tunnelled, "PONG\r\n\r\n");
        // A plain request goes through a tunnel too, in origin form (the browser's own
        // Proxy-Authorization is dropped: the proxy gets ours, on the CONNECT).
        let resp = raw(
            route.addr(),
            &format!("GET http://{origin}/x HTTP/1.1\r\nHost: {origin}\r\nProxy-Authorization: Basic bm9wZTpub3Bl\r\nConnection: close\r\n\r\n"),
        )
        .await;
        assert!(resp.starts_with("HTTP/1.1 200 OK"), "{resp}");
        assert!(resp.contains("GET /x HTTP/1.1|"), "{resp}");
        assert!(!resp.to_ascii_lowercase().contains("proxy-authorization"), "{resp}");
        let seen: Vec<(String, bool)> = squid.seen().into_iter().map(|s| (s.request, s.allowed)).collect();
        assert_eq!(seen, [(format!("CONNECT {origin}"), true), (format!("CONNECT {origin}"), true)]);
    }

    #[tokio::test]
    async fn a_route_tunnels_through_socks5_by_name_with_credentials() {
        use capture_testkit::proxies::TestProxy;
        let origin = origin().await;
        let dante = TestProxy::socks5(Some(("alice", "pw"))).await;
        let egress = EgressProxy::start(EgressPolicy::new(EgressAllow::parse("127.0.0.1,localhost").unwrap(), vec![]))
            .await
            .unwrap();
        let route = egress.route(upstream(&dante.url("socks5", Some(("alice", "pw"))), "dante")).await.unwrap();
        let (head, tunnelled) = through(&route, origin).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(tunnelled, "PONG\r\n\r\n");
        // A name goes to the proxy as the page wrote it (the proxy resolves it where it
        // stands), once the guard has checked what it resolves to here.
        let named = format!("localhost:{}", origin.port());
        let resp =
            raw(route.addr(), &format!("GET http://{named}/y HTTP/1.1\r\nHost: {named}\r\nConnection: close\r\n\r\n"))
                .await;
        assert!(resp.contains("GET /y HTTP/1.1|"), "{resp}");
        let seen: Vec<String> = dante.seen().into_iter().map(|s| s.request).collect();
        assert_eq!(seen, [format!("SOCKS5 {origin}"), format!("SOCKS5 {named}")]);
    }

    #[tokio::test]
    async fn a_proxy_that_fails_is_named_in_the_refusal() {
        use capture_testkit::proxies::{TestProxy, closed_port};
        let origin = origin().await;
        let egress = EgressProxy::start(loopback_policy()).await.unwrap();
        let squid = TestProxy::http("office", Some(("bob", "s3cret"))).await;
        let dante = TestProxy::socks5(Some(("alice", "pw"))).await;
        let refusing = TestProxy::refusing().await;
        let dead = closed_port().await;
        for (url, why) in [
            (
                squid.url("http", Some(("bob", "wrong"))),
                "it refused the credentials (407 Proxy Authentication Required)".to_string(),
            ),
            (squid.url("http", None), "it asks for credentials (407 Proxy Authentication Required)".to_string()),
            (dante.url("socks5", Some(("alice", "nope"))), "it refused the credentials".to_string()),
            (dante.url("socks5", None), "it asks for credentials".to_string()),
            (refusing.url("http", None), format!("it answered 403 Forbidden to CONNECT {origin}")),
            (format!("http://{dead}"), format!("connection refused by 127.0.0.1 ({dead})")),
        ] {
            let route = egress.route(upstream(&url, "p1")).await.unwrap();
            let (head, _) = through(&route, origin).await;
            assert!(head.starts_with("HTTP/1.1 502"), "{url}: {head}");
            let want = format!("x-capture-egress-error: proxy_failed: p1: {why}");
            assert!(head.lines().any(|l| l == want), "{url}: {head}");
            let logged = egress.failures().since("127.0.0.1", std::time::Instant::now() - Duration::from_secs(5));
            assert_eq!(logged.as_deref(), Some(format!("proxy_failed: p1: {why}").as_str()));
        }
        // A plain request the proxy refuses is its failure too, never an answer of the page.
        let route = egress.route(upstream(&refusing.url("http", None), "p2")).await.unwrap();
        let resp = raw(route.addr(), &format!("GET http://{origin}/ HTTP/1.1\r\nHost: {origin}\r\n\r\n")).await;
        assert!(resp.starts_with("HTTP/1.1 502"), "{resp}");
        assert!(resp.contains(&format!("proxy_failed: p2: it answered 403 Forbidden to CONNECT {origin}")), "{resp}");
    }

    #[tokio::test]
    async fn the_guard_checks_the_destination_and_the_proxy_itself() {
        use capture_testkit::proxies::TestProxy;
        let origin = origin().await;
        let squid = TestProxy::http("office", None).await;
        // The policy forbids loopback: neither the destination nor the proxy may be there.
        let strict = EgressProxy::start(EgressPolicy::strict()).await.unwrap();
        let route = strict.route(upstream(&squid.url("http", None), "office")).await.unwrap();
        let (head, _) = through(&route, origin).await;
        assert!(head.starts_with("HTTP/1.1 403"), "{head}");
        assert!(head.contains("blocked by egress policy: 127.0.0.1 is a loopback address"), "{head}");
        let resp = raw(route.addr(), "CONNECT 93.184.215.14:443 HTTP/1.1\r\n\r\n").await;
        assert!(resp.starts_with("HTTP/1.1 403"), "{resp}");
        assert!(
            resp.contains("proxy_failed: office: blocked by egress policy: 127.0.0.1 is a loopback address (a proxy on a private network needs the operator's CAPTURE_EGRESS_ALLOW)"),
            "{resp}"
        );
        assert!(squid.seen().is_empty(), "{:?}", squid.seen());
        // A page may not borrow another job's route (nor a route its own).
        let open = EgressProxy::start(loopback_policy()).await.unwrap();
        let a = open.route(upstream(&squid.url("http", None), "a")).await.unwrap();
        let b = open.route(upstream(&squid.url("http", None), "b")).await.unwrap();
        for (via, to) in [(open.addr(), a.addr()), (b.addr(), a.addr()), (a.addr(), a.addr())] {
            let resp = raw(via, &format!("CONNECT {to} HTTP/1.1\r\n\r\n")).await;
            assert!(resp.starts_with("HTTP/1.1 403") && resp.contains("this service's own listener"), "{resp}");
        }
        // A closed route's port is forgotten.
        let port = a.addr().port();
        drop(a);
        assert!(!open.shared.routes.lock().unwrap().contains(&port));
    }

    /// Pings every 100 ms for twice the idle time: the tunnel stays open. The idle time is
    /// 15 pings long, so only a stall of well over a second (CI's run failed once with 300 ms
    /// on a machine busy with two builds) could close it.
    #[tokio::test]
    async fn a_busy_tunnel_stays_open_past_the_idle_time() {
        let (a, mut a_peer) = tokio::io::duplex(1024);
        let (b, mut b_peer) = tokio::io::duplex(1024);
        let idle = Duration::from_millis(1500);
        let t = tokio::spawn(tunnel(a, b, idle));
        let start = Instant::now();
        let mut buf = [0u8; 8];
        while start.elapsed() < idle * 2 {
            a_peer.write_all(b"ping").await.unwrap();
            b_peer.read_exact(&mut buf[..4]).await.unwrap();
            assert_eq!(&buf[..4], b"ping");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(!t.is_finished(), "closed while busy");
        drop(a_peer);
        drop(b_peer);
        assert!(!t.await.unwrap(), "ended by the sides, not by idleness");
    }
}
