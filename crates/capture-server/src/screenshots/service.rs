//! The screenshot operations, scoped to the calling account: create a job, find, view,
//! list, share, unshare, fetch a PDF. Plain async fns returning typed results and the
//! domain [`Error`], shared by the REST handlers, the MCP tools and the website.

use capture_core::credentials::CredentialsSet;
use std::collections::BTreeMap;

use capture_core::options::{CaptureOptions, ContentFormat, ContentSettings, ImageFormat};
use capture_core::time::iso;
use capture_core::{JobStatus, OutputFormat, ScreenshotId, StorageStatus, ids};
use capture_store::{
    BatchRefused, IdemClaim, IdemResponse, NewScreenshot, QueueLimits, QuotaExceeded, Refused, ScreenshotDone,
    ScreenshotRow,
};
use serde::{Deserialize, Serialize};

use super::types::{BatchCreated, Job, JobList, ShareLink};
use crate::auth::Account;
use crate::error::{Error, Result};
use crate::paging::{ListQuery, Window};
use crate::state::AppState;

/// What a `screenshot` task needs from the worker (the task's payload).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPayload {
    pub screenshot_id: ScreenshotId,
    /// Blob name of an uploaded HTML document to render instead of a URL.
    #[serde(default)]
    pub html_blob: Option<String>,
}

