//! Storage destinations: the customer's own S3-compatible bucket. Created only after a probe
//! object was written and deleted there; captures naming one are also written to it by the
//! `storage_copy` queue once the job is done ([`crate::jobs::storage_copy`]: retried, then
//! reported on the job as `storageError`, the service's own copy kept).

use capture_core::options::StorageTarget;
use capture_core::time::iso;
use capture_core::{FieldError, StorageDestinationId};
use capture_store::StorageDestination as Stored;

use super::bucket::Bucket;
use super::types::{StorageDestination, StorageDestinationList, ValidDestination};
use crate::auth::Account;
use crate::error::{Error, Result};
use crate::state::AppState;

/// Check the destination (a probe object written and deleted), then keep it with its key
/// pair sealed.
pub async fn create(state: &AppState, account: &Account, d: ValidDestination) -> Result<StorageDestination> {
    if let Some(e) = &d.endpoint
        && let Ok(u) = url::Url::parse(e)
        && let Err(why) = crate::egress::check_url(&u, &state.egress)
    {
        return Err(Error::Invalid(FieldError::new(
            "endpoint",
            format!("must not point at a loopback, private or link-local address, or at this service ({why})"),
        )));
    }
    let bucket = Bucket {
        bucket: d.bucket.clone(),
        prefix: d.prefix.clone(),
        endpoint: d.endpoint.clone(),
        region: d.region.clone(),
        access_key_id: d.access_key_id.clone(),
        secret_access_key: d.secret_access_key.clone(),
    };
    bucket.probe(&state.egress).await.map_err(|f| Error::StorageCheck {
        reason: f.reason,
        s3_code: f.code,
        message: format!("the destination failed its check: {}", f.message),
    })?;
    let id = StorageDestinationId::new();
    let now = state.clock.now_ms();
    let row = Stored {
        id: id.to_string(),
        user_id: account.user.id.clone(),
        name: d.name.clone(),
        url: d.url(),
        endpoint: d.endpoint.clone(),
        region: d.region.clone(),
        access_key_id_enc: state.master.encrypt(&d.access_key_id),
        secret_access_key_enc: state.master.encrypt(&d.secret_access_key),
        created_at: now,
    };
    state.store.create_storage_destination(&row).await?;
    Ok(shown(row))
}

fn shown(r: Stored) -> StorageDestination {
    StorageDestination {
        id: StorageDestinationId::from_stored(r.id),
        name: r.name,
        url: r.url,
        endpoint: r.endpoint,
        region: r.region,
        created_at: iso(r.created_at),
    }
}

/// The caller's destinations, oldest first.
pub async fn list(state: &AppState, account: &Account) -> Result<StorageDestinationList> {
    let data = state.store.list_storage_destinations(&account.user.id).await?.into_iter().map(shown).collect();
    Ok(StorageDestinationList { data })
}

/// One of the caller's destinations.
pub async fn get(state: &AppState, account: &Account, id: &StorageDestinationId) -> Result<StorageDestination> {
    state
        .store
        .storage_destination(&account.user.id, id.as_str())
        .await?
        .map(shown)
        .ok_or_else(|| Error::not_found(StorageDestinationId::NOUN))
}

/// Delete one: captures naming it from now on are refused, and queued ones report it.
pub async fn delete(state: &AppState, account: &Account, id: &StorageDestinationId) -> Result<()> {
    match state.store.delete_storage_destination(&account.user.id, id.as_str()).await? {
        true => Ok(()),
        false => Err(Error::not_found(StorageDestinationId::NOUN)),
    }
}

/// A capture's `storage.destination` names one of the caller's destinations.
pub async fn require(state: &AppState, account: &Account, id: &str) -> Result<()> {
    match state.store.storage_destination(&account.user.id, id).await? {
        Some(_) => Ok(()),
        None => Err(Error::Invalid(FieldError::new(
            "storage.destination",
            format!("{id} is not one of your storage destinations (GET /v1/storage-destinations lists them)"),
        ))),
    }
}

/// The file of a finished capture, for its copy.
pub struct FileOut<'a> {
    pub job_id: &'a str,
    /// The page's URL (its host fills `{host}`).
    pub page_url: &'a str,
    pub ext: &'a str,
    pub content_type: &'a str,
    pub bytes: bytes::Bytes,
    pub finished_ms: i64,
}

/// Why one attempt at a copy did not write it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyFailed {
    /// The object it was writing (`s3://bucket/key`), when it got that far.
    pub object: Option<String>,
    pub message: String,
    /// Worth another attempt (the endpoint did not answer, 5xx); refusals are not.
    pub transient: bool,
}

impl CopyFailed {
    fn setup(message: String) -> CopyFailed {
        CopyFailed { object: None, message, transient: false }
    }

    /// The job's `storageError` when this was the last of `attempts` attempts.
    pub fn reported(&self, attempts: i64) -> String {
        match &self.object {
            None => self.message.clone(),
            Some(o) if self.transient => format!("writing {o} failed after {attempts} attempts: {}", self.message),
            Some(o) => format!("writing {o} failed: {}", self.message),
        }
    }
}

/// Write a finished capture's copy to `user_id`'s destination, once (the client retries
/// within it too): where it went, or why not.
pub async fn copy_once(
    state: &AppState,
    user_id: &str,
    target: &StorageTarget,
    file: FileOut<'_>,
) -> std::result::Result<String, CopyFailed> {
    let row = match state.store.storage_destination(user_id, &target.destination).await {
        Ok(Some(r)) => r,
        Ok(None) => {
            return Err(CopyFailed::setup(format!("the storage destination {} was deleted", target.destination)));
        }
        Err(e) => {
            tracing::error!(error = %e, "reading a storage destination failed");
            return Err(CopyFailed {
                object: None,
                message: "the storage destination could not be read".into(),
                transient: true,
            });
        }
    };
    let (Some(access_key_id), Some(secret_access_key)) =
        (state.master.decrypt(&row.access_key_id_enc), state.master.decrypt(&row.secret_access_key_enc))
    else {
        return Err(CopyFailed::setup(
            "the destination's keys could not be opened (the service's master key changed)".into(),
        ));
    };
    let (bucket_name, prefix) = match super::types::parse_s3_url(&row.url) {
        Ok(p) => p,
        Err(_) => return Err(CopyFailed::setup("the destination's URL is unreadable".into())),
    };
    let bucket = Bucket {
        bucket: bucket_name,
        prefix,
        endpoint: row.endpoint,
        region: row.region,
        access_key_id,
        secret_access_key,
    };
    // An uploaded document's label is `upload://…`: its host is `upload`.
    let host = url::Url::parse(file.page_url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .and_then(|u| u.host_str().map(|h| h.trim_start_matches('[').trim_end_matches(']').replace(':', "-")))
        .unwrap_or_else(|| "upload".to_string());
    let date = &iso(file.finished_ms)[..10];
    let key = bucket.full_key(&target.render_key(file.job_id, date, file.ext, &host));
    match bucket.put(&state.egress, &key, file.bytes, file.content_type).await {
        Ok(()) => Ok(bucket.object_url(&key)),
        Err(f) => {
            tracing::warn!(job = %file.job_id, destination = %row.id, reason = f.reason, error = %f.message,
                "writing a capture to its storage destination failed");
            Err(CopyFailed {
                object: Some(bucket.object_url(&key)),
                message: format!("{} ({})", f.message, f.reason),
                transient: f.transient(),
            })
        }
    }
}
