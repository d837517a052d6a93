//! The `screenshot` queue: render each job in the browser pool, store the files and record
//! the outcome — fenced on the task lease, so a worker that lost its lease never overwrites
//! a newer result.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use capture_browser::{BrowserPool, CaptureError, CaptureRequest, PageSource};
use capture_core::limits::{self, truncate_chars};
use capture_core::options::CaptureOptions;
use capture_core::{ScreenshotId, StorageStatus};
use capture_store::{ScreenshotDone, Task};
use opentelemetry::KeyValue;
use tokio_util::sync::CancellationToken;

use super::claim_loop;
use crate::blob;
use crate::screenshots::service::TaskPayload;
use crate::screenshots::types::ScreenshotCompleted;
use crate::state::AppState;
use crate::traces::Stage;

/// Claims beyond this many (crashed workers, lost leases) fail the job for good.
const MAX_CLAIMS: i64 = 5;
/// Transient browser failures retried within one claim.
const BROWSER_RETRIES: usize = 2;

/// How often a node whose slots are all taken looks for another account kept out.
const FAIRNESS_TICK: Duration = Duration::from_millis(250);
/// How long another account's task must have waited before a slot is freed for it (in a
/// cluster, another node with a free slot takes it well within this).
const FAIRNESS_WAIT_MS: i64 = 250;
/// A capture handed back this many times keeps its slot from then on.
pub(crate) const MAX_HAND_BACKS: i64 = 2;
/// Captures: `CAPTURE_WORKER_CONCURRENCY` workers on a browser node.
pub const WORKERS: super::Kind = super::Kind {
    name: "screenshot",
    runs_on: super::RunsOn::Browser,
    start: |s| {
        Box::pin(async move {
            let n = s.state.cfg.browser.worker_concurrency;
            run(s.state.clone(), s.pool(), n, s.stop, s.hard_stop).await
        })
    },
};

/// Run `n` worker loops until `stop` is cancelled; in-flight captures go on until
/// `hard_stop`, then they are handed back to the queue.
///
/// Claims are fair across accounts ([`capture_store::Store::claim_fair`]: the account with
/// the fewest captures running goes first, within its plan's cap). The plan caps can exceed
/// a node's slots, so this node also keeps a [`Board`] of who holds its slots and shares them
/// max-min fairly: when every slot is taken and an account's capture has been waiting, the
/// account holding the most slots (ties: the one whose newest capture is newest) hands its
/// newest capture back to the queue (not counted as an attempt) as long as it would still hold
/// at least as many as the waiting account — so the waiting account gets a slot and, under
/// contention, everyone comes down to an equal share. Alone, an account may use every slot. A
/// capture handed back [`MAX_HAND_BACKS`] times is not chosen again (no livelock).
pub async fn run(
    state: AppState,
    pool: Arc<BrowserPool>,
    n: usize,
    stop: CancellationToken,
    hard_stop: CancellationToken,
) {
    let node = capture_core::ids::random_string(8);
    let board = Arc::new(Board::default());
    let mut handles = Vec::new();
    for i in 0..n {
        let worker_id = format!("{node}-{i}");
        handles.push(tokio::spawn(worker_loop(
            state.clone(),
            pool.clone(),
            board.clone(),
            worker_id,
            stop.clone(),
            hard_stop.clone(),
        )));
    }
    handles.push(tokio::spawn(keep_fair(state.clone(), board, n, stop.clone())));
    for h in handles {
        let _ = h.await;
    }
}

async fn worker_loop(
    state: AppState,
    pool: Arc<BrowserPool>,
    board: Arc<Board>,
    id: String,
    stop: CancellationToken,
    hard_stop: CancellationToken,
) {
    let lease_ms = state.cfg.queue.lease.as_millis() as i64;
    let share = state.cfg.queue.fair_share();
    claim_loop(
        &state,
        "screenshot",
        &id,
        lease_ms,
        Some(&share),
        state.wake.of(crate::queues::Queue::Screenshot),
        &stop,
        |task| {
            let seat = board.take(&task);
            let (state, pool, id, hard_stop) = (&state, &pool, &id, &hard_stop);
            async move { process(state, pool, id, task, hard_stop, &seat).await }
        },
    )
    .await
}

