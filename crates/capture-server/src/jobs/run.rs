//! The `run` queue and everything that drives a browser session run: scripted runs claimed
//! from the queue, the pieces a live session shares with them (the node's hold on the run,
//! the video, the end), and the sweep that ends runs nobody will end.
//!
//! Exactly one end per run: every path ends a run through [`Store::finish_run`], a
//! conditional update from an active state, so the worker's own end, a stop, and the sweep
//! of a run whose node died race harmlessly — one wins, and only it sends `run.completed`
//! or `run.failed`.
//!
//! [`Store::finish_run`]: capture_store::Store::finish_run

use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use std::time::{Duration, Instant};

use capture_browser::session::{
    Device, ScreencastOptions, ScreenshotSpec, Session, SessionOptions, ShotArea, Target, WaitFor,
};
use capture_browser::{BrowserPool, CaptureError, ImageFormat, WaitUntil};
use capture_core::time::now_ms;
use capture_media::{RecorderOptions, ScreencastRecorder};
use capture_store::{RunEnd, RunRow, Task};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::claim_loop;
use crate::blob;
use crate::runs::service::{actions_for, ended, set_event};
use crate::runs::types::{DeviceSpec, Step, StepResult};
use crate::state::AppState;

/// Wakes idle run workers when a scripted run is queued (here, or on another node).
pub static RUN_WORK: LazyLock<Notify> = LazyLock::new(Notify::new);

/// How long a run's start page may take to load.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Entries kept of the console errors and failed requests behind the counts.
const MAX_LISTED: usize = 200;
/// Beyond the run's own time, how long its browser session may live (to finalise).
const SESSION_MARGIN: Duration = Duration::from_secs(60);

/// This process's name as the holder of runs.
pub fn node_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| format!("node-{}", capture_core::ids::random_string(10)))
}

/// Run `n` worker loops until `stop`; in-flight runs go on until `hard_stop`, then they are
/// ended (failed, "the service shut down").
pub async fn run(
    state: AppState,
    pool: Arc<BrowserPool>,
    n: usize,
    stop: CancellationToken,
    hard_stop: CancellationToken,
) {
    let mut handles = Vec::new();
    for i in 0..n.max(1) {
        let (st, p, s, hs) = (state.clone(), pool.clone(), stop.clone(), hard_stop.clone());
        let worker = format!("{}-run{i}", node_id());
        handles.push(tokio::spawn(async move {
            let lease_ms = st.cfg.queue_lease.as_millis() as i64;
            let share = st.cfg.fair_share();
            claim_loop(&st, "run", &worker, lease_ms, Some(&share), &RUN_WORK, &s, |task| {
                process(&st, &p, &worker, task, &hs)
            })
            .await
        }));
    }
    for h in handles {
        let _ = h.await;
    }
}

/// End the runs nobody will end, until `stop`: runs whose node's hold expired (it died),
/// live runs whose client never came, pending runs stopped before a worker took them.
pub async fn sweep(state: AppState, stop: CancellationToken) {
    let every = (state.cfg.run_lease / 4).clamp(Duration::from_millis(200), Duration::from_secs(2));
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.cancelled() => return,
        }
        let found = match state.store.abandoned_runs(now_ms(), 2_000, 50).await {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(error = %e, "looking for abandoned runs failed");
                continue;
            }
        };
        for row in found {
            let end = if row.status == "pending" && row.stop_requested {
                let mut e = ended(&state, &row, "stopped", "stopped", None, None);
                e.only_if_pending = true;
                e
            } else if row.status == "pending" {
                ended(
                    &state,
                    &row,
                    "failed",
                    "not_connected",
                    Some("no client connected before the connect token expired".into()),
                    None,
                )
            } else {
                ended(
                    &state,
                    &row,
                    "failed",
                    "worker_lost",
                    None,
                    Some("the node running the run stopped before finishing it (its hold expired)".into()),
                )
            };
            match state.store.finish_run(&end).await {
                Ok(true) => {
                    tracing::info!(run = %row.id, reason = %end.end_reason, "ended an abandoned run");
                    state.job_changed(&row.id);
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(run = %row.id, error = %e, "ending an abandoned run failed"),
            }
        }
    }
}

