//! Settings: `CAPTURE_*` environment variables, optionally over a TOML file with the same
//! keys. Every value is parsed at start-up; a bad one stops the process naming the variable.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use capture_core::PlanLimits;

pub use self::inbox::InboxSettings;
pub use self::parse::{ConfigError, parse_duration, parse_size};
use self::parse::{err, parse_bool};

mod inbox;
mod parse;
mod s3;

pub use s3::S3Settings;
use s3::{AWS_FALLBACK_KEYS, s3_settings};

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

/// Where finished files live (`CAPTURE_STORAGE_URL`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    /// Files in a local folder (`file:///path`, default `<data dir>/files`).
    Local(PathBuf),
    /// An S3 bucket (`s3://bucket/prefix`) with its connection settings.
    S3(S3Settings),
}

/// What `publicUrl`/`thumbnailUrl` point at (`CAPTURE_STORAGE_PUBLIC_URLS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublicUrls {
    /// `{base}/files/{name}`: the service streams the file from storage.
    Proxy,
    /// Presigned S3 GET URLs valid for `CAPTURE_STORAGE_PRESIGN_TTL`.
    Presigned,
}

/// How log lines are written to stderr (`CAPTURE_LOG_FORMAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Lines for people (coloured only on a terminal).
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// The longest lifetime an AWS SigV4 presigned URL may have.
pub const MAX_PRESIGN_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// Validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: String,
    pub base_url: Option<String>,
    pub data_dir: PathBuf,
    pub database_url: String,
    /// Connections this node keeps to the database at most (`CAPTURE_DATABASE_POOL`).
    pub database_pool: u32,
    /// How many of one account's creates run at once on PostgreSQL (`CAPTURE_CREATE_SLOTS`).
    pub create_slots: i64,
    pub storage: Storage,
    pub public_urls: PublicUrls,
    pub presign_ttl: Duration,
    pub chromium_path: PathBuf,
    /// Another axe-core `axe.min.js` for audits' accessibility checks (`CAPTURE_AXE_PATH`);
    /// None: the copy compiled into the binary (`capture_audit::axe`).
    pub axe_path: Option<PathBuf>,
    pub worker_concurrency: usize,
    pub browsers: usize,
    pub browser_recycle_after: u64,
    /// Restart a browser whose process tree uses more memory than this (bytes; None = off).
    pub browser_max_memory: Option<u64>,
    /// Non-public destinations captures, webhooks and fetches may reach
    /// (`CAPTURE_EGRESS_ALLOW`); the service's own listeners stay refused whatever it says.
    pub egress_allow: capture_core::egress::EgressAllow,
    pub webhook_allow_http: bool,
    pub admin_emails: Vec<String>,
    pub plan_limits: PlanLimits,
    pub webhook_retry_delays: Vec<Duration>,
    pub webhook_timeout: Duration,
    pub sse_heartbeat: Duration,
    pub sse_max_duration: Duration,
    pub master_key: Option<String>,
    /// The key nodes sign their internal calls with (`CAPTURE_CLUSTER_SECRET`; derived from
    /// the master key when unset).
    pub cluster_secret: Option<String>,
    /// Where the other nodes reach this one (`CAPTURE_INTERNAL_URL`; the bound address when
    /// it is a concrete one).
    pub internal_url: Option<String>,
    pub smtp_url: Option<String>,
    /// The From of the mail the service sends (`CAPTURE_MAIL_FROM`), e.g. e-mail verification.
    pub mail_from: String,
    /// Most accounts one client address may create on the website in an hour
    /// (`CAPTURE_SIGNUPS_PER_HOUR`; 0 = no limit).
    pub signups_per_hour: i64,
    /// The load balancers whose forwarding header gives the client's address
    /// (`CAPTURE_TRUSTED_PROXIES`, read from `CAPTURE_FORWARDED_HEADER`; none by default).
    pub trusted_proxies: capture_core::proxies::TrustedProxies,
    pub queue_lease: Duration,
    /// How often idle workers, webhook senders and event streams look at the database
    /// without a wake-up (on PostgreSQL, notifications from other nodes wake them sooner).
    pub queue_poll: Duration,
    /// How often a node that is not the scheduler leader tries to become it (PostgreSQL).
    pub leader_retry: Duration,
    /// Bounds on pending + processing screenshot jobs (None = unbounded).
    pub queue_max_pending: Option<i64>,
    pub queue_max_pending_per_account: Option<i64>,
    /// Capture tasks one account may have running at once, by plan (fair share).
    pub max_running_per_account: PlanLimits,
    pub shutdown_grace: Duration,
    pub max_upload_bytes: usize,
    /// Browser session runs one account may have pending or running at once (None = unbounded).
    pub runs_max_active_per_account: Option<i64>,
    /// How long a node's hold on a run lasts without a heartbeat; a run whose node died is
    /// failed this long after (plus the sweep's period).
    pub run_lease: Duration,
    /// How long a live session's connect token is good for.
    pub run_connect_ttl: Duration,
    pub roles: Roles,
    pub log_format: LogFormat,
    /// The saved test inbox and its inbound SMTP server.
    pub inbox: InboxSettings,
    /// MCP automation sessions one account may have open at once (None = unbounded; they
    /// are runs too, so `runs_max_active_per_account` also bounds them).
    pub automation_max_sessions: Option<i64>,
    /// An automation session no tool has used for this long is ended (and the longest idle
    /// timeout a session may ask for).
    pub automation_idle_timeout: Duration,
    /// Offset of the service's clock from the system clock, ms (`CAPTURE_CLOCK_OFFSET`; tests
    /// and demos only).
    pub clock_offset_ms: i64,
    /// Campaign mails per recipient domain per UTC day (`CAPTURE_CAMPAIGN_DOMAIN_DAILY_CAP`).
    pub campaign_domain_daily_cap: i64,
    /// Campaign sending loops per node with the scheduler or worker role
    /// (`CAPTURE_CAMPAIGN_SENDERS`; 0 = this node sends no campaign mail).
    pub campaign_senders: usize,
    /// How often the campaign loops look for due rows (`CAPTURE_CAMPAIGN_POLL`).
    pub campaign_poll: Duration,
    /// Copies to customers' buckets at once per node with the scheduler or worker role
    /// (`CAPTURE_STORAGE_COPY_WORKERS`): their own queue, never a capture slot.
    pub storage_copy_workers: usize,
    /// Memory this node lets video encodes (ffmpeg) hold at once, bytes
    /// (`CAPTURE_VIDEO_MEMORY`): an encode that would pass it waits its turn.
    pub video_memory: u64,
}

