//! Storage destinations: the customer's own S3-compatible bucket. Created only after a probe
//! object was written and deleted there; captures naming one are also written to it by the
//! worker (retried, then reported on the job as `storageError`, the service's own copy kept).

use std::time::Duration;

use capture_core::options::StorageTarget;
use capture_core::time::{iso, now_ms};
use capture_core::{FieldError, StorageDestinationId};
use capture_store::StorageDestination as Stored;

use super::bucket::{Bucket, Failure};
use super::types::{StorageDestination, StorageDestinationList, ValidDestination};
use crate::auth::Account;
use crate::error::{Error, Result};
use crate::state::AppState;

/// Attempts at writing a capture's copy (the client retries within each one too).
const ATTEMPTS: u32 = 3;

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
    let now = now_ms();
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

/// What became of a capture's copy: where it is, or why it is not there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivered {
    pub url: Option<String>,
    pub error: Option<String>,
}

/// The file of a finished capture, for its copy.
pub struct FileOut<'a> {
    pub job_id: &'a str,
    /// The page's URL (its host fills `{host}`).
    pub page_url: &'a str,
    pub ext: &'a str,
    pub content_type: &'a str,
    pub bytes: Vec<u8>,
    pub finished_ms: i64,
}

/// Write a finished capture's copy to `user_id`'s destination: transient failures are
/// tried again (three attempts, 1 s and 4 s apart), refusals (keys, missing bucket) are not.
pub async fn deliver(state: &AppState, user_id: &str, target: &StorageTarget, file: FileOut<'_>) -> Delivered {
    let failed = |e: String| Delivered { url: None, error: Some(e) };
    let row = match state.store.storage_destination(user_id, &target.destination).await {
        Ok(Some(r)) => r,
        Ok(None) => return failed(format!("the storage destination {} was deleted", target.destination)),
        Err(e) => {
            tracing::error!(error = %e, "reading a storage destination failed");
            return failed("the storage destination could not be read".into());
        }
    };
    let (Some(access_key_id), Some(secret_access_key)) =
        (state.master.decrypt(&row.access_key_id_enc), state.master.decrypt(&row.secret_access_key_enc))
    else {
        return failed("the destination's keys could not be opened (the service's master key changed)".into());
    };
    let (bucket_name, prefix) = match super::types::parse_s3_url(&row.url) {
        Ok(p) => p,
        Err(_) => return failed("the destination's URL is unreadable".into()),
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
    // One buffer for every attempt (a clone is a reference).
    let bytes = bytes::Bytes::from(file.bytes);
    let mut last: Option<Failure> = None;
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_secs(if attempt == 1 { 1 } else { 4 })).await;
        }
        match bucket.put(&state.egress, &key, bytes.clone(), file.content_type).await {
            Ok(()) => return Delivered { url: Some(bucket.object_url(&key)), error: None },
            Err(f) => {
                tracing::warn!(job = %file.job_id, destination = %row.id, reason = f.reason, error = %f.message, attempt,
                    "writing a capture to its storage destination failed");
                let again = f.transient();
                last = Some(f);
                if !again {
                    break;
                }
            }
        }
    }
    let f = last.unwrap_or(Failure { reason: "refused", code: None, message: "no attempt was made".into() });
    let tries = if f.transient() { format!(" after {ATTEMPTS} attempts") } else { String::new() };
    failed(format!("writing {} failed{tries}: {} ({})", bucket.object_url(&key), f.message, f.reason))
}
