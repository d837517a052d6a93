//! Blob storage behind one interface: local files by default, or an S3 bucket
//! (`CAPTURE_STORAGE_URL=s3://bucket/prefix`) through the `object_store` crate. The store
//! also decides the URL a client downloads a file from: the service itself (`/files/{name}`,
//! streamed from the store) or, for S3 in presigned mode, a presigned GET URL.

use std::path::PathBuf;
use std::time::Duration;

use async_trait_free::BoxFuture;
use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::list::{PaginatedListOptions, PaginatedListStore};
use object_store::path::Path as ObjectPath;
use object_store::signer::Signer;
use object_store::{
    Attribute, Attributes, BackoffConfig, ClientOptions, ObjectStore, ObjectStoreExt, PutOptions, PutPayload,
    RetryConfig,
};

use crate::config::{PublicUrls, S3Settings};

/// Where finished files live.
pub trait BlobStore: Send + Sync + 'static {
    /// Store `bytes` under `name` (a random file name with extension).
    fn put(&self, name: &str, bytes: Vec<u8>, content_type: &str) -> BoxFuture<'_, std::io::Result<()>>;
    /// Read a stored file; `Ok(None)` when there is none.
    fn get(&self, name: &str) -> BoxFuture<'_, std::io::Result<Option<Vec<u8>>>>;
    /// Open a stored file as a stream of chunks (for serving it); `Ok(None)` when there is none.
    fn open(&self, name: &str) -> BoxFuture<'_, std::io::Result<Option<BlobReader>>>;
    /// Check the store works (readiness).
    fn check(&self) -> BoxFuture<'_, std::io::Result<()>>;
    /// The absolute URL a client downloads `name` from (`publicUrl`, `thumbnailUrl`).
    fn public_url(&self, name: &str) -> BoxFuture<'_, String>;
    /// Delete a stored file; deleting one that is not there is not an error.
    fn delete(&self, name: &str) -> BoxFuture<'_, std::io::Result<()>>;
}

/// Boxed-future alias so the trait stays object-safe without extra crates.
pub mod async_trait_free {
    /// A pinned, boxed, sendable future.
    pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
}

/// An opened blob: its size and its bytes as a stream.
pub struct BlobReader {
    /// Size in bytes.
    pub len: u64,
    /// The content, chunk by chunk.
    pub body: BoxStream<'static, std::io::Result<Bytes>>,
}

/// Is `name` one of ours (random + extension)? Anything else is refused, so a request can
/// never walk out of the folder or the key prefix.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
        && !name.starts_with('.')
}

/// `{base}/files/{name}`: the file served (proxied) by the service.
pub fn proxy_url(base_url: &str, name: &str) -> String {
    format!("{}/files/{name}", base_url.trim_end_matches('/'))
}

/// Files under a folder (`CAPTURE_DATA_DIR/files` by default).
pub struct LocalBlobStore {
    root: PathBuf,
    base_url: String,
}

impl LocalBlobStore {
    /// A store rooted at `root` (created if missing); files are served under `{base_url}/files/`.
    pub fn new(root: PathBuf, base_url: &str) -> std::io::Result<Self> {
        std::fs::create_dir_all(&root)?;
        Ok(LocalBlobStore { root, base_url: base_url.to_string() })
    }

    fn path(&self, name: &str) -> Option<PathBuf> {
        valid_name(name).then(|| self.root.join(name))
    }
}

impl BlobStore for LocalBlobStore {
    fn put(&self, name: &str, bytes: Vec<u8>, _content_type: &str) -> BoxFuture<'_, std::io::Result<()>> {
        let path = self.path(name);
        Box::pin(async move {
            let path = path.ok_or_else(|| std::io::Error::other("invalid blob name"))?;
            // Write then rename so a reader never sees half a file.
            let tmp = path.with_extension("part");
            tokio::fs::write(&tmp, &bytes).await?;
            tokio::fs::rename(&tmp, &path).await
        })
    }

    fn get(&self, name: &str) -> BoxFuture<'_, std::io::Result<Option<Vec<u8>>>> {
        let path = self.path(name);
        Box::pin(async move {
            let Some(path) = path else { return Ok(None) };
            match tokio::fs::read(&path).await {
                Ok(b) => Ok(Some(b)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e),
            }
        })
    }

    fn open(&self, name: &str) -> BoxFuture<'_, std::io::Result<Option<BlobReader>>> {
        let path = self.path(name);
        Box::pin(async move {
            let Some(path) = path else { return Ok(None) };
            let file = match tokio::fs::File::open(&path).await {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            };
            let len = file.metadata().await?.len();
            Ok(Some(BlobReader { len, body: tokio_util::io::ReaderStream::new(file).boxed() }))
        })
    }

    fn check(&self) -> BoxFuture<'_, std::io::Result<()>> {
        let root = self.root.clone();
        Box::pin(async move { tokio::fs::metadata(&root).await.map(|_| ()) })
    }

    fn public_url(&self, name: &str) -> BoxFuture<'_, String> {
        let url = proxy_url(&self.base_url, name);
        Box::pin(async move { url })
    }

    fn delete(&self, name: &str) -> BoxFuture<'_, std::io::Result<()>> {
        let path = self.path(name);
        Box::pin(async move {
            let Some(path) = path else { return Ok(()) };
            match tokio::fs::remove_file(&path).await {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            }
        })
    }
}

