//! Signed render links: a URL that answers the capture itself, for an `<img src>` or a
//! download, signed with a per-account link key (never an API key) so it can sit on a
//! public page without revealing a secret or being altered.
//!
//! A link is `GET /v1/render?url=…&<options>&key=rlk_…&expires=<unix s>&signature=<hex>`;
//! the signature is HMAC-SHA256, keyed with the link key's secret, of the query string
//! exactly as sent up to the `&signature=` that ends it. Links cache for a day unless they
//! set `cacheTtl`: the first view captures (one action), later ones are served from that
//! capture's file (`X-Cache: HIT`, free) until it expires. A link never bills its owner per
//! view: every view while its capture is pending or running joins that one capture (on any
//! node), a failed capture is answered again for [`NEGATIVE_TTL`] without a new one, and a
//! link starts at most `capturesPerHour` captures an hour (signed with it; default
//! [`DEFAULT_CAPTURES_PER_HOUR`]), answering `429 RATE_LIMITED` past that.

use std::time::Duration;

use capture_core::options::{CaptureOptions, ScreenshotIn};
use capture_core::time::iso;
use capture_core::{ErrorCode, JobStatus, RenderKeyId, ScreenshotId, ids};
use capture_store::{RenderKey as StoredKey, ScreenshotRow};

use super::types::{RenderKey, RenderKeyCreated, RenderKeyList, RenderPending};
use crate::auth::{Account, account_of_user};
use crate::crypto::{ct_eq, hmac_sha256_hex};
use crate::error::{Error, Result};
use crate::http::validated::validate;
use crate::screenshots::service::{NewJob, cache_hash, create};
use crate::screenshots::types::form_to_json;
use crate::state::AppState;

/// How long a link's capture is reused when the link sets no `cacheTtl`: one day.
pub const DEFAULT_CACHE_TTL: u64 = 24 * 3600;
/// How long a view waits for its capture before answering 202 with the job.
pub const WAIT: Duration = Duration::from_secs(60);
/// How long a link's failed capture answers its views (free) before one captures again.
pub const NEGATIVE_TTL: Duration = Duration::from_secs(60);
/// Captures a link may start in an hour unless it is signed with `capturesPerHour`.
pub const DEFAULT_CAPTURES_PER_HOUR: u32 = 60;
/// The most a link may set.
pub const MAX_CAPTURES_PER_HOUR: u32 = 1000;
/// The link's own parameters (signed with it) that are not capture options.
const LINK_PARAMS: [&str; 3] = ["key", "expires", "capturesPerHour"];

/// Make a key; its secret is in the answer only.
pub async fn create_key(state: &AppState, account: &Account, name: String) -> Result<RenderKeyCreated> {
    let id = RenderKeyId::new();
    let secret = format!("rks_{}", ids::random_string(40));
    let now = state.clock.now_ms();
    let key = StoredKey {
        id: id.to_string(),
        user_id: account.user.id.clone(),
        name: name.clone(),
        secret_enc: state.master.encrypt(&secret),
        created_at: now,
        revoked_at: None,
    };
    state.store.create_render_key(&key).await?;
    Ok(RenderKeyCreated { id, name, secret, created_at: iso(now) })
}

/// The caller's keys in force, oldest first.
pub async fn list_keys(state: &AppState, account: &Account) -> Result<RenderKeyList> {
    let data = state
        .store
        .list_render_keys(&account.user.id)
        .await?
        .into_iter()
        .map(|k| RenderKey { id: RenderKeyId::from_stored(k.id), name: k.name, created_at: iso(k.created_at) })
        .collect();
    Ok(RenderKeyList { data })
}

/// Revoke a key: every link it signed stops working at once.
pub async fn delete_key(state: &AppState, account: &Account, id: &RenderKeyId) -> Result<()> {
    match state.store.revoke_render_key(&account.user.id, id.as_str(), state.clock.now_ms()).await? {
        true => Ok(()),
        false => Err(Error::not_found(RenderKeyId::NOUN)),
    }
}

/// The signature of `signed` (a link's query string up to `&signature=`) under `secret`:
/// lowercase hex HMAC-SHA256.
pub fn sign(secret: &str, signed: &str) -> String {
    hmac_sha256_hex(secret.as_bytes(), signed.as_bytes())
}