async fn process(state: &AppState, pool: &BrowserPool, worker: &str, task: Task, hard_stop: &CancellationToken) {
    let run_id = task.subject_id.clone();
    let task_ref = Some((task.id.clone(), worker.to_string()));
    let row = match state.store.run(&run_id).await {
        Ok(Some(r)) => r,
        Ok(None) => {
            tracing::warn!(run = %run_id, "a run task without its run");
            return;
        }
        Err(e) => {
            tracing::error!(error = %e, "loading a run failed; its task will be claimed again");
            return;
        }
    };
    let lease_until = now_ms() + state.cfg.run_lease.as_millis() as i64;
    let started = match state.store.start_run(&run_id, worker, lease_until, now_ms()).await {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "starting a run failed; its task will be claimed again");
            return;
        }
    };
    let Some(row) = started else {
        if row.status == "running" && row.lease_until.is_some_and(|l| l >= now_ms()) {
            // Its node is alive and renews its hold (this task's lease ran out on a slow
            // database): leave it; the task is closed when the run ends.
            tracing::info!(run = %run_id, "a run task claimed again while its node still holds the run");
            return;
        }
        // Ended already, stopped before it started, or started by a worker that died.
        let mut end = match row.status.as_str() {
            "running" => ended(
                state,
                &row,
                "failed",
                "worker_lost",
                None,
                Some("the node running the run stopped before finishing it".into()),
            ),
            "pending" => {
                let mut e = ended(state, &row, "stopped", "stopped", None, None);
                e.only_if_pending = true;
                e
            }
            _ => ended(state, &row, &row.status, "finished", None, None),
        };
        end.task = task_ref;
        match state.store.finish_run(&end).await {
            Ok(true) => state.job_changed(&run_id),
            Ok(false) => {}
            Err(e) => tracing::error!(error = %e, "closing a run's task failed"),
        }
        return;
    };
    state.job_changed(&run_id);
    // Keep the task's own lease alive while the run goes on.
    let task_hb = CancellationToken::new();
    {
        let (st, tid, w, stop) = (state.clone(), task.id.clone(), worker.to_string(), task_hb.clone());
        tokio::spawn(async move {
            let lease = st.cfg.queue_lease;
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(lease / 3) => {}
                }
                if let Ok(false) = st.store.extend_lease(&tid, &w, now_ms() + lease.as_millis() as i64).await {
                    return;
                }
            }
        });
    }
    let _task_hb = task_hb.drop_guard();
    scripted(state, pool, &row, worker, task_ref, hard_stop).await;
}

/// The session options of a run: its device, and a deadline past its own time so that it
/// can be finalised.
pub fn session_options(row: &RunRow, budget: Duration) -> SessionOptions {
    let d: DeviceSpec = serde_json::from_str(&row.device).unwrap_or(DeviceSpec {
        preset: None,
        width: 1280,
        height: 800,
        device_scale_factor: 1.0,
        mobile: false,
        touch: false,
        user_agent: None,
    });
    SessionOptions {
        device: Device {
            width: d.width,
            height: d.height,
            device_scale_factor: d.device_scale_factor,
            mobile: d.mobile,
            touch: d.touch,
            landscape: d.width > d.height,
            user_agent: d.user_agent,
        },
        deadline: budget + SESSION_MARGIN,
        slot_timeout: Duration::from_secs(30),
        ..Default::default()
    }
}

/// The time a run may take: its timeout, or less when the month had fewer actions left
/// (then it is cut off cleanly when they run out). True when the actions are the bound.
pub fn budget(row: &RunRow) -> (Duration, bool) {
    let by_actions = row.actions_reserved.max(1) * 60_000;
    let ms = row.timeout_ms.min(by_actions).max(1);
    (Duration::from_millis(ms as u64), by_actions < row.timeout_ms)
}

/// The node's hold on a run it drives: renewed every second; `stop` is cancelled when a
/// stop was requested, `lost` when the run is no longer this node's (ended elsewhere).
pub struct Hold {
    pub stop: CancellationToken,
    pub lost: CancellationToken,
    done: CancellationToken,
}

