//! Full pages taller than one capture can be (Chromium renders at most 16,384 output pixels at
//! once): the page is scrolled a screen at a time at its own viewport height (so `100vh` means
//! what it means on screen), each screen captured and its rows written into one image as it
//! arrives, up to [`MAX_TILED_HEIGHT`] output pixels (tagged `fullpage-truncated` past it).
//!
//! - Fixed and sticky elements (a header, a chat launcher, a cookie bar) show once: in the first
//!   screen, where a visitor sees them; they are hidden for the rest.
//! - Lazy images were loaded by the scroll-through before (`scripts::scroll_through`), and each
//!   screen waits for its images before it is captured.
//! - Memory is bounded: a PNG is deflated row by row as the screens arrive (one screen of pixels
//!   and the compressed output are held, never the whole image); a JPEG keeps the RGB rows (3
//!   bytes a pixel) and is encoded at the end. WebP cannot be taller than 16,383 pixels (the
//!   format's limit), so WebP full pages keep the one-capture path and its cap.

use super::Page;
use crate::CaptureError;
use crate::encode::{Decoded, decode_capture, thumbnail_of};
use crate::protocol as p;

/// Tallest tiled full page, in output pixels.
pub(crate) const MAX_TILED_HEIGHT: f64 = capture_core::options::bounds::FULL_PAGE_TILED_MAX as f64;

/// The output format of a tiled page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TiledFormat {
    Png { alpha: bool },
    Jpeg { quality: u8 },
}

/// Scroll to `y` (CSS px) without smooth scrolling, wait two frames and for the images in view;
/// returns where the page actually scrolled to (less than `y` at the bottom).
fn scroll_js(y: u64) -> String {
    format!(
        r#"(async (y) => {{
  const root = document.documentElement;
  const old = root.style.scrollBehavior;
  root.style.scrollBehavior = 'auto';
  window.scrollTo({{ top: y, left: 0, behavior: 'instant' }});
  root.style.scrollBehavior = old;
  const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  await frame();
  const inView = Array.from(document.images).filter((i) => {{ const r = i.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight && !i.complete; }});
  if (inView.length) await Promise.race([Promise.all(inView.map((i) => new Promise((r) => {{ i.addEventListener('load', r, {{ once: true }}); i.addEventListener('error', r, {{ once: true }}); }}))), new Promise((r) => setTimeout(r, 1500))]);
  await frame();
  return window.scrollY;
}})({y})"#
    )
}

/// Hide every fixed and sticky element (they were captured with the first screen).
const HIDE_FIXED: &str = r#"(() => {
  let n = 0;
  for (const el of document.querySelectorAll('body *')) {
    const pos = getComputedStyle(el).position;
    if (pos === 'fixed' || pos === 'sticky') { el.style.setProperty('visibility', 'hidden', 'important'); n++; }
  }
  return n;
})()"#;

