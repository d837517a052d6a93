//! What every browser session run shares, whoever drives it (the scripted worker in
//! `jobs::run`, the live relay, the MCP automation sessions): the session's options and time
//! budget, the node's hold on the run, the video, and the end of the run.

use std::time::{Duration, Instant};

use capture_browser::session::{ScreencastOptions, ScreenshotSpec, Session, SessionOptions, ShotArea};
use capture_browser::{BrowserPool, ImageFormat};
use capture_core::{EndReason, RunStatus};
use capture_media::{RecorderOptions, ScreencastRecorder};
use capture_store::{RunEnd, RunRow};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::service::{actions_for, ended, set_event};
use super::types::DeviceSpec;
use crate::blob;
use crate::state::AppState;

/// Entries kept of the console errors and failed requests behind the counts.
const MAX_LISTED: usize = 200;
/// Beyond the run's own time, how long its browser session may live (to finalise).
const SESSION_MARGIN: Duration = Duration::from_secs(60);

/// The session options of a run: its device, and a deadline past its own time so that it
/// can be finalised.
pub fn session_options(row: &RunRow, budget: Duration) -> SessionOptions {
    let device = serde_json::from_str::<DeviceSpec>(&row.device).map(|d| d.device()).unwrap_or_default();
    SessionOptions {
        device,
        deadline: budget + SESSION_MARGIN,
        slot_timeout: Duration::from_secs(30),
        cookie_consent: capture_core::options::CookieConsent::parse(&row.cookie_consent).unwrap_or_default(),
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
            let lease = st.cfg.runs.lease.as_millis() as i64;
            let every = (st.cfg.runs.lease / 3).min(Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = done.cancelled() => return,
                    _ = tokio::time::sleep(every) => {}
                }
                match st.store.heartbeat_run(&id, &w, st.clock.now_ms() + lease).await {
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

/// A run's browser session just opened, with its video when the run records one.
pub struct Opened {
    pub session: Session,
    /// When the session opened: the run's time counts from here.
    pub started: Instant,
    pub video: Option<Video>,
    /// Why the video could not start (the run goes on without it).
    pub video_err: Option<String>,
}

/// Open the browser session of a run held by this node and start its video (when the run
/// records one). Whoever drives the run (the scripted worker, the live relay, an MCP
/// automation session) opens it here. A session that cannot be opened ends the run at once
/// as `failed` (`browser_failed`, nothing charged; `task` is the queue task finished with
/// it) and the error is answered.
pub async fn open(
    state: &AppState,
    pool: &BrowserPool,
    row: &RunRow,
    opts: SessionOptions,
    budget: Duration,
    task: Option<(String, String)>,
) -> Result<Opened, String> {
    // Nothing ran: the run fails uncharged, saying why.
    let not_opened = |error: String| async move {
        let mut end = ended(state, row, RunStatus::Failed, EndReason::BrowserFailed, None, Some(error.clone()));
        end.charged = 0;
        end.task = task;
        if let Ok(true) = state.store.finish_run(&end).await {
            state.job_changed(&row.id);
        }
        Err(error)
    };
    let mut opts = opts;
    if let Some(profile) = &row.profile_id {
        match crate::profiles::service::for_job(state, &row.user_id, profile).await {
            Ok(s) => opts.state = Some(s),
            Err(why) => return not_opened(format!("the run's profile could not be used: {why}")).await,
        }
    }
    if let Some(proxy) = &row.proxy_id {
        let member = row.proxy_member.and_then(|m| u32::try_from(m).ok()).unwrap_or(0);
        match crate::proxies::service::for_job(state, &row.user_id, proxy, member).await {
            Ok(up) => opts.proxy = Some(up),
            Err(why) => return not_opened(why).await,
        }
    }
    let session = match pool.open_session(opts).await {
        Ok(s) => s,
        Err(e) => return not_opened(format!("no browser session could be opened: {e}")).await,
    };
    // Watchable from now on (`/live/{id}`), until it is finalised.
    state.cluster.sessions.views.lock().unwrap().insert(row.id.clone(), session.clone());
    let started = Instant::now();
    let (video, video_err) = if row.record_video {
        match Video::start(state, &session, budget).await {
            Ok(v) => (Some(v), None),
            Err(e) => (None, Some(format!("recording could not start: {e}"))),
        }
    } else {
        (None, None)
    };
    Ok(Opened { session, started, video, video_err })
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
        // The video covers the run from its start, however late the first frame came.
        rec.starts_at(self.started);
        // Marks on the session's timeline (a hand-off to a person) become chapters.
        for (at, label) in session.marks() {
            rec.chapter(at, &label);
        }
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
    /// Completed, stopped or failed.
    pub status: RunStatus,
    pub reason: EndReason,
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
    state.cluster.sessions.views.lock().unwrap().remove(&row.id);
    let end_ts = epoch_secs();
    let ended_ms = state.clock.now_ms();
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
    if let Some(target) = &row.save_profile {
        let saved = match session.storage_state(Duration::from_secs(20)).await {
            Ok(s) => crate::profiles::service::save(state, &row.user_id, target, &s, &row.id, "saveProfile")
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = saved {
            fin_err.get_or_insert(format!("saving the profile '{target}' failed: {e}"));
        }
    }
    session.close().await;
    let status = if fin_err.is_some() { RunStatus::Failed } else { outcome.status };
    let mut end = RunEnd {
        id: row.id.clone(),
        status,
        end_reason: outcome.reason,
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

#[cfg(test)]
mod tests {
    use super::*;
    use capture_core::RunKind;

    fn row(timeout_ms: i64, reserved: i64) -> RunRow {
        RunRow {
            id: "run_x".into(),
            user_id: "usr_x".into(),
            key_id: None,
            kind: RunKind::Scripted,
            status: RunStatus::Running,
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
            client_id: None,
            shared: false,
            profile_id: None,
            save_profile: None,
            cookie_consent: "auto".into(),
            proxy_id: None,
            proxy_member: None,
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