/// Files in an S3 bucket under a key prefix (`s3://bucket/prefix`), through `object_store`.
pub struct S3BlobStore {
    store: AmazonS3,
    prefix: String,
    base_url: String,
    /// `Some(lifetime)` when public URLs are presigned.
    presign: Option<Duration>,
}

impl S3BlobStore {
    /// A client for `s3` (no request is made yet). `public_urls`/`presign_ttl` choose what
    /// [`BlobStore::public_url`] hands out; `base_url` is the service's, for proxied files.
    pub fn new(
        s3: &S3Settings,
        public_urls: PublicUrls,
        presign_ttl: Duration,
        base_url: &str,
    ) -> Result<Self, object_store::Error> {
        let keys = s3.access_key_id.as_ref().zip(s3.secret_access_key.as_ref());
        // With keys, exactly those; without, the AWS credential chain the environment
        // describes (web identity, container, instance metadata).
        let mut b = if keys.is_some() { AmazonS3Builder::new() } else { AmazonS3Builder::from_env() };
        if let Some((id, secret)) = keys {
            b = b.with_access_key_id(id).with_secret_access_key(secret);
            if let Some(t) = &s3.session_token {
                b = b.with_token(t);
            }
        }
        // Fail in seconds, not minutes: a capture retries its job, and readiness must answer.
        let retry =
            RetryConfig { backoff: BackoffConfig::default(), max_retries: 3, retry_timeout: Duration::from_secs(20) };
        let client = ClientOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(Duration::from_secs(60))
            // Plain http only when the operator named an http endpoint.
            .with_allow_http(s3.endpoint.as_deref().is_some_and(|e| e.starts_with("http://")));
        b = b.with_bucket_name(&s3.bucket).with_region(&s3.region).with_retry(retry).with_client_options(client);
        b = match &s3.endpoint {
            // A local or third-party server: path-style requests (`{endpoint}/{bucket}/{key}`).
            Some(e) => b
                .with_endpoint(e)
                .with_config(AmazonS3ConfigKey::S3Endpoint, e)
                .with_virtual_hosted_style_request(false),
            // AWS itself: virtual-hosted style, except for bucket names with dots (TLS
            // certificates only cover one label).
            None => b.with_virtual_hosted_style_request(!s3.bucket.contains('.')),
        };
        let store = b.build()?;
        Ok(S3BlobStore {
            store,
            prefix: s3.prefix.clone(),
            base_url: base_url.to_string(),
            presign: (public_urls == PublicUrls::Presigned).then_some(presign_ttl),
        })
    }

    /// The object key of `name` (names are validated, so the key is always under the prefix).
    fn key(&self, name: &str) -> Option<ObjectPath> {
        if !valid_name(name) {
            return None;
        }
        Some(if self.prefix.is_empty() {
            ObjectPath::from(name)
        } else {
            ObjectPath::from(format!("{}/{name}", self.prefix))
        })
    }
}

fn s3_error(e: object_store::Error) -> std::io::Error {
    std::io::Error::other(e)
}

