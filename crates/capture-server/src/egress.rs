//! The outbound HTTP client for everything the service itself fetches or sends on a
//! tenant's behalf (webhook deliveries, OAuth client metadata documents, audit crawls and
//! link checks, customers' buckets): no redirects, no proxies, and name resolution through the
//! egress policy (`capture_core::egress`), so the connection goes to exactly the addresses the
//! policy accepted and DNS rebinding cannot slip past. The service's own listeners are refused
//! whatever `CAPTURE_EGRESS_ALLOW` says: reqwest's resolver is never told the port, so every
//! connection the client opens is checked again on its connected peer address and port
//! ([`ListenerGuard`]) before a byte of the request is written — a name such as a hosts-file
//! `vm` for 127.0.0.1 cannot reach the API, the inbound mail server or the egress proxy.
//! (Over `https` the TLS handshake comes first: a ClientHello may reach such a listener and is
//! refused there; the request itself never is sent.)

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use capture_core::egress::{EgressPolicy, EgressRefusal};
use hyper_util::client::legacy::connect::{Connection, HttpInfo};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Resolves names and refuses what the policy forbids.
struct GuardedResolver {
    policy: Arc<EgressPolicy>,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            // reqwest replaces the port we return with the URL's, so the port is not known
            // here: the ranges are checked now, the listeners on the connected address
            // (`ListenerGuard`).
            let addrs = resolve_checked(&policy, &host, 0)
                .await
                .map_err(|e| -> Box<dyn std::error::Error + Send + Sync> { e.into() })?;
            let it: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(it)
        })
    }
}

/// Resolve `host` and check every address (with `port`) against the policy.
pub async fn resolve_checked(policy: &EgressPolicy, host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => {
            tokio::net::lookup_host((bare, port)).await.map_err(|e| format!("could not resolve {bare}: {e}"))?.collect()
        }
    };
    if addrs.is_empty() {
        return Err(format!("could not resolve {bare}"));
    }
    policy.check_all(bare, &addrs).map_err(|e| e.to_string())?;
    Ok(addrs)
}

/// A guarded client: no redirects, no proxies, guarded resolution, `timeout` per request.
pub fn client(policy: Arc<EgressPolicy>, timeout: Duration) -> reqwest::Client {
    builder(policy, timeout).user_agent("Service-Webhook/1").build().expect("the guarded HTTP client builds")
}

/// The guarded client's builder, for callers that set their own user agent.
pub fn builder(policy: Arc<EgressPolicy>, timeout: Duration) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connector_layer(ListenerGuard { policy: policy.clone(), via: None })
        .dns_resolver(Arc::new(GuardedResolver { policy }))
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .timeout(timeout)
}

/// A client whose every request goes through the browsers' egress proxy at `proxy` (which
/// checks each destination with its port): no redirects, and no connection anywhere else.
pub fn via_proxy(
    policy: Arc<EgressPolicy>,
    timeout: Duration,
    proxy: SocketAddr,
) -> reqwest::Result<reqwest::ClientBuilder> {
    Ok(reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .proxy(reqwest::Proxy::all(format!("http://{proxy}"))?)
        .connector_layer(ListenerGuard { policy: policy.clone(), via: Some(proxy) })
        .dns_resolver(Arc::new(GuardedResolver { policy }))
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .timeout(timeout))
}

/// Checks each connection the client opens on its peer address and port: the service's own
/// listeners are refused (see the module docs). `via`: the one proxy this client talks to,
/// the only address it may connect to.
#[derive(Clone)]
struct ListenerGuard {
    policy: Arc<EgressPolicy>,
    via: Option<SocketAddr>,
}

impl<S> tower_layer::Layer<S> for ListenerGuard {
    type Service = Guarded<S>;
    fn layer(&self, inner: S) -> Guarded<S> {
        Guarded { inner, guard: self.clone() }
    }
}

#[derive(Clone)]
struct Guarded<S> {
    inner: S,
    guard: ListenerGuard,
}

impl ListenerGuard {
    fn admit(&self, conn: &impl Connection) -> Result<(), BoxError> {
        let mut extras = axum::http::Extensions::new();
        conn.connected().get_extras(&mut extras);
        let Some(peer) = extras.get::<HttpInfo>().map(HttpInfo::remote_addr) else {
            return Err("blocked by egress policy: the connection's peer address is unknown".into());
        };
        match self.via {
            Some(proxy) if proxy == peer => Ok(()),
            Some(proxy) => Err(format!("blocked by egress policy: {peer} is not the egress proxy {proxy}").into()),
            None => self.policy.check_listener(peer).map_err(|e| e.to_string().into()),
        }
    }
}

impl<S, R> tower_service::Service<R> for Guarded<S>
where
    S: tower_service::Service<R, Error = BoxError> + Clone + Send + 'static,
    S::Response: Connection + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        let (connecting, guard) = (self.inner.call(req), self.guard.clone());
        Box::pin(async move {
            let conn = connecting.await?;
            // Dropped unused when refused: nothing was written to it.
            guard.admit(&conn)?;
            Ok(conn)
        })
    }
}

/// The policy's verdict on a URL whose host is a literal address or `localhost` (which
/// never reach the resolver), with the URL's port: `Err` when it is refused.
pub fn check_url(url: &url::Url, policy: &EgressPolicy) -> Result<(), EgressRefusal> {
    let port = url.port_or_known_default().unwrap_or(0);
    match url.host() {
        Some(url::Host::Ipv4(ip)) => policy.check(&ip.to_string(), SocketAddr::new(IpAddr::V4(ip), port)),
        Some(url::Host::Ipv6(ip)) => policy.check(&ip.to_string(), SocketAddr::new(IpAddr::V6(ip), port)),
        Some(url::Host::Domain(d)) if is_localhost(d) => {
            policy.check(d, SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), port))
        }
        _ => Ok(()),
    }
}

fn is_localhost(d: &str) -> bool {
    let d = d.trim_end_matches('.').to_ascii_lowercase();
    d == "localhost" || d.ends_with(".localhost")
}
