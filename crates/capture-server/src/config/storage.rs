//! Where finished files live (a local folder or an S3 bucket), what their public URLs are,
//! and the copies to customers' own buckets.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::parse::{ConfigError, Reader, err};
use super::s3::{S3Settings, s3_settings};

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

/// The longest lifetime an AWS SigV4 presigned URL may have.
pub const MAX_PRESIGN_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// The file storage's settings.
#[derive(Debug, Clone)]
pub struct StorageSettings {
    /// `CAPTURE_STORAGE_URL`: the folder or bucket.
    pub location: Storage,
    /// `CAPTURE_STORAGE_PUBLIC_URLS`.
    pub public_urls: PublicUrls,
    /// `CAPTURE_STORAGE_PRESIGN_TTL`: how long a presigned URL is good for.
    pub presign_ttl: Duration,
    /// Copies to customers' buckets at once per node with the scheduler or worker role
    /// (`CAPTURE_STORAGE_COPY_WORKERS`): their own queue, never a capture slot.
    pub copy_workers: usize,
}

impl StorageSettings {
    pub(super) fn read(r: &Reader, data_dir: &Path) -> Result<StorageSettings, ConfigError> {
        let location = match r.get("CAPTURE_STORAGE_URL") {
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
            Some(u) if u.starts_with("s3://") => Storage::S3(s3_settings(&u, &|k| r.get(k))?),
            Some(u) => return Err(err("CAPTURE_STORAGE_URL", format!("'{u}' is not file://… or s3://bucket/prefix"))),
        };
        let public_urls = match r.get("CAPTURE_STORAGE_PUBLIC_URLS").as_deref() {
            None | Some("proxy") => PublicUrls::Proxy,
            Some("presigned") if matches!(location, Storage::S3(_)) => PublicUrls::Presigned,
            Some("presigned") => {
                return Err(err(
                    "CAPTURE_STORAGE_PUBLIC_URLS",
                    "presigned URLs need s3:// storage (CAPTURE_STORAGE_URL)",
                ));
            }
            Some(v) => return Err(err("CAPTURE_STORAGE_PUBLIC_URLS", format!("'{v}' is not proxy or presigned"))),
        };
        let presign_ttl = r.dur_in(
            "CAPTURE_STORAGE_PRESIGN_TTL",
            "1h",
            Duration::from_secs(1),
            MAX_PRESIGN_TTL,
            "must be between 1s and 7d (the S3 limit)",
        )?;
        let copy_workers = r.num("CAPTURE_STORAGE_COPY_WORKERS", 2, 1, 64)? as usize;
        Ok(StorageSettings { location, public_urls, presign_ttl, copy_workers })
    }
}
