//! The scheduler's side of monitors: due monitors claimed and their checks started (a capture
//! job each, charged as one), and checks whose capture ended compared with the baseline.
//!
//! Runs on the scheduler leader ([`crate::scheduler`]): one node at a time reads due monitors,
//! and each run is claimed by compare-and-set on `next_run_at`, so a due time gives one check
//! even while leadership moves. The next due time counts from now: after downtime a monitor
//! runs once. Ended captures are found by reading pending checks whose job is done or failed,
//! so a check started before a restart (or on another leader) is still compared.

use std::io::Cursor;
use std::sync::Arc;
use std::time::Duration;

use capture_core::metadata::PageMetadata;
use capture_core::options::ScreenshotIn;
use capture_core::{JobStatus, MonitorCheckId, MonitorId, ScreenshotId};
use capture_media::compare::{CompareOptions, Rect, compare, diff_image, text_diff};
use capture_store::{CheckEvents, CheckOutcome, MonitorCheckRow, MonitorRow, ScreenshotRow};
use futures_util::StreamExt;
use tokio::sync::Semaphore;

use super::settings::{check_options, notify_of, open_capture, stored_schedule, text_key};
use super::types::{CompareMode, MonitorChanged, MonitorFailing, Region};
use crate::error::{Error, Result};
use crate::screenshots::service::NewJob;
use crate::state::AppState;

/// Failed checks in a row that fire `monitor.failing` (once, until a check succeeds).
pub const FAILING_AFTER: i64 = 3;
/// Due monitors read per pass.
const DUE_BATCH: i64 = 500;
/// Checks started at once.
const STARTS_AT_ONCE: usize = 16;
/// Ended checks read per pass.
const READY_BATCH: i64 = 64;
/// The longest text diff an event carries.
const EVENT_TEXT_MAX: usize = 20_000;
/// The tallest part of a capture compared, in pixels (a 60,000 px page is compared at its top
/// 20,000: the memory of three decoded images stays under 300 MB at 1280 px wide).
const COMPARE_HEIGHT_MAX: u32 = 20_000;

/// What the monitors' loop did in one pass.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    pub started: usize,
    pub compared: usize,
}

