//! The outbound HTTP client for everything the service itself fetches or sends on a
//! tenant's behalf (webhook deliveries, OAuth client metadata documents, audit crawls and
//! link checks): no redirects, no proxies, and name resolution through the egress policy
//! (`capture_core::egress`), so the connection goes to exactly the addresses the policy
//! accepted and DNS rebinding cannot slip past. The service's own listeners are refused
//! whatever `CAPTURE_EGRESS_ALLOW` says.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use capture_core::egress::{EgressPolicy, EgressRefusal};

/// Resolves names and refuses what the policy forbids.
struct GuardedResolver {
    policy: Arc<EgressPolicy>,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            // reqwest replaces the port we return with the URL's, so checking the port here
            // would be pointless; `check_url` (below) checks literal hosts with their port,
            // and names reach listeners only through the port-agnostic address check.
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
        .dns_resolver(Arc::new(GuardedResolver { policy }))
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .timeout(timeout)
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