/// What a new job is made of.
#[derive(Debug, Clone)]
pub enum NewJob<'a> {
    /// Capture a page: `opts.url`, or an uploaded HTML document stored as `html_blob`
    /// (then `label` names it, `upload://…`).
    Capture { opts: &'a CaptureOptions, label: Option<String>, html_blob: Option<String> },
    /// Capture a page for a render link (`opts.cache_ttl` set): one of the owner's captures of
    /// the same request pending or running on any node is joined instead (see
    /// [`NewScreenshot::flight`]).
    Link { opts: &'a CaptureOptions },
    /// A file uploaded whole and stored already: the job is done at once.
    Stored { label: String, format: OutputFormat, done: ScreenshotDone },
}

/// A job just accepted, and the caller's usage after it.
#[derive(Debug, Clone)]
pub struct Created {
    pub job: Job,
    pub used: i64,
}

/// Create a job for one action. The quota is reserved and, for a capture, the queue bounds
/// are checked in the same transaction, so concurrent requests never pass the cap. With
/// `idem`, the response (the job as created) is stored for that Idempotency-Key in the same
/// transaction, so a job never exists without the answer that names it.
pub async fn create(state: &AppState, account: &Account, new: NewJob<'_>, idem: Option<&IdemClaim>) -> Result<Created> {
    // An account waiting for its e-mail to be verified has no quota yet.
    if state.store.email_unverified(&account.user.id).await? {
        return Err(Error::EmailUnverified(account.user.email.clone()));
    }
    let id = ScreenshotId::new();
    let now = state.clock.now_ms();
    // What the job is made of beyond its options: the sealed credentials, the cache entry it
    // makes (`cacheTtl`), or the done job whose file answers it (a cache hit, free).
    // A capture request is answered 202 (also when a cache hit makes it done at once); a
    // stored upload 201. The idempotent replay answers the same.
    let status: u16 = if matches!(new, NewJob::Stored { .. }) { 201 } else { 202 };
    let n = match new {
        NewJob::Capture { opts, label, html_blob } => {
            capture_job(state, account, &id, opts, label, html_blob, None, now).await?
        }
        NewJob::Link { opts } => {
            NewScreenshot { flight: true, ..capture_job(state, account, &id, opts, None, None, None, now).await? }
        }
        // Done at once: nothing waits in the queue.
        NewJob::Stored { label, format, done } => NewScreenshot {
            id: id.to_string(),
            user_id: account.user.id.clone(),
            key_id: account.key_id.clone(),
            url: label,
            options: "{}".to_string(),
            credentials: None,
            actions: 1,
            cache: None,
            cached_from: None,
            flight: false,
            batch: None,
            format: format.as_str().to_string(),
            month: account.window.label.clone(),
            limit: account.limit(),
            reset_at: iso(account.window.reset_ms),
            now,
            done: Some(done),
            task_payload: String::new(),
            queue_limits: QueueLimits::default(),
            traceparent: None,
        },
    };
    let queued = n.done.is_none();
    // The file URLs of a stored upload are made before the transaction, which cannot await.
    let (public_url, thumbnail_url) = match &n.done {
        Some(d) => (
            Some(state.file_url(&d.result_key).await),
            match &d.thumb_key {
                Some(t) => Some(state.file_url(t).await),
                None => None,
            },
        ),
        None => (None, None),
    };
    let content_urls = match &n.done {
        Some(d) => text_urls(state, &d.result_key, &n.options).await,
        None => None,
    };
    let render = |r: &ScreenshotRow| {
        let job = view_with(r, public_url.clone(), thumbnail_url.clone(), content_urls.clone());
        (status, serde_json::to_value(&job).map(|v| v.to_string()).unwrap_or_default())
    };
    let idem = idem.map(|claim| IdemResponse { claim, render: &render });
    match state.store.create_screenshot_with(&n, idem).await? {
        Ok((row, used)) => {
            if queued {
                state.wake.queued(crate::queues::Queue::Screenshot);
            }
            state.job_changed(&row.id);
            Ok(Created { job: view(state, &row).await, used })
        }
        Err(refused) => Err(account.refused(state, refused, None)),
    }
}

/// A capture job to insert: its options (never its credentials, which do not serialise;
/// they are kept sealed beside them until the job ends), and either the cache entry it makes
/// (`cacheTtl`) or, when an identical done capture is within its time, that capture's file
/// (a cache hit: done at once, free).
#[allow(clippy::too_many_arguments)]
async fn capture_job(
    state: &AppState,
    account: &Account,
    id: &ScreenshotId,
    opts: &CaptureOptions,
    label: Option<String>,
    html_blob: Option<String>,
    batch: Option<(String, i64)>,
    now: i64,
) -> Result<NewScreenshot> {
    // The language model's extraction needs a model: refused up front, never a failed job.
    if opts.model_actions() > 0 && state.cfg.llm.url.is_none() {
        return Err(Error::Refused(
            capture_core::ErrorCode::FeatureUnavailable,
            "extract.prompt needs a language model, and none is configured here (the operator sets CAPTURE_LLM_URL \
             and CAPTURE_LLM_MODEL; /readyz lists it under unavailableFeatures); use extract.rules instead"
                .into(),
        ));
    }
    let mut sealed = match &opts.credentials {
        Some(c) => Some(state.master.encrypt(&serde_json::to_string(c).map_err(Error::internal)?)),
        None => None,
    };
    // The destination is the caller's and in force (checked again when the file is written).
    if let Some(t) = &opts.storage {
        crate::storage::service::require(state, account, &t.destination).await?;
    }
    // The profile is the caller's and has a state; the job keeps its id.
    let (with_profile, profile);
    let opts = match &opts.profile {
        Some(p) => {
            let row = crate::profiles::service::resolve(state, account, p, "profile").await?;
            with_profile = CaptureOptions { profile: Some(row.id.clone()), ..opts.clone() };
            profile = Some(row);
            &with_profile
        }
        None => {
            profile = None;
            opts
        }
    };
    // The proxy is the caller's; the job keeps its id and the pool member that serves it.
    let with_proxy;
    let opts = match &opts.proxy {
        Some(_) => {
            with_proxy = crate::proxies::service::choose(state, account, opts).await?;
            &with_proxy
        }
        None => opts,
    };
    let (mut cache, mut cached_from, mut done) = (None, None, None);
    if let Some(ttl_s) = opts.cache_ttl {
        let ttl = i64::try_from(ttl_s).unwrap_or(i64::MAX / 2).saturating_mul(1000);
        let hash = cache_hash(state, opts, profile.as_ref());
        // A copy for the caller's bucket must be written: such a request is always captured
        // (its capture still answers later identical requests without `storage`).
        let hit = match opts.storage {
            Some(_) => None,
            None => state.store.cached_screenshot(&account.user.id, &hash, now).await?,
        };
        // The original is within its own TTL; it must also be within this request's.
        match hit.filter(|r| r.completed_at.is_some_and(|c| c + ttl > now)) {
            Some(orig) => {
                done = Some(ScreenshotDone {
                    result_key: orig.result_key.clone().ok_or_else(|| Error::internal("cached job without file"))?,
                    thumb_key: orig.thumb_key.clone(),
                    page_title: orig.page_title.clone(),
                    tags: orig.tags.clone(),
                    width: orig.width,
                    height: orig.height,
                    metadata: orig.metadata.clone(),
                    storage_url: None,
                    storage_error: None,
                });
                sealed = None;
                cached_from = Some(orig.id);
            }
            None => cache = Some((hash, now + ttl)),
        }
    }
    // A batch's bounds are checked for all its waiting jobs at once.
    let queue_limits =
        if done.is_some() && batch.is_none() { QueueLimits::default() } else { state.cfg.queue.limits() };
    let task_payload = match done {
        Some(_) => String::new(),
        None => {
            serde_json::to_string(&TaskPayload { screenshot_id: id.clone(), html_blob }).map_err(Error::internal)?
        }
    };
    Ok(NewScreenshot {
        id: id.to_string(),
        user_id: account.user.id.clone(),
        key_id: account.key_id.clone(),
        url: label.or_else(|| opts.url.clone()).unwrap_or_default(),
        options: serde_json::to_string(opts).map_err(Error::internal)?,
        credentials: sealed,
        // A cache hit costs nothing; a video one action per started 10 s.
        actions: if cached_from.is_some() { 0 } else { opts.actions() },
        cache,
        cached_from,
        flight: false,
        batch,
        format: opts.output_format().as_str().to_string(),
        month: account.window.label.clone(),
        limit: account.limit(),
        reset_at: iso(account.window.reset_ms),
        now,
        done,
        task_payload,
        queue_limits,
        // The worker's spans of the job continue the request's trace.
        traceparent: state.traces.current_traceparent(),
    })
}

/// A bulk request accepted: its id, its jobs in the request's order, and the usage after.
#[derive(Debug, Clone)]
pub struct CreatedBatch {
    pub batch_id: String,
    pub jobs: Vec<Job>,
    pub used: i64,
}

/// Create one job per options, all or nothing: the quota is reserved for every job or the
/// request is refused naming how many would fit; the queue bounds hold for all of them.
pub async fn create_batch(
    state: &AppState,
    account: &Account,
    all: &[CaptureOptions],
    idem: Option<&IdemClaim>,
) -> Result<CreatedBatch> {
    if state.store.email_unverified(&account.user.id).await? {
        return Err(Error::EmailUnverified(account.user.email.clone()));
    }
    let batch_id = format!("bat_{}", ids::random_string(24));
    let now = state.clock.now_ms();
    let mut jobs = Vec::with_capacity(all.len());
    for (i, opts) in all.iter().enumerate() {
        let id = ScreenshotId::new();
        jobs.push(capture_job(state, account, &id, opts, None, None, Some((batch_id.clone(), i as i64)), now).await?);
    }
    // Done jobs (cache hits) have their file URLs made before the transaction.
    let mut urls = std::collections::HashMap::new();
    for n in &jobs {
        if let Some(d) = &n.done {
            let thumb = match &d.thumb_key {
                Some(t) => Some(state.file_url(t).await),
                None => None,
            };
            let texts = text_urls(state, &d.result_key, &n.options).await;
            urls.insert(n.id.clone(), (Some(state.file_url(&d.result_key).await), thumb, texts));
        }
    }
    let view_all = |rows: &Vec<ScreenshotRow>| -> Vec<Job> {
        rows.iter()
            .map(|r| {
                let (p, t, c) = urls.get(&r.id).cloned().unwrap_or((None, None, None));
                view_with(r, p, t, c)
            })
            .collect()
    };
    let render = |rows: &Vec<ScreenshotRow>| {
        let body = BatchCreated { batch_id: batch_id.clone(), data: view_all(rows) };
        (202, serde_json::to_value(&body).map(|v| v.to_string()).unwrap_or_default())
    };
    let idem = idem.map(|claim| IdemResponse { claim, render: &render });
    match state.store.create_screenshot_batch(&batch_id, &jobs, idem).await? {
        Ok((rows, used)) => {
            state.wake.queued(crate::queues::Queue::Screenshot);
            for r in &rows {
                state.job_changed(&r.id);
            }
            Ok(CreatedBatch { batch_id: batch_id.clone(), jobs: view_all(&rows), used })
        }
        Err(BatchRefused::IdempotencyTakenOver) => Err(account.refused(state, Refused::IdempotencyTakenOver, None)),
        Err(BatchRefused::Quota { used, fits }) => {
            Err(account.refused(state, Refused::Quota(QuotaExceeded { used }), Some(fits)))
        }
        Err(BatchRefused::Queue(q)) => Err(account.refused(state, Refused::QueueFull(q), None)),
    }
}

/// The jobs of a batch of the caller, in the request's order.
pub async fn list_batch(state: &AppState, account: &Account, batch_id: &str) -> Result<JobList> {
    let rows = state.store.batch_screenshots(&account.user.id, batch_id).await?;
    let mut data = Vec::with_capacity(rows.len());
    for r in &rows {
        data.push(view(state, r).await);
    }
    Ok(JobList { data, next_cursor: None })
}

/// The job as every channel shows it. File URLs come from the blob store (proxied or
/// presigned), so they are made fresh each time a job is shown.
pub async fn view(state: &AppState, r: &ScreenshotRow) -> Job {
    let done = r.status == JobStatus::Done;
    let public_url = match r.result_key.as_ref().filter(|_| done) {
        Some(k) => Some(state.file_url(k).await),
        None => None,
    };
    let thumbnail_url = match r.thumb_key.as_ref().filter(|_| done) {
        Some(k) => Some(state.file_url(k).await),
        None => None,
    };
    let content_urls = match r.result_key.as_ref().filter(|_| done) {
        Some(k) => text_urls(state, k, &r.options).await,
        None => None,
    };
    view_with(r, public_url, thumbnail_url, content_urls)
}

/// The forms of the page as text a job keeps beside its own file (`content`), read from its
/// stored options.
pub fn extra_text_forms(options: &str) -> Vec<ContentFormat> {
    #[derive(Deserialize)]
    struct Stored {
        #[serde(default)]
        format: Option<ImageFormat>,
        #[serde(default)]
        content: Option<ContentSettings>,
    }
    // Most jobs have none: no parse for them.
    if !options.contains("\"content\"") {
        return Vec::new();
    }
    let Ok(s) = serde_json::from_str::<Stored>(options) else { return Vec::new() };
    let own = s.format.and_then(ImageFormat::content);
    s.content.map(|c| c.beside(own)).unwrap_or_default()
}

/// `contentUrls` of a done job whose file is `result_key`: each text form beside it, by name.
pub async fn text_urls(state: &AppState, result_key: &str, options: &str) -> Option<BTreeMap<String, String>> {
    let forms = extra_text_forms(options);
    if forms.is_empty() {
        return None;
    }
    let mut urls = BTreeMap::new();
    for f in forms {
        urls.insert(f.as_str().to_string(), state.file_url(&crate::blob::content_name(result_key, f)).await);
    }
    Some(urls)
}

/// The job with its file URLs already made (the create transaction renders the idempotent
/// response with it, where nothing can be awaited).
pub fn view_with(
    r: &ScreenshotRow,
    public_url: Option<String>,
    thumbnail_url: Option<String>,
    content_urls: Option<BTreeMap<String, String>>,
) -> Job {
    let status = r.status;
    let id = ScreenshotId::from_stored(r.id.clone());
    // Written by this service from a PageMetadata; unreadable JSON shows as none. What
    // `extract` read is shown beside it, as the job's data.
    let mut metadata: Option<capture_core::metadata::PageMetadata> =
        r.metadata.as_deref().and_then(|m| serde_json::from_str(m).ok());
    let extracted = metadata.as_mut().and_then(|m| m.extract.take());
    let (data, sources) = match extracted {
        Some(x) => (Some(x.data), Some(x.sources)),
        None => (None, None),
    };
    Job {
        id: id.clone(),
        screenshot_id: id,
        status,
        url: r.url.clone(),
        format: OutputFormat::parse(&r.format).unwrap_or(OutputFormat::Png),
        public_url,
        thumbnail_url,
        page_title: r.page_title.clone(),
        tags: r.tags.clone(),
        width: r.width,
        height: r.height,
        error: r.error.clone(),
        created_at: iso(r.created_at),
        completed_at: r.completed_at.map(iso),
        metadata,
        content_urls,
        data,
        sources,
        credentials: credentials_set(&r.options),
        cached: r.cached_from.is_some(),
        storage_url: r.storage_url.clone(),
        storage_error: r.storage_error.clone(),
        storage_status: r.storage_status.as_deref().and_then(StorageStatus::parse),
        proxy: proxy_served(&r.options),
    }
}

/// Which proxy (and pool member) served the job, read from its stored options.
fn proxy_served(options: &str) -> Option<crate::proxies::types::ProxyServed> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Stored {
        proxy: Option<String>,
        proxy_member: Option<u32>,
    }
    if !options.contains("\"proxy\"") {
        return None;
    }
    let s = serde_json::from_str::<Stored>(options).ok()?;
    Some(crate::proxies::types::ProxyServed { id: s.proxy?, member: s.proxy_member.unwrap_or(0) })
}

