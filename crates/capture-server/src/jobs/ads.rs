//! The `ad_draft` and `ad_render` queues.
//!
//! A **draft** captures the page on the shared browser pool (the egress guard applies):
//! desktop full page (its top is the hero, further down a few sections) with a script that
//! reads the copy, colours, icon and logo, and a mobile view; `screenshotUrls` are fetched
//! through the guarded client (images only, bounded in size and pixels). It writes the
//! copy, the brand colour, a storyboard and a voice-over script that fits 15–30 s.
//!
//! A **render** hands the draft to the media engine (`capture_media::render_ad`, every
//! step bounded in time, its temporary files removed), stores the MP4 and thumbnail like
//! screenshot files, and reports each stage as progress.
//!
//! Both record their outcome fenced on the task lease, with the `adshot.completed` or
//! `adshot.failed` webhook; a failure the service caused gives the actions back. A worker
//! that dies lets its lease run out and the task is claimed again, up to [`MAX_CLAIMS`].

use std::sync::Arc;
use std::time::Duration;

use capture_browser::{BrowserPool, CaptureError, CaptureOptions, CaptureOutput, CaptureRequest, PageSource};
use capture_core::JobStatus;
use capture_media::{AdSize, AdSpec, Motion, RenderOptions, Rgb, Scene};
use capture_store::{AdshotDone, KIND_DRAFT, Task};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::claim_loop;
use crate::ads::extract::{self, PageFacts};
use crate::ads::service::{StoredDraft, StoredScene};
use crate::ads::types::{DraftIn, MAX_IMAGE_BYTES, Orientation, RenderIn};
use crate::blob;
use crate::state::AppState;

/// Claims beyond this many (crashed or killed workers) fail the job for good, refunded.
pub const MAX_CLAIMS: i64 = 3;
/// Desktop viewport of the draft's captures.
const DESKTOP: (u32, u32) = (1280, 800);
/// Mobile viewport (captured at 2× device pixels).
const MOBILE: (u32, u32) = (390, 844);
/// Height of a full-page section scene, in pixels.
const SECTION_HEIGHT: u32 = 1400;
/// Full-page sections used at most.
const MAX_SECTIONS: u32 = 2;
/// Colour of an ad whose page and pictures show none.
const DEFAULT_BRAND: Rgb = Rgb::new(0x25, 0x63, 0xEB);
/// A render's whole time limit (each engine step has its own, shorter one).
const RENDER_LIMIT: Duration = Duration::from_secs(900);
/// Ad drafts and renders: one worker of each on a browser node.
pub const WORKERS: super::Kind = super::Kind {
    name: "ad",
    runs_on: super::RunsOn::Browser,
    start: |s| Box::pin(async move { run(s.state.clone(), s.pool(), s.stop, s.hard_stop).await }),
};

/// Run the draft and render workers until `stop`; a render under way at `hard_stop` is
/// dropped (its subprocesses killed, its files removed) and retried from the queue.
pub async fn run(state: AppState, pool: Arc<BrowserPool>, stop: CancellationToken, hard_stop: CancellationToken) {
    let node = capture_core::ids::random_string(8);
    remove_stale_temp(&state.cfg.data_dir.join("ad-tmp")).await;
    let drafts = {
        let (state, stop, id) = (state.clone(), stop.clone(), format!("{node}-ad-draft"));
        tokio::spawn(async move {
            let lease_ms = state.cfg.queue.lease.as_millis() as i64;
            let share = state.cfg.queue.fair_share();
            claim_loop(
                &state,
                "ad_draft",
                &id,
                lease_ms,
                Some(&share),
                state.wake.of(crate::queues::Queue::Ad),
                &stop,
                |task| draft(&state, &pool, &id, task),
            )
            .await
        })
    };
    let renders = {
        let (state, id) = (state.clone(), format!("{node}-ad-render"));
        tokio::spawn(async move {
            let lease_ms = state.cfg.queue.lease.as_millis() as i64;
            let share = state.cfg.queue.fair_share();
            claim_loop(
                &state,
                "ad_render",
                &id,
                lease_ms,
                Some(&share),
                state.wake.of(crate::queues::Queue::Ad),
                &stop,
                |task| render(&state, &id, task, &hard_stop),
            )
            .await
        })
    };
    let _ = drafts.await;
    let _ = renders.await;
}