/// A link whose signature holds: its owner, its capture options as query pairs, and the
/// captures it may start an hour.
pub struct Verified {
    pub account: Account,
    pub params: Vec<(String, String)>,
    pub captures_per_hour: u32,
}

fn unauthorized(why: &str) -> Error {
    Error::Refused(ErrorCode::Unauthorized, why.to_string())
}

/// Check a link: its signature first (so nothing is learnt about keys without one), then
/// that its key is in force and the link has not expired.
pub async fn verify(state: &AppState, raw_query: &str) -> Result<Verified> {
    let Some((signed, signature)) = raw_query.rsplit_once("&signature=") else {
        return Err(unauthorized("a render link ends with &signature=<hex HMAC-SHA256 of the query before it>"));
    };
    if signature.len() != 64 || !signature.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(unauthorized("the link's signature is not 64 hex characters"));
    }
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(signed).map_err(|_| unauthorized("the link's query string cannot be read"))?;
    let mismatch = || unauthorized("the link's signature does not match its key");
    let key_id = pairs
        .iter()
        .find(|(k, _)| k == "key")
        .map(|(_, v)| v.as_str())
        .ok_or_else(|| unauthorized("the link names no key (key=rlk_…, from POST /v1/render-keys)"))?;
    let key = match RenderKeyId::parse(key_id) {
        Some(id) => state.store.render_key(id.as_str()).await?,
        None => None,
    };
    let Some(key) = key else { return Err(mismatch()) };
    let secret = state.master.decrypt(&key.secret_enc).ok_or_else(|| Error::internal("render key unreadable"))?;
    if !ct_eq(sign(&secret, signed).as_bytes(), signature.to_ascii_lowercase().as_bytes()) {
        return Err(mismatch());
    }
    if key.revoked_at.is_some() {
        return Err(Error::Refused(ErrorCode::Forbidden, format!("the render key {} was revoked", key.id)));
    }
    if let Some((_, e)) = pairs.iter().find(|(k, _)| k == "expires") {
        let at: i64 = e
            .parse()
            .map_err(|_| Error::Invalid(capture_core::FieldError::new("expires", "must be a time in unix seconds")))?;
        if at.saturating_mul(1000) <= state.clock.now_ms() {
            return Err(Error::Refused(ErrorCode::Forbidden, format!("the link expired at {}", iso(at * 1000))));
        }
    }
    let captures_per_hour = match pairs.iter().find(|(k, _)| k == "capturesPerHour") {
        None => DEFAULT_CAPTURES_PER_HOUR,
        Some((_, v)) => v.parse().ok().filter(|n| (1..=MAX_CAPTURES_PER_HOUR).contains(n)).ok_or_else(|| {
            Error::Invalid(capture_core::FieldError::new(
                "capturesPerHour",
                format!("must be a whole number from 1 to {MAX_CAPTURES_PER_HOUR}"),
            ))
        })?,
    };
    let user = state.store.user_by_id(&key.user_id).await?.ok_or_else(mismatch)?;
    let account = account_of_user(state, &user).await?;
    let params = pairs.into_iter().filter(|(k, _)| !LINK_PARAMS.contains(&k.as_str())).collect();
    Ok(Verified { account, params, captures_per_hour })
}

/// What a view of a link answers.
pub enum Answer {
    /// The capture's file.
    File {
        bytes: Vec<u8>,
        /// The file's stored name (its headers follow from it: [`crate::blob::serve_headers`]).
        name: String,
        /// The file's name, quoted: the same for every view served from one capture.
        etag: String,
        /// Seconds the answer may be reused (what is left of the capture's `cacheTtl`).
        max_age: i64,
        /// Served from an earlier capture: its age in seconds.
        hit: Option<i64>,
    },
    /// Not done within [`WAIT`].
    Pending(RenderPending),
}