/// The scheduler's monitors loop: a pass now, then every second, at once when a monitor is
/// made or resumed (this node), and — while a check waits for its capture — when a job ends.
/// Never returns.
pub async fn run(state: &AppState) {
    let compares = Arc::new(Semaphore::new(2));
    let mut changes = state.job_events.subscribe();
    loop {
        let waiting = match pass(state, &compares).await {
            Ok(_) => state.store.monitor_checks_waiting().await.unwrap_or(true),
            Err(e) => {
                tracing::warn!(error = %e, "a monitors pass failed");
                false
            }
        };
        // At most ten passes a second however many jobs end.
        tokio::time::sleep(Duration::from_millis(100)).await;
        // Job changes that came while no check waited are not ours.
        if !waiting {
            use tokio::sync::broadcast::error::TryRecvError;
            while matches!(changes.try_recv(), Ok(_) | Err(TryRecvError::Lagged(_))) {}
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(900)) => {}
            _ = state.wake.of(crate::queues::Queue::Monitor).notified() => {}
            r = changes.recv(), if waiting => {
                if matches!(r, Err(tokio::sync::broadcast::error::RecvError::Closed)) {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }
}

/// One pass: start the due checks, compare the ended ones.
pub async fn pass(state: &AppState, compares: &Arc<Semaphore>) -> Result<Pass> {
    let now = state.clock.now_ms();
    let due = state.store.due_monitors(now, DUE_BATCH).await?;
    let started = futures_util::stream::iter(due)
        .map(|m| async move { run_due(state, m, now).await })
        .buffer_unordered(STARTS_AT_ONCE)
        .filter(|started| std::future::ready(*started))
        .count()
        .await;
    let ready = state.store.monitor_checks_ready(READY_BATCH).await?;
    let compared = futures_util::stream::iter(ready)
        .map(|c| {
            let compares = compares.clone();
            async move { finish(state, c, &compares).await }
        })
        .buffer_unordered(4)
        .count()
        .await;
    Ok(Pass { started, compared })
}

/// Claim a due run and start its check; false when another node claimed it or the previous
/// check is still capturing (that due time is then skipped, never queued up behind it).
async fn run_due(state: &AppState, m: MonitorRow, now: i64) -> bool {
    let Some(due) = m.next_run_at else { return false };
    let next = stored_schedule(&m).and_then(|s| s.next_after(now));
    // A cron that never matches again stops the monitor (paused, with no next run).
    let claimed = match next {
        Some(next) => state.store.claim_monitor_run(&m.id, due, next).await,
        None => state.store.claim_monitor_run(&m.id, due, i64::MAX).await,
    };
    match claimed {
        Ok(true) => {}
        Ok(false) => return false,
        Err(e) => {
            tracing::warn!(monitor = %m.id, error = %e, "claiming a monitor's run failed");
            return false;
        }
    }
    state.metrics.monitor_lag(now - due);
    match state.store.monitor_check_pending(&m.id).await {
        Ok(false) => {}
        Ok(true) => {
            tracing::info!(monitor = %m.id, "the previous check is still capturing; this due time is skipped");
            return false;
        }
        Err(e) => {
            tracing::warn!(monitor = %m.id, error = %e, "reading a monitor's checks failed");
            return false;
        }
    }
    match start(state, &m).await {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!(monitor = %m.id, error = %e, "starting a check failed");
            false
        }
    }
}

/// Start a check of `m`: a capture job for its owner, charged like any. A capture the service
/// refuses (the quota, a full queue, a deleted profile) makes a failed check with the reason.
pub async fn start(state: &AppState, m: &MonitorRow) -> Result<MonitorCheckRow> {
    let now = state.clock.now_ms();
    let mut check = MonitorCheckRow {
        id: MonitorCheckId::new().to_string(),
        monitor_id: m.id.clone(),
        user_id: m.user_id.clone(),
        status: "pending".into(),
        screenshot_id: None,
        diff_ratio: None,
        regions: None,
        diff_key: None,
        text_key: None,
        text_diff: None,
        error: None,
        created_at: now,
        completed_at: None,
        image_key: None,
        baseline_key: None,
    };
    let created = match capture_for(state, m).await {
        Ok(job) => Ok(job),
        Err(Error::Internal) => return Err(Error::Internal),
        Err(e) => Err(e.to_string()),
    };
    match created {
        Ok(id) => {
            check.screenshot_id = Some(id);
            state.store.insert_monitor_check(&check).await?;
        }
        Err(why) => {
            state.store.insert_monitor_check(&check).await?;
            let outcome = CheckOutcome { status: "failed".into(), error: Some(why), ..Default::default() };
            end(state, m, &check, outcome).await;
            check = state.store.monitor_check(&m.user_id, &check.id).await?.unwrap_or(check);
        }
    }
    Ok(check)
}

/// The capture job of a check, for the monitor's owner.
async fn capture_for(state: &AppState, m: &MonitorRow) -> Result<String> {
    let user = state.store.user_by_id(&m.user_id).await?.ok_or_else(|| Error::not_found("account"))?;
    let account = crate::auth::account_of_user(state, &user).await?;
    let capture: ScreenshotIn =
        open_capture(state, &m.capture).map_err(|e| Error::Refused(capture_core::ErrorCode::InternalError, e))?;
    let ignore: Vec<String> = serde_json::from_str(&m.ignore_selectors).unwrap_or_default();
    let opts = check_options(&capture, &m.url, CompareMode::parse(&m.compare), &ignore).map_err(Error::Invalid)?;
    let created = crate::screenshots::service::create(
        state,
        &account,
        NewJob::Capture { opts: &opts, label: None, html_blob: None },
        None,
    )
    .await?;
    Ok(created.job.id.to_string())
}

fn failed(why: impl Into<String>) -> CheckOutcome {
    CheckOutcome { status: "failed".into(), error: Some(why.into()), ..Default::default() }
}

/// Why a done capture cannot be compared, if it cannot: cut short or timed out.
fn unfit(job: &ScreenshotRow) -> Option<String> {
    let has = |t: &str| job.tags.iter().any(|x| x == t);
    if has("fullpage-truncated") {
        return Some("truncated: the page is taller than a capture holds (tag fullpage-truncated); compare a part of it with capture.selector or capture.clip".into());
    }
    if has("wait-for-timeout") {
        return Some("timed out: capture.waitFor's element never appeared (tag wait-for-timeout)".into());
    }
    None
}

/// Compare the check whose capture ended with the monitor's baseline and record how it ended.
async fn finish(state: &AppState, check: MonitorCheckRow, compares: &Semaphore) {
    let m = match state.store.monitor(&check.user_id, &check.monitor_id).await {
        Ok(Some(m)) => m,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(check = %check.id, error = %e, "reading a monitor failed");
            return;
        }
    };
    let job = match &check.screenshot_id {
        Some(id) => state.store.screenshot_of(&check.user_id, id).await.ok().flatten(),
        None => None,
    };
    let outcome = match job {
        None => failed("the check's capture was deleted before it was compared"),
        Some(j) if j.status == JobStatus::Failed => {
            failed(j.error.clone().unwrap_or_else(|| "the capture failed".into()))
        }
        Some(j) if j.status != JobStatus::Done => return,
        Some(j) => match unfit(&j) {
            Some(why) => CheckOutcome { image_key: j.result_key.clone(), ..failed(why) },
            None => {
                let _permit = compares.acquire().await;
                match compared(state, &m, &j).await {
                    Ok(o) => o,
                    Err(why) => CheckOutcome { image_key: j.result_key.clone(), ..failed(why) },
                }
            }
        },
    };
    end(state, &m, &check, outcome).await;
}

