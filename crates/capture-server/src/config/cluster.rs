//! The cluster: the roles this process takes, the key nodes sign their internal calls with,
//! and where the other nodes reach this one.

use super::parse::{ConfigError, Reader, err};

/// The process roles `capture serve --roles` can pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roles {
    pub api: bool,
    pub worker: bool,
    pub scheduler: bool,
    /// The inbound SMTP server of the saved test inboxes (`CAPTURE_INBOUND_LISTEN`).
    pub inbound: bool,
}

impl Roles {
    /// All roles (the default of `capture serve`).
    pub fn all() -> Roles {
        Roles { api: true, worker: true, scheduler: true, inbound: true }
    }

    /// Parse `api,worker,scheduler` (any non-empty subset).
    pub fn parse(s: &str) -> Result<Roles, String> {
        let mut r = Roles { api: false, worker: false, scheduler: false, inbound: false };
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part {
                "api" => r.api = true,
                "worker" => r.worker = true,
                "scheduler" => r.scheduler = true,
                "inbound" => r.inbound = true,
                "all" => r = Roles::all(),
                other => return Err(format!("unknown role '{other}' (use api, worker, scheduler, inbound)")),
            }
        }
        if !(r.api || r.worker || r.scheduler || r.inbound) {
            return Err("no role selected".into());
        }
        Ok(r)
    }
}

/// How this node is one of several.
#[derive(Debug, Clone)]
pub struct ClusterSettings {
    /// The key nodes sign their internal calls with (`CAPTURE_CLUSTER_SECRET`; derived from
    /// the master key when unset).
    pub secret: Option<String>,
    /// Where the other nodes reach this one (`CAPTURE_INTERNAL_URL`; the bound address when
    /// it is a concrete one).
    pub internal_url: Option<String>,
}

impl ClusterSettings {
    pub(super) fn read(r: &Reader) -> Result<ClusterSettings, ConfigError> {
        let secret = r.get("CAPTURE_CLUSTER_SECRET");
        if secret.as_ref().is_some_and(|s| s.len() < 32) {
            return Err(err("CAPTURE_CLUSTER_SECRET", "must be at least 32 characters (openssl rand -hex 32)"));
        }
        let internal_url = match r.get("CAPTURE_INTERNAL_URL") {
            Some(u) => {
                let parsed = url::Url::parse(&u).map_err(|e| err("CAPTURE_INTERNAL_URL", e.to_string()))?;
                if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
                    return Err(err("CAPTURE_INTERNAL_URL", "must be an http(s) URL such as http://10.0.0.2:8080"));
                }
                Some(u.trim_end_matches('/').to_string())
            }
            None => None,
        };
        Ok(ClusterSettings { secret, internal_url })
    }
}