/// Every setting this version reads (for the defaults file, docs and unknown-key checks).
pub const KEYS: &[&str] = &[
    "CAPTURE_LISTEN",
    "CAPTURE_BASE_URL",
    "CAPTURE_DATA_DIR",
    "CAPTURE_DATABASE_URL",
    "CAPTURE_DATABASE_POOL",
    "CAPTURE_CREATE_SLOTS",
    "CAPTURE_STORAGE_URL",
    "CAPTURE_STORAGE_PUBLIC_URLS",
    "CAPTURE_STORAGE_PRESIGN_TTL",
    "CAPTURE_S3_ENDPOINT",
    "CAPTURE_S3_REGION",
    "CAPTURE_S3_ACCESS_KEY_ID",
    "CAPTURE_S3_SECRET_ACCESS_KEY",
    "CAPTURE_CHROMIUM_PATH",
    "CAPTURE_AXE_PATH",
    "CAPTURE_WORKER_CONCURRENCY",
    "CAPTURE_BROWSERS",
    "CAPTURE_BROWSER_RECYCLE_AFTER",
    "CAPTURE_BROWSER_MAX_MEMORY",
    "CAPTURE_EGRESS_ALLOW",
    "CAPTURE_WEBHOOK_ALLOW_HTTP",
    "CAPTURE_ADMIN_EMAILS",
    "CAPTURE_PLAN_LIMITS",
    "CAPTURE_WEBHOOK_RETRY_DELAYS",
    "CAPTURE_WEBHOOK_TIMEOUT",
    "CAPTURE_SSE_HEARTBEAT",
    "CAPTURE_SSE_MAX_DURATION",
    "CAPTURE_MASTER_KEY",
    "CAPTURE_SMTP_URL",
    "CAPTURE_MAIL_FROM",
    "CAPTURE_SIGNUPS_PER_HOUR",
    "CAPTURE_TRUSTED_PROXIES",
    "CAPTURE_CLUSTER_SECRET",
    "CAPTURE_INTERNAL_URL",
    "CAPTURE_FORWARDED_HEADER",
    "CAPTURE_QUEUE_LEASE",
    "CAPTURE_QUEUE_POLL",
    "CAPTURE_LEADER_RETRY",
    "CAPTURE_QUEUE_MAX_PENDING",
    "CAPTURE_QUEUE_MAX_PENDING_PER_ACCOUNT",
    "CAPTURE_MAX_RUNNING_PER_ACCOUNT",
    "CAPTURE_SHUTDOWN_GRACE",
    "CAPTURE_MAX_UPLOAD_BYTES",
    "CAPTURE_RUNS_MAX_ACTIVE_PER_ACCOUNT",
    "CAPTURE_RUN_LEASE",
    "CAPTURE_RUN_CONNECT_TTL",
    "CAPTURE_ROLES",
    "CAPTURE_LOG_FORMAT",
    "CAPTURE_INBOX_DOMAIN",
    "CAPTURE_INBOUND_LISTEN",
    "CAPTURE_INBOX_RETENTION",
    "CAPTURE_INBOX_MAX_MESSAGES",
    "CAPTURE_INBOUND_MAX_MESSAGE_BYTES",
    "CAPTURE_INBOUND_RATE",
    "CAPTURE_AUTOMATION_MAX_SESSIONS",
    "CAPTURE_AUTOMATION_IDLE_TIMEOUT",
    "CAPTURE_CLOCK_OFFSET",
    "CAPTURE_CAMPAIGN_DOMAIN_DAILY_CAP",
    "CAPTURE_CAMPAIGN_SENDERS",
    "CAPTURE_CAMPAIGN_POLL",
    "CAPTURE_STORAGE_COPY_WORKERS",
    "CAPTURE_VIDEO_MEMORY",
];