/// Remove what renders of a process that was killed left behind (older than any render
/// can run, so never the files of a render under way on another node sharing the folder).
async fn remove_stale_temp(dir: &std::path::Path) {
    let Ok(mut entries) = tokio::fs::read_dir(dir).await else { return };
    let cutoff = std::time::SystemTime::now() - RENDER_LIMIT - Duration::from_secs(300);
    while let Ok(Some(e)) = entries.next_entry().await {
        let old = e.metadata().await.ok().and_then(|m| m.modified().ok()).is_some_and(|t| t < cutoff);
        if old {
            let path = e.path();
            let _ = if path.is_dir() {
                tokio::fs::remove_dir_all(&path).await
            } else {
                tokio::fs::remove_file(&path).await
            };
            tracing::info!(path = %path.display(), "removed a killed render's leftovers");
        }
    }
}

/// What a worker needs to record progress and outcomes of one task.
struct Job<'a> {
    state: &'a AppState,
    task: &'a Task,
    worker: &'a str,
    kind: &'static str,
}

impl Job<'_> {
    fn ad_id(&self) -> &str {
        &self.task.subject_id
    }

    async fn progress(&self, stage: &str, percent: i64) {
        match self
            .state
            .store
            .adshot_progress(&self.task.id, self.worker, self.ad_id(), stage, percent, self.state.clock.now_ms())
            .await
        {
            Ok(true) => self.state.job_changed(self.ad_id()),
            Ok(false) => {}
            Err(e) => tracing::warn!(ad = %self.ad_id(), error = %e, "recording progress failed"),
        }
    }

    async fn fail(&self, msg: &str, refund: bool) {
        let event = json!({"adId": self.ad_id(), "kind": self.kind});
        match self
            .state
            .store
            .fail_adshot(&self.task.id, self.worker, self.ad_id(), msg, refund, &event, self.state.clock.now_ms())
            .await
        {
            Ok(true) => self.state.job_changed(self.ad_id()),
            Ok(false) => tracing::warn!(ad = %self.ad_id(), "lease lost before recording the failure"),
            Err(e) => tracing::error!(ad = %self.ad_id(), error = %e, "recording a failure failed"),
        }
    }

    async fn complete(&self, done: &AdshotDone, event: &serde_json::Value) {
        match self
            .state
            .store
            .complete_adshot(&self.task.id, self.worker, self.ad_id(), done, event, self.state.clock.now_ms())
            .await
        {
            Ok(true) => self.state.job_changed(self.ad_id()),
            Ok(false) => tracing::warn!(ad = %self.ad_id(), "lease lost before recording the result"),
            Err(e) => tracing::error!(ad = %self.ad_id(), error = %e, "recording a result failed"),
        }
    }
}

fn capture_request(
    url: &str,
    (width, height): (u32, u32),
    dsf: f64,
    full_page: bool,
    js: Option<&str>,
) -> CaptureRequest {
    let options = CaptureOptions {
        width,
        height,
        full_page,
        delay: 300,
        wait_until: capture_browser::WaitUntil::Load,
        timeout_ms: 15_000,
        pre_screenshot_js: js.map(str::to_string),
        device_scale_factor: dsf,
        ..CaptureOptions::default()
    };
    CaptureRequest { source: PageSource::Url(url.to_string()), options, deadline: Duration::from_secs(60), proxy: None }
}

async fn capture(pool: &BrowserPool, req: CaptureRequest) -> Result<CaptureOutput, CaptureError> {
    let mut attempt = 0;
    loop {
        match pool.capture(req.clone()).await {
            Err(e) if e.is_transient() && attempt < 2 => attempt += 1,
            other => return other,
        }
    }
}

