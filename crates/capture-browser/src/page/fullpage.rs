//! Full-page preparation: scroll through (lazy content), grow the viewport to the page's
//! height (capped at [`MAX_OUTPUT_HEIGHT`] output pixels), wait for fonts and images.

use std::time::Duration;

use tokio::time::Instant;

use super::Page;
use crate::protocol as p;
use crate::{CaptureError, scripts};

/// Tallest output image of one capture, in output pixels (taller full pages are tiled:
/// [`super::tiles`]).
pub(crate) const MAX_OUTPUT_HEIGHT: f64 = 16384.0;

/// How a full page is captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FullPage {
    /// The viewport grown to the page's height (CSS px): one capture.
    Grown(u64),
    /// Taller than one capture: screen by screen, this many CSS px.
    Tiled(u64),
}

impl Page {
    /// Grow the viewport of a `width`×… page at `dsf` to its full height, returned in CSS
    /// pixels; tags `fullpage-truncated` when it is taller than the cap. With `tiles`, a page
    /// taller than one capture keeps its viewport and is to be captured screen by screen, up
    /// to [`super::tiles::MAX_TILED_HEIGHT`] output pixels.
    pub(crate) async fn prepare_full_page(
        &mut self,
        width: u32,
        height: u32,
        dsf: f64,
        mobile: bool,
        tiles: bool,
        webp: bool,
        tags: &mut Vec<String>,
    ) -> Result<FullPage, CaptureError> {
        let metrics = |h: u64| p::SetDeviceMetricsOverride {
            width,
            height: h,
            device_scale_factor: dsf,
            mobile,
            screen_orientation: None,
        };
        let dsf = dsf.max(0.1);
        // WebP cannot be taller than 16,383 pixels.
        let cap_px = if webp { f64::from(capture_core::options::bounds::WEBP_MAX) } else { MAX_OUTPUT_HEIGHT };
        let cap_css = (cap_px / dsf).floor().max(1.0) as u64;
        let tiled_cap_css = (super::tiles::MAX_TILED_HEIGHT / dsf).floor().max(1.0) as u64;
        let scroll_cap = if tiles { tiled_cap_css } else { cap_css };
        let measured = match self.eval_job(&scripts::scroll_through(scroll_cap)).await? {
            Ok(v) => v.as_f64().unwrap_or(f64::from(height)).ceil() as u64,
            Err(_) => u64::from(height),
        };
        if tiles && measured > cap_css {
            // Fonts and the images the scroll-through started, then screen by screen.
            let settled = match self.eval_job(scripts::SETTLE).await? {
                Ok(v) => v.as_f64().unwrap_or(measured as f64).ceil() as u64,
                Err(_) => measured,
            };
            let full = settled.max(measured);
            if full > tiled_cap_css {
                tags.push("fullpage-truncated".into());
            }
            return Ok(FullPage::Tiled(full.min(tiled_cap_css)));
        }
        let mut truncated = measured > cap_css;
        let mut grown = measured.clamp(1, cap_css);
        self.call(&metrics(grown)).await?;
        for round in 0..2 {
            let settled = match self.eval_job(scripts::SETTLE).await? {
                Ok(v) => v.as_f64().unwrap_or(grown as f64).ceil() as u64,
                Err(_) => grown,
            };
            if settled > cap_css {
                truncated = true;
            }
            let next = settled.clamp(1, cap_css);
            if next <= grown || round == 1 {
                break;
            }
            grown = next;
            self.call(&metrics(grown)).await?;
        }
        // Let requests the growth started (lazy backgrounds) finish, briefly.
        let until = (Instant::now() + Duration::from_secs(3)).min(self.deadline);
        while !self.inflight.is_empty() {
            match self.pump_until(until).await {
                Ok(()) => {}
                Err(super::Stop::Elapsed) => break,
                Err(super::Stop::Fail(e)) => return Err(e),
            }
        }
        if truncated {
            tags.push("fullpage-truncated".into());
        }
        Ok(FullPage::Grown(grown))
    }
}