/// While every slot of this node is taken, look for an account kept out and free a slot
/// for it (see [`run`]).
async fn keep_fair(state: AppState, board: Arc<Board>, n: usize, stop: CancellationToken) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(FAIRNESS_TICK) => {}
        }
        if board.held() < n {
            continue;
        }
        let waiting = match state.store.waiting_accounts("screenshot", state.clock.now_ms(), FAIRNESS_WAIT_MS).await {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(error = %e, "reading the waiting accounts failed");
                continue;
            }
        };
        if let Some((job, account)) = board.hand_back_for(n, &waiting) {
            state.metrics.capture_handed_back();
            tracing::info!(job = %job, account = ?account, "every slot is taken and another account waits: \
                the account holding most hands its newest capture back to the queue");
        }
    }
}

/// Who holds this node's capture slots.
#[derive(Default)]
pub(crate) struct Board {
    seats: std::sync::Mutex<Vec<Held>>,
}

struct Held {
    task_id: String,
    job_id: String,
    account: Option<String>,
    since: Instant,
    /// Times the task was handed back before this claim.
    handed_back: i64,
    /// Cancelled when the capture is to go back to the queue.
    hand_back: CancellationToken,
}

/// A slot held by one capture; leaves the board when dropped.
pub(crate) struct Seat {
    board: Arc<Board>,
    task_id: String,
    /// Cancelled when the capture is to go back to the queue.
    pub(crate) hand_back: CancellationToken,
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.board.seats().retain(|h| h.task_id != self.task_id);
    }
}

impl Board {
    fn seats(&self) -> std::sync::MutexGuard<'_, Vec<Held>> {
        self.seats.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Take a slot for `task`.
    pub(crate) fn take(self: &Arc<Self>, task: &Task) -> Seat {
        let hand_back = CancellationToken::new();
        self.seats().push(Held {
            task_id: task.id.clone(),
            job_id: task.subject_id.clone(),
            account: task.account_id.clone(),
            since: Instant::now(),
            handed_back: task.handed_back,
            hand_back: hand_back.clone(),
        });
        Seat { board: self.clone(), task_id: task.id.clone(), hand_back }
    }

    /// Slots taken.
    pub(crate) fn held(&self) -> usize {
        self.seats().len()
    }

    /// With `n` slots all taken and `waiting` the accounts whose work waits: the account
    /// holding most (ties: the one whose newest capture is newest) hands its newest capture
    /// back when it holds at least two more slots than the waiting account holding fewest, so
    /// the transfer never leaves it below that account (max-min fairness: an account waiting
    /// with no slot is always served while anyone holds two). Captures already being handed
    /// back do not count; one handed back [`MAX_HAND_BACKS`] times is passed over. Returns
    /// the job and account handed back.
    pub(crate) fn hand_back_for(&self, n: usize, waiting: &[Option<String>]) -> Option<(String, Option<String>)> {
        let seats = self.seats();
        let live: Vec<&Held> = seats.iter().filter(|h| !h.hand_back.is_cancelled()).collect();
        if live.len() < n {
            return None;
        }
        let count = |a: &Option<String>| live.iter().filter(|h| &h.account == a).count();
        let least = waiting.iter().map(count).min()?;
        // (account, slots held, its newest claim), most slots first, then the newest.
        let mut holders: Vec<(&Option<String>, usize, Instant)> = Vec::new();
        for h in &live {
            match holders.iter_mut().find(|x| x.0 == &h.account) {
                Some(x) => {
                    x.1 += 1;
                    x.2 = x.2.max(h.since);
                }
                None => holders.push((&h.account, 1, h.since)),
            }
        }
        holders.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)));
        for (account, held, _) in holders {
            if held < least + 2 {
                break;
            }
            let newest =
                live.iter().filter(|h| &h.account == account && h.handed_back < MAX_HAND_BACKS).max_by_key(|h| h.since);
            if let Some(seat) = newest {
                seat.hand_back.cancel();
                return Some((seat.job_id.clone(), seat.account.clone()));
            }
        }
        None
    }
}

fn request_for(opts: &CaptureOptions, source: PageSource) -> CaptureRequest {
    // Navigation, clickBefore and waitFor each get timeoutMs; the rest gets a fixed margin.
    let deadline = Duration::from_millis(opts.timeout_ms * 3 + opts.delay + 30_000).min(Duration::from_secs(240));
    // A video's frames are taken one by one: up to 200 ms each on a busy machine.
    let deadline = match &opts.scroll {
        Some(s) => deadline + Duration::from_millis(u64::from(s.frames()) * 200),
        None => deadline,
    };
    CaptureRequest { source, options: opts.clone(), deadline, proxy: None }
}