/// Answer a verified link: from the cache, by joining the same capture in progress, from its
/// recent failure, or by capturing (one action) within its rate; waiting up to [`WAIT`].
pub async fn render(state: &AppState, v: Verified) -> Result<Answer> {
    let mut opts: CaptureOptions = validate::<ScreenshotIn>(&form_to_json(&v.params)).map_err(Error::Invalid)?;
    let ttl = *opts.cache_ttl.get_or_insert(DEFAULT_CACHE_TTL);
    let user = &v.account.user.id;
    // A profile named by name is the same capture as by id, and another once its state changed.
    let profile = match &opts.profile {
        Some(p) => Some(crate::profiles::service::resolve(state, &v.account, p, "profile").await?),
        None => None,
    };
    if let Some(p) = &profile {
        opts.profile = Some(p.id.clone());
    }
    // A proxy named by name is the same capture as by id (the member is chosen per job).
    if opts.proxy.is_some() {
        opts = crate::proxies::service::resolve(state, &v.account, &opts).await?;
    }
    let hash = cache_hash(state, &opts, profile.as_ref());
    let now = state.clock.now_ms();
    let fresh = |r: &ScreenshotRow| r.completed_at.is_some_and(|c| c + (ttl as i64) * 1000 > now);
    if let Some(orig) = state.store.cached_screenshot(user, &hash, now).await?.filter(fresh) {
        let age = (now - orig.completed_at.unwrap_or(now)) / 1000;
        return file(state, &orig, Some(age)).await;
    }
    // Subscribed before the capture is found or created, so no change is missed.
    let mut changes = state.job_events.subscribe();
    let id = match state.store.running_screenshot(user, &hash).await? {
        Some(running) => running.id,
        None => {
            // The last capture failed a moment ago: the same answer, nothing started.
            let negative = NEGATIVE_TTL.min(Duration::from_secs(ttl.max(1))).as_millis() as i64;
            if let Some(failed) = state.store.failed_screenshot_since(user, &hash, now - negative).await? {
                let again = (failed.completed_at.unwrap_or(now) + negative - now).max(0) / 1000 + 1;
                return Err(failed_capture(&failed, Some(again)));
            }
            let hour = 3_600_000;
            let (started, oldest) = state.store.captures_since(user, &hash, now - hour).await?;
            if started >= i64::from(v.captures_per_hour) {
                let retry_after = (oldest.unwrap_or(now) + hour - now).max(0) / 1000 + 1;
                return Err(Error::RateLimited {
                    message: format!(
                        "this link started {started} captures in the last hour, the most its owner allows \
                         (capturesPerHour {}); retry in {retry_after} seconds",
                        v.captures_per_hour
                    ),
                    limit: v.captures_per_hour,
                    per: "hour",
                    retry_after,
                });
            }
            create(state, &v.account, NewJob::Link { opts: &opts }, None).await?.job.id.to_string()
        }
    };
    let row = wait(state, &mut changes, user, &id).await?;
    match row.status {
        JobStatus::Done => file(state, &row, None).await,
        JobStatus::Failed => Err(failed_capture(&row, None)),
        status => Ok(Answer::Pending(RenderPending { id: row.id, status })),
    }
}

/// A link's failed capture as its views are answered (`again`: seconds until a view may
/// capture again, when answered from the negative cache).
fn failed_capture(row: &ScreenshotRow, again: Option<i64>) -> Error {
    let why = row.error.as_deref().unwrap_or("unknown error");
    let message = match again {
        None => format!("the capture {} failed: {why}", row.id),
        Some(s) => format!("the capture {} failed: {why} (this link captures again in {s} seconds)", row.id),
    };
    Error::Refused(ErrorCode::CaptureFailed, message)
}

/// The job once it is done or failed, or as it is after [`WAIT`] (or at shutdown).
/// `changes` was subscribed before the job was created or found.
async fn wait(
    state: &AppState,
    changes: &mut tokio::sync::broadcast::Receiver<String>,
    user: &str,
    id: &str,
) -> Result<ScreenshotRow> {
    let until = tokio::time::Instant::now() + WAIT;
    let mut poll = tokio::time::interval(state.cfg.queue.poll.max(Duration::from_millis(200)));
    loop {
        let row = state.store.screenshot_of(user, id).await?.ok_or_else(|| Error::not_found(ScreenshotId::NOUN))?;
        if row.status.is_final() || !state.next_change(changes, id, &mut poll, until).await {
            return Ok(row);
        }
    }
}

async fn file(state: &AppState, row: &ScreenshotRow, hit: Option<i64>) -> Result<Answer> {
    let key = row.result_key.as_deref().ok_or_else(|| Error::internal("done job without file"))?;
    let bytes = state.blobs.get(key).await.map_err(Error::internal)?.ok_or_else(|| Error::not_found("file"))?;
    let max_age = (row.cache_until.unwrap_or(0) - state.clock.now_ms()).max(0) / 1000;
    Ok(Answer::File { bytes, name: key.to_owned(), etag: format!("\"{key}\""), max_age, hit })
}
