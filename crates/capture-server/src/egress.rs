//! The outbound HTTP client for everything the service itself fetches or sends on a
//! tenant's behalf (webhook deliveries, OAuth client metadata documents, and next audit
//! crawls and the mailer): no redirects, no proxies, and name resolution through the
//! egress guard, so the connection goes to exactly the addresses the guard accepted.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

/// Resolves names and refuses forbidden addresses: the connection is made to exactly the
/// addresses checked here, so DNS rebinding cannot slip past.
struct GuardedResolver {
    allow_private: bool,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow = self.allow_private;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs = capture_browser::egress::check_url_host(&host, 0, allow)
                .await
                .map_err(|e| -> Box<dyn std::error::Error + Send + Sync> { e.into() })?;
            let it: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(it)
        })
    }
}

/// A guarded client: no redirects, no proxies, guarded resolution, `timeout` per request.
pub fn client(allow_private: bool, timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver { allow_private }))
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .timeout(timeout)
        .user_agent("Service-Webhook/1")
        .build()
        .expect("the guarded HTTP client builds")
}

/// A literal IP host never reaches the resolver: the guard's verdict on it, checked here.
/// `Some((ip, reason))` when `url`'s host is a literal address the policy forbids.
pub fn forbidden_literal(url: &url::Url, allow_private: bool) -> Option<(IpAddr, &'static str)> {
    if allow_private {
        return None;
    }
    let host = url.host_str().unwrap_or("").trim_start_matches('[').trim_end_matches(']');
    let ip = host.parse::<IpAddr>().ok()?;
    capture_browser::egress::forbidden_reason(ip).map(|reason| (ip, reason))
}