/// Whether a failed capture keeps its action: the job held a worker for its own sake — it
/// ran into its deadline or a timeout of its own options, its own script failed, or the page
/// answered but failed the request's own conditions (`failOnHttpError`, `failIfContent…`).
/// Everything else is given back: pages that could not be reached at all (nothing
/// rendered), a `selector` that matches nothing (nothing captured), refusals of the egress
/// guard, browser crashes after the retries, interruptions and storage failures.
///
/// A video (`video`: a scrolling capture) is charged for what it delivered: one that ran past
/// its whole deadline produced no file — on a busy node its frames come slower, which is the
/// service's doing — so it is given back. Its own `timeoutMs` running out is still its own.
pub fn charged(e: &CaptureError, video: bool) -> bool {
    match e {
        CaptureError::Timeout(_) => true,
        CaptureError::Deadline(_) => !video,
        CaptureError::Script(_) | CaptureError::Rejected(_) => true,
        _ => false,
    }
}

async fn process(
    state: &AppState,
    pool: &BrowserPool,
    worker: &str,
    task: Task,
    hard_stop: &CancellationToken,
    seat: &Seat,
) {
    let job_id = task.subject_id.clone();
    let t0 = Instant::now();
    // `refund`: whether the job's action is given back (see `charged`).
    let fail = |msg: String, refund: bool| {
        let state = state.clone();
        let (tid, w, jid) = (task.id.clone(), worker.to_string(), job_id.clone());
        // A page's exception text is the page's to choose: kept to a documented length.
        let msg = truncate_chars(&msg, limits::ERROR_MAX);
        async move {
            match state.store.fail_screenshot(&tid, &w, &jid, &msg, refund, state.clock.now_ms()).await {
                Ok(true) => state.job_changed(&jid),
                Ok(false) => tracing::warn!(job = %jid, "lease lost before recording the failure"),
                Err(e) => tracing::error!(job = %jid, error = %e, "recording a failure failed"),
            }
        }
    };
    if task.attempts > MAX_CLAIMS {
        fail("the capture was interrupted too many times (worker restarts)".into(), true).await;
        return;
    }
    let job = match state.store.screenshot(&job_id).await {
        Ok(Some(j)) => j,
        Ok(None) => return fail("the job no longer exists".into(), true).await,
        Err(e) => {
            tracing::error!(error = %e, "loading job failed; the lease will expire and it will be retried");
            return;
        }
    };
    let payload: TaskPayload = match serde_json::from_str(&task.payload) {
        Ok(p) => p,
        Err(e) => return fail(format!("corrupt task payload: {e}"), true).await,
    };
    let mut opts: CaptureOptions = match serde_json::from_str(&job.options) {
        Ok(o) => o,
        Err(e) => return fail(format!("corrupt job options: {e}"), true).await,
    };
    // The credentials were sealed with the master key when the job was created.
    if let Some(sealed) = &job.credentials {
        match state.master.decrypt(sealed).and_then(|c| serde_json::from_str(&c).ok()) {
            Some(c) => opts.credentials = Some(c),
            None => {
                let why =
                    "the job's credentials could not be opened (the service's master key changed since it was created)";
                return fail(why.into(), true).await;
            }
        }
    }
    // A profile's state is opened now: one saved since the job was made is the one used.
    if let Some(profile) = opts.profile.clone() {
        match crate::profiles::service::for_job(state, &job.user_id, &profile).await {
            Ok(s) => opts.state = Some(s),
            Err(why) => return fail(why, true).await,
        }
    }
    // The customer's proxy is opened now (its URLs as they are: one changed since the job
    // was made is the one used); a deleted one fails the job, not charged.
    let proxy = match (&opts.proxy, opts.proxy_member) {
        (Some(id), member) => {
            match crate::proxies::service::for_job(state, &job.user_id, id, member.unwrap_or(0)).await {
                Ok(up) => Some(up),
                Err(why) => return fail(why, true).await,
            }
        }
        (None, _) => None,
    };
    let source = match (&payload.html_blob, &opts.url) {
        (Some(name), _) => match state.blobs.get(name).await {
            Ok(Some(b)) => PageSource::Html(String::from_utf8_lossy(&b).into_owned()),
            Ok(None) => return fail("the uploaded document is missing".into(), true).await,
            Err(e) => {
                tracing::error!(error = %e, "reading uploaded HTML failed");
                return;
            }
        },
        (None, Some(u)) => PageSource::Url(u.clone()),
        (None, None) => return fail("the job has no URL".into(), true).await,
    };
    // Traced, the job's spans continue the trace of the request that made it: its wait in the
    // queue and this attempt, from the times the job's page shows.
    let trace = state.traces.job(job.traceparent.as_deref());
    let began_ms = state.clock.now_ms();
    match state.store.mark_processing(&job_id, began_ms).await {
        Ok(first) => {
            state.job_changed(&job_id);
            if let Some(t) = trace.as_ref().filter(|_| first) {
                let attrs = vec![KeyValue::new("capture.job.id", job_id.clone())];
                t.span("queue.wait", t.at_ms(job.created_at), t.at_ms(began_ms), attrs);
            }
        }
        Err(e) => tracing::error!(error = %e, "marking job processing failed"),
    }
    let trace = trace.map(|t| {
        let attrs = vec![
            KeyValue::new("capture.job.id", job_id.clone()),
            KeyValue::new("capture.job.attempt", task.attempts),
            KeyValue::new("capture.job.format", opts.output_format().as_str()),
        ];
        t.open("capture", t.at_ms(began_ms), attrs)
    });

    // Keep the lease alive while the browser works.
    let lease = super::keep_lease(state, &task.id, worker);

    let req = CaptureRequest { proxy, ..request_for(&opts, source) };
    let started = Instant::now();
    let capture = async {
        let mut attempt = 0;
        loop {
            match pool.capture(req.clone()).await {
                Err(e) if e.is_transient() && attempt < BROWSER_RETRIES => {
                    attempt += 1;
                    state.metrics.capture_retry();
                    tracing::warn!(job = %job_id, error = %e, attempt, "transient browser failure; retrying");
                }
                other => return other,
            }
        }
    };
    // Shutdown, or another account waiting for this slot: the job goes back to the queue.
    let (task_ref, job_ref) = (&task.id, &job_id);
    let hand_back = |fairness: bool| async move {
        let (task, job_id) = (task_ref, job_ref);
        let put_back = match fairness {
            true => state.store.hand_back(task, worker, job_id, state.clock.now_ms()).await,
            false => state.store.release(task, worker, job_id, state.clock.now_ms()).await,
        };
        match put_back {
            Ok(_) => state.job_changed(job_id),
            Err(e) => tracing::error!(error = %e, "handing a job back failed; its lease will expire"),
        }
    };
    let result: Result<capture_browser::CaptureOutput, CaptureError> = tokio::select! {
        r = capture => r,
        _ = hard_stop.cancelled() => {
            hand_back(false).await;
            tracing::info!(job = %job_id, "shutdown: capture handed back to the queue");
            return;
        }
        _ = seat.hand_back.cancelled() => return hand_back(true).await,
    };
    // The browser's steps, as it timed them.
    if let (Some(t), Ok(out)) = (&trace, &result) {
        let p = &out.phases;
        for step in &p.steps {
            t.span(step.name, p.at(step.start), p.at(step.end), Vec::new());
        }
    }
    let finish =
        Finish { state: state.clone(), task, worker: worker.to_string(), job, opts, t0, started, lease, trace };
    match result {
        // A video's frames are encoded off the capture slot (the browser's page is already
        // given back): the worker claims its next job while the encode waits for this node's
        // video memory and runs. At most as many encodes wait as the node has slots; past
        // that the worker waits here, holding its slot, so frames never pile up on disk.
        Ok(out) if out.video.is_some() => {
            let Ok(waiting) = state.browser.video_waiting.clone().acquire_owned().await else { return };
            let hard_stop = hard_stop.clone();
            tokio::spawn(async move {
                let _waiting = waiting;
                finish.video(out, hard_stop).await;
            });
        }
        other => finish.record(other).await,
    }
}

