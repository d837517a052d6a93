//! A scrolling video's frames: the page stepped from its top to its end (or to an element)
//! one video frame at a time, each frame a JPEG of the view written to a spool directory.
//! Frame by frame rather than a live screencast, so the video is as smooth on a busy machine
//! as on an idle one and its length is exactly the one asked for.

use std::path::Path;

use capture_core::options::ScrollSettings;

use super::Page;
use crate::protocol as p;
use crate::{CaptureError, scripts};

/// JPEG quality of a spooled frame (the encoder compresses again).
const FRAME_QUALITY: u8 = 85;
/// The deepest a page is scrolled through for lazy content before recording, in CSS pixels.
const LAZY_SCROLL_MAX: u64 = 100_000;

impl Page {
    /// Record `s`'s frames into `dir` (`f00000.jpg`, …); returns how many were written.
    pub(crate) async fn record_scroll(&mut self, s: &ScrollSettings, dir: &Path) -> Result<u32, CaptureError> {
        // Lazy content loads first, as for a full-page capture; the page is back at its top.
        let _ = self.eval_job(&scripts::scroll_through(LAZY_SCROLL_MAX)).await?;
        let _ = self.eval_job(scripts::SETTLE).await?;
        let target = match &s.until_selector {
            Some(sel) => format!(
                "(() => {{ const e = document.querySelector({}); if (!e) return -1; \
                 return Math.min(max, Math.max(0, e.getBoundingClientRect().top + scrollY)); }})()",
                serde_json::to_string(sel).unwrap_or_default()
            ),
            None => "max".to_string(),
        };
        let measure = format!(
            "(() => {{ const el = document.scrollingElement || document.documentElement; \
             const max = Math.max(0, Math.max(el.scrollHeight, document.body ? document.body.scrollHeight : 0) - innerHeight); \
             return {target}; }})()"
        );
        let end = match self.eval_job(&measure).await? {
            Ok(v) => v.as_f64().unwrap_or(0.0),
            Err(e) => return Err(CaptureError::Browser(format!("measuring the page failed: {e}"))),
        };
        if end < 0.0 {
            let sel = s.until_selector.as_deref().unwrap_or_default();
            return Err(CaptureError::NotFound(format!("scroll.untilSelector '{sel}' matched nothing on the page")));
        }
        let shot = p::CaptureScreenshot {
            format: "jpeg",
            quality: Some(FRAME_QUALITY),
            clip: None,
            from_surface: true,
            optimize_for_speed: true,
            capture_beyond_viewport: false,
        };
        let frames = s.frames();
        let mut last_y = f64::NAN;
        for i in 0..frames {
            let y = (s.position(i) * end).round();
            if y != last_y {
                // `instant`: a page's `scroll-behavior: smooth` would otherwise animate it.
                let js = format!("window.scrollTo({{top: {y}, left: 0, behavior: 'instant'}})");
                if let Err(e) = self.eval_job(&js).await? {
                    return Err(CaptureError::Browser(format!("scrolling the page failed: {e}")));
                }
                last_y = y;
            }
            let jpeg = self.screenshot(&shot).await?;
            tokio::fs::write(dir.join(format!("f{i:05}.jpg")), jpeg)
                .await
                .map_err(|e| CaptureError::Browser(format!("spooling a video frame failed: {e}")))?;
        }
        Ok(frames)
    }
}
