//! One capture job on a prepared page: emulation, navigation, the request's actions, then
//! the image or PDF. The steps themselves live in [`crate::page`] and [`crate::encode`].

use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::cdp::Conn;
use crate::egress::FailureLog;
use crate::encode::{THUMB_WIDTH, finish_image, image_size};
use crate::page::Page;
use crate::page::fullpage::{FullPage, MAX_OUTPUT_HEIGHT};
use crate::page::tiles::TiledFormat;
use crate::phases::PhaseClock;
use crate::prepare::{Prepared, View};
use crate::protocol as p;
use crate::{CaptureError, CaptureOutput, CaptureRequest, ImageFormat, PageSource};

/// Chromium's own thumbnail: the top of the page, scaled to THUMB_WIDTH.
fn thumbnail_params(req: &CaptureRequest) -> p::CaptureScreenshot {
    let scale = THUMB_WIDTH / (f64::from(req.options.width) * req.options.device_scale_factor.max(0.1));
    p::CaptureScreenshot {
        format: "png",
        quality: None,
        clip: Some(p::Clip {
            x: 0.0,
            y: 0.0,
            width: f64::from(req.options.width),
            height: f64::from(req.options.height),
            scale,
        }),
        from_surface: true,
        optimize_for_speed: false,
        capture_beyond_viewport: false,
    }
}