/// What is left of a job once its page was captured: storing the file and recording the
/// outcome, fenced on the task's lease (kept alive until this is dropped).
struct Finish {
    state: AppState,
    task: Task,
    worker: String,
    job: capture_store::ScreenshotRow,
    opts: CaptureOptions,
    t0: Instant,
    started: Instant,
    lease: tokio_util::sync::DropGuard,
    /// The job's `capture` span, when traced.
    trace: Option<Stage>,
}

/// How long a video may wait for this node's video memory before it fails (refunded).
const VIDEO_QUEUE_LIMIT: Duration = Duration::from_secs(600);

impl Finish {
    /// Record a permanent failure; `refund` gives the job's actions back (see `charged`).
    /// A charged failure keeps the capture's own actions: the language model's (which did not
    /// answer, or not validly) is given back.
    async fn fail(&self, msg: String, refund: bool) {
        // A page's exception text is the page's to choose: kept to a documented length.
        let msg = truncate_chars(&msg, limits::ERROR_MAX);
        let (state, jid) = (&self.state, &self.job.id);
        let kept = if refund { 0 } else { self.opts.actions() - self.opts.model_actions() };
        let now = state.clock.now_ms();
        if let Some(t) = &self.trace {
            t.fail(&msg);
            t.end(t.at_ms(now));
        }
        match state.store.fail_screenshot_keeping(&self.task.id, &self.worker, jid, &msg, kept, now).await {
            Ok(true) => state.job_changed(jid),
            Ok(false) => tracing::warn!(job = %jid, "lease lost before recording the failure"),
            Err(e) => tracing::error!(job = %jid, error = %e, "recording a failure failed"),
        }
    }