impl Config {
    /// Build from a map of settings (environment merged over the TOML file).
    pub fn from_map(m: &BTreeMap<String, String>) -> Result<Config, ConfigError> {
        let get = |k: &str| m.get(k).map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
        let dur = |k: &str, def: &str| -> Result<Duration, ConfigError> {
            parse_duration(&get(k).unwrap_or_else(|| def.to_string())).map_err(|e| err(k, e))
        };
        // A duration that must lie in `min..=max`; `rule` says so when it does not.
        let dur_in = |k: &str, def: &str, min: Duration, max: Duration, rule: &str| -> Result<Duration, ConfigError> {
            let d = dur(k, def)?;
            if d < min || d > max {
                return Err(err(k, rule));
            }
            Ok(d)
        };
        let num = |k: &str, def: u64, min: u64, max: u64| -> Result<u64, ConfigError> {
            match get(k) {
                None => Ok(def),
                Some(v) => {
                    let n: u64 = v.parse().map_err(|_| err(k, format!("'{v}' is not a whole number")))?;
                    if n < min || n > max {
                        return Err(err(k, format!("{n} is outside {min}..={max}")));
                    }
                    Ok(n)
                }
            }
        };

        let listen = get("CAPTURE_LISTEN").unwrap_or_else(|| "127.0.0.1:8080".into());
        listen
            .parse::<SocketAddr>()
            .map_err(|_| err("CAPTURE_LISTEN", format!("'{listen}' is not host:port (e.g. 127.0.0.1:8080)")))?;
        let base_url = match get("CAPTURE_BASE_URL") {
            None => None,
            Some(u) => {
                let parsed = url::Url::parse(&u).map_err(|e| err("CAPTURE_BASE_URL", format!("'{u}': {e}")))?;
                if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
                    return Err(err("CAPTURE_BASE_URL", "must be an http(s) URL like https://capture.example.com"));
                }
                Some(u.trim_end_matches('/').to_string())
            }
        };
        let data_dir = PathBuf::from(get("CAPTURE_DATA_DIR").unwrap_or_else(|| "./data".into()));
        let database_url = match get("CAPTURE_DATABASE_URL") {
            Some(u) if u.starts_with("sqlite:") || u.starts_with("postgres://") || u.starts_with("postgresql://") => u,
            Some(u) => {
                return Err(err(
                    "CAPTURE_DATABASE_URL",
                    format!("'{}' is not sqlite://… or postgres://…", capture_store::redact_url(&u)),
                ));
            }
            None => format!("sqlite://{}", data_dir.join("capture.db").display()),
        };
        let storage = match get("CAPTURE_STORAGE_URL") {
            None => Storage::Local(data_dir.join("files")),
            Some(u) if u.starts_with("file://") => {
                let path = u.trim_start_matches("file://");
                if path.is_empty() {
                    return Err(err(
                        "CAPTURE_STORAGE_URL",
                        "file:// needs a folder, like file:///var/lib/capture/files",
                    ));
                }
                Storage::Local(PathBuf::from(path))
            }
            Some(u) if u.starts_with("s3://") => Storage::S3(s3_settings(&u, &get)?),
            Some(u) => return Err(err("CAPTURE_STORAGE_URL", format!("'{u}' is not file://… or s3://bucket/prefix"))),
        };
        let public_urls = match get("CAPTURE_STORAGE_PUBLIC_URLS").as_deref() {
            None | Some("proxy") => PublicUrls::Proxy,
            Some("presigned") if matches!(storage, Storage::S3(_)) => PublicUrls::Presigned,
            Some("presigned") => {
                return Err(err(
                    "CAPTURE_STORAGE_PUBLIC_URLS",
                    "presigned URLs need s3:// storage (CAPTURE_STORAGE_URL)",
                ));
            }
            Some(v) => return Err(err("CAPTURE_STORAGE_PUBLIC_URLS", format!("'{v}' is not proxy or presigned"))),
        };
        let presign_ttl = dur_in(
            "CAPTURE_STORAGE_PRESIGN_TTL",
            "1h",
            Duration::from_secs(1),
            MAX_PRESIGN_TTL,
            "must be between 1s and 7d (the S3 limit)",
        )?;
        let chromium_path =
            get("CAPTURE_CHROMIUM_PATH").map_or_else(capture_browser::default_chromium_path, PathBuf::from);
        // Unset: the copy compiled into the binary. No node_modules folder is looked for, so
        // what runs never depends on the directory the service was started in.
        let axe_path = match get("CAPTURE_AXE_PATH").map(PathBuf::from) {
            Some(p) if !p.is_file() => {
                return Err(err("CAPTURE_AXE_PATH", format!("{} is not a file (axe-core's axe.min.js)", p.display())));
            }
            p => p,
        };
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
        let worker_concurrency = num("CAPTURE_WORKER_CONCURRENCY", cores * 2, 1, 256)? as usize;
        let browsers = num("CAPTURE_BROWSERS", cores.min(worker_concurrency as u64), 1, 64)? as usize;
        // Every capture slot may hold a connection while it records its result, and the API
        // needs its own: the slots plus 16, unless set.
        let database_pool = num("CAPTURE_DATABASE_POOL", worker_concurrency as u64 + 16, 2, 1000)? as u32;
        let create_slots = num("CAPTURE_CREATE_SLOTS", 16, 1, capture_store::MAX_GATE_SLOTS as u64)? as i64;
        let browser_recycle_after = num("CAPTURE_BROWSER_RECYCLE_AFTER", 500, 1, 1_000_000)?;
        let browser_max_memory = {
            const VAR: &str = "CAPTURE_BROWSER_MAX_MEMORY";
            let v = get(VAR).unwrap_or_else(|| "2GB".into());
            let size = parse_size(&v).map_err(|e| err(VAR, e))?;
            // Far below what an idle browser uses: most likely a unit left out ("2048").
            if size.is_some_and(|b| b < 16 << 20) {
                return Err(err(VAR, format!("'{v}' is below 16MB (write a unit: 2GB, 512MB; or off)")));
            }
            size
        };
        if get("CAPTURE_ALLOW_PRIVATE_NETWORKS").is_some() {
            return Err(err(
                "CAPTURE_ALLOW_PRIVATE_NETWORKS",
                "was replaced by CAPTURE_EGRESS_ALLOW, an allowlist of hosts, CIDRs and host:port \
                 (e.g. CAPTURE_EGRESS_ALLOW=127.0.0.1,10.0.0.0/8,intranet.example:8443)",
            ));
        }
        let egress_allow = match get("CAPTURE_EGRESS_ALLOW") {
            None => capture_core::egress::EgressAllow::none(),
            Some(v) => v
                .parse()
                .map_err(|e: capture_core::egress::EgressAllowError| err("CAPTURE_EGRESS_ALLOW", e.to_string()))?,
        };
        let webhook_allow_http =
            parse_bool("CAPTURE_WEBHOOK_ALLOW_HTTP", &get("CAPTURE_WEBHOOK_ALLOW_HTTP").unwrap_or_default())?;
        let admin_emails = get("CAPTURE_ADMIN_EMAILS")
            .unwrap_or_default()
            .split(',')
            .map(|e| e.trim().to_lowercase())
            .filter(|e| !e.is_empty())
            .collect::<Vec<_>>();
        if let Some(bad) = admin_emails.iter().find(|e| !e.contains('@')) {
            return Err(err("CAPTURE_ADMIN_EMAILS", format!("'{bad}' is not an e-mail address")));
        }
        let plan_limits = match get("CAPTURE_PLAN_LIMITS") {
            None => PlanLimits::default(),
            Some(v) => PlanLimits::parse(&v).map_err(|e| err("CAPTURE_PLAN_LIMITS", e))?,
        };
        let webhook_retry_delays = get("CAPTURE_WEBHOOK_RETRY_DELAYS")
            .unwrap_or_else(|| "1m,5m,30m,2h,12h".into())
            .split(',')
            .map(|d| parse_duration(d).map_err(|e| err("CAPTURE_WEBHOOK_RETRY_DELAYS", e)))
            .collect::<Result<Vec<_>, _>>()?;
        if webhook_retry_delays.len() != 5 {
            return Err(err("CAPTURE_WEBHOOK_RETRY_DELAYS", "needs exactly 5 waits (6 attempts)"));
        }
        let webhook_timeout = dur("CAPTURE_WEBHOOK_TIMEOUT", "15s")?;
        let sse_heartbeat = dur("CAPTURE_SSE_HEARTBEAT", "15s")?;
        let sse_max_duration = dur("CAPTURE_SSE_MAX_DURATION", "5m")?;
        if sse_heartbeat.is_zero() {
            return Err(err("CAPTURE_SSE_HEARTBEAT", "must be positive"));
        }
        let master_key = get("CAPTURE_MASTER_KEY");
        if let Some(k) = &master_key {
            crate::crypto::MasterKey::parse(k).map_err(|e| err("CAPTURE_MASTER_KEY", e))?;
        }
        let cluster_secret = get("CAPTURE_CLUSTER_SECRET");
        if cluster_secret.as_ref().is_some_and(|s| s.len() < 32) {
            return Err(err("CAPTURE_CLUSTER_SECRET", "must be at least 32 characters (openssl rand -hex 32)"));
        }
        let internal_url = match get("CAPTURE_INTERNAL_URL") {
            Some(u) => {
                let parsed = url::Url::parse(&u).map_err(|e| err("CAPTURE_INTERNAL_URL", e.to_string()))?;
                if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
                    return Err(err("CAPTURE_INTERNAL_URL", "must be an http(s) URL such as http://10.0.0.2:8080"));
                }
                Some(u.trim_end_matches('/').to_string())
            }
            None => None,
        };
        let smtp_url = get("CAPTURE_SMTP_URL");
        if let Some(u) = &smtp_url
            && !(u.starts_with("smtp://") || u.starts_with("smtps://"))
        {
            return Err(err("CAPTURE_SMTP_URL", "must be smtp://… or smtps://…"));
        }
        let mail_from = get("CAPTURE_MAIL_FROM").unwrap_or_else(|| "Capture <no-reply@capture.localhost>".into());
        if let Err(e) = capture_mail::outbound::Sender::parse(&mail_from) {
            return Err(err("CAPTURE_MAIL_FROM", format!("'{mail_from}': {e}")));
        }
        let signups_per_hour = num("CAPTURE_SIGNUPS_PER_HOUR", 5, 0, 1_000_000)? as i64;
        let forwarded_header = match get("CAPTURE_FORWARDED_HEADER") {
            None => capture_core::proxies::ForwardedHeader::default(),
            Some(h) => capture_core::proxies::ForwardedHeader::parse(&h)
                .ok_or_else(|| err("CAPTURE_FORWARDED_HEADER", format!("'{h}' is not x-forwarded-for or forwarded")))?,
        };
        let trusted_proxies = capture_core::proxies::TrustedProxies::parse(
            &get("CAPTURE_TRUSTED_PROXIES").unwrap_or_default(),
            forwarded_header,
        )
        .map_err(|e| err("CAPTURE_TRUSTED_PROXIES", e.to_string()))?;
        let queue_lease = dur("CAPTURE_QUEUE_LEASE", "60s")?;
        if queue_lease < Duration::from_secs(1) {
            return Err(err("CAPTURE_QUEUE_LEASE", "must be at least 1s"));
        }
        let hour = Duration::from_secs(3600);
        let queue_poll =
            dur_in("CAPTURE_QUEUE_POLL", "1s", Duration::from_millis(10), hour, "must be between 10ms and 1h")?;
        let leader_retry =
            dur_in("CAPTURE_LEADER_RETRY", "5s", Duration::from_millis(100), hour, "must be between 100ms and 1h")?;
        // 0 or off: unbounded.
        let bound = |k: &str, def: u64| -> Result<Option<i64>, ConfigError> {
            let n = match get(k) {
                Some(v) if v.eq_ignore_ascii_case("off") => 0,
                _ => num(k, def, 0, 100_000_000)?,
            };
            Ok((n > 0).then_some(n as i64))
        };
        let queue_max_pending = bound("CAPTURE_QUEUE_MAX_PENDING", 10_000)?;
        let queue_max_pending_per_account = bound("CAPTURE_QUEUE_MAX_PENDING_PER_ACCOUNT", 500)?;
        let max_running_per_account = {
            const VAR: &str = "CAPTURE_MAX_RUNNING_PER_ACCOUNT";
            let l = match get(VAR) {
                None => PlanLimits::RUNNING_DEFAULT,
                Some(v) => PlanLimits::parse_over(&v, PlanLimits::RUNNING_DEFAULT).map_err(|e| err(VAR, e))?,
            };
            if l.free < 1 || l.starter < 1 || l.pro < 1 {
                return Err(err(VAR, "every plan needs at least 1 running task"));
            }
            l
        };
        let shutdown_grace = dur("CAPTURE_SHUTDOWN_GRACE", "25s")?;
        let max_upload_bytes = num("CAPTURE_MAX_UPLOAD_BYTES", 20 * 1024 * 1024, 1024, 1 << 30)? as usize;
        let runs_max_active_per_account = bound("CAPTURE_RUNS_MAX_ACTIVE_PER_ACCOUNT", 3)?;
        let run_lease = dur_in("CAPTURE_RUN_LEASE", "15s", Duration::from_secs(2), hour, "must be between 2s and 1h")?;
        let run_connect_ttl =
            dur_in("CAPTURE_RUN_CONNECT_TTL", "60s", Duration::from_secs(1), hour, "must be between 1s and 1h")?;
        let automation_max_sessions = bound("CAPTURE_AUTOMATION_MAX_SESSIONS", 2)?;
        let automation_idle_timeout = dur_in(
            "CAPTURE_AUTOMATION_IDLE_TIMEOUT",
            "120s",
            Duration::from_secs(1),
            hour,
            "must be between 1s and 1h",
        )?;
        let roles = match get("CAPTURE_ROLES") {
            None => Roles::all(),
            Some(r) => Roles::parse(&r).map_err(|e| err("CAPTURE_ROLES", e))?,
        };
        let log_format = match get("CAPTURE_LOG_FORMAT").map(|v| v.to_ascii_lowercase()).as_deref() {
            None | Some("text") => LogFormat::Text,
            Some("json") => LogFormat::Json,
            Some(v) => return Err(err("CAPTURE_LOG_FORMAT", format!("'{v}' is not text or json"))),
        };
        let inbox = InboxSettings::from_get(&get)?;
        let clock_offset_ms = match get("CAPTURE_CLOCK_OFFSET") {
            None => 0,
            Some(v) => capture_core::clock::parse_offset(&v).map_err(|e| err("CAPTURE_CLOCK_OFFSET", e))?,
        };
        let campaign_domain_daily_cap = num("CAPTURE_CAMPAIGN_DOMAIN_DAILY_CAP", 50, 1, 1_000_000)? as i64;
        let campaign_senders = num("CAPTURE_CAMPAIGN_SENDERS", 2, 0, 64)? as usize;
        let campaign_poll = dur_in(
            "CAPTURE_CAMPAIGN_POLL",
            "1s",
            Duration::from_millis(50),
            Duration::from_secs(600),
            "must be between 50ms and 10m",
        )?;
        let storage_copy_workers = num("CAPTURE_STORAGE_COPY_WORKERS", 2, 1, 64)? as usize;
        let video_memory = {
            const VAR: &str = "CAPTURE_VIDEO_MEMORY";
            let v = get(VAR).unwrap_or_else(|| "1GB".into());
            match parse_size(&v).map_err(|e| err(VAR, e))? {
                Some(b) if b >= 256 << 20 => b,
                _ => {
                    return Err(err(VAR, format!("'{v}' is below 256MB, what one video encode may take (2GB, 768MB)")));
                }
            }
        };
        Ok(Config {
            listen,
            base_url,
            data_dir,
            database_url,
            storage,
            public_urls,
            presign_ttl,
            chromium_path,
            axe_path,
            worker_concurrency,
            database_pool,
            create_slots,
            browsers,
            browser_recycle_after,
            browser_max_memory,
            egress_allow,
            webhook_allow_http,
            admin_emails,
            plan_limits,
            webhook_retry_delays,
            webhook_timeout,
            sse_heartbeat,
            sse_max_duration,
            master_key,
            cluster_secret,
            internal_url,
            smtp_url,
            mail_from,
            signups_per_hour,
            trusted_proxies,
            queue_lease,
            queue_poll,
            leader_retry,
            queue_max_pending,
            queue_max_pending_per_account,
            max_running_per_account,
            shutdown_grace,
            max_upload_bytes,
            runs_max_active_per_account,
            run_lease,
            run_connect_ttl,
            roles,
            log_format,
            inbox,
            automation_max_sessions,
            automation_idle_timeout,
            clock_offset_ms,
            campaign_domain_daily_cap,
            campaign_senders,
            campaign_poll,
            storage_copy_workers,
            video_memory,
        })
    }

    /// Environment over an optional TOML file (`KEY = "value"` lines, same names).
    pub fn load(toml_path: Option<&std::path::Path>) -> Result<Config, ConfigError> {
        let mut m = BTreeMap::new();
        if let Some(p) = toml_path {
            let text = std::fs::read_to_string(p).map_err(|e| err("--config", format!("{}: {e}", p.display())))?;
            let table: toml::Table = text.parse().map_err(|e| err("--config", format!("{}: {e}", p.display())))?;
            for (k, v) in table {
                let key = k.to_uppercase();
                if !KEYS.contains(&key.as_str()) {
                    return Err(err(&key, format!("unknown setting in {}", p.display())));
                }
                let s = match v {
                    toml::Value::String(s) => s,
                    toml::Value::Array(a) => a
                        .iter()
                        .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
                        .collect::<Vec<_>>()
                        .join(","),
                    other => other.to_string(),
                };
                m.insert(key, s);
            }
        }
        for (k, v) in std::env::vars() {
            if k.starts_with("CAPTURE_") || AWS_FALLBACK_KEYS.contains(&k.as_str()) {
                m.insert(k, v);
            }
        }
        Config::from_map(&m)
    }

    /// The queue bounds as the store checks them.
    pub fn queue_limits(&self) -> capture_store::QueueLimits {
        capture_store::QueueLimits { per_account: self.queue_max_pending_per_account, global: self.queue_max_pending }
    }

    /// The fair share of browser work: running tasks per account by plan.
    pub fn fair_share(&self) -> capture_store::FairShare {
        let l = self.max_running_per_account;
        capture_store::FairShare {
            per_plan: vec![("free".into(), l.free), ("starter".into(), l.starter), ("pro".into(), l.pro)],
            default: Some(l.free),
        }
    }

    /// Is this e-mail an administrator (unlimited)?
    pub fn is_admin(&self, email: &str) -> bool {
        self.admin_emails.iter().any(|a| a.eq_ignore_ascii_case(email))
    }
}

#[cfg(test)]
mod tests;
