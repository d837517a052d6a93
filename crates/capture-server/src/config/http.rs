//! The HTTP side: where the API listens and the URLs it hands out, event streams, upload
//! bodies and the load balancers whose forwarding header is believed.

use std::net::SocketAddr;
use std::time::Duration;

use super::parse::{ConfigError, Reader, err};

/// How the API is served.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// `CAPTURE_LISTEN`: host:port.
    pub listen: String,
    /// `CAPTURE_BASE_URL`: the absolute base of every URL handed out (no trailing `/`).
    pub base_url: Option<String>,
    /// `CAPTURE_SSE_HEARTBEAT`: a comment line this often keeps an event stream open.
    pub sse_heartbeat: Duration,
    /// `CAPTURE_SSE_MAX_DURATION`: an event stream ends after this long (clients reconnect).
    pub sse_max_duration: Duration,
    /// `CAPTURE_MAX_UPLOAD_BYTES`: the largest HTML upload.
    pub max_upload_bytes: usize,
    /// The load balancers whose forwarding header gives the client's address
    /// (`CAPTURE_TRUSTED_PROXIES`, read from `CAPTURE_FORWARDED_HEADER`; none by default).
    pub trusted_proxies: capture_core::proxies::TrustedProxies,
}

impl HttpSettings {
    pub(super) fn read(r: &Reader) -> Result<HttpSettings, ConfigError> {
        let listen = r.get("CAPTURE_LISTEN").unwrap_or_else(|| "127.0.0.1:8080".into());
        listen
            .parse::<SocketAddr>()
            .map_err(|_| err("CAPTURE_LISTEN", format!("'{listen}' is not host:port (e.g. 127.0.0.1:8080)")))?;
        let base_url = match r.get("CAPTURE_BASE_URL") {
            None => None,
            Some(u) => {
                let parsed = url::Url::parse(&u).map_err(|e| err("CAPTURE_BASE_URL", format!("'{u}': {e}")))?;
                if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
                    return Err(err("CAPTURE_BASE_URL", "must be an http(s) URL like https://capture.example.com"));
                }
                Some(u.trim_end_matches('/').to_string())
            }
        };
        let sse_heartbeat = r.dur("CAPTURE_SSE_HEARTBEAT", "15s")?;
        let sse_max_duration = r.dur("CAPTURE_SSE_MAX_DURATION", "5m")?;
        if sse_heartbeat.is_zero() {
            return Err(err("CAPTURE_SSE_HEARTBEAT", "must be positive"));
        }
        let max_upload_bytes = r.num("CAPTURE_MAX_UPLOAD_BYTES", 20 * 1024 * 1024, 1024, 1 << 30)? as usize;
        let forwarded_header = match r.get("CAPTURE_FORWARDED_HEADER") {
            None => capture_core::proxies::ForwardedHeader::default(),
            Some(h) => capture_core::proxies::ForwardedHeader::parse(&h)
                .ok_or_else(|| err("CAPTURE_FORWARDED_HEADER", format!("'{h}' is not x-forwarded-for or forwarded")))?,
        };
        let trusted_proxies = capture_core::proxies::TrustedProxies::parse(
            &r.get("CAPTURE_TRUSTED_PROXIES").unwrap_or_default(),
            forwarded_header,
        )
        .map_err(|e| err("CAPTURE_TRUSTED_PROXIES", e.to_string()))?;
        Ok(HttpSettings { listen, base_url, sse_heartbeat, sse_max_duration, max_upload_bytes, trusted_proxies })
    }
}