    /// Encode a video's frames within this node's video memory, then record it. At shutdown
    /// the job goes back to the queue.
    async fn video(self, mut out: capture_browser::CaptureOutput, hard_stop: CancellationToken) {
        let encoded = async {
            // The frames are the viewport's size (at its pixel ratio) unless the capture says.
            let scale = self.opts.device_scale_factor;
            let w = out.width.unwrap_or((f64::from(self.opts.width) * scale) as u32);
            let h = out.height.unwrap_or((f64::from(self.opts.height) * scale) as u32);
            let need = capture_media::encode_memory_mib(video_kind(&self.opts), w, h);
            let permits = need.min(self.state.cfg.browser.video_memory >> 20).max(1) as u32;
            let budget =
                match tokio::time::timeout(VIDEO_QUEUE_LIMIT, self.state.browser.video_memory.acquire_many(permits))
                    .await
                {
                    Ok(Ok(p)) => p,
                    Ok(Err(_)) => return Err(CaptureError::Unavailable("the service is shutting down".into())),
                    Err(_) => {
                        return Err(CaptureError::Unavailable(format!(
                            "the video waited {} s for this node's video encoder and was not made; nothing was charged",
                            VIDEO_QUEUE_LIMIT.as_secs()
                        )));
                    }
                };
            let from = SystemTime::now();
            let r = encode_video(&self.opts, &mut out).await;
            drop(budget);
            if let Some(t) = &self.trace {
                t.span("encode", from, SystemTime::now(), Vec::new());
            }
            r
        };
        let result = tokio::select! {
            r = encoded => r.map(|()| out),
            _ = hard_stop.cancelled() => {
                let (state, jid) = (&self.state, &self.job.id);
                match state.store.release(&self.task.id, &self.worker, jid, state.clock.now_ms()).await {
                    Ok(_) => state.job_changed(jid),
                    Err(e) => tracing::error!(error = %e, "handing a job back failed; its lease will expire"),
                }
                tracing::info!(job = %jid, "shutdown: video handed back to the queue");
                return;
            }
        };
        self.record(result).await;
    }