/// Where the PNG encoder writes (kept by the caller: the encoder's `finish` consumes it).
#[derive(Clone, Default)]
struct Out(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Rows written so far, into the encoder of the format.
enum Sink {
    Png { w: png::StreamWriter<'static, Out>, out: Out },
    Jpeg { rows: Vec<u8>, quality: u8 },
}

impl Page {
    /// Capture a full page `height_css` tall (already measured, lazy content loaded) at a
    /// `width`×`view_h` viewport and `dsf`, screen by screen; returns the image and the
    /// thumbnail of its first screen.
    pub(crate) async fn capture_tiles(
        &mut self,
        width: u32,
        view_h: u32,
        dsf: f64,
        height_css: u64,
        format: TiledFormat,
    ) -> Result<(Vec<u8>, Vec<u8>), CaptureError> {
        let dsf = dsf.max(0.1);
        let out_w = (f64::from(width) * dsf).round() as u32;
        let out_h = ((height_css as f64) * dsf).round().min(MAX_TILED_HEIGHT) as u32;
        let channels: usize = match format {
            TiledFormat::Png { alpha: true } => 4,
            _ => 3,
        };
        let fail = |e: String| CaptureError::Browser(format!("the tiled full page could not be encoded: {e}"));
        let mut sink = match format {
            TiledFormat::Png { alpha } => {
                let out = Out::default();
                let mut enc = png::Encoder::new(out.clone(), out_w, out_h);
                enc.set_color(if alpha { png::ColorType::Rgba } else { png::ColorType::Rgb });
                enc.set_depth(png::BitDepth::Eight);
                enc.set_compression(png::Compression::Balanced);
                enc.set_filter(png::Filter::Adaptive);
                let w = enc.write_header().map_err(|e| fail(e.to_string()))?;
                Sink::Png { w: w.into_stream_writer().map_err(|e| fail(e.to_string()))?, out }
            }
            TiledFormat::Jpeg { quality } => {
                Sink::Jpeg { rows: Vec::with_capacity(out_w as usize * out_h as usize * 3), quality }
            }
        };
        let shot = p::CaptureScreenshot {
            format: "png",
            quality: None,
            clip: None,
            from_surface: true,
            optimize_for_speed: true,
            capture_beyond_viewport: false,
        };
        let mut written: u32 = 0;
        let mut thumb = None;
        let mut y_css: u64 = 0;
        while written < out_h {
            let at = match self.eval_job(&scroll_js(y_css)).await? {
                Ok(v) => v.as_f64().unwrap_or(y_css as f64),
                Err(e) => return Err(CaptureError::Script(format!("scrolling the full page failed: {e}"))),
            };
            let bytes = self.screenshot(&shot).await?;
            let tile = tokio::task::spawn_blocking(move || decode_capture(&bytes))
                .await
                .map_err(|e| fail(e.to_string()))?
                .ok_or_else(|| fail("a screen of the page did not decode".into()))?;
            if thumb.is_none() {
                let t = thumbnail_of(&tile, (f64::from(view_h) * dsf).round() as u32);
                thumb = Some(t);
                // Everything fixed or sticky was seen once, where a visitor sees it.
                let _ = self.eval_job(HIDE_FIXED).await?;
            }
            // The screen shows the page from `at`; the rows wanted start at `written`.
            let top_out = (at * dsf).round() as u32;
            let skip = written.saturating_sub(top_out).min(tile.height);
            let take = (tile.height - skip).min(out_h - written);
            if take == 0 {
                // The page cannot scroll any further (it got shorter): end here.
                break;
            }
            write_rows(&mut sink, &tile, skip, take, out_w, channels).map_err(fail)?;
            written += take;
            y_css = ((f64::from(written) / dsf).floor() as u64).max(y_css + 1);
            tokio::task::yield_now().await;
        }
        // A page that got shorter while being captured: the rest is the page's background.
        if written < out_h {
            let blank = Decoded {
                data: vec![255; out_w as usize * channels * (out_h - written) as usize],
                width: out_w,
                height: out_h - written,
                channels: channels as u8,
            };
            write_rows(&mut sink, &blank, 0, out_h - written, out_w, channels).map_err(fail)?;
        }
        let image = tokio::task::spawn_blocking(move || finish(sink, out_w, out_h))
            .await
            .map_err(|e| fail(e.to_string()))?
            .map_err(fail)?;
        Ok((image, thumb.unwrap_or_default()))
    }
}

/// Rows `skip..skip + take` of `tile`, as `channels` per pixel, `width` wide (a screen narrower
/// or wider than the image is cut or padded white).
fn write_rows(
    sink: &mut Sink,
    tile: &Decoded,
    skip: u32,
    take: u32,
    width: u32,
    channels: usize,
) -> Result<(), String> {
    use std::io::Write;
    let src_ch = usize::from(tile.channels);
    let mut row = vec![255u8; width as usize * channels];
    for r in skip..skip + take {
        let start = r as usize * tile.width as usize * src_ch;
        let src = &tile.data[start..start + tile.width as usize * src_ch];
        for x in 0..(width.min(tile.width) as usize) {
            let s = &src[x * src_ch..x * src_ch + src_ch];
            let d = &mut row[x * channels..x * channels + channels];
            d[..3].copy_from_slice(&s[..3]);
            if channels == 4 {
                d[3] = if src_ch == 4 { s[3] } else { 255 };
            }
        }
        match sink {
            Sink::Png { w, .. } => w.write_all(&row).map_err(|e| e.to_string())?,
            Sink::Jpeg { rows, .. } => rows.extend_from_slice(&row),
        }
    }
    Ok(())
}

fn finish(sink: Sink, width: u32, height: u32) -> Result<Vec<u8>, String> {
    match sink {
        Sink::Png { w, out } => {
            w.finish().map_err(|e| e.to_string())?;
            let bytes = std::mem::take(&mut *out.0.lock().unwrap());
            Ok(bytes)
        }
        Sink::Jpeg { rows, quality } => {
            let mut out = Vec::new();
            image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
                .encode(&rows, width, height, image::ExtendedColorType::Rgb8)
                .map_err(|e| e.to_string())?;
            Ok(out)
        }
    }
}