impl Hold {
    pub fn start(state: &AppState, run_id: &str, worker: &str) -> Hold {
        let hold =
            Hold { stop: CancellationToken::new(), lost: CancellationToken::new(), done: CancellationToken::new() };
        let (st, id, w) = (state.clone(), run_id.to_string(), worker.to_string());
        let (stop, lost, done) = (hold.stop.clone(), hold.lost.clone(), hold.done.clone());
        tokio::spawn(async move {
            let lease = st.cfg.run_lease.as_millis() as i64;
            let every = (st.cfg.run_lease / 3).min(Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = done.cancelled() => return,
                    _ = tokio::time::sleep(every) => {}
                }
                match st.store.heartbeat_run(&id, &w, now_ms() + lease).await {
                    Ok(Some(true)) => stop.cancel(),
                    Ok(Some(false)) => {}
                    Ok(None) => {
                        lost.cancel();
                        return;
                    }
                    Err(e) => tracing::warn!(run = %id, error = %e, "renewing the hold on a run failed"),
                }
            }
        });
        hold
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.done.cancel();
    }
}

/// A recording in progress: the session's screencast spooled by a task of its own.
pub struct Video {
    reader: tokio::task::JoinHandle<Result<ScreencastRecorder, String>>,
    /// When recording started (Unix seconds, the screencast's clock).
    started: f64,
}

impl Video {
    /// Start recording `session` (frames as Chromium paints them, real timestamps).
    pub async fn start(state: &AppState, session: &Session, budget: Duration) -> Result<Video, String> {
        let root = state.cfg.data_dir.join("tmp");
        let _ = tokio::fs::create_dir_all(&root).await;
        let mut rec = ScreencastRecorder::new(RecorderOptions {
            max_duration: budget + SESSION_MARGIN,
            max_width: 1280,
            max_height: 1280,
            threads: 1,
            temp_root: Some(root),
            ..Default::default()
        })
        .map_err(|e| e.to_string())?;
        let opts = ScreencastOptions { format: ImageFormat::Jpeg, quality: 70, ..Default::default() };
        let started = epoch_secs();
        let mut cast = session.start_screencast(opts, Duration::from_secs(10)).await.map_err(|e| e.to_string())?;
        let reader = tokio::spawn(async move {
            while let Some(f) = cast.next().await {
                rec.push_frame(&f.data, f.timestamp).await.map_err(|e| e.to_string())?;
            }
            Ok(rec)
        });
        Ok(Video { reader, started })
    }

    /// Stop recording, encode up to `end` (Unix seconds) and store the MP4; its blob name.
    pub async fn finish(self, state: &AppState, session: &Session, end: f64) -> Result<String, String> {
        let _ = session.stop_screencast(Duration::from_secs(5)).await;
        let rec = match tokio::time::timeout(Duration::from_secs(15), self.reader).await {
            Ok(Ok(r)) => r?,
            Ok(Err(e)) => return Err(format!("the recorder failed: {e}")),
            Err(_) => return Err("the screencast did not stop".into()),
        };
        let mut rec = rec;
        if rec.frame_count() == 0 {
            // A run shorter than Chromium's first screencast frame (a static page done in a
            // few hundred ms): the page as it ends, shown for the whole run.
            let spec = ScreenshotSpec { area: ShotArea::Viewport, format: ImageFormat::Jpeg, quality: Some(70) };
            let shot = session
                .screenshot(spec, Duration::from_secs(10))
                .await
                .map_err(|e| format!("the recording has no frames and the final page could not be captured: {e}"))?;
            rec.push_frame(&shot.bytes, self.started.min(end))
                .await
                .map_err(|e| format!("the recorder failed: {e}"))?;
        }
        let name = blob::new_name("mp4");
        let out = state.cfg.data_dir.join("tmp").join(&name);
        let recording = rec.finish(end, &out).await.map_err(|e| format!("encoding the video failed: {e}"))?;
        let bytes = tokio::fs::read(&recording.output).await.map_err(|e| format!("reading the video failed: {e}"));
        let _ = tokio::fs::remove_file(&recording.output).await;
        state.blobs.put(&name, bytes?, "video/mp4").await.map_err(|e| format!("storing the video failed: {e}"))?;
        Ok(name)
    }
}

/// Seconds since the Unix epoch, the clock of screencast frames.
fn epoch_secs() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// How a run's driving ended, before finalisation.
pub struct Outcome {
    /// `completed`, `stopped` or `failed`.
    pub status: &'static str,
    pub reason: &'static str,
    pub error: Option<String>,
    pub finalization_error: Option<String>,
}