/// A check's capture and its text (when text is compared), read from storage.
struct Side {
    image: Option<Vec<u8>>,
    masked: Vec<Rect>,
    text: Option<String>,
}

async fn read_side(
    state: &AppState,
    result_key: &str,
    options: &str,
    metadata: Option<&str>,
    compare: CompareMode,
) -> std::result::Result<Side, String> {
    let opts: capture_core::options::CaptureOptions =
        serde_json::from_str(options).map_err(|e| format!("the capture's options do not read: {e}"))?;
    let image = if compare.pixels() {
        Some(
            state
                .blobs
                .get(result_key)
                .await
                .map_err(|e| format!("reading the capture failed: {e}"))?
                .ok_or("the capture's file is gone")?,
        )
    } else {
        None
    };
    let text = if compare.text() {
        let bytes = state
            .blobs
            .get(&text_key(result_key, &opts))
            .await
            .map_err(|e| format!("reading the page's text failed: {e}"))?
            .ok_or("the capture's text is gone")?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    } else {
        None
    };
    let masked = metadata
        .and_then(|m| serde_json::from_str::<PageMetadata>(m).ok())
        .map(|m| m.masked.iter().map(|b| Rect { x: b.x, y: b.y, w: b.w, h: b.h }).collect())
        .unwrap_or_default();
    Ok(Side { image, masked, text })
}

/// Drop a Markdown/text front matter block (its capture time changes every check).
fn body_text(t: &str) -> &str {
    if let Some(rest) = t.strip_prefix("---\n")
        && let Some(end) = rest.find("\n---\n")
    {
        return &rest[end + 5..];
    }
    t
}

