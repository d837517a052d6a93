//! A customer's bucket, reached through `object_store` with the service's guarded HTTP client
//! (the egress policy resolves every name, so an endpoint can never point the service at its
//! own network), and what a failed request means in words a customer can act on.

use std::sync::Arc;
use std::time::Duration;

use capture_core::egress::EgressPolicy;
use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::client::{HttpClient, HttpConnector};
use object_store::path::Path as ObjectPath;
use object_store::{
    Attribute, Attributes, BackoffConfig, ClientOptions, ObjectStore, ObjectStoreExt, PutOptions, PutPayload,
    RetryConfig,
};

/// What a destination is, with its key pair opened.
#[derive(Clone)]
pub struct Bucket {
    pub bucket: String,
    /// The key prefix, without slashes at its ends ("" for none).
    pub prefix: String,
    pub endpoint: Option<String>,
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
}

impl std::fmt::Debug for Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bucket")
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

/// Why a write to a customer's bucket failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// `access_denied` (the key pair, or its rights), `bucket_not_found`, `unreachable` (the
    /// endpoint did not answer, or the egress policy refused it) or `refused` (anything else
    /// the server answered).
    pub reason: &'static str,
    /// The S3 error code the server gave (`InvalidAccessKeyId`, `NoSuchBucket`, …).
    pub code: Option<String>,
    /// One line for a person.
    pub message: String,
}

impl Failure {
    /// Worth another try: the server was not reached, or failed on its side.
    pub fn transient(&self) -> bool {
        self.reason == "unreachable"
    }
}

/// object_store's clients are built through this: the guarded client, plain http only
/// toward an endpoint named with it.
#[derive(Debug)]
struct Guarded {
    policy: Arc<EgressPolicy>,
    allow_http: bool,
}

impl HttpConnector for Guarded {
    fn connect(&self, _: &ClientOptions) -> object_store::Result<HttpClient> {
        let client = crate::egress::builder(self.policy.clone(), Duration::from_secs(30))
            .user_agent("Capture-Storage/1")
            .https_only(!self.allow_http)
            .build()
            .map_err(|e| object_store::Error::Generic { store: "S3", source: Box::new(e) })?;
        Ok(HttpClient::new(client))
    }
}

impl Bucket {
    /// `s3://bucket/key` of an object key (already under the prefix).
    pub fn object_url(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }

    /// `key` under the prefix.
    pub fn full_key(&self, key: &str) -> String {
        match self.prefix.is_empty() {
            true => key.to_string(),
            false => format!("{}/{key}", self.prefix),
        }
    }

    fn client(&self, policy: &Arc<EgressPolicy>) -> Result<AmazonS3, Failure> {
        // A literal address never reaches the resolver: checked here, with its port.
        if let Some(e) = &self.endpoint {
            let u = url::Url::parse(e).map_err(|e| unreachable(format!("the endpoint is not a URL: {e}")))?;
            crate::egress::check_url(&u, policy)
                .map_err(|e| unreachable(format!("the endpoint may not be reached from this service ({e})")))?;
        }
        let retry =
            RetryConfig { backoff: BackoffConfig::default(), max_retries: 2, retry_timeout: Duration::from_secs(15) };
        let allow_http = self.endpoint.as_deref().is_some_and(|e| e.starts_with("http://"));
        let mut b = AmazonS3Builder::new()
            .with_access_key_id(&self.access_key_id)
            .with_secret_access_key(&self.secret_access_key)
            .with_bucket_name(&self.bucket)
            .with_region(&self.region)
            .with_retry(retry)
            .with_client_options(ClientOptions::new().with_allow_http(allow_http))
            .with_http_connector(Guarded { policy: policy.clone(), allow_http });
        b = match &self.endpoint {
            Some(e) => b
                .with_endpoint(e)
                .with_config(AmazonS3ConfigKey::S3Endpoint, e)
                .with_virtual_hosted_style_request(false),
            None => b.with_virtual_hosted_style_request(!self.bucket.contains('.')),
        };
        b.build().map_err(|e| refused(None, format!("the destination cannot be used: {e}")))
    }

    /// Write `bytes` under `key` (already under the prefix).
    pub async fn put(
        &self,
        policy: &Arc<EgressPolicy>,
        key: &str,
        bytes: bytes::Bytes,
        content_type: &str,
    ) -> Result<(), Failure> {
        let store = self.client(policy)?;
        let mut attributes = Attributes::new();
        attributes.insert(Attribute::ContentType, content_type.to_string().into());
        let opts = PutOptions { attributes, ..Default::default() };
        store.put_opts(&object_path(key)?, PutPayload::from(bytes), opts).await.map(|_| ()).map_err(classify)
    }