/// Finalise a run driven on this node: final URL and title, the console errors and failed
/// requests with their counts, the video; close the session; end the run (once) with
/// `run.completed`, or `run.failed` when the driving or the finalisation failed.
#[allow(clippy::too_many_arguments)]
pub async fn finalize(
    state: &AppState,
    session: &Session,
    row: &RunRow,
    started: Instant,
    video: Option<Video>,
    outcome: Outcome,
    step_results: Option<String>,
    task: Option<(String, String)>,
) {
    let end_ts = epoch_secs();
    let ended_ms = now_ms();
    let ran_ms = started.elapsed().as_millis() as i64;
    let mut fin_err = outcome.finalization_error;
    let (page_title, final_url) = match session.title_url(Duration::from_secs(5)).await {
        Ok((t, u)) => (Some(t), Some(u)),
        Err(e) => {
            fin_err.get_or_insert_with(|| format!("the browser failed before the run ended: {e}"));
            (None, None)
        }
    };
    let console = session.console().await.unwrap_or_default();
    let network = session.network().await.unwrap_or_default();
    let counts = session.counts().await.ok();
    let console_errors: Vec<Value> = console
        .iter()
        .filter(|c| c.is_error())
        .take(MAX_LISTED)
        .map(|c| serde_json::to_value(c).unwrap_or(Value::Null))
        .collect();
    let network_errors: Vec<Value> = network
        .iter()
        .filter(|r| r.failed())
        .take(MAX_LISTED)
        .map(|r| {
            json!({"url": r.url, "method": r.method, "resourceType": r.resource_type, "status": r.status, "failure": r.failure})
        })
        .collect();
    let (console_count, network_count) = match counts {
        Some(c) => (c.console_errors as i64, c.failed_requests as i64),
        None => (console_errors.len() as i64, network_errors.len() as i64),
    };
    let video_key = match video {
        Some(v) => match v.finish(state, session, end_ts).await {
            Ok(k) => Some(k),
            Err(e) => {
                fin_err.get_or_insert(e);
                None
            }
        },
        None => None,
    };
    session.close().await;
    let status = if fin_err.is_some() { "failed" } else { outcome.status };
    let mut end = RunEnd {
        id: row.id.clone(),
        status: status.into(),
        end_reason: outcome.reason.into(),
        final_url: final_url.clone(),
        page_title: page_title.clone(),
        video_key: video_key.clone(),
        console_error_count: console_count,
        network_error_count: network_count,
        console_errors: Some(Value::Array(console_errors).to_string()),
        network_errors: Some(Value::Array(network_errors).to_string()),
        step_results,
        error: outcome.error,
        finalization_error: fin_err,
        charged: actions_for(ran_ms),
        task,
        now: ended_ms,
        ..Default::default()
    };
    set_event(state, &mut end, final_url, page_title, video_key);
    match state.store.finish_run(&end).await {
        Ok(true) => state.job_changed(&row.id),
        Ok(false) => tracing::info!(run = %row.id, "the run had already ended elsewhere"),
        Err(e) => {
            tracing::error!(run = %row.id, error = %e, "recording the end of a run failed; the sweep will end it")
        }
    }
}