/// The cache's name for a request: a keyed hash (the master key's) of its checked options
/// in their one serialised order, without `cacheTtl` (the time a capture is kept does not
/// make it another capture), and of its credentials, so a request with other cookies never
/// gets another's page and the hash reveals nothing of them. A request from a browser profile
/// names it by id (`opts.profile` resolved) with its state's version (a digest of the sealed
/// state, new at every save): a profile signed in again, or as someone else, is another page.
pub fn cache_hash(state: &AppState, opts: &CaptureOptions, profile: Option<&capture_store::ProfileRow>) -> String {
    let mut v = serde_json::to_value(opts).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        m.remove("cacheTtl");
        // Where a copy is also written does not change the capture, nor which member of
        // the proxy's pool fetched it.
        m.remove("storage");
        m.remove("proxyMember");
    }
    let creds = opts.credentials.as_ref().and_then(|c| serde_json::to_string(c).ok()).unwrap_or_default();
    let mut named = format!("{v}\n{creds}");
    if let Some(sealed) = profile.and_then(|p| p.state_enc.as_deref()) {
        named.push('\n');
        named.push_str(&state.master.keyed_hash(sealed.as_bytes()));
    }
    state.master.keyed_hash(named.as_bytes())
}

/// Which credentials the job was given (names only), read from its stored options.
fn credentials_set(options: &str) -> Option<CredentialsSet> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Stored {
        credentials_set: Option<CredentialsSet>,
    }
    // Most jobs have none: no parse for them.
    if !options.contains("\"credentialsSet\"") {
        return None;
    }
    serde_json::from_str::<Stored>(options).ok().and_then(|s| s.credentials_set)
}