/// Fetch an image through the egress guard: http(s), 2xx, an image type, at most `max`
/// bytes, and decodable within the engine's pixel bounds. Returns the bytes and extension.
async fn fetch_image(state: &AppState, url: &str, max: usize) -> Result<(Vec<u8>, &'static str), String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("{url}: {e}"))?;
    crate::egress::check_url(&parsed, &state.egress).map_err(|e| format!("{url}: {e}"))?;
    let client = crate::egress::builder(state.egress.clone(), Duration::from_secs(20))
        .user_agent("Capture-Ads/1")
        .build()
        .map_err(|e| e.to_string())?;
    let mut resp = client.get(parsed).send().await.map_err(|e| format!("{url}: could not be fetched ({e})"))?;
    if !resp.status().is_success() {
        return Err(format!("{url}: answered HTTP {}", resp.status().as_u16()));
    }
    let ct = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let ext = match ct.split(';').next().unwrap_or_default().trim() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/webp" => "webp",
        "image/x-icon" | "image/vnd.microsoft.icon" | "image/svg+xml" | "image/gif" => {
            return Err(format!("{url}: {ct} is not supported (PNG, JPEG or WebP)"));
        }
        other => return Err(format!("{url}: not an image (content type {other:?}); PNG, JPEG or WebP")),
    };
    if resp.content_length().is_some_and(|n| n as usize > max) {
        return Err(format!("{url}: larger than {} MB", max / (1024 * 1024)));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| format!("{url}: {e}"))? {
        if bytes.len() + chunk.len() > max {
            return Err(format!("{url}: larger than {} MB", max / (1024 * 1024)));
        }
        bytes.extend_from_slice(&chunk);
    }
    let reader = image::ImageReader::new(std::io::Cursor::new(&bytes))
        .with_guessed_format()
        .map_err(|e| format!("{url}: {e}"))?;
    let (w, h) = reader.into_dimensions().map_err(|e| format!("{url}: not a decodable image ({e})"))?;
    if w.max(h) > capture_media::ad::MAX_IMAGE_SIDE || u64::from(w) * u64::from(h) > capture_media::ad::MAX_IMAGE_PIXELS
    {
        return Err(format!("{url}: {w}×{h} pixels is too large"));
    }
    Ok((bytes, ext))
}

fn jpeg(img: &image::DynamicImage) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 88);
    img.to_rgb8().write_with_encoder(enc).map_err(|e| e.to_string())?;
    Ok(out)
}

/// A picture of the draft, before it is stored.
struct Picture {
    bytes: Vec<u8>,
    ext: &'static str,
    source: &'static str,
    tall: bool,
}

