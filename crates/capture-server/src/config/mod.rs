//! Settings: `CAPTURE_*` environment variables, optionally over a TOML file with the same
//! keys. Every value is parsed at start-up; a bad one stops the process naming the variable.
//!
//! The settings come in groups, each a type in its own file that reads and documents its
//! variables: [`HttpSettings`], [`DatabaseSettings`], [`StorageSettings`], [`BrowserSettings`],
//! [`QueueSettings`], [`RunSettings`], [`WebhookSettings`], [`MailSettings`],
//! [`ClusterSettings`], [`AccountSettings`], [`InboxSettings`] and [`TraceSettings`] (the
//! standard `OTEL_*` variables, from the environment only); what the whole process shares
//! (its data folder, roles, log format, master key, egress allowlist and clock) is here.
//! `KEYS`, `config.default.toml` and the README's table are held to the parsers by a test.

use std::collections::BTreeMap;
use std::path::PathBuf;

mod accounts;
mod browser;
mod cluster;
mod database;
mod http;
mod inbox;
mod llm;
mod mail;
mod parse;
mod queue;
mod runs;
mod s3;
mod storage;
mod traces;
mod webhooks;

pub use accounts::AccountSettings;
pub use browser::BrowserSettings;
pub use cluster::{ClusterSettings, Roles};
pub use database::DatabaseSettings;
pub use http::HttpSettings;
pub use inbox::InboxSettings;
pub use llm::LlmSettings;
pub use mail::MailSettings;
pub use parse::{ConfigError, parse_duration, parse_size};
pub use queue::QueueSettings;
pub use runs::RunSettings;
pub use s3::S3Settings;
pub use storage::{MAX_PRESIGN_TTL, PublicUrls, Storage, StorageSettings};
pub use traces::{OtlpProtocol, OtlpSettings, TraceSettings};
pub use webhooks::WebhookSettings;

use parse::{Reader, err};
use s3::AWS_FALLBACK_KEYS;

/// How log lines are written to stderr (`CAPTURE_LOG_FORMAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Lines for people (coloured only on a terminal).
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// `CAPTURE_DATA_DIR`: the embedded database and files live under it by default.
    pub data_dir: PathBuf,
    /// `CAPTURE_ROLES`: what this process does.
    pub roles: Roles,
    pub log_format: LogFormat,
    /// `CAPTURE_MASTER_KEY`: seals credentials and signs links (generated under the data
    /// folder when unset).
    pub master_key: Option<String>,
    /// Non-public destinations captures, webhooks and fetches may reach
    /// (`CAPTURE_EGRESS_ALLOW`); the service's own listeners stay refused whatever it says.
    pub egress_allow: capture_core::egress::EgressAllow,
    /// Trust anchors (DER) for `https://` customer proxies beside the system's roots
    /// (`CAPTURE_PROXY_CA_FILE`, a PEM bundle: a proxy behind a private CA).
    pub proxy_roots: Vec<Vec<u8>>,
    /// Offset of the service's clock from the system clock, ms (`CAPTURE_CLOCK_OFFSET`; tests
    /// and demos only).
    pub clock_offset_ms: i64,
    pub http: HttpSettings,
    pub database: DatabaseSettings,
    pub storage: StorageSettings,
    pub browser: BrowserSettings,
    pub queue: QueueSettings,
    pub runs: RunSettings,
    pub webhooks: WebhookSettings,
    pub mail: MailSettings,
    /// The language model of `extract: {prompt}` (none by default).
    pub llm: LlmSettings,
    pub cluster: ClusterSettings,
    pub accounts: AccountSettings,
    /// The saved test inbox and its inbound SMTP server.
    pub inbox: InboxSettings,
    /// Where traces go (`OTEL_*`; off without an endpoint).
    pub traces: TraceSettings,
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
    "CAPTURE_PROXY_TEST_URL",
    "CAPTURE_EGRESS_ALLOW",
    "CAPTURE_PROXY_CA_FILE",
    "CAPTURE_WEBHOOK_ALLOW_HTTP",
    "CAPTURE_ADMIN_EMAILS",
    "CAPTURE_PLAN_LIMITS",
    "CAPTURE_PLAN_MONITORS",
    "CAPTURE_MONITOR_MIN_INTERVAL",
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
    "CAPTURE_LLM_URL",
    "CAPTURE_LLM_MODEL",
    "CAPTURE_LLM_API_KEY",
    "CAPTURE_LLM_MAX_CHARS",
    "CAPTURE_LLM_TIMEOUT",
];

