//! The `run` queue: scripted runs claimed from the queue and driven step by step, and the
//! sweep that ends runs nobody will end. What a scripted run shares with a live session (the
//! node's hold on the run, the video, the end) lives in `runs::session`.
//!
//! Exactly one end per run: every path ends a run through [`Store::finish_run`], a
//! conditional update from an active state, so the worker's own end, a stop, and the sweep
//! of a run whose node died race harmlessly — one wins, and only it sends `run.completed`
//! or `run.failed`.
//!
//! [`Store::finish_run`]: capture_store::Store::finish_run

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capture_browser::session::{ScreenshotSpec, Session, ShotArea, Target, WaitFor};
use capture_browser::{BrowserPool, CaptureError, WaitUntil};
use capture_core::{EndReason, RunStatus};
use capture_store::{RunRow, Task};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::claim_loop;
use crate::blob;
use crate::runs::service::ended;
use crate::runs::session::{self, Hold, Opened, Outcome, budget, finalize, session_options};
use crate::runs::types::{Step, StepResult};
use crate::state::AppState;

/// How long a run's start page may take to load.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Runs: they hold their page for the session, with as many slots as captures.
pub const WORKERS: super::Kind = super::Kind {
    name: "run",
    runs_on: super::RunsOn::Browser,
    start: |s| {
        Box::pin(async move {
            let n = s.state.cfg.browser.worker_concurrency;
            run(s.state.clone(), s.pool(), n, s.stop, s.hard_stop).await
        })
    },
};

/// The sweep that ends runs whose node stopped holding them.
pub const SWEEP: super::Kind =
    super::Kind { name: "run-sweep", runs_on: super::RunsOn::Background, start: |s| Box::pin(sweep(s.state, s.stop)) };

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
        let worker = format!("{}-run{i}", state.cluster.node_id());
        handles.push(tokio::spawn(async move {
            let lease_ms = st.cfg.queue.lease.as_millis() as i64;
            let share = st.cfg.queue.fair_share();
            claim_loop(&st, "run", &worker, lease_ms, Some(&share), st.wake.of(crate::queues::Queue::Run), &s, |task| {
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
    let every = (state.cfg.runs.lease / 4).clamp(Duration::from_millis(200), Duration::from_secs(2));
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.cancelled() => return,
        }
        let found = match state.store.abandoned_runs(state.clock.now_ms(), 2_000, 50).await {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(error = %e, "looking for abandoned runs failed");
                continue;
            }
        };
        for row in found {
            let end = if row.status == RunStatus::Pending && row.stop_requested {
                let mut e = ended(&state, &row, RunStatus::Stopped, EndReason::Stopped, None, None);
                e.only_if_pending = true;
                e
            } else if row.status == RunStatus::Pending {
                ended(
                    &state,
                    &row,
                    RunStatus::Failed,
                    EndReason::NotConnected,
                    Some("no client connected before the connect token expired".into()),
                    None,
                )
            } else {
                ended(
                    &state,
                    &row,
                    RunStatus::Failed,
                    EndReason::WorkerLost,
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
    let lease_until = state.clock.now_ms() + state.cfg.runs.lease.as_millis() as i64;
    let started = match state.store.start_run(&run_id, worker, lease_until, state.clock.now_ms()).await {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "starting a run failed; its task will be claimed again");
            return;
        }
    };
    let Some(row) = started else {
        if row.status == RunStatus::Running && row.lease_until.is_some_and(|l| l >= state.clock.now_ms()) {
            // Its node is alive and renews its hold (this task's lease ran out on a slow
            // database): leave it; the task is closed when the run ends.
            tracing::info!(run = %run_id, "a run task claimed again while its node still holds the run");
            return;
        }
        // Ended already, stopped before it started, or started by a worker that died.
        let mut end = match row.status {
            RunStatus::Running => ended(
                state,
                &row,
                RunStatus::Failed,
                EndReason::WorkerLost,
                None,
                Some("the node running the run stopped before finishing it".into()),
            ),
            RunStatus::Pending => {
                let mut e = ended(state, &row, RunStatus::Stopped, EndReason::Stopped, None, None);
                e.only_if_pending = true;
                e
            }
            done => ended(state, &row, done, EndReason::Finished, None, None),
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
    let _lease = super::keep_lease(state, &task.id, worker);
    scripted(state, pool, &row, worker, task_ref, hard_stop).await;
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
    let Ok(Opened { session, started, video, video_err }) =
        session::open(state, pool, row, session_options(row, budget), budget, task.clone()).await
    else {
        return;
    };
    let results: Mutex<Vec<StepResult>> = Mutex::new(Vec::new());
    let current: Mutex<String> = Mutex::new("loading startUrl".into());
    let drive = async {
        session
            .goto(&row.start_url, WaitUntil::Load, START_TIMEOUT)
            .await
            .map_err(|e| format!("startUrl {}: {}", row.start_url, plain(&e)))?;
        session
            .consent(Duration::from_secs(5))
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
            match state.store.record_run_step(&row.id, worker, &all, &event, state.clock.now_ms()).await {
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
            Ok(()) => Outcome { status: RunStatus::Completed, reason: EndReason::Finished, error: None, finalization_error: None },
            Err(e) => Outcome { status: RunStatus::Failed, reason: EndReason::StepFailed, error: Some(e), finalization_error: None },
        },
        _ = tokio::time::sleep(budget) => {
            if cut_by_actions {
                Outcome { status: RunStatus::Stopped, reason: EndReason::Quota, error: None, finalization_error: None }
            } else {
                let during = current.lock().unwrap().clone();
                Outcome {
                    status: RunStatus::Failed,
                    reason: EndReason::Timeout,
                    error: Some(format!("the run's timeoutMs ({} ms) passed during {during}", row.timeout_ms)),
                    finalization_error: None,
                }
            }
        }
        _ = hold.stop.cancelled() => Outcome { status: RunStatus::Stopped, reason: EndReason::Stopped, error: None, finalization_error: None },
        _ = hold.lost.cancelled() => {
            // Ended elsewhere (the sweep, after this node lost the database for too long).
            session.close().await;
            return;
        }
        _ = hard_stop.cancelled() => Outcome {
            status: RunStatus::Failed,
            reason: EndReason::Shutdown,
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
            // The run's consent engine answered the page's pop-up as it loaded: say how.
            let consent = s.consent(Duration::from_secs(5)).await.map_err(e)?;
            let mut r = json!({"status": nav.status, "url": nav.final_url});
            if let Some(c) = consent {
                r["consent"] = json!(c);
            }
            Ok(Some(r))
        }
        Step::Click { selector, .. } => s.click(sel(selector), t).await.map(|_| None).map_err(e),
        Step::Type { selector, text, .. } => {
            // Checked: the click reached the field, it took the focus and the text.
            s.type_into(sel(selector), text, false, t).await.map(|_| None).map_err(e)
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