/// The comparison of a done capture with the baseline: `baseline` when there is none (or its
/// capture is gone), else `changed` or `unchanged`.
async fn compared(state: &AppState, m: &MonitorRow, job: &ScreenshotRow) -> std::result::Result<CheckOutcome, String> {
    let compare = CompareMode::parse(&m.compare);
    let key = job.result_key.clone().ok_or("the capture has no file")?;
    let after = read_side(state, &key, &job.options, job.metadata.as_deref(), compare).await?;
    let baseline_job = match &m.baseline_check_id {
        Some(b) => match state.store.monitor_check(&m.user_id, b).await.map_err(|e| e.to_string())? {
            Some(c) => match &c.screenshot_id {
                Some(s) => state.store.screenshot_of(&m.user_id, s).await.map_err(|e| e.to_string())?,
                None => None,
            },
            None => None,
        },
        None => None,
    };
    let new_baseline = |note: Option<&str>| CheckOutcome {
        status: "baseline".into(),
        image_key: Some(key.clone()),
        text_key: compare.text().then(|| serde_json::from_str(&job.options).map(|o| text_key(&key, &o)).ok()).flatten(),
        error: note.map(str::to_owned),
        ..Default::default()
    };
    let Some(bj) = baseline_job else { return Ok(new_baseline(None)) };
    let Some(bkey) = bj.result_key.clone() else {
        return Ok(new_baseline(Some("the baseline's capture is gone: this check is the new baseline")));
    };
    let before = match read_side(state, &bkey, &bj.options, bj.metadata.as_deref(), compare).await {
        Ok(b) => b,
        Err(_) => return Ok(new_baseline(Some("the baseline's capture is gone: this check is the new baseline"))),
    };
    let threshold = m.threshold;
    let (after_img, before_img) = (after.image, before.image);
    let ignore: Vec<Rect> = after.masked.iter().chain(before.masked.iter()).copied().collect();
    let pixels = match (before_img, after_img) {
        (Some(b), Some(a)) => Some(
            tokio::task::spawn_blocking(move || pixel_pass(&b, &a, ignore))
                .await
                .map_err(|e| format!("the comparison stopped: {e}"))??,
        ),
        _ => None,
    };
    let text = match (&before.text, &after.text) {
        (Some(b), Some(a)) => Some(text_diff(body_text(b), body_text(a), "baseline", "this check")),
        _ => None,
    };
    let pixels_changed = pixels.as_ref().is_some_and(|p| p.ratio > threshold);
    let text_changed = text.as_ref().is_some_and(|t| !t.is_empty());
    let changed = pixels_changed || text_changed;
    let diff_key = match (&pixels, changed) {
        (Some(p), true) if !p.regions.is_empty() => {
            let name = crate::blob::new_name("png");
            state
                .blobs
                .put(&name, p.diff_png.clone(), "image/png")
                .await
                .map_err(|e| format!("storing the diff failed: {e}"))?;
            Some(name)
        }
        _ => None,
    };
    let regions: Vec<Region> = pixels
        .as_ref()
        .map(|p| p.regions.iter().map(|r| Region { x: r.x, y: r.y, w: r.w, h: r.h }).collect())
        .unwrap_or_default();
    Ok(CheckOutcome {
        status: if changed { "changed" } else { "unchanged" }.into(),
        diff_ratio: pixels.as_ref().map(|p| p.ratio),
        regions: Some(serde_json::to_string(&regions).unwrap_or_else(|_| "[]".into())),
        diff_key,
        text_key: compare.text().then(|| serde_json::from_str(&job.options).map(|o| text_key(&key, &o)).ok()).flatten(),
        text_diff: text,
        error: None,
        image_key: Some(key),
        baseline_key: Some(bkey),
    })
}

/// The pixels compared, and the diff's picture when anything changed.
struct Pixels {
    ratio: f64,
    regions: Vec<Rect>,
    diff_png: Vec<u8>,
}

fn decode(bytes: &[u8], which: &str) -> std::result::Result<image::RgbaImage, String> {
    let img = image::load_from_memory(bytes).map_err(|e| format!("the {which} capture does not decode: {e}"))?;
    let img = if img.height() > COMPARE_HEIGHT_MAX { img.crop_imm(0, 0, img.width(), COMPARE_HEIGHT_MAX) } else { img };
    Ok(img.to_rgba8())
}

fn pixel_pass(before: &[u8], after: &[u8], ignore: Vec<Rect>) -> std::result::Result<Pixels, String> {
    let (b, a) = (decode(before, "baseline's")?, decode(after, "check's")?);
    let d = compare(&b, &a, &CompareOptions { ignore, ..CompareOptions::default() });
    let diff_png = if d.regions.is_empty() {
        Vec::new()
    } else {
        let mut out = Cursor::new(Vec::new());
        image::DynamicImage::ImageRgba8(diff_image(&a, &d.regions))
            .write_to(&mut out, image::ImageFormat::Png)
            .map_err(|e| format!("encoding the diff failed: {e}"))?;
        out.into_inner()
    };
    Ok(Pixels { ratio: d.ratio, regions: d.regions, diff_png })
}