impl Config {
    /// Build from a map of settings (environment merged over the TOML file).
    pub fn from_map(m: &BTreeMap<String, String>) -> Result<Config, ConfigError> {
        let r = Reader(m);
        let http = HttpSettings::read(&r)?;
        let data_dir = PathBuf::from(r.get("CAPTURE_DATA_DIR").unwrap_or_else(|| "./data".into()));
        let storage = StorageSettings::read(&r, &data_dir)?;
        let browser = BrowserSettings::read(&r)?;
        let database = DatabaseSettings::read(&r, &data_dir, browser.worker_concurrency)?;
        if r.get("CAPTURE_ALLOW_PRIVATE_NETWORKS").is_some() {
            return Err(err(
                "CAPTURE_ALLOW_PRIVATE_NETWORKS",
                "was replaced by CAPTURE_EGRESS_ALLOW, an allowlist of hosts, CIDRs and host:port \
                 (e.g. CAPTURE_EGRESS_ALLOW=127.0.0.1,10.0.0.0/8,intranet.example:8443)",
            ));
        }
        let egress_allow = match r.get("CAPTURE_EGRESS_ALLOW") {
            None => capture_core::egress::EgressAllow::none(),
            Some(v) => v
                .parse()
                .map_err(|e: capture_core::egress::EgressAllowError| err("CAPTURE_EGRESS_ALLOW", e.to_string()))?,
        };
        let proxy_roots = match r.get("CAPTURE_PROXY_CA_FILE") {
            None => Vec::new(),
            Some(path) => {
                let pem = std::fs::read(&path).map_err(|e| err("CAPTURE_PROXY_CA_FILE", format!("{path}: {e}")))?;
                capture_browser::egress::parse_pem_roots(&pem)
                    .map_err(|e| err("CAPTURE_PROXY_CA_FILE", format!("{path}: {e}")))?
            }
        };
        let accounts = AccountSettings::read(&r)?;
        let webhooks = WebhookSettings::read(&r)?;
        let master_key = r.get("CAPTURE_MASTER_KEY");
        if let Some(k) = &master_key {
            crate::crypto::MasterKey::parse(k).map_err(|e| err("CAPTURE_MASTER_KEY", e))?;
        }
        let cluster = ClusterSettings::read(&r)?;
        let mail = MailSettings::read(&r)?;
        let llm = LlmSettings::read(&r)?;
        let queue = QueueSettings::read(&r)?;
        let runs = RunSettings::read(&r)?;
        let roles = match r.get("CAPTURE_ROLES") {
            None => Roles::all(),
            Some(v) => Roles::parse(&v).map_err(|e| err("CAPTURE_ROLES", e))?,
        };
        let log_format = match r.get("CAPTURE_LOG_FORMAT").map(|v| v.to_ascii_lowercase()).as_deref() {
            None | Some("text") => LogFormat::Text,
            Some("json") => LogFormat::Json,
            Some(v) => return Err(err("CAPTURE_LOG_FORMAT", format!("'{v}' is not text or json"))),
        };
        let inbox = InboxSettings::from_get(&|k| r.get(k))?;
        let traces = TraceSettings::read(&r)?;
        let clock_offset_ms = match r.get("CAPTURE_CLOCK_OFFSET") {
            None => 0,
            Some(v) => capture_core::clock::parse_offset(&v).map_err(|e| err("CAPTURE_CLOCK_OFFSET", e))?,
        };
        Ok(Config {
            data_dir,
            roles,
            log_format,
            master_key,
            egress_allow,
            proxy_roots,
            clock_offset_ms,
            http,
            database,
            storage,
            browser,
            queue,
            runs,
            webhooks,
            mail,
            llm,
            cluster,
            accounts,
            inbox,
            traces,
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
            // The OpenTelemetry variables are the standard ones, read from the environment only.
            if k.starts_with("CAPTURE_") || k.starts_with("OTEL_") || AWS_FALLBACK_KEYS.contains(&k.as_str()) {
                m.insert(k, v);
            }
        }
        Config::from_map(&m)
    }
}

#[cfg(test)]
mod tests;
