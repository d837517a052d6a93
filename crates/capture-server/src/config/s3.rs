//! S3 storage settings: the bucket URL, the endpoint, the region and the keys (from
//! `CAPTURE_S3_*`, or the AWS variables as a fallback).

use super::parse::{ConfigError, err};

/// How an S3 bucket is reached: `CAPTURE_STORAGE_URL=s3://bucket/prefix` and `CAPTURE_S3_*`
/// (credentials fall back to `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`).
#[derive(Clone, PartialEq, Eq)]
pub struct S3Settings {
    pub bucket: String,
    /// Key prefix without leading or trailing `/` (may be empty).
    pub prefix: String,
    /// An S3-compatible server (`http(s)://host:port`); path-style requests when set.
    pub endpoint: Option<String>,
    pub region: String,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secret (configuration is logged on start-up errors).
        f.debug_struct("S3Settings")
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &self.secret_access_key.as_ref().map(|_| "******"))
            .field("session_token", &self.session_token.as_ref().map(|_| "******"))
            .finish()
    }
}

/// Standard AWS variables read from the environment (never from the TOML file) when the
/// matching `CAPTURE_S3_*` setting is absent.
pub(super) const AWS_FALLBACK_KEYS: &[&str] =
    &["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION"];

/// Parse `s3://bucket/prefix` and the `CAPTURE_S3_*` settings that go with it.
pub(super) fn s3_settings(url: &str, get: &dyn Fn(&str) -> Option<String>) -> Result<S3Settings, ConfigError> {
    const VAR: &str = "CAPTURE_STORAGE_URL";
    let rest = url.trim_start_matches("s3://");
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    // S3's bucket naming rules: 3–63 lowercase letters, digits, dots and hyphens.
    let bucket_ok = (3..=63).contains(&bucket.len())
        && bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && bucket.starts_with(|c: char| c.is_ascii_alphanumeric())
        && bucket.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !bucket_ok {
        return Err(err(VAR, format!("'{bucket}' is not a bucket name (s3://bucket/prefix; 3-63 of a-z 0-9 . -)")));
    }
    let prefix = prefix.trim_matches('/');
    // Keep prefixes to plain path segments: they become part of every object key.
    let prefix_ok = prefix.is_empty()
        || prefix.split('/').all(|seg| {
            !seg.is_empty()
                && seg != "."
                && seg != ".."
                && seg.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        });
    if !prefix_ok {
        return Err(err(VAR, format!("'{prefix}' is not a key prefix (segments of A-Z a-z 0-9 - _ . separated by /)")));
    }
    let endpoint = match get("CAPTURE_S3_ENDPOINT") {
        None => None,
        Some(e) => {
            let parsed = url::Url::parse(&e).map_err(|x| err("CAPTURE_S3_ENDPOINT", format!("'{e}': {x}")))?;
            if !matches!(parsed.scheme(), "http" | "https")
                || parsed.host_str().is_none()
                || parsed.query().is_some()
                || !parsed.username().is_empty()
            {
                return Err(err("CAPTURE_S3_ENDPOINT", "must be an http(s) URL like https://s3.example.com:9000"));
            }
            Some(e.trim_end_matches('/').to_string())
        }
    };
    let region = get("CAPTURE_S3_REGION")
        .map(|r| ("CAPTURE_S3_REGION", r))
        .or_else(|| get("AWS_REGION").map(|r| ("AWS_REGION", r)))
        .or_else(|| get("AWS_DEFAULT_REGION").map(|r| ("AWS_DEFAULT_REGION", r)));
    let region = match region {
        None => "us-east-1".to_string(),
        Some((var, r)) => {
            if r.len() > 64 || !r.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
                return Err(err(var, format!("'{r}' is not a region name like us-east-1")));
            }
            r
        }
    };
    // Our own pair wins as a whole; the AWS_* pair (with its session token) is the fallback.
    let (access_key_id, secret_access_key, session_token) =
        match (get("CAPTURE_S3_ACCESS_KEY_ID"), get("CAPTURE_S3_SECRET_ACCESS_KEY")) {
            (Some(id), Some(secret)) => (Some(id), Some(secret), None),
            (Some(_), None) => {
                return Err(err("CAPTURE_S3_SECRET_ACCESS_KEY", "is required with CAPTURE_S3_ACCESS_KEY_ID"));
            }
            (None, Some(_)) => {
                return Err(err("CAPTURE_S3_ACCESS_KEY_ID", "is required with CAPTURE_S3_SECRET_ACCESS_KEY"));
            }
            (None, None) => match (get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY")) {
                (Some(id), Some(secret)) => (Some(id), Some(secret), get("AWS_SESSION_TOKEN")),
                (None, None) => (None, None, None),
                _ => {
                    return Err(err(
                        "CAPTURE_S3_ACCESS_KEY_ID",
                        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together",
                    ));
                }
            },
        };
    Ok(S3Settings {
        bucket: bucket.to_string(),
        prefix: prefix.to_string(),
        endpoint,
        region,
        access_key_id,
        secret_access_key,
        session_token,
    })
}