    /// Check the destination works: write a small probe object under the prefix and delete it.
    pub async fn probe(&self, policy: &Arc<EgressPolicy>) -> Result<(), Failure> {
        let key = self.full_key(&format!(".capture-probe-{}", capture_core::ids::random_string(12)));
        self.put(
            policy,
            &key,
            bytes::Bytes::from_static(b"Capture checks it may write here; this object is deleted at once.\n"),
            "text/plain",
        )
        .await?;
        let store = self.client(policy)?;
        store.delete(&object_path(&key)?).await.map_err(|e| {
            let mut f = classify(e);
            f.message = format!("the probe object {key} was written but could not be deleted: {}", f.message);
            f
        })
    }
}

/// The object key exactly as written: `ObjectPath::from` would percent-encode `%`, `?`, `#`
/// and the like, which the S3 client then encodes again (the object landing under another
/// name than `storageUrl` says); `parse` keeps the key (checked like `storage.key`: no empty,
/// `.` or `..` segment, no control character).
fn object_path(key: &str) -> Result<ObjectPath, Failure> {
    ObjectPath::parse(key).map_err(|e| refused(None, format!("the object key cannot be written: {e}")))
}

fn unreachable(message: String) -> Failure {
    Failure { reason: "unreachable", code: None, message }
}

fn refused(code: Option<String>, message: String) -> Failure {
    Failure { reason: "refused", code, message }
}

/// The S3 error code in an error's text (`<Code>NoSuchBucket</Code>`).
fn s3_code(text: &str) -> Option<String> {
    let start = text.find("<Code>")? + "<Code>".len();
    let len = text[start..].find("</Code>")?;
    Some(text[start..start + len].to_string()).filter(|c| !c.is_empty() && c.len() < 64)
}

/// What an object_store error means for the customer.
pub fn classify(e: object_store::Error) -> Failure {
    // The whole chain: the S3 answer's body is in the innermost error.
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    let code = s3_code(&text);
    // The guarded client refused the connection (the service's own listener, a range the
    // policy forbids): said as such, and not worth another attempt.
    if let Some(at) = text.find("blocked by egress policy") {
        let why = text[at..].split(": error").next().unwrap_or(&text[at..]);
        return refused(None, format!("the endpoint may not be reached from this service ({})", short(why)));
    }
    let (reason, message) = match code.as_deref() {
        Some("NoSuchBucket") => ("bucket_not_found", "the bucket does not exist".to_string()),
        Some(
            c @ ("InvalidAccessKeyId"
            | "SignatureDoesNotMatch"
            | "AccessDenied"
            | "InvalidToken"
            | "ExpiredToken"
            | "AuthorizationHeaderMalformed"
            | "AccountProblem"
            | "AllAccessDisabled"),
        ) => ("access_denied", format!("the bucket refused the key pair ({c})")),
        Some(c) => ("refused", format!("the server refused the write ({c})")),
        None => match &e {
            object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. } => {
                ("access_denied", "the bucket refused the key pair".to_string())
            }
            object_store::Error::NotFound { .. } => ("bucket_not_found", "the bucket does not exist".to_string()),
            _ if is_transport(&text) => ("unreachable", format!("the server could not be reached: {}", short(&text))),
            _ => ("refused", format!("the write failed: {}", short(&text))),
        },
    };
    Failure { reason, code, message }
}

fn is_transport(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    ["error sending request", "connect", "timed out", "timeout", "dns", "resolve", "egress", "not allowed", "refused"]
        .iter()
        .any(|w| t.contains(w))
        || t.contains("server returned non-2xx status code: 5")
}

fn short(text: &str) -> String {
    capture_core::limits::truncate_chars(text, 300)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_codes_are_read_from_the_answer() {
        let body = "Server returned non-2xx status code: 404 Not Found: <?xml version=\"1.0\"?>\
            <Error><Code>NoSuchBucket</Code><Message>x</Message></Error>";
        assert_eq!(s3_code(body).as_deref(), Some("NoSuchBucket"));
        assert_eq!(s3_code("no xml here"), None);
    }

    #[test]
    fn keys_go_under_the_prefix() {
        let mut b = Bucket {
            bucket: "shots".into(),
            prefix: "a/b".into(),
            endpoint: None,
            region: "us-east-1".into(),
            access_key_id: "AKID".into(),
            secret_access_key: "s3cr3t".into(),
        };
        assert_eq!(b.full_key("x.png"), "a/b/x.png");
        assert_eq!(b.object_url(&b.full_key("x.png")), "s3://shots/a/b/x.png");
        b.prefix.clear();
        assert_eq!(b.full_key("x.png"), "x.png");
        // The secret never shows in logs.
        assert!(!format!("{b:?}").contains("s3cr3t") && !format!("{b:?}").contains("AKID"));
    }
}
