//! The wire types of storage destinations (`/v1/storage-destinations`).

use capture_core::{FieldError, StorageDestinationId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::http::validated::Checked;
use crate::lists::list_type;

/// `POST /v1/storage-destinations`: an S3-compatible bucket captures can also be written to.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageDestinationIn {
    /// What it is for (`marketing bucket`), 1 to 100 characters.
    pub name: String,
    /// `s3://bucket` or `s3://bucket/prefix`: objects are written under the prefix.
    #[schema(examples("s3://acme-captures/screenshots"))]
    pub url: String,
    /// An S3-compatible server's base URL (MinIO, R2, Backblaze, …); leave it out for AWS.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// The bucket's region (default us-east-1).
    #[serde(default)]
    pub region: Option<String>,
    /// The access key id. Stored encrypted; never returned.
    pub access_key_id: String,
    /// The secret access key. Stored encrypted; never returned.
    pub secret_access_key: String,
}

/// A checked destination request.
#[derive(Debug, Clone)]
pub struct ValidDestination {
    pub name: String,
    pub bucket: String,
    pub prefix: String,
    pub endpoint: Option<String>,
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
}

impl ValidDestination {
    /// `s3://bucket/prefix` as shown.
    pub fn url(&self) -> String {
        match self.prefix.is_empty() {
            true => format!("s3://{}", self.bucket),
            false => format!("s3://{}/{}", self.bucket, self.prefix),
        }
    }
}

/// Most bytes of a key id or a secret.
const KEY_MAX: usize = 256;

impl Checked for StorageDestinationIn {
    type Valid = ValidDestination;

    fn check(self) -> Result<ValidDestination, FieldError> {
        let name = self.name.trim().to_string();
        if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
            return Err(FieldError::new("name", "must be 1 to 100 characters"));
        }
        let (bucket, prefix) = parse_s3_url(&self.url).map_err(|why| FieldError::new("url", why))?;
        let endpoint = match self.endpoint.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(e) => Some(check_endpoint(e).map_err(|why| FieldError::new("endpoint", why))?),
        };
        let region = match self.region.as_deref().map(str::trim) {
            None | Some("") => "us-east-1".to_string(),
            Some(r)
                if r.len() <= 32 && r.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') =>
            {
                r.to_string()
            }
            Some(_) => return Err(FieldError::new("region", "must be a region name such as eu-west-1")),
        };
        for (field, v) in [("accessKeyId", &self.access_key_id), ("secretAccessKey", &self.secret_access_key)] {
            if v.is_empty() || v.len() > KEY_MAX || !v.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(FieldError::new(field, "must be 1 to 256 printable characters without spaces"));
            }
        }
        Ok(ValidDestination {
            name,
            bucket,
            prefix,
            endpoint,
            region,
            access_key_id: self.access_key_id,
            secret_access_key: self.secret_access_key,
        })
    }
}

/// `s3://bucket/prefix` → (bucket, prefix without slashes at its ends).
pub fn parse_s3_url(url: &str) -> Result<(String, String), &'static str> {
    let rest = url.trim().strip_prefix("s3://").ok_or("must be s3://bucket or s3://bucket/prefix")?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let ok_bucket = (3..=63).contains(&bucket.len())
        && bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && bucket.as_bytes()[0].is_ascii_alphanumeric()
        && bucket.as_bytes()[bucket.len() - 1].is_ascii_alphanumeric();
    if !ok_bucket {
        return Err("names a bucket of 3 to 63 lowercase letters, digits, dots and hyphens");
    }
    let prefix = prefix.trim_matches('/');
    if prefix.len() > 512
        || prefix.chars().any(|c| c.is_control() || c == '\\')
        || (!prefix.is_empty() && prefix.split('/').any(|s| s.is_empty() || s == "." || s == ".."))
    {
        return Err("has a prefix of at most 512 bytes without empty, '.' or '..' segments");
    }
    Ok((bucket.to_string(), prefix.to_string()))
}

/// An endpoint: an http(s) base URL with a host and nothing else (no credentials, path,
/// query or fragment).
fn check_endpoint(e: &str) -> Result<String, &'static str> {
    let u = url::Url::parse(e).map_err(|_| "must be an http(s) URL such as https://s3.example.com")?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none_or(str::is_empty) {
        return Err("must be an http(s) URL such as https://s3.example.com");
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err("must not contain credentials");
    }
    if u.path() != "/" || u.query().is_some() || u.fragment().is_some() {
        return Err("must be a base URL without a path, query or fragment");
    }
    Ok(u.as_str().trim_end_matches('/').to_string())
}

/// A storage destination as shown: never its key pair.
#[derive(Debug, Clone, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageDestination {
    /// The id a capture names in `storage.destination`.
    pub id: StorageDestinationId,
    pub name: String,
    /// `s3://bucket/prefix`.
    pub url: String,
    pub endpoint: Option<String>,
    pub region: String,
    pub created_at: String,
}

list_type! {
    /// The caller's destinations, oldest first.
    pub type StorageDestinationList = Collection<StorageDestination>;
    schemas: both;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_urls_and_endpoints_are_checked() {
        assert_eq!(parse_s3_url("s3://shots").unwrap(), ("shots".into(), "".into()));
        assert_eq!(parse_s3_url("s3://shots/a/b/").unwrap(), ("shots".into(), "a/b".into()));
        for bad in ["https://shots", "s3://Sh", "s3://-shots", "s3://shots/a//b", "s3://shots/../x", "s3://"] {
            assert!(parse_s3_url(bad).is_err(), "{bad}");
        }
        assert_eq!(check_endpoint("http://127.0.0.1:9000/").unwrap(), "http://127.0.0.1:9000");
        for bad in ["ftp://x", "https://u:p@x", "https://x/bucket", "https://x/?a=1", "nope"] {
            assert!(check_endpoint(bad).is_err(), "{bad}");
        }
    }
}