/// A job of the caller (its stored row), or `NotFound`.
pub async fn find(state: &AppState, account: &Account, id: &ScreenshotId) -> Result<ScreenshotRow> {
    if let Some(row) = state.hot.job(id.as_str(), &account.user.id) {
        return Ok((*row).clone());
    }
    let row = state
        .store
        .screenshot_of(&account.user.id, id.as_str())
        .await?
        .ok_or_else(|| Error::not_found(ScreenshotId::NOUN))?;
    state.hot.put_job(&row);
    Ok(row)
}

/// A job of the caller, as shown.
pub async fn get(state: &AppState, account: &Account, id: &ScreenshotId) -> Result<Job> {
    let row = find(state, account, id).await?;
    Ok(view(state, &row).await)
}

/// The caller's jobs, newest first, a page at a time.
pub async fn list(state: &AppState, account: &Account, q: &ListQuery) -> Result<JobList> {
    let w = Window::of(q, |id| ids::looks_like(ids::SCREENSHOT, id))?;
    let rows = state.store.list_screenshots(&account.user.id, w.before.clone(), w.fetch()).await?;
    let page = w.page(rows, |r| (r.created_at, r.id.as_str()));
    let mut data = Vec::with_capacity(page.rows.len());
    for r in &page.rows {
        data.push(view(state, r).await);
    }
    Ok(JobList { data, next_cursor: page.next_cursor })
}

