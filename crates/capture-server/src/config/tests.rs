//! The settings read from the environment and the TOML file: defaults, errors that name
//! the variable, storage, back-pressure, sizes and durations.

use std::time::Duration;

use capture_core::PlanLimits;

use super::*;

fn cfg(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
    Config::from_map(&pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

#[test]
fn defaults_are_the_embedded_setup() {
    let c = cfg(&[]).unwrap();
    assert_eq!(c.http.listen, "127.0.0.1:8080");
    assert!(c.database.url.starts_with("sqlite://./data"));
    assert_eq!(c.accounts.plan_limits, PlanLimits::default());
    assert_eq!(c.http.sse_heartbeat, Duration::from_secs(15));
    assert_eq!(c.http.sse_max_duration, Duration::from_secs(300));
    assert_eq!(c.webhooks.retry_delays[4], Duration::from_secs(12 * 3600));
    assert!(c.egress_allow.is_empty());
    assert!(c.http.trusted_proxies.is_empty(), "no forwarding header is believed by default");
    assert_eq!(c.queue.poll, Duration::from_secs(1));
    assert_eq!(c.queue.leader_retry, Duration::from_secs(5));
}

#[test]
fn bad_values_name_the_variable() {
    for (k, v) in [
        ("CAPTURE_LISTEN", "nope"),
        ("CAPTURE_SSE_HEARTBEAT", "10 parsecs"),
        ("CAPTURE_PLAN_LIMITS", "free=lots"),
        ("CAPTURE_EGRESS_ALLOW", "10.0.0.0/33"),
        ("CAPTURE_ALLOW_PRIVATE_NETWORKS", "true"),
        ("CAPTURE_DATABASE_URL", "mysql://x"),
        ("CAPTURE_WORKER_CONCURRENCY", "0"),
        ("CAPTURE_BASE_URL", "ftp://x"),
        ("CAPTURE_MASTER_KEY", "short"),
        ("CAPTURE_ADMIN_EMAILS", "root"),
        ("CAPTURE_WEBHOOK_RETRY_DELAYS", "1m,5m"),
        ("CAPTURE_STORAGE_URL", "gs://bucket"),
        ("CAPTURE_STORAGE_URL", "s3://"),
        ("CAPTURE_STORAGE_URL", "s3://Bad_Bucket/x"),
        ("CAPTURE_STORAGE_URL", "s3://bucket/a/../b"),
        ("CAPTURE_STORAGE_PUBLIC_URLS", "cdn"),
        ("CAPTURE_STORAGE_PUBLIC_URLS", "presigned"),
        ("CAPTURE_STORAGE_PRESIGN_TTL", "8d"),
        ("CAPTURE_STORAGE_PRESIGN_TTL", "soon"),
        ("CAPTURE_QUEUE_POLL", "0s"),
        ("CAPTURE_QUEUE_POLL", "often"),
        ("CAPTURE_LEADER_RETRY", "10ms"),
        ("CAPTURE_BROWSER_MAX_MEMORY", "lots"),
        ("CAPTURE_BROWSER_MAX_MEMORY", "2048"),
        ("CAPTURE_BROWSER_MAX_MEMORY", "2PB"),
        ("CAPTURE_QUEUE_MAX_PENDING", "-1"),
        ("CAPTURE_QUEUE_MAX_PENDING_PER_ACCOUNT", "many"),
        ("CAPTURE_LOG_FORMAT", "xml"),
        ("CAPTURE_TRUSTED_PROXIES", "10.0.0.0/33"),
        ("CAPTURE_TRUSTED_PROXIES", "lb.internal"),
        ("CAPTURE_TRUSTED_PROXIES", "10.0.0.1,nope/8"),
        ("CAPTURE_FORWARDED_HEADER", "x-real-ip"),
        ("CAPTURE_PROXY_CA_FILE", "/nonexistent/ca.pem"),
        ("CAPTURE_PROXY_CA_FILE", concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")),
    ] {
        let e = cfg(&[(k, v)]).unwrap_err();
        assert_eq!(e.var, k, "{v}");
        assert!(e.to_string().contains(k));
    }
}

#[test]
fn the_commented_defaults_file_is_valid_and_complete() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../config.default.toml");
    let text = std::fs::read_to_string(path).unwrap();
    for k in KEYS {
        assert!(text.contains(k), "{k} is not documented in config.default.toml");
    }
    let c = Config::load(Some(std::path::Path::new(path))).unwrap();
    assert_eq!(c.http.listen, "127.0.0.1:8080");
    assert_eq!(c.browser.recycle_after, 500);
}

#[test]
fn s3_storage_settings() {
    let c = cfg(&[]).unwrap();
    assert_eq!(c.storage.location, Storage::Local(PathBuf::from("./data/files")));
    assert_eq!(c.storage.public_urls, PublicUrls::Proxy);
    assert_eq!(c.storage.presign_ttl, Duration::from_secs(3600));

    let c = cfg(&[
        ("CAPTURE_STORAGE_URL", "s3://my-bucket/captures/prod/"),
        ("CAPTURE_S3_ENDPOINT", "http://127.0.0.1:5000/"),
        ("CAPTURE_S3_ACCESS_KEY_ID", "AKID"),
        ("CAPTURE_S3_SECRET_ACCESS_KEY", "wJalrXUtnFEMI"),
        ("AWS_SESSION_TOKEN", "not-for-our-keys"),
        ("CAPTURE_STORAGE_PUBLIC_URLS", "presigned"),
        ("CAPTURE_STORAGE_PRESIGN_TTL", "15m"),
    ])
    .unwrap();
    let Storage::S3(s3) = &c.storage.location else { panic!("{:?}", c.storage.location) };
    assert_eq!((s3.bucket.as_str(), s3.prefix.as_str()), ("my-bucket", "captures/prod"));
    assert_eq!(s3.endpoint.as_deref(), Some("http://127.0.0.1:5000"));
    assert_eq!(s3.region, "us-east-1");
    assert_eq!(s3.access_key_id.as_deref(), Some("AKID"));
    assert_eq!(s3.session_token, None);
    assert!(!format!("{c:?}").contains("wJalrXUtnFEMI"), "the secret key is never printed");
    assert_eq!(c.storage.public_urls, PublicUrls::Presigned);
    assert_eq!(c.storage.presign_ttl, Duration::from_secs(900));

    // The standard AWS variables are the fallback.
    let c = cfg(&[
        ("CAPTURE_STORAGE_URL", "s3://bucket"),
        ("AWS_ACCESS_KEY_ID", "A"),
        ("AWS_SECRET_ACCESS_KEY", "B"),
        ("AWS_SESSION_TOKEN", "T"),
        ("AWS_REGION", "eu-west-3"),
    ])
    .unwrap();
    let Storage::S3(s3) = &c.storage.location else { panic!() };
    assert_eq!(s3.prefix, "");
    assert_eq!(s3.region, "eu-west-3");
    assert_eq!((s3.access_key_id.as_deref(), s3.session_token.as_deref()), (Some("A"), Some("T")));

    for (pairs, var) in [
        (&[("CAPTURE_S3_ENDPOINT", "ftp://x")][..], "CAPTURE_S3_ENDPOINT"),
        (&[("CAPTURE_S3_REGION", "us east")][..], "CAPTURE_S3_REGION"),
        (&[("CAPTURE_S3_ACCESS_KEY_ID", "A")][..], "CAPTURE_S3_SECRET_ACCESS_KEY"),
        (&[("CAPTURE_S3_SECRET_ACCESS_KEY", "B")][..], "CAPTURE_S3_ACCESS_KEY_ID"),
    ] {
        let mut all = vec![("CAPTURE_STORAGE_URL", "s3://bucket/p")];
        all.extend_from_slice(pairs);
        assert_eq!(cfg(&all).unwrap_err().var, var, "{pairs:?}");
    }
}

#[test]
fn back_pressure_settings() {
    let c = cfg(&[]).unwrap();
    assert_eq!(c.queue.max_pending, Some(10_000));
    assert_eq!(c.queue.max_pending_per_account, Some(500));
    assert_eq!(c.browser.max_memory, Some(2 << 30));
    let c = cfg(&[
        ("CAPTURE_QUEUE_MAX_PENDING", "0"),
        ("CAPTURE_QUEUE_MAX_PENDING_PER_ACCOUNT", "25"),
        ("CAPTURE_BROWSER_MAX_MEMORY", "off"),
    ])
    .unwrap();
    assert_eq!((c.queue.max_pending, c.queue.max_pending_per_account), (None, Some(25)));
    assert_eq!(c.browser.max_memory, None);
    let c = cfg(&[("CAPTURE_QUEUE_MAX_PENDING_PER_ACCOUNT", "off"), ("CAPTURE_BROWSER_MAX_MEMORY", "0")]).unwrap();
    assert_eq!((c.queue.max_pending_per_account, c.browser.max_memory), (None, None));
}

#[test]
fn sizes() {
    assert_eq!(parse_size("2GB").unwrap(), Some(2 << 30));
    assert_eq!(parse_size("512MB").unwrap(), Some(512 << 20));
    assert_eq!(parse_size("512 mib").unwrap(), Some(512 << 20));
    assert_eq!(parse_size("1.5G").unwrap(), Some(3 << 29));
    assert_eq!(parse_size("4096").unwrap(), Some(4096));
    assert_eq!(parse_size("0").unwrap(), None);
    assert_eq!(parse_size("OFF").unwrap(), None);
    assert!(parse_size("2 parsecs").is_err());
    assert!(parse_size("MB").is_err());
}

#[test]
fn durations() {
    assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
    assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
    assert_eq!(parse_duration("7").unwrap(), Duration::from_secs(7));
    assert!(parse_duration("x").is_err());
    assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
    assert_eq!(parse_duration("1d").unwrap(), Duration::from_secs(86400));
    assert!(parse_duration("5 parsecs").is_err());
    assert!(parse_duration("-5s").is_err());
}

#[test]
fn automation_session_settings() {
    let c = cfg(&[]).unwrap();
    assert_eq!((c.runs.automation_max_sessions, c.runs.automation_idle_timeout), (Some(2), Duration::from_secs(120)));
    let c = cfg(&[("CAPTURE_AUTOMATION_MAX_SESSIONS", "off"), ("CAPTURE_AUTOMATION_IDLE_TIMEOUT", "5s")]).unwrap();
    assert_eq!((c.runs.automation_max_sessions, c.runs.automation_idle_timeout), (None, Duration::from_secs(5)));
    for (k, v) in [("CAPTURE_AUTOMATION_IDLE_TIMEOUT", "2h"), ("CAPTURE_AUTOMATION_MAX_SESSIONS", "lots")] {
        assert_eq!(cfg(&[(k, v)]).unwrap_err().var, k);
    }
}

/// Settings the parser refuses, naming what replaced them.
const RETIRED: &[&str] = &["CAPTURE_ALLOW_PRIVATE_NETWORKS"];

/// Every `CAPTURE_*` name in `text` (a string literal or a table cell).
fn setting_names(text: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("CAPTURE_") {
        let name: String =
            rest[i..].chars().take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_').collect();
        rest = &rest[i + name.len()..];
        // `CAPTURE_INBOX_*` and the like name a family, not a setting.
        if !name.ends_with('_') {
            out.insert(name);
        }
    }
    out
}

/// The parser, `KEYS`, `config.default.toml` and the README's settings table cannot drift: every
/// name the parser's sources read is a key (or a retired one it refuses), and every key has its
/// commented default and its row in the README's table.
#[test]
fn every_setting_the_parser_reads_is_a_key_with_a_default_and_a_readme_row() {
    let code = |src: &str| src.split("#[cfg(test)]").next().unwrap_or_default().to_owned();
    let parser = [
        code(include_str!("mod.rs")),
        code(include_str!("accounts.rs")),
        code(include_str!("browser.rs")),
        code(include_str!("cluster.rs")),
        code(include_str!("database.rs")),
        code(include_str!("http.rs")),
        code(include_str!("inbox.rs")),
        code(include_str!("llm.rs")),
        code(include_str!("mail.rs")),
        code(include_str!("parse.rs")),
        code(include_str!("queue.rs")),
        code(include_str!("runs.rs")),
        code(include_str!("s3.rs")),
        code(include_str!("storage.rs")),
        code(include_str!("webhooks.rs")),
    ]
    .concat();
    let keys: std::collections::BTreeSet<String> = KEYS.iter().map(|k| k.to_string()).collect();
    let read: Vec<String> =
        setting_names(&parser).into_iter().filter(|n| !keys.contains(n) && !RETIRED.contains(&n.as_str())).collect();
    assert_eq!(read, Vec::<String>::new(), "read by the parser but not in KEYS");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");
    let defaults = std::fs::read_to_string(format!("{root}config.default.toml")).unwrap();
    let defaulted: std::collections::BTreeSet<String> = defaults
        .lines()
        // A setting without a default is there commented out (`# CAPTURE_BASE_URL = ...`).
        .filter_map(|l| l.trim_start_matches('#').split_once('=').map(|(k, _)| k.trim().to_owned()))
        .filter(|k| k.starts_with("CAPTURE_"))
        .collect();
    let readme = std::fs::read_to_string(format!("{root}README.md")).unwrap();
    let rows: std::collections::BTreeSet<String> = readme
        .lines()
        .filter(|l| l.starts_with("| `CAPTURE_"))
        .flat_map(|l| setting_names(l.split('|').nth(1).unwrap_or_default()))
        .collect();
    let without = |set: &std::collections::BTreeSet<String>| -> Vec<&String> {
        keys.iter().filter(|k| !set.contains(*k) && k.as_str() != "CAPTURE_LOG").collect()
    };
    assert_eq!(without(&defaulted), Vec::<&String>::new(), "keys without a line in config.default.toml");
    assert_eq!(without(&rows), Vec::<&String>::new(), "keys without a row in the README's settings table");
}