    /// Store the capture's file and thumbnail and record the job done (queueing its copy to
    /// the customer's bucket), or record its failure.
    async fn record(self, result: Result<capture_browser::CaptureOutput, CaptureError>) {
        let (state, opts, job, job_id) = (&self.state, &self.opts, &self.job, &self.job.id);
        let (t0, started) = (self.t0, self.started);
        let out = match result {
            Ok(out) => out,
            Err(e) => {
                state.metrics.capture(started.elapsed().as_secs_f64(), false);
                if let (CaptureError::SignedOut(_), Some(profile)) = (&e, &opts.profile) {
                    crate::profiles::service::expired(state, profile, job_id, job.created_at).await;
                }
                let refund = !charged(&e, opts.scroll.is_some());
                return self.fail(e.to_string(), refund).await;
            }
        };
        // The language model's extraction (`extract.prompt`), from the page's Markdown.
        let mut out = out;
        if let Some(spec) = opts.extract.as_ref().filter(|e| e.prompt.is_some()) {
            let markdown = super::model::markdown_of(&out).unwrap_or_default();
            let from = SystemTime::now();
            let extracted = super::model::extract(&state.cfg.llm, state.features.llm(), spec, &markdown).await;
            if let Some(t) = &self.trace {
                t.span("extract", from, SystemTime::now(), Vec::new());
            }
            match extracted {
                Ok(x) => out.metadata.extract = Some(x),
                Err(why) => {
                    state.metrics.capture(started.elapsed().as_secs_f64(), false);
                    return self.fail(why, false).await;
                }
            }
        }
        let ext = match out.content_type {
            "application/pdf" => "pdf",
            "image/jpeg" => "jpeg",
            "image/webp" => "webp",
            "video/mp4" => "mp4",
            "video/webm" => "webm",
            "image/gif" => "gif",
            "text/markdown; charset=utf-8" => "md",
            "text/plain; charset=utf-8" => "txt",
            "text/html; charset=utf-8" => "html",
            _ => "png",
        };
        let captured = t0.elapsed();
        // A captured page's HTML is kept as `….page.html`: served as a download, never as a
        // page of our origin (see `screenshots::files::serve_file`).
        let name = blob::new_name(if ext == "html" { blob::PAGE_HTML_EXT } else { ext });
        // The file and its thumbnail are written at once.
        let thumb = out.thumbnail.map(|t| (blob::new_name("png"), t));
        let put_thumb = async {
            match thumb {
                Some((n, t)) => match state.blobs.put(&n, t, "image/png").await {
                    Ok(()) => Some(n),
                    Err(e) => {
                        tracing::warn!(error = %e, "storing a thumbnail failed");
                        None
                    }
                },
                None => None,
            }
        };
        // The page's other text forms (`content`) beside it, named after it.
        let put_texts = async {
            for (form, bytes) in out.texts {
                let key = blob::content_name(&name, form);
                state.blobs.put(&key, bytes, blob::content_type(&key)).await?;
            }
            Ok::<(), std::io::Error>(())
        };
        let (from, bytes) = (SystemTime::now(), out.bytes.len());
        let (stored_file, thumb_key, stored_texts) =
            tokio::join!(state.blobs.put(&name, out.bytes, out.content_type), put_thumb, put_texts);
        if let Some(t) = &self.trace {
            let attrs = vec![KeyValue::new("capture.file.bytes", bytes as i64)];
            t.span("store", from, SystemTime::now(), attrs);
        }
        if let Err(e) = stored_file.and(stored_texts) {
            tracing::error!(error = %e, "storing a capture failed; the job will be retried");
            if let Some(n) = &thumb_key {
                let _ = state.blobs.delete(n).await;
            }
            state.metrics.capture(started.elapsed().as_secs_f64(), false);
            return;
        }
        // The copy for the customer's bucket (`storage`) is queued with the result: the job
        // is done now, the copy ends on its own queue (`screenshot.stored`).
        let copy = match &opts.storage {
            Some(target) => {
                let payload = super::storage_copy::CopyPayload {
                    target: target.clone(),
                    ext: ext.to_string(),
                    content_type: out.content_type.to_string(),
                    finished_ms: state.clock.now_ms(),
                };
                match serde_json::to_string(&payload) {
                    Ok(p) => Some(p),
                    Err(e) => return self.fail(format!("the copy's task does not serialize: {e}"), true).await,
                }
            }
            None => None,
        };
        let done = ScreenshotDone {
            result_key: name,
            thumb_key,
            // The page's to choose: kept to a documented length.
            page_title: Some(truncate_chars(&out.page_title, limits::PAGE_TITLE_MAX)),
            tags: out.tags,
            width: out.width.map(i64::from).or(if opts.pdf { Some(i64::from(opts.width)) } else { None }),
            height: out.height.map(i64::from),
            metadata: serde_json::to_string(&out.metadata).ok(),
            storage_url: None,
            storage_error: None,
        };
        state.metrics.capture(started.elapsed().as_secs_f64(), true);
        let mut metadata = out.metadata;
        let extracted = metadata.extract.take();
        let texts = opts.content.as_ref().map(|c| {
            c.beside(opts.format.content())
                .into_iter()
                .map(|f| (f.as_str().to_string(), state.lasting_file_url(&blob::content_name(&done.result_key, f))))
                .collect::<std::collections::BTreeMap<_, _>>()
        });
        let completed = ScreenshotCompleted {
            screenshot_id: ScreenshotId::from_stored(job_id.clone()),
            url: job.url.clone(),
            // Stored and possibly retried for hours: never a presigned URL.
            public_url: state.lasting_file_url(&done.result_key),
            format: opts.output_format(),
            width: done.width,
            height: done.height,
            metadata: Some(metadata),
            content_urls: texts.filter(|t| !t.is_empty()),
            data: extracted.as_ref().map(|x| x.data.clone()),
            sources: extracted.map(|x| x.sources),
            storage_url: None,
            storage_error: None,
            storage_status: copy.as_ref().map(|_| StorageStatus::Pending),
        };
        let event = match serde_json::to_value(&completed) {
            Ok(v) => v,
            Err(e) => return self.fail(format!("the completion event does not serialize: {e}"), true).await,
        };
        let stored = t0.elapsed();
        let now = state.clock.now_ms();
        let recorded = state
            .store
            .complete_screenshot(&self.task.id, &self.worker, job_id, &done, &event, copy.as_deref(), now)
            .await;
        match recorded {
            Ok(true) => {
                // The attempt ends when the job's page says it finished.
                if let Some(t) = &self.trace {
                    t.end(t.at_ms(now));
                }
                state.job_changed(job_id);
                if copy.is_some() {
                    state.wake.queued(crate::queues::Queue::StorageCopy);
                }
                tracing::debug!(target: "capture_server::timing", job = %job_id, prelude = ?(started - t0), ?captured, ?stored,
                    completed = ?t0.elapsed(), "job phases");
            }
            Ok(false) => tracing::warn!(job = %job_id, "lease lost before recording the result"),
            Err(e) => tracing::error!(job = %job_id, error = %e, "recording a result failed"),
        }
        drop(self.lease);
    }
}