impl BlobStore for S3BlobStore {
    fn put(&self, name: &str, bytes: Vec<u8>, content_type: &str) -> BoxFuture<'_, std::io::Result<()>> {
        let key = self.key(name);
        let content_type = content_type.to_string();
        Box::pin(async move {
            let key = key.ok_or_else(|| std::io::Error::other("invalid blob name"))?;
            let mut attributes = Attributes::new();
            attributes.insert(Attribute::ContentType, content_type.into());
            // Names are random and never rewritten, so the object can be cached for good.
            attributes.insert(Attribute::CacheControl, "public, max-age=31536000, immutable".into());
            let opts = PutOptions { attributes, ..Default::default() };
            self.store.put_opts(&key, PutPayload::from(bytes), opts).await.map_err(s3_error)?;
            Ok(())
        })
    }

    fn get(&self, name: &str) -> BoxFuture<'_, std::io::Result<Option<Vec<u8>>>> {
        let key = self.key(name);
        Box::pin(async move {
            let Some(key) = key else { return Ok(None) };
            match self.store.get(&key).await {
                Ok(r) => Ok(Some(r.bytes().await.map_err(s3_error)?.to_vec())),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(s3_error(e)),
            }
        })
    }

    fn open(&self, name: &str) -> BoxFuture<'_, std::io::Result<Option<BlobReader>>> {
        let key = self.key(name);
        Box::pin(async move {
            let Some(key) = key else { return Ok(None) };
            match self.store.get(&key).await {
                Ok(r) => Ok(Some(BlobReader { len: r.meta.size, body: r.into_stream().map_err(s3_error).boxed() })),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(s3_error(e)),
            }
        })
    }

    fn check(&self) -> BoxFuture<'_, std::io::Result<()>> {
        Box::pin(async move {
            // One ListObjectsV2 request for at most one key: fails when the bucket is
            // missing, unreachable or refuses our credentials.
            let prefix = (!self.prefix.is_empty()).then(|| format!("{}/", self.prefix));
            let opts = PaginatedListOptions { max_keys: Some(1), ..Default::default() };
            self.store.list_paginated(prefix.as_deref(), opts).await.map(|_| ()).map_err(s3_error)
        })
    }

    fn public_url(&self, name: &str) -> BoxFuture<'_, String> {
        let proxied = proxy_url(&self.base_url, name);
        let key = self.key(name);
        Box::pin(async move {
            let (Some(ttl), Some(key)) = (self.presign, key) else { return proxied };
            match self.store.signed_url(axum::http::Method::GET, &key, ttl).await {
                Ok(u) => u.to_string(),
                Err(e) => {
                    // The service still serves the file, so a link that works beats none.
                    tracing::warn!(error = %e, "presigning a file URL failed; handing out the proxied URL");
                    proxied
                }
            }
        })
    }

    fn delete(&self, name: &str) -> BoxFuture<'_, std::io::Result<()>> {
        let key = self.key(name);
        Box::pin(async move {
            let Some(key) = key else { return Ok(()) };
            match self.store.delete(&key).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(s3_error(e)),
            }
        })
    }
}

/// The extension of a captured page's HTML (`format: html`): the only `.html` files served,
/// and only as downloads in plain text (uploaded documents are `.html` too, never served).
pub const PAGE_HTML_EXT: &str = "page.html";

/// The headers a stored file is served with from our origin (`/files/…` and render links):
/// its content type and `nosniff`; the page as text (`.md`, `.txt`, `.page.html`) in a sandbox
/// that allows nothing, and a captured page's HTML as a plain-text download — never as a page
/// of ours.
pub fn serve_headers(name: &str, h: &mut axum::http::HeaderMap) {
    use axum::http::{HeaderValue, header};
    let page_html = name.ends_with(&format!(".{PAGE_HTML_EXT}"));
    let kind = if page_html { "text/plain; charset=utf-8" } else { content_type(name) };
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    if page_html {
        h.insert(header::CONTENT_DISPOSITION, HeaderValue::from_static("attachment; filename=\"page.html\""));
    }
    if page_html || name.ends_with(".md") || name.ends_with(".txt") {
        h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox; default-src 'none'"));
    }
}

/// A new unguessable file name with the given extension.
pub fn new_name(ext: &str) -> String {
    format!("{}.{ext}", capture_core::ids::random_string(32))
}

/// The file of a job's page as text beside its own file (`content`): the job's file name with
/// `.content.md`, `.content.txt` or `.content.page.html` for its extension, so the job needs
/// no column to find it (and a cached job, sharing its original's file, shares these too).
pub fn content_name(result_key: &str, form: capture_core::options::ContentFormat) -> String {
    let page_html = format!(".{PAGE_HTML_EXT}");
    let stem = result_key
        .strip_suffix(page_html.as_str())
        .or_else(|| result_key.rsplit_once('.').map(|(s, _)| s))
        .unwrap_or(result_key);
    let ext = match form {
        capture_core::options::ContentFormat::Html => PAGE_HTML_EXT,
        other => other.extension(),
    };
    format!("{stem}.content.{ext}")
}

/// The content type of a stored file, from its extension.
pub fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next() {
        Some("png") => "image/png",
        Some("jpeg") | Some("jpg") => "image/jpeg",
        Some("webp") => "image/webp",
        Some("pdf") => "application/pdf",
        Some("mp4") => "video/mp4",
        Some("webm") => "video/webm",
        Some("gif") => "image/gif",
        Some("html") => "text/html; charset=utf-8",
        Some("txt") => "text/plain; charset=utf-8",
        Some("md") => "text/markdown; charset=utf-8",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}