async fn draft(state: &AppState, pool: &BrowserPool, worker: &str, task: Task) {
    let job = Job { state, task: &task, worker, kind: "draft" };
    if task.attempts > MAX_CLAIMS {
        return job.fail("the draft was interrupted too many times (worker restarts)", true).await;
    }
    let row = match state.store.adshot(job.ad_id()).await {
        Ok(Some(r)) => r,
        Ok(None) => return job.fail("the draft no longer exists", true).await,
        Err(e) => return tracing::error!(error = %e, "loading an ad draft failed; it will be retried"),
    };
    let input: DraftIn = match serde_json::from_str(&row.input) {
        Ok(i) => i,
        Err(e) => return job.fail(&format!("corrupt draft input: {e}"), true).await,
    };
    let _lease = super::keep_lease(state, &task.id, worker);
    job.progress("capturing", 5).await;

    let mut pictures: Vec<Picture> = Vec::new();
    let mut facts: Option<PageFacts> = None;
    let mut hero: Option<image::DynamicImage> = None;
    if let Some(url) = &input.url {
        let desktop = match capture(pool, capture_request(url, DESKTOP, 1.0, true, Some(extract::PAGE_SCRIPT))).await {
            Ok(o) => o,
            Err(e) => {
                // As for screenshots: a page that took its time or whose script failed keeps the
                // charge; one that could not be reached at all is given back.
                let refund = !crate::jobs::capture::charged(&e, false);
                return job.fail(&format!("the page could not be captured: {e}"), refund).await;
            }
        };
        facts = PageFacts::from_title(&desktop.page_title);
        job.progress("capturing", 30).await;
        let full = match image::load_from_memory(&desktop.bytes) {
            Ok(i) => i,
            Err(e) => return job.fail(&format!("the capture is not a decodable image: {e}"), true).await,
        };
        let (w, h) = (full.width(), full.height());
        let top = full.crop_imm(0, 0, w, h.min(DESKTOP.1));
        match jpeg(&top) {
            Ok(b) => pictures.push(Picture { bytes: b, ext: "jpeg", source: "hero", tall: false }),
            Err(e) => return job.fail(&format!("encoding the hero failed: {e}"), true).await,
        }
        hero = Some(top);
        for i in 0..MAX_SECTIONS {
            let y = DESKTOP.1 + i * SECTION_HEIGHT;
            if y + 400 > h {
                break;
            }
            let section = full.crop_imm(0, y, w, SECTION_HEIGHT.min(h - y));
            if let Ok(b) = jpeg(&section) {
                pictures.push(Picture { bytes: b, ext: "jpeg", source: "section", tall: section.height() > w });
            }
        }
        match capture(pool, capture_request(url, MOBILE, 2.0, false, None)).await {
            Ok(o) => pictures.insert(1, Picture { bytes: o.bytes, ext: "png", source: "mobile", tall: true }),
            Err(e) => {
                tracing::warn!(ad = %job.ad_id(), error = %e, "the mobile capture failed; the draft goes on without it")
            }
        }
        job.progress("capturing", 45).await;
    }
    let shots = input.screenshot_urls.clone().unwrap_or_default();
    for (i, u) in shots.iter().enumerate() {
        job.progress("fetching", 45 + (10 * i as i64) / shots.len().max(1) as i64).await;
        match fetch_image(state, u, MAX_IMAGE_BYTES).await {
            Ok((bytes, ext)) => {
                let tall = image::load_from_memory(&bytes).map(|i| i.height() > i.width() * 2).unwrap_or(false);
                if hero.is_none() {
                    hero = image::load_from_memory(&bytes).ok();
                }
                pictures.push(Picture { bytes, ext, source: "screenshot", tall });
            }
            Err(e) => return job.fail(&format!("screenshotUrls: {e}"), true).await,
        }
    }
    if pictures.is_empty() {
        return job.fail("nothing to make an ad of", true).await;
    }

    job.progress("extracting", 60).await;
    let site = input.url.as_deref().or(shots.first().map(String::as_str)).unwrap_or_default();
    let host = extract::host_of(site);
    let copy = extract::write_copy(facts.as_ref(), &host);
    let (brand, source) = match facts.as_ref().and_then(extract::brand_color_from_facts) {
        Some(found) => found,
        None => match hero.as_ref().and_then(capture_media::brand_color_guess) {
            Some(c) => (c, "screenshot"),
            None => (DEFAULT_BRAND, "default"),
        },
    };
    let mut logo_file = None;
    if let Some(f) = &facts {
        for candidate in [&f.logo, &f.icon] {
            if candidate.is_empty() {
                continue;
            }
            match fetch_image(state, candidate, 2 * 1024 * 1024).await {
                Ok((bytes, ext)) => {
                    let name = blob::new_name(ext);
                    if state.blobs.put(&name, bytes, blob::content_type(&name)).await.is_ok() {
                        logo_file = Some(name);
                    }
                    break;
                }
                Err(e) => tracing::debug!(ad = %job.ad_id(), error = %e, "no usable logo here"),
            }
        }
    }

    job.progress("writing", 75).await;
    let script = extract::write_script(&copy, &host);
    let estimated = extract::estimated_duration_ms(&script);
    // Captions: the headline over the hero, the supporting lines over the next pictures, the
    // call to action over the last; the hero comes back at the end when there is room.
    let mut captions = vec![copy.headline.clone()];
    captions.extend(copy.lines.iter().cloned());
    let mut order: Vec<usize> = (0..pictures.len().min(capture_media::ad::MAX_SCENES - 1)).collect();
    if order.len() < 4 || copy.lines.len() + 1 < order.len() {
        order.push(0);
    } else {
        order.truncate(copy.lines.len() + 1);
        order.push(0);
    }
    let mut files: Vec<Option<String>> = vec![None; pictures.len()];
    let mut scenes = Vec::with_capacity(order.len());
    let n = order.len();
    for (k, &i) in order.iter().enumerate() {
        let file = match &files[i] {
            Some(f) => f.clone(),
            None => {
                let p = &pictures[i];
                let name = blob::new_name(p.ext);
                if let Err(e) = state.blobs.put(&name, p.bytes.clone(), blob::content_type(&name)).await {
                    tracing::error!(error = %e, "storing a draft picture failed; the draft will be retried");
                    return;
                }
                files[i] = Some(name.clone());
                name
            }
        };
        let last = k + 1 == n;
        let caption =
            if last { copy.cta.clone() } else { captions.get(k).cloned().unwrap_or_else(|| copy.name.clone()) };
        let motion = match (pictures[i].tall, last, k % 2) {
            (true, false, _) => Motion::PanDown,
            (_, true, _) => Motion::ZoomOut,
            (false, false, 0) => Motion::ZoomIn,
            _ => Motion::ZoomOut,
        };
        scenes.push(StoredScene {
            file,
            source: pictures[i].source.to_string(),
            caption,
            duration_ms: estimated / n as i64,
            motion,
        });
    }
    let stored = StoredDraft {
        name: copy.name.clone(),
        headline: copy.headline.clone(),
        lines: copy.lines.clone(),
        cta: copy.cta.clone(),
        brand_color: brand.hex(),
        brand_color_source: source.to_string(),
        logo_file: logo_file.clone(),
        scenes,
        script,
        estimated_duration_ms: estimated,
    };
    let draft_json = match serde_json::to_string(&stored) {
        Ok(s) => s,
        Err(e) => return job.fail(&format!("the draft does not serialize: {e}"), true).await,
    };
    let mut all_files: Vec<String> = files.into_iter().flatten().collect();
    all_files.extend(logo_file);
    let done = AdshotDone { draft: Some(draft_json), files: all_files, ..Default::default() };
    let event = json!({
        "adId": job.ad_id(), "kind": KIND_DRAFT, "status": "done", "url": input.url,
        "name": stored.name, "headline": stored.headline, "brandColor": stored.brand_color,
    });
    job.complete(&done, &event).await;
}

