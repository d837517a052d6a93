//! Blob storage behind one interface: local files by default (served by the service under
//! unguessable names); S3 comes with the scale-out work.

use std::path::PathBuf;

use async_trait_free::BoxFuture;

/// Where finished files live.
pub trait BlobStore: Send + Sync + 'static {
    /// Store `bytes` under `name` (a random file name with extension).
    fn put(&self, name: &str, bytes: Vec<u8>, content_type: &str) -> BoxFuture<'_, std::io::Result<()>>;
    /// Read a stored file; `Ok(None)` when there is none.
    fn get(&self, name: &str) -> BoxFuture<'_, std::io::Result<Option<Vec<u8>>>>;
    /// Check the store works (readiness).
    fn check(&self) -> BoxFuture<'_, std::io::Result<()>>;
}

/// Boxed-future alias so the trait stays object-safe without extra crates.
pub mod async_trait_free {
    /// A pinned, boxed, sendable future.
    pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
}

/// Files under a folder (`CAPTURE_DATA_DIR/files` by default).
pub struct LocalBlobStore {
    root: PathBuf,
}

impl LocalBlobStore {
    /// A store rooted at `root` (created if missing).
    pub fn new(root: PathBuf) -> std::io::Result<Self> {
        std::fs::create_dir_all(&root)?;
        Ok(LocalBlobStore { root })
    }

    fn path(&self, name: &str) -> Option<PathBuf> {
        // Names are ours (random + extension); refuse anything else so a request can
        // never walk out of the folder.
        let ok = !name.is_empty()
            && name.len() <= 128
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
            && !name.starts_with('.');
        ok.then(|| self.root.join(name))
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

    fn check(&self) -> BoxFuture<'_, std::io::Result<()>> {
        let root = self.root.clone();
        Box::pin(async move { tokio::fs::metadata(&root).await.map(|_| ()) })
    }
}

/// A new unguessable file name with the given extension.
pub fn new_name(ext: &str) -> String {
    format!("{}.{ext}", capture_core::ids::random_string(32))
}

/// The content type of a stored file, from its extension.
pub fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next() {
        Some("png") => "image/png",
        Some("jpeg") | Some("jpg") => "image/jpeg",
        Some("webp") => "image/webp",
        Some("pdf") => "application/pdf",
        Some("html") => "text/html; charset=utf-8",
        _ => "application/octet-stream",
    }
}