/// Drive a scripted run held by `worker`: open the session, record, load the start page,
/// run the steps (each bounded by its own timeout, the whole by the run's), finalise.
async fn scripted(
    state: &AppState,
    pool: &BrowserPool,
    row: &RunRow,
    worker: &str,
    task: Option<(String, String)>,
    hard_stop: &CancellationToken,
) {
    let (budget, cut_by_actions) = budget(row);
    let steps: Vec<Step> = serde_json::from_str(&row.steps).unwrap_or_default();
    let hold = Hold::start(state, &row.id, worker);
    let session = match pool.open_session(session_options(row, budget)).await {
        Ok(s) => s,
        Err(e) => {
            let mut end = ended(
                state,
                row,
                "failed",
                "browser_failed",
                None,
                Some(format!("no browser session could be opened: {e}")),
            );
            end.charged = 0;
            end.task = task;
            if let Ok(true) = state.store.finish_run(&end).await {
                state.job_changed(&row.id);
            }
            return;
        }
    };
    let started = Instant::now();
    let mut video_err = None;
    let video = if row.record_video {
        match Video::start(state, &session, budget).await {
            Ok(v) => Some(v),
            Err(e) => {
                video_err = Some(format!("recording could not start: {e}"));
                None
            }
        }
    } else {
        None
    };
    let results: Mutex<Vec<StepResult>> = Mutex::new(Vec::new());
    let current: Mutex<String> = Mutex::new("loading startUrl".into());
    let drive = async {
        session
            .goto(&row.start_url, WaitUntil::Load, START_TIMEOUT)
            .await
            .map_err(|e| format!("startUrl {}: {}", row.start_url, plain(&e)))?;
        for (i, step) in steps.iter().enumerate() {
            *current.lock().unwrap() = format!("steps[{i}] ({})", step.describe());
            let t = Instant::now();
            let r = do_step(state, &session, step).await;
            let error = r.as_ref().err().map(|e| format!("steps[{i}] ({}): {e}", step.describe()));
            let res = StepResult {
                index: i,
                action: step.action().into(),
                ok: r.is_ok(),
                duration_ms: t.elapsed().as_millis() as u64,
                error: error.clone(),
                result: r.ok().flatten(),
            };
            let event = json!({"index": i, "action": res.action, "ok": res.ok, "durationMs": res.duration_ms, "error": res.error});
            let all = {
                let mut v = results.lock().unwrap();
                v.push(res);
                serde_json::to_string(&*v).unwrap_or_default()
            };
            match state.store.record_run_step(&row.id, worker, &all, &event, now_ms()).await {
                Ok(_) => state.job_changed(&row.id),
                Err(e) => tracing::warn!(run = %row.id, error = %e, "recording a step failed"),
            }
            if let Some(e) = error {
                return Err(e);
            }
        }
        Ok(())
    };
    let outcome = tokio::select! {
        r = drive => match r {
            Ok(()) => Outcome { status: "completed", reason: "finished", error: None, finalization_error: None },
            Err(e) => Outcome { status: "failed", reason: "step_failed", error: Some(e), finalization_error: None },
        },
        _ = tokio::time::sleep(budget) => {
            if cut_by_actions {
                Outcome { status: "stopped", reason: "quota", error: None, finalization_error: None }
            } else {
                let during = current.lock().unwrap().clone();
                Outcome {
                    status: "failed",
                    reason: "timeout",
                    error: Some(format!("the run's timeoutMs ({} ms) passed during {during}", row.timeout_ms)),
                    finalization_error: None,
                }
            }
        }
        _ = hold.stop.cancelled() => Outcome { status: "stopped", reason: "stopped", error: None, finalization_error: None },
        _ = hold.lost.cancelled() => {
            // Ended elsewhere (the sweep, after this node lost the database for too long).
            session.close().await;
            return;
        }
        _ = hard_stop.cancelled() => Outcome {
            status: "failed",
            reason: "shutdown",
            error: None,
            finalization_error: Some("the service shut down during the run".into()),
        },
    };
    let outcome = Outcome { finalization_error: outcome.finalization_error.or(video_err), ..outcome };
    let step_results = serde_json::to_string(&*results.lock().unwrap()).ok();
    finalize(state, &session, row, started, video, outcome, step_results, task).await;
    drop(hold);
}

/// A browser error without the operation's own prefix repeated.
fn plain(e: &CaptureError) -> String {
    e.to_string()
}