/// Record how a check ended, with its events in the same transaction, then mail.
async fn end(state: &AppState, m: &MonitorRow, check: &MonitorCheckRow, outcome: CheckOutcome) {
    let file = |k: &Option<String>| k.as_ref().map(|k| state.lasting_file_url(k));
    let regions: Vec<Region> =
        outcome.regions.as_deref().and_then(|r| serde_json::from_str(r).ok()).unwrap_or_default();
    let changed = (outcome.status == "changed").then(|| MonitorChanged {
        monitor_id: MonitorId::from_stored(m.id.clone()),
        name: m.name.clone(),
        url: m.url.clone(),
        check_id: MonitorCheckId::from_stored(check.id.clone()),
        screenshot_id: check.screenshot_id.clone().map(ScreenshotId::from_stored),
        diff_ratio: outcome.diff_ratio,
        changed_regions: regions.clone(),
        diff_url: file(&outcome.diff_key),
        image_url: file(&outcome.image_key),
        baseline_image_url: file(&outcome.baseline_key),
        text_diff: outcome.text_diff.as_ref().map(|t| t.chars().take(EVENT_TEXT_MAX).collect()),
    });
    let failing = (outcome.status == "failed").then(|| MonitorFailing {
        monitor_id: MonitorId::from_stored(m.id.clone()),
        name: m.name.clone(),
        url: m.url.clone(),
        check_id: MonitorCheckId::from_stored(check.id.clone()),
        error: outcome.error.clone(),
        failures: 0,
    });
    let events = CheckEvents {
        user_id: Some(m.user_id.clone()),
        changed: changed.as_ref().and_then(|c| serde_json::to_value(c).ok()),
        failing: failing.as_ref().and_then(|f| serde_json::to_value(f).ok()).map(|v| (FAILING_AFTER, v)),
    };
    match state.store.complete_monitor_check(&check.id, &outcome, state.clock.now_ms(), &events).await {
        Ok(Some(failures)) => {
            state.wake.queued(crate::queues::Queue::Webhook);
            let notify = notify_of(m);
            if notify.email.is_empty() {
                return;
            }
            if let Some(c) = &changed {
                super::mail::changed(state, m, &notify.email, c, &outcome).await;
            } else if failures == FAILING_AFTER
                && let Some(f) = &failing
            {
                super::mail::failing(state, m, &notify.email, f, failures).await;
            }
        }
        Ok(None) => {}
        Err(e) => tracing::error!(check = %check.id, error = %e, "recording a check failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(tags: &[&str]) -> ScreenshotRow {
        ScreenshotRow {
            id: "scr_1".into(),
            user_id: "u".into(),
            key_id: None,
            status: JobStatus::Done,
            url: "https://x.example/".into(),
            options: "{}".into(),
            format: "png".into(),
            result_key: Some("a.png".into()),
            thumb_key: None,
            page_title: None,
            tags: tags.iter().map(|t| t.to_string()).collect(),
            width: None,
            height: None,
            error: None,
            actions: 1,
            usage_month: "2026-12".into(),
            share_token: None,
            created_at: 0,
            started_at: None,
            completed_at: None,
            metadata: None,
            credentials: None,
            cache_hash: None,
            cache_until: None,
            cached_from: None,
            batch_id: None,
            batch_index: None,
            storage_url: None,
            storage_error: None,
            storage_status: None,
            traceparent: None,
        }
    }

    #[test]
    fn a_cut_short_or_timed_out_capture_is_never_compared() {
        assert!(unfit(&job(&["fullpage-truncated"])).unwrap().starts_with("truncated: "));
        assert!(unfit(&job(&["ads-blocked", "wait-for-timeout"])).unwrap().starts_with("timed out: "));
        assert_eq!(unfit(&job(&["ads-blocked", "consent-rejected"])), None);
    }

    #[test]
    fn front_matter_is_left_out_of_the_text_compared() {
        assert_eq!(body_text("---\ntitle: \"A\"\ncaptured: 2026-12-06T10:00:00Z\n---\n\n# A\nBody\n"), "\n# A\nBody\n");
        assert_eq!(body_text("Plain text\n---\nmore"), "Plain text\n---\nmore");
    }
}