/// Run one capture on a prepared page; its context is disposed when this returns.
pub(crate) async fn run(
    conn: &Arc<Conn>,
    prepared: Prepared,
    failures: &Arc<FailureLog>,
    decodes: &Arc<Semaphore>,
    req: &CaptureRequest,
    deadline: Instant,
    mut clock: PhaseClock,
) -> Result<CaptureOutput, CaptureError> {
    let deadline_msg = crate::deadline_message(req.deadline);
    let mut page = Page::new(conn.clone(), failures.clone(), prepared, deadline, deadline_msg);
    let mut tags: Vec<String> = Vec::new();
    let o = &req.options;

    // The spare page was set up for the most recent job's view; adjust if this differs.
    let want = View::of(req);
    let have = page.prepared.view;
    // Pipelined: one round trip.
    let metrics = ((have.width, have.height, have.dsf, have.mobile)
        != (want.width, want.height, want.dsf, want.mobile))
        .then(|| page.send(&want.metrics(u64::from(req.options.height))));
    let media = ((have.dark, have.reduced, have.print) != (want.dark, want.reduced, want.print))
        .then(|| page.send(&want.media()));
    if let Some(r) = metrics {
        page.finish(r, "Emulation.setDeviceMetricsOverride").await?;
    }
    if let Some(r) = media {
        page.finish(r, "Emulation.setEmulatedMedia").await?;
    }
    // Each sends only what the request sets: nothing for a plain capture.
    page.emulate(o).await?;
    page.identify(o).await?;
    page.block(o, &req.source).await?;
    page.arm_scriptlets(&req.source).await?;
    page.arm_consent(o.cookie_consent).await?;
    if let PageSource::Url(url) = &req.source {
        page.arm_site_rules(o.cookie_consent, url).await?;
    }
    // Emulation, identity, request blocking, scriptlets and the consent script armed.
    clock.step("setup");
    page.navigate(&req.source, req.options.wait_until, req.options.timeout_ms, &mut tags).await?;
    clock.step("navigate");
    page.check_signed_in(o, &req.source).await?;
    page.check_wall(&req.source).await?;
    clock.step("wall");
    page.consent(o.cookie_consent, &mut tags).await?;
    clock.step("consent");
    if let Some(sel) = req.options.click_before.as_deref().filter(|s| !s.trim().is_empty()) {
        page.click_before(sel, req.options.timeout_ms).await?;
    }
    if let Some(sel) = req.options.wait_for.as_deref().filter(|s| !s.trim().is_empty()) {
        page.wait_for(sel, req.options.timeout_ms, &mut tags).await?;
    }
    if req.options.delay > 0 {
        page.delay(req.options.delay).await?;
    }
    if let Some(js) = req.options.pre_screenshot_js.as_deref().filter(|s| !s.trim().is_empty()) {
        page.user_script(js, req.options.timeout_ms).await?;
    }
    page.check_conditions(o).await?;
    // clickBefore, waitFor, delay, preScreenshotJs and the request's conditions.
    clock.step("wait");
    // `hidePopups`' hiding pass rides in the lists' call when nothing runs between them.
    let popups = (o.hide_popups && o.hide_selectors.is_empty()).then(|| crate::overlays::script(true));
    let hid = page.hide_blocked(&mut tags, popups.as_deref()).await?;
    // The lists' element rules (what blockAds and the like hide).
    clock.step("blocking");
    page.hide(&o.hide_selectors).await?;
    page.overlays(o.hide_popups, hid, &mut tags).await?;
    clock.step("overlays");

    let mut video = None;
    let output = if let Some(scroll) = &o.scroll {
        // The poster is the top of the page, before it moves.
        let thumb = page.screenshot(&thumbnail_params(req)).await?;
        let dir = tempfile::Builder::new()
            .prefix("capture-video-")
            .tempdir()
            .map_err(|e| CaptureError::Browser(format!("making the frame spool failed: {e}")))?;
        let count = page.record_scroll(scroll, dir.path()).await?;
        clock.step("frames");
        video = Some(crate::VideoFrames { dir: Arc::new(dir), count, fps: capture_core::options::ScrollSettings::FPS });
        let meta = page.metadata().await?;
        clock.step("metadata");
        let dsf = o.device_scale_factor.max(0.1);
        let size = Some(((f64::from(o.width) * dsf).round() as u32, (f64::from(o.height) * dsf).round() as u32));
        (Vec::new(), o.format.content_type(), size, thumb, meta)
    } else if o.format.content().is_some() {
        // The page as text is the job's file (read below, with any other form); the
        // thumbnail still shows the page.
        let thumb = page.screenshot(&thumbnail_params(req)).await?;
        clock.step("shot");
        let meta = page.metadata().await?;
        clock.step("metadata");
        (Vec::new(), o.format.content_type(), None, thumb, meta)
    } else if req.options.pdf {
        let thumb = page.screenshot(&thumbnail_params(req)).await?;
        let print = page.print_params(o).await?;
        let pdf = page.call(&print).await?;
        let bytes = crate::encode::decode_base64(&pdf.data, "PDF")?;
        clock.step("shot");
        let meta = page.metadata().await?;
        clock.step("metadata");
        (bytes, "application/pdf", None, thumb, meta)
    } else {
        // A page taller than one capture is captured screen by screen (not an element, a clip,
        // a resized image or WebP, whose format stops at 16,383 pixels).
        let tiles = o.selector.is_none()
            && o.clip.is_none()
            && o.image_width.is_none()
            && req.options.format != ImageFormat::Webp;
        let full_height = match o.full_page {
            true => Some(
                page.prepare_full_page(
                    o.width,
                    o.height,
                    o.device_scale_factor,
                    o.mobile,
                    tiles,
                    req.options.format == ImageFormat::Webp,
                    &mut tags,
                )
                .await?,
            ),
            false => None,
        };
        if let Some(FullPage::Tiled(h)) = full_height {
            if o.omit_background {
                page.transparent_background().await?;
            }
            let (format, content_type) = match req.options.format {
                ImageFormat::Jpeg => (
                    TiledFormat::Jpeg { quality: o.quality.unwrap_or(capture_core::options::defaults::QUALITY) },
                    "image/jpeg",
                ),
                _ => (TiledFormat::Png { alpha: o.omit_background }, "image/png"),
            };
            let masked = page.mask_boxes(&o.mask_selectors, false).await?;
            let (bytes, thumb) = page.capture_tiles(o.width, o.height, o.device_scale_factor, h, format).await?;
            clock.step("shot");
            let mut meta = page.metadata().await?;
            clock.step("metadata");
            meta.1.masked = pixel_boxes(&masked, (0.0, 0.0), o.device_scale_factor.max(0.1));
            let size = image_size(&bytes);
            (bytes, content_type, size, thumb, meta)
        } else {
            let full_height = full_height.map(|f| match f {
                FullPage::Grown(h) | FullPage::Tiled(h) => h,
            });
            // The region: an element's box, the clip, or (to scale it) the whole view.
            let region = match (&o.selector, &o.clip) {
                (Some(sel), _) => {
                    let b = page.element_box(sel, o.timeout_ms).await?;
                    Some((b.x, b.y, b.width, b.height.min(MAX_OUTPUT_HEIGHT / o.device_scale_factor.max(0.1)), true))
                }
                (None, Some(c)) => Some((c.x, c.y, c.width, c.height, o.full_page)),
                (None, None) if o.image_width.is_some() => {
                    let h = full_height.map_or(f64::from(o.height), |h| h as f64);
                    Some((0.0, 0.0, f64::from(o.width), h, false))
                }
                (None, None) => None,
            };
            if o.omit_background {
                page.transparent_background().await?;
            }
            let (format, content_type) = match req.options.format {
                ImageFormat::Jpeg => ("jpeg", "image/jpeg"),
                ImageFormat::Webp => ("webp", "image/webp"),
                // Videos took the branch above.
                _ => ("png", "image/png"),
            };
            let png = req.options.format == ImageFormat::Png;
            // PNG: Chromium's fast encoder (its default one is the slowest step of a
            // capture), then a better deflate here, off the browser's threads.
            // imageWidth: the browser renders the region at that width (sharp, not resampled).
            let dsf = o.device_scale_factor.max(0.1);
            let params = p::CaptureScreenshot {
                format,
                quality: (!png).then_some(o.quality.unwrap_or(capture_core::options::defaults::QUALITY)),
                clip: region.map(|(x, y, width, height, _)| p::Clip {
                    x,
                    y,
                    width,
                    height,
                    scale: o.image_width.map_or(1.0, |w| f64::from(w) / (width * dsf)),
                }),
                from_surface: true,
                optimize_for_speed: png,
                capture_beyond_viewport: region.is_some_and(|r| r.4),
            };
            // A monitor's ignored elements, where they are in this image.
            let beyond = region.map_or(full_height.is_some(), |r| r.4);
            let masked = page.mask_boxes(&o.mask_selectors, !beyond).await?;
            let masked = pixel_boxes(
                &masked,
                region.map_or((0.0, 0.0), |r| (r.0, r.1)),
                dsf * params.clip.as_ref().map_or(1.0, |c| c.scale),
            );
            let shot = page.screenshot(&params).await?;
            clock.step("shot");
            // The thumbnail shows the first screenful of the image.
            let top_px = match params.clip {
                Some(c) => (c.height.min(f64::from(o.height)) * dsf * c.scale).round() as u32,
                None => (f64::from(o.height) * dsf).round() as u32,
            };
            let decodes = decodes.clone();
            let work = tokio::spawn(async move {
                // Bounded: a burst of big captures must not multiply the peak memory.
                let _permit = decodes.acquire_owned().await;
                tokio::task::spawn_blocking(move || finish_image(shot, png, top_px)).await
            });
            // Read what the page says of itself while the image is being encoded.
            let encoding = clock.now();
            let mut meta = page.metadata().await?;
            meta.1.masked = masked;
            clock.step("metadata");
            let (bytes, thumb) = match tokio::time::timeout_at(page.deadline, work).await {
                Ok(Ok(Ok(r))) => r,
                Ok(Ok(Err(e))) | Ok(Err(e)) => {
                    return Err(CaptureError::Browser(format!("image encoding failed: {e}")));
                }
                Err(_) => return Err(page.deadline_err()),
            };
            // Beside the metadata's step, off the browser's threads.
            clock.since("encode", encoding);
            let thumb = match thumb {
                Some(t) => t,
                None => page.screenshot(&thumbnail_params(req)).await?,
            };
            let size = image_size(&bytes);
            (bytes, content_type, size, thumb, meta)
        }
    };
    let (mut bytes, content_type, size, thumb, (page_title, mut metadata)) = output;
    // The page as text and the extracted fields, from the same load, after the capture (so
    // reading them cannot change the pixels), in one call.
    let rules = o.extract.as_ref().map(|e| &e.rules).filter(|r| !r.is_empty());
    // A prompt reads the page's Markdown (the whole page unless the request narrows it).
    let wants_text = o.content.is_some() || o.extract.as_ref().is_some_and(|e| e.prompt.is_some());
    let mut texts = Vec::new();
    let (content, extracted) = if wants_text || rules.is_some() {
        let whole = capture_core::options::ContentSettings::default();
        let settings = wants_text.then(|| o.content.as_ref().unwrap_or(&whole));
        page.read_text(settings, rules).await?
    } else {
        (None, None)
    };
    clock.step("content");
    if let (Some(c), Some(settings)) = (&content, &o.content) {
        let at = capture_core::time::iso(capture_core::time::now_ms());
        for (i, form) in settings.formats.iter().enumerate() {
            let r = crate::content::render(*form, c, &metadata, &at, settings);
            // The job's text is its file's, or the first form `content` asks for.
            if i == 0 {
                metadata.content = Some(r.report);
            }
            if Some(*form) == o.format.content() {
                bytes = r.text.into_bytes();
            } else {
                texts.push((*form, r.text.into_bytes()));
            }
        }
    }
    if let Some(x) = extracted {
        if let Some(settings) = &o.extract {
            settings
                .validate(&x.data)
                .map_err(|e| CaptureError::Rejected(format!("extract: the data does not match the schema at {e}")))?;
        }
        metadata.extract = Some(x);
    }
    let phases = clock.finish();
    tracing::debug!(target: "capture_browser::timing", steps = ?phases.steps, "capture phases");
    Ok(CaptureOutput {
        bytes,
        content_type,
        width: size.map(|s| s.0),
        height: size.map(|s| s.1),
        thumbnail: Some(thumb),
        page_title,
        final_url: metadata.final_url.clone(),
        tags,
        metadata,
        video,
        content,
        texts,
        phases,
    })
}

/// Boxes in CSS pixels (relative to the document or viewport) as boxes of the image whose top
/// left is `origin` and whose pixels are `scale` CSS pixels each; those wholly outside dropped.
fn pixel_boxes(boxes: &[[f64; 4]], origin: (f64, f64), scale: f64) -> Vec<capture_core::metadata::PixelBox> {
    boxes
        .iter()
        .filter_map(|[x, y, w, h]| {
            let (x0, y0) = ((x - origin.0) * scale, (y - origin.1) * scale);
            let (x1, y1) = (x0 + w * scale, y0 + h * scale);
            let (x0, y0) = (x0.max(0.0).floor(), y0.max(0.0).floor());
            (x1 > x0 && y1 > y0).then(|| capture_core::metadata::PixelBox {
                x: x0 as u32,
                y: y0 as u32,
                w: (x1.ceil() - x0) as u32,
                h: (y1.ceil() - y0) as u32,
            })
        })
        .collect()
}