async fn do_step(state: &AppState, s: &Session, step: &Step) -> Result<Option<Value>, String> {
    let t = Duration::from_millis(step.timeout_ms());
    let sel = |x: &str| Target::Selector(x.to_string());
    let e = |e: CaptureError| plain(&e);
    match step {
        Step::Goto { url, .. } => {
            let nav = s.goto(url, WaitUntil::Load, t).await.map_err(e)?;
            Ok(Some(json!({"status": nav.status, "url": nav.final_url})))
        }
        Step::Click { selector, .. } => s.click(sel(selector), t).await.map(|_| None).map_err(e),
        Step::Type { selector, text, .. } => {
            s.click(sel(selector), t).await.map_err(e)?;
            s.type_text(text, t).await.map(|_| None).map_err(e)
        }
        Step::Press { key, .. } => s.press(key, t).await.map(|_| None).map_err(e),
        Step::Select { selector, value, .. } => {
            let chosen = s.select_option(sel(selector), vec![value.clone()], t).await.map_err(e)?;
            if chosen.is_empty() {
                return Err(format!("no option '{value}' in '{selector}'"));
            }
            Ok(Some(json!(chosen)))
        }
        Step::Hover { selector, .. } => s.hover(sel(selector), t).await.map(|_| None).map_err(e),
        Step::Scroll { y: Some(y), .. } => s.scroll(None, 0.0, *y, t).await.map(|_| None).map_err(e),
        Step::Scroll { selector, .. } => {
            s.scroll(selector.as_deref().map(sel), 0.0, 0.0, t).await.map(|_| None).map_err(e)
        }
        Step::WaitFor { selector, text, url, .. } => {
            let what = match (selector, text, url) {
                (Some(x), _, _) => WaitFor::Selector(x.clone()),
                (_, Some(x), _) => WaitFor::Text(x.clone()),
                (_, _, Some(x)) => WaitFor::Url(x.clone()),
                _ => return Err("nothing to wait for".into()),
            };
            s.wait_for(what, t).await.map(|_| None).map_err(e)
        }
        // Not an operation of the session (which keeps handling the page's events between
        // operations anyway): a stop or the run's timeout cuts it short at once.
        Step::Wait { ms } => {
            tokio::time::sleep(Duration::from_millis(*ms)).await;
            Ok(None)
        }
        Step::Screenshot { full_page, .. } => {
            let area = if full_page.unwrap_or(false) { ShotArea::FullPage } else { ShotArea::Viewport };
            let img = s.screenshot(ScreenshotSpec { area, ..Default::default() }, t).await.map_err(e)?;
            let name = blob::new_name("png");
            state.blobs.put(&name, img.bytes, img.content_type).await.map_err(|e| format!("storing it failed: {e}"))?;
            Ok(Some(json!({"url": state.lasting_file_url(&name), "width": img.width, "height": img.height})))
        }
        Step::Evaluate { expression, .. } => s.evaluate(expression, true, t).await.map(Some).map_err(e),
        Step::AssertText { text, selector, .. } => {
            let shown = s.text(selector.as_deref().map(sel), t).await.map_err(e)?;
            if shown.contains(text.as_str()) {
                Ok(None)
            } else {
                let place = selector.as_deref().map_or("the page".to_string(), |x| format!("'{x}'"));
                Err(format!("{place} does not show the text '{text}'"))
            }
        }
        Step::AssertUrl { url, .. } => {
            let (_, current) = s.title_url(t).await.map_err(e)?;
            let absolute = url.starts_with("http://") || url.starts_with("https://");
            let ok = if absolute { current == *url } else { current.contains(url.as_str()) };
            if ok { Ok(None) } else { Err(format!("the URL is {current}, not {url}")) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::service::actions_for;

    fn row(timeout_ms: i64, reserved: i64) -> RunRow {
        RunRow {
            id: "run_x".into(),
            user_id: "usr_x".into(),
            key_id: None,
            kind: "scripted".into(),
            status: "running".into(),
            start_url: "http://a.test/".into(),
            device: "{}".into(),
            record_video: true,
            timeout_ms,
            steps: "[]".into(),
            step_results: "[]".into(),
            final_url: None,
            page_title: None,
            video_key: None,
            console_error_count: 0,
            network_error_count: 0,
            console_errors: "[]".into(),
            network_errors: "[]".into(),
            error: None,
            finalization_error: None,
            end_reason: None,
            connect_token_hash: None,
            connect_expires_at: None,
            stop_requested: false,
            actions_reserved: reserved,
            actions_charged: 0,
            usage_month: "2026-11".into(),
            worker: None,
            lease_until: None,
            created_at: 0,
            started_at: None,
            ended_at: None,
        }
    }

    /// 1 action per started minute; a run whose reservation the monthly cap cut short is
    /// bounded by the minutes it holds (and then ends cleanly, `endReason: quota`).
    #[test]
    fn minutes_are_charged_started_and_the_cap_bounds_the_run() {
        assert_eq!([1, 59_999, 60_000, 60_001, 180_000].map(actions_for), [1, 1, 1, 2, 3]);
        assert_eq!(budget(&row(90_000, 2)), (Duration::from_millis(90_000), false));
        assert_eq!(budget(&row(180_000, 1)), (Duration::from_millis(60_000), true));
        assert_eq!(budget(&row(120_000, 2)), (Duration::from_millis(120_000), false));
        // The device falls back to a desktop when the stored one is unreadable.
        let opts = session_options(&row(1_000, 1), Duration::from_secs(1));
        assert_eq!((opts.device.width, opts.device.height), (1280, 800));
        assert_eq!(opts.deadline, Duration::from_secs(1) + SESSION_MARGIN);
    }
}