fn video_kind(opts: &CaptureOptions) -> capture_media::VideoKind {
    match opts.format {
        capture_core::options::ImageFormat::Webm => capture_media::VideoKind::Webm,
        capture_core::options::ImageFormat::Gif => capture_media::VideoKind::Gif,
        _ => capture_media::VideoKind::Mp4,
    }
}

/// Longest a video's encode may take.
const ENCODE_LIMIT: Duration = Duration::from_secs(180);

/// Encode a capture's video frames into its format; the frames' spool goes with them.
async fn encode_video(opts: &CaptureOptions, out: &mut capture_browser::CaptureOutput) -> Result<(), CaptureError> {
    let Some(frames) = out.video.take() else { return Ok(()) };
    match capture_media::encode_frames(frames.dir.path(), frames.count, frames.fps, video_kind(opts), ENCODE_LIMIT)
        .await
    {
        Ok(v) => {
            tracing::debug!(target: "capture_server::timing", frames = frames.count, bytes = v.bytes.len(),
                encode = ?v.encode_time, "video encoded");
            if let Some(s) = v.info.video() {
                out.width = s.width;
                out.height = s.height;
            }
            out.bytes = v.bytes;
            Ok(())
        }
        // ffmpeg missing is this install's fault; the rest (too big) the request's.
        Err(e @ capture_media::MediaError::ToolMissing { .. }) => Err(CaptureError::Unavailable(e.to_string())),
        Err(e) if e.is_input_error() => Err(CaptureError::Rejected(format!("the video could not be made: {e}"))),
        Err(e) => Err(CaptureError::Browser(format!("encoding the video failed: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, account: Option<&str>) -> Task {
        Task {
            id: id.into(),
            kind: "screenshot".into(),
            subject_id: format!("scr_{id}"),
            payload: "{}".into(),
            attempts: 1,
            account_id: account.map(str::to_string),
            handed_back: 0,
        }
    }

    fn some(a: &str) -> Option<String> {
        Some(a.to_string())
    }

    #[test]
    fn a_full_node_hands_back_the_busiest_accounts_newest_capture_for_a_waiting_account() {
        let board = Arc::new(Board::default());
        let mut seats: Vec<Seat> = (0..4).map(|i| board.take(&task(&format!("t{i}"), Some("acc_a")))).collect();
        // Slots free: nothing to do.
        assert_eq!(board.hand_back_for(5, &[some("acc_b")]), None);
        // Only A waits (its own queued work): A may use every slot.
        assert_eq!(board.hand_back_for(4, &[some("acc_a")]), None);
        assert_eq!(board.hand_back_for(4, &[]), None);
        // B waits: A's newest capture goes back, once.
        assert_eq!(board.hand_back_for(4, &[some("acc_a"), some("acc_b")]), Some(("scr_t3".into(), some("acc_a"))));
        assert!(seats[3].hand_back.is_cancelled() && !seats[2].hand_back.is_cancelled());
        // The capture being handed back no longer counts: 3 of 4 live, nothing more yet.
        assert_eq!(board.hand_back_for(4, &[some("acc_b")]), None);
        drop(seats.pop());
        assert_eq!(board.held(), 3);
    }

    #[test]
    fn a_video_past_its_deadline_is_given_back_and_its_own_timeouts_are_not() {
        let deadline = CaptureError::Deadline(capture_browser::deadline_message(Duration::from_millis(43_000)));
        assert!(deadline.is_deadline());
        assert!(!charged(&deadline, true), "a video that ran out of time produced nothing");
        assert!(charged(&deadline, false), "a screenshot's page took the time");
        let own = CaptureError::Timeout("preScreenshotJs did not settle within 1000 ms (timeoutMs)".into());
        assert!(!own.is_deadline());
        assert!(charged(&own, true) && charged(&own, false));
        assert!(charged(&CaptureError::Rejected("failOnHttpError: the page answered HTTP 500".into()), true));
        assert!(!charged(&CaptureError::Unavailable("ffmpeg is not installed".into()), true));
    }

    #[test]
    fn under_contention_everyone_comes_down_to_an_equal_share() {
        let board = Arc::new(Board::default());
        let mut seats = Vec::new();
        for (i, a) in ["acc_a", "acc_a", "acc_a", "acc_b"].iter().enumerate() {
            seats.push(board.take(&task(&format!("t{i}"), Some(a))));
        }
        // C waits; A holds 3 of 4: A's newest goes back.
        assert_eq!(board.hand_back_for(4, &[some("acc_c")]), Some(("scr_t2".into(), some("acc_a"))));
        seats.remove(2);
        seats.push(board.take(&task("t9", Some("acc_c"))));
        // A 2, B 1, C 1 and D waits with none: A still holds two, so it hands one back.
        assert_eq!(board.hand_back_for(4, &[some("acc_d")]), Some(("scr_t1".into(), some("acc_a"))));
        seats.remove(1);
        seats.push(board.take(&task("t10", Some("acc_d"))));
        // One each: a fifth account waits for a slot to end, nobody is handed back.
        assert_eq!(board.hand_back_for(4, &[some("acc_e"), some("acc_a")]), None);
        // Work of no account counts as its own account.
        let board = Arc::new(Board::default());
        let _held: Vec<Seat> = (0..2).map(|i| board.take(&task(&format!("n{i}"), None))).collect();
        assert_eq!(board.hand_back_for(2, &[some("acc_a")]), Some(("scr_n1".into(), None)));
    }

    #[test]
    fn two_flooders_holding_half_each_make_room_for_a_third() {
        // The break: A and B each hold exactly half of four slots; C waited a minute.
        let board = Arc::new(Board::default());
        let mut seats = Vec::new();
        for (i, a) in ["acc_a", "acc_b", "acc_a", "acc_b"].iter().enumerate() {
            seats.push(board.take(&task(&format!("t{i}"), Some(a))));
            std::thread::sleep(Duration::from_millis(2));
        }
        // Tied at two: B's newest capture is the newest, so B hands it back.
        assert_eq!(
            board.hand_back_for(4, &[some("acc_a"), some("acc_b"), some("acc_c")]),
            Some(("scr_t3".into(), some("acc_b")))
        );
        seats.remove(3);
        seats.push(board.take(&task("t4", Some("acc_c"))));
        // A 2, B 1, C 1, with A's and B's work waiting: stable (A would drop below B).
        assert_eq!(board.hand_back_for(4, &[some("acc_a"), some("acc_b")]), None);
    }

    #[test]
    fn three_flooders_on_four_slots_still_serve_a_fourth_account() {
        let board = Arc::new(Board::default());
        let mut seats = Vec::new();
        for (i, a) in ["acc_a", "acc_b", "acc_c", "acc_a"].iter().enumerate() {
            seats.push(board.take(&task(&format!("t{i}"), Some(a))));
        }
        let waiting = [some("acc_a"), some("acc_b"), some("acc_c"), some("acc_d")];
        assert_eq!(board.hand_back_for(4, &waiting), Some(("scr_t3".into(), some("acc_a"))));
        seats.remove(3);
        seats.push(board.take(&task("t4", Some("acc_d"))));
        assert_eq!(board.hand_back_for(4, &waiting), None, "one slot each");
    }

    #[test]
    fn a_capture_handed_back_twice_keeps_its_slot() {
        let board = Arc::new(Board::default());
        let mut twice = task("t0", Some("acc_a"));
        twice.handed_back = MAX_HAND_BACKS;
        let _old = board.take(&task("t1", Some("acc_a")));
        std::thread::sleep(Duration::from_millis(2));
        let newest = board.take(&twice);
        // The newest was handed back twice already: the older one goes instead.
        assert_eq!(board.hand_back_for(2, &[some("acc_b")]), Some(("scr_t1".into(), some("acc_a"))));
        assert!(!newest.hand_back.is_cancelled());
        // With only captures handed back twice, nothing moves.
        let board = Arc::new(Board::default());
        let _a: Vec<Seat> = (0..2)
            .map(|i| {
                let mut t = task(&format!("h{i}"), Some("acc_a"));
                t.handed_back = MAX_HAND_BACKS;
                board.take(&t)
            })
            .collect();
        assert_eq!(board.hand_back_for(2, &[some("acc_b")]), None);
    }
}