async fn render(state: &AppState, worker: &str, task: Task, hard_stop: &CancellationToken) {
    let job = Job { state, task: &task, worker, kind: "render" };
    if task.attempts > MAX_CLAIMS {
        return job.fail("the render was interrupted too many times (worker restarts)", true).await;
    }
    let row = match state.store.adshot(job.ad_id()).await {
        Ok(Some(r)) => r,
        Ok(None) => return job.fail("the render no longer exists", true).await,
        Err(e) => return tracing::error!(error = %e, "loading an ad render failed; it will be retried"),
    };
    let input: RenderIn = match serde_json::from_str(&row.input) {
        Ok(i) => i,
        Err(e) => return job.fail(&format!("corrupt render input: {e}"), true).await,
    };
    let draft_row = match state.store.adshot(&input.draft_id).await {
        Ok(Some(d)) if d.user_id == row.user_id && d.status == JobStatus::Done => d,
        Ok(_) => return job.fail("the draft is missing or not finished", true).await,
        Err(e) => return tracing::error!(error = %e, "loading the draft failed; it will be retried"),
    };
    let draft: StoredDraft = match draft_row.draft.as_deref().map(serde_json::from_str) {
        Some(Ok(d)) => d,
        _ => return job.fail("the draft has no storyboard", true).await,
    };
    let _lease = super::keep_lease(state, &task.id, worker);
    job.progress("preparing", 1).await;
    let mut scenes = Vec::with_capacity(draft.scenes.len());
    for s in &draft.scenes {
        let image = match state.blobs.get(&s.file).await {
            Ok(Some(b)) => b,
            Ok(None) => return job.fail("a picture of the draft is missing", true).await,
            Err(e) => return tracing::error!(error = %e, "reading a draft picture failed; it will be retried"),
        };
        scenes.push(Scene {
            image,
            caption: s.caption.clone(),
            duration: s.duration_ms as f64 / 1000.0,
            motion: s.motion,
        });
    }
    let orientation = input.orientation.unwrap_or_default();
    let spec = AdSpec {
        scenes,
        script: draft.script.clone(),
        voice_id: input.voice_id.clone(),
        music_id: input.music_id.clone(),
        brand_color: input.brand_color.clone().unwrap_or_else(|| draft.brand_color.clone()),
        size: match orientation {
            Orientation::Portrait => AdSize::Portrait,
            Orientation::Landscape => AdSize::Landscape,
        },
    };
    if let Err(e) = capture_media::ad::validate(&spec) {
        return job.fail(&format!("the draft cannot be rendered: {e}"), true).await;
    }
    let dir = state.cfg.data_dir.join("ad-tmp");
    if let Err(e) = tokio::fs::create_dir_all(&dir).await {
        return job.fail(&format!("no room to render: {e}"), true).await;
    }
    let output = dir.join(format!("{}-{}.mp4", job.ad_id(), capture_core::ids::random_string(8)));
    // Progress from the engine, written when the stage changes or every 5 %.
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel::<capture_media::Progress>();
    let mut opts = RenderOptions::new(&output);
    opts.temp_root = Some(dir.clone());
    opts.progress = Some(Arc::new(move |p| {
        let _ = ptx.send(p);
    }));
    let reporter = {
        let (st, tid, w, id) = (state.clone(), task.id.clone(), worker.to_string(), job.ad_id().to_string());
        tokio::spawn(async move {
            let (mut last_stage, mut last_pct) = (None, -1i64);
            while let Some(p) = prx.recv().await {
                let pct = (5.0 + p.overall * 90.0).round() as i64;
                if Some(p.stage) == last_stage && pct < last_pct + 5 {
                    continue;
                }
                last_stage = Some(p.stage);
                last_pct = pct;
                let stage = serde_json::to_value(p.stage).ok().and_then(|v| v.as_str().map(str::to_string));
                let stage = stage.unwrap_or_else(|| "rendering".into());
                if let Ok(true) = st.store.adshot_progress(&tid, &w, &id, &stage, pct, st.clock.now_ms()).await {
                    st.job_changed(&id);
                }
            }
        })
    };
    let result = tokio::select! {
        r = tokio::time::timeout(RENDER_LIMIT, capture_media::render_ad(&spec, &opts)) => r,
        _ = hard_stop.cancelled() => {
            // The render future is dropped: its subprocesses are killed and its files removed.
            let _ = tokio::fs::remove_file(&output).await;
            tracing::info!(ad = %job.ad_id(), "shutdown: the render goes back to the queue when its lease runs out");
            return;
        }
    };
    drop(opts);
    let _ = reporter.await;
    let rendered = match result {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            let _ = tokio::fs::remove_file(&output).await;
            return job.fail(&format!("rendering failed: {e}"), true).await;
        }
        Err(_) => {
            let _ = tokio::fs::remove_file(&output).await;
            return job.fail(&format!("rendering took longer than {} s", RENDER_LIMIT.as_secs()), true).await;
        }
    };
    job.progress("storing", 96).await;
    let bytes = tokio::fs::read(&output).await;
    let _ = tokio::fs::remove_file(&output).await;
    let bytes = match bytes {
        Ok(b) => b,
        Err(e) => return job.fail(&format!("the rendered file could not be read: {e}"), true).await,
    };
    let video = blob::new_name("mp4");
    if let Err(e) = state.blobs.put(&video, bytes, "video/mp4").await {
        tracing::error!(error = %e, "storing a rendered ad failed; it will be retried");
        return;
    }
    let thumb = blob::new_name("png");
    let thumb_key = match state.blobs.put(&thumb, rendered.thumbnail_png.clone(), "image/png").await {
        Ok(()) => Some(thumb),
        Err(e) => {
            tracing::warn!(error = %e, "storing an ad thumbnail failed");
            None
        }
    };
    let done = AdshotDone {
        video_key: Some(video.clone()),
        thumb_key: thumb_key.clone(),
        duration_ms: Some((rendered.duration * 1000.0).round() as i64),
        width: Some(i64::from(rendered.width)),
        height: Some(i64::from(rendered.height)),
        meta: Some(
            json!({
                "voiceSpanMs": rendered.voice_span.map(|(s, e)| [(s * 1000.0).round() as i64, (e * 1000.0).round() as i64]),
                "scenesMs": rendered.scenes.iter().map(|(s, d)| [(s * 1000.0).round() as i64, (d * 1000.0).round() as i64]).collect::<Vec<_>>(),
                "captionText": rendered.caption_colors.text.hex(),
                "captionPlate": rendered.caption_colors.plate.hex(),
                "stageSeconds": rendered.stage_seconds.iter().map(|(st, s)| (serde_json::to_value(st).ok(), *s)).collect::<Vec<_>>(),
            })
            .to_string(),
        ),
        ..Default::default()
    };
    let event = json!({
        "adId": job.ad_id(), "kind": "render", "status": "done", "draftId": input.draft_id,
        // Stored and possibly retried for hours: never a presigned URL.
        "videoUrl": state.lasting_file_url(&video),
        "thumbnailUrl": thumb_key.as_deref().map(|t| state.lasting_file_url(t)),
        "durationMs": done.duration_ms, "width": done.width, "height": done.height,
    });
    job.complete(&done, &event).await;
}