/// The public page of a share token.
pub fn share_url(state: &AppState, token: &str) -> String {
    format!("{}/s/{token}", state.base_url)
}

/// Mint the job's public share link (or return the one in force).
pub async fn share(state: &AppState, account: &Account, id: &ScreenshotId) -> Result<ShareLink> {
    find(state, account, id).await?;
    let token = state
        .store
        .share(&account.user.id, id.as_str(), &ids::random_string(32))
        .await?
        .ok_or_else(|| Error::not_found(ScreenshotId::NOUN))?;
    Ok(ShareLink { share_url: share_url(state, &token), screenshot_id: id.clone() })
}

/// Revoke the job's share link: the public page stops working.
pub async fn unshare(state: &AppState, account: &Account, id: &ScreenshotId) -> Result<()> {
    find(state, account, id).await?;
    state.store.unshare(&account.user.id, id.as_str()).await?;
    Ok(())
}

/// A PDF job's file, with the name to download it as.
#[derive(Debug, Clone)]
pub struct PdfFile {
    pub bytes: Vec<u8>,
    pub filename: String,
}

/// The file of a finished PDF job of the caller.
pub async fn pdf(state: &AppState, account: &Account, id: &ScreenshotId) -> Result<PdfFile> {
    let row = find(state, account, id).await?;
    let key = match (&row.result_key, row.format.as_str(), row.status.as_str()) {
        (Some(k), "pdf", "done") => k.clone(),
        (_, "pdf", _) => return Err(Error::not_found("PDF (the job has not finished)")),
        _ => return Err(Error::not_found("PDF (this job is an image)")),
    };
    let bytes = state.blobs.get(&key).await.map_err(Error::internal)?.ok_or_else(|| Error::not_found("PDF"))?;
    let host = url::Url::parse(&row.url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| "capture".into());
    Ok(PdfFile { bytes, filename: format!("{}-{}.pdf", sanitize_filename(&host), row.id) })
}

/// A file name safe in a header and a label: its last path segment, `[A-Za-z0-9._-]`.
pub fn sanitize_filename(s: &str) -> String {
    let base = s.rsplit(['/', '\\']).next().unwrap_or(s);
    let clean: String = base
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' { c } else { '_' })
        .take(100)
        .collect();
    if clean.is_empty() { "upload".into() } else { clean }
}
