//! Turning Chromium's screencast frames into an MP4 with real timing.
//!
//! `Page.screencastFrame` delivers JPEG or PNG frames only when the page changes, at
//! irregular intervals, with long gaps while it is idle, and at a new size after a viewport
//! change. The recorder spools each frame to a temporary directory as it arrives (nothing
//! but a small index stays in memory), and [`ScreencastRecorder::finish`] has ffmpeg read
//! them through a concat list in which each frame lasts until the next one's timestamp:
//! the output is constant-frame-rate H.264 whose timeline matches the session's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{MediaError, Result};
use crate::probe::{self, MediaInfo};
use crate::process::{Stdout, move_file, run_in};

/// Limits and encoding settings of a recording.
#[derive(Debug, Clone)]
pub struct RecorderOptions {
    /// Output frame rate (unused with `variable_frame_rate`).
    pub fps: u32,
    /// Encode only the frames the page sent, each with its own timestamp, instead of
    /// repeating frames to a constant rate: measured 7.8 against 18.1 CPU-s for 60 s of
    /// 1280×800 changing at 5 frames/s, for players and editors that accept VFR MP4.
    pub variable_frame_rate: bool,
    /// The largest output width; bigger first frames are scaled down (height follows).
    pub max_width: u32,
    /// The largest output height.
    pub max_height: u32,
    /// Most frames accepted.
    pub max_frames: usize,
    /// Largest encoded frame, in bytes.
    pub max_frame_bytes: usize,
    /// Largest side of a frame, in pixels.
    pub max_frame_side: u32,
    /// Most bytes spooled in total.
    pub max_total_bytes: u64,
    /// Longest recording (last timestamp minus first).
    pub max_duration: Duration,
    /// Time limit of the encode in `finish`.
    pub encode_timeout: Duration,
    /// x264 preset.
    pub preset: String,
    /// x264 constant rate factor.
    pub crf: u32,
    /// Encoder threads.
    pub threads: u32,
    /// Where the spool directory is made (the system's temporary directory by default).
    pub temp_root: Option<PathBuf>,
}

impl Default for RecorderOptions {
    fn default() -> Self {
        RecorderOptions {
            fps: 25,
            variable_frame_rate: false,
            max_width: 1920,
            max_height: 1920,
            max_frames: 30_000,
            max_frame_bytes: 8 * 1024 * 1024,
            max_frame_side: 8192,
            max_total_bytes: 2 * 1024 * 1024 * 1024,
            max_duration: Duration::from_secs(3 * 3600),
            encode_timeout: Duration::from_secs(900),
            preset: "veryfast".into(),
            crf: 26,
            threads: 2,
            temp_root: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrameFormat {
    Jpeg,
    Png,
}

impl FrameFormat {
    fn sniff(b: &[u8]) -> Option<Self> {
        if b.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(FrameFormat::Jpeg)
        } else if b.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(FrameFormat::Png)
        } else {
            None
        }
    }

    fn ext(self) -> &'static str {
        match self {
            FrameFormat::Jpeg => "jpg",
            FrameFormat::Png => "png",
        }
    }

    fn image_format(self) -> image::ImageFormat {
        match self {
            FrameFormat::Jpeg => image::ImageFormat::Jpeg,
            FrameFormat::Png => image::ImageFormat::Png,
        }
    }
}

/// A recording in progress. Dropping it removes its spooled frames.
pub struct ScreencastRecorder {
    opts: RecorderOptions,
    dir: tempfile::TempDir,
    /// (file number, timestamp) of each frame kept, in order.
    frames: Vec<(u32, f64)>,
    next_file: u32,
    received: usize,
    format: Option<FrameFormat>,
    first_dims: Option<(u32, u32)>,
    canvas: Option<(u32, u32)>,
    total_bytes: u64,
    /// Chapters: (Unix seconds, title), in the order given.
    chapters: Vec<(f64, String)>,
}

/// What [`ScreencastRecorder::finish`] produced.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The MP4 written.
    pub output: PathBuf,
    /// What ffprobe says about it.
    pub info: MediaInfo,
    /// The session's span in seconds (end timestamp minus the first frame's).
    pub span: f64,
    /// Frames used.
    pub frames: usize,
    /// Time the encode took.
    pub encode_time: Duration,
}

impl ScreencastRecorder {
    /// Starts a recording, creating its spool directory.
    pub fn new(opts: RecorderOptions) -> Result<Self> {
        if opts.fps == 0 || opts.fps > 60 {
            return Err(MediaError::Invalid(format!("fps {} is out of range 1–60", opts.fps)));
        }
        let root = opts.temp_root.clone().unwrap_or_else(std::env::temp_dir);
        let dir = tempfile::Builder::new()
            .prefix("capture-rec-")
            .tempdir_in(&root)
            .map_err(|e| MediaError::io(format!("creating a spool directory in {}", root.display()), e))?;
        Ok(ScreencastRecorder {
            opts,
            dir,
            frames: Vec::new(),
            next_file: 0,
            received: 0,
            format: None,
            first_dims: None,
            canvas: None,
            total_bytes: 0,
            chapters: Vec::new(),
        })
    }

    /// Make the recording begin at `timestamp` (Unix seconds): the first frame shows from then
    /// on, when it came later. Chromium sends its first screencast frame at the page's next
    /// paint, which on a busy machine (or a still page) can be seconds after recording began.
    pub fn starts_at(&mut self, timestamp: f64) {
        if let Some(first) = self.frames.first_mut()
            && timestamp.is_finite()
            && timestamp < first.1
        {
            first.1 = timestamp;
        }
    }

    /// Start a chapter titled `title` at `timestamp` (Unix seconds, the frames' clock): the
    /// MP4's chapter list marks it (players show it on the timeline).
    pub fn chapter(&mut self, timestamp: f64, title: &str) {
        let title: String = title.chars().filter(|c| !c.is_control()).take(200).collect();
        self.chapters.push((timestamp, title));
    }

    /// The spool directory (gone once the recorder is finished or dropped).
    pub fn spool_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Frames kept so far (a frame with the same or an earlier timestamp than the previous
    /// one replaces it).
    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// The output size, fixed by the first frame (even, within the maximums).
    pub fn canvas(&self) -> Option<(u32, u32)> {
        self.canvas
    }

    /// Adds a frame: JPEG or PNG bytes and the frame's timestamp in seconds (any epoch,
    /// e.g. `metadata.timestamp` of `Page.screencastFrame`).
    pub async fn push_frame(&mut self, data: &[u8], timestamp: f64) -> Result<()> {
        let index = self.received;
        self.received += 1;
        let bad = |reason: String| MediaError::BadFrame { index, reason };
        if !timestamp.is_finite() {
            return Err(bad(format!("timestamp {timestamp} is not a number")));
        }
        if data.len() > self.opts.max_frame_bytes {
            return Err(bad(format!("{} bytes is over the {}-byte limit", data.len(), self.opts.max_frame_bytes)));
        }
        let format = FrameFormat::sniff(data).ok_or_else(|| bad("not a JPEG or PNG image".into()))?;
        let (w, h) = image::ImageReader::with_format(std::io::Cursor::new(data), format.image_format())
            .into_dimensions()
            .map_err(|e| bad(e.to_string()))?;
        let side = self.opts.max_frame_side;
        if w == 0 || h == 0 || w > side || h > side {
            return Err(MediaError::ImageTooLarge {
                what: format!("frame {index}"),
                width: w,
                height: h,
                max_side: side,
                max_pixels: u64::from(side) * u64::from(side),
            });
        }
        if let Some(&(_, first)) = self.frames.first()
            && timestamp - first > self.opts.max_duration.as_secs_f64()
        {
            return Err(MediaError::RecordingLimit(format!("longer than {}s", self.opts.max_duration.as_secs())));
        }
        if self.frames.len() >= self.opts.max_frames {
            return Err(MediaError::RecordingLimit(format!("more than {} frames", self.opts.max_frames)));
        }
        if self.total_bytes + data.len() as u64 > self.opts.max_total_bytes {
            return Err(MediaError::RecordingLimit(format!("more than {} bytes of frames", self.opts.max_total_bytes)));
        }

        // ffmpeg sees one size and one codec for the whole recording: its concat reader
        // cannot switch decoders mid-stream, and a size change re-initialises the filter
        // graph, which loses the frames queued for timing. A frame that differs from the
        // first (a viewport change) is letterboxed to the first frame's size and
        // re-encoded here, off the async threads.
        let first_format = *self.format.get_or_insert(format);
        let first_dims = *self.first_dims.get_or_insert((w, h));
        let bytes: std::borrow::Cow<'_, [u8]> = if format == first_format && (w, h) == first_dims {
            data.into()
        } else {
            let owned = data.to_vec();
            tokio::task::spawn_blocking(move || conform(&owned, format, first_format, first_dims))
                .await
                .map_err(|e| bad(format!("re-encoding panicked: {e}")))?
                .map_err(bad)?
                .into()
        };
        if self.canvas.is_none() {
            self.canvas = Some(canvas_for(w, h, self.opts.max_width, self.opts.max_height));
        }

        let file = self.next_file;
        self.next_file += 1;
        let path = self.frame_path(file, first_format);
        tokio::fs::write(&path, &bytes).await.map_err(|e| MediaError::io(format!("spooling frame {index}"), e))?;
        self.total_bytes += bytes.len() as u64;
        // A frame at or before the previous one's time replaces it: it is what the screen
        // showed from then on.
        let mut ts = timestamp;
        if let Some(&(prev_file, prev_ts)) = self.frames.last()
            && timestamp <= prev_ts
        {
            ts = prev_ts;
            self.frames.pop();
            let _ = tokio::fs::remove_file(self.frame_path(prev_file, first_format)).await;
        }
        self.frames.push((file, ts));
        Ok(())
    }

    fn frame_path(&self, file: u32, format: FrameFormat) -> PathBuf {
        self.dir.path().join(format!("f{file:06}.{}", format.ext()))
    }

    /// Encodes the recording to `output` (MP4, H.264, yuv420p, `+faststart`, constant
    /// frame rate): the last frame shows until `end_timestamp`. The spool directory is
    /// removed whatever happens; `output` is written only on success.
    pub async fn finish(self, end_timestamp: f64, output: &Path) -> Result<Recording> {
        let (Some(format), Some((cw, ch))) = (self.format, self.canvas) else {
            return Err(MediaError::NoFrames);
        };
        if self.frames.is_empty() {
            // Every frame offered was refused.
            return Err(MediaError::NoFrames);
        }
        let first = self.frames[0].1;
        let last = self.frames[self.frames.len() - 1].1;
        let fps = f64::from(self.opts.fps);
        // The last frame shows for at least one output frame.
        let end = if end_timestamp.is_finite() { end_timestamp.max(last + 1.0 / fps) } else { last + 1.0 / fps };
        let span = end - first;

        let mut list = String::from("ffconcat version 1.0\n");
        for (i, &(file, ts)) in self.frames.iter().enumerate() {
            let next = self.frames.get(i + 1).map_or(end, |f| f.1);
            list += &format!("file f{file:06}.{}\nduration {:.6}\n", format.ext(), next - ts);
        }
        // The concat reader gives the last entry only its own nominal length; repeating it
        // makes it start at the end time, so the one before lasts its full duration.
        let (last_file, _) = self.frames[self.frames.len() - 1];
        list += &format!("file f{last_file:06}.{}\n", format.ext());
        let dir = self.dir.path();
        std::fs::write(dir.join("frames.ffconcat"), list).map_err(|e| MediaError::io("writing the frame list", e))?;
        // Chapters, in ffmpeg's metadata format: the recording from its start, then each mark.
        let chapters = !self.chapters.is_empty();
        if chapters {
            let esc = |s: &str| s.replace('\\', "\\\\").replace('=', "\\=").replace(';', "\\;").replace('#', "\\#");
            let span_ms = (span * 1000.0).round() as i64;
            let mut marks: Vec<(i64, String)> = vec![(0, "session".to_string())];
            for (ts, title) in &self.chapters {
                let at = (((ts - first) * 1000.0).round() as i64).clamp(0, span_ms.max(1) - 1);
                marks.push((at, title.clone()));
            }
            marks.sort_by_key(|m| m.0);
            let mut meta = String::from(";FFMETADATA1\n");
            for (i, (at, title)) in marks.iter().enumerate() {
                let end = marks.get(i + 1).map_or(span_ms, |m| m.0).max(at + 1);
                meta += &format!("[CHAPTER]\nTIMEBASE=1/1000\nSTART={at}\nEND={end}\ntitle={}\n", esc(title));
            }
            std::fs::write(dir.join("chapters.txt"), meta).map_err(|e| MediaError::io("writing the chapters", e))?;
        }

        let mut vf = format!(
            "scale={cw}:{ch}:force_original_aspect_ratio=decrease:flags=bicubic,\
             pad={cw}:{ch}:(ow-iw)/2:(oh-ih)/2:color=black,setsar=1,format=yuv420p"
        );
        let frames_out = (span * fps).round().max(1.0) as u64;
        let (fps_mode, limit_flag, limit_value) = if self.opts.variable_frame_rate {
            // Each frame keeps its own timestamp; the repeated last entry is a frame at
            // `end`, kept for one tick so the one before lasts until `end`.
            ("vfr", "-t", format!("{:.3}", span + 1.0 / fps))
        } else {
            vf += &format!(",fps={}", self.opts.fps);
            ("passthrough", "-frames:v", frames_out.to_string())
        };
        let args: Vec<String> =
            ["-hide_banner", "-nostdin", "-v", "error", "-f", "concat", "-safe", "0", "-i", "frames.ffconcat"]
                .iter()
                .map(|s| s.to_string())
                .chain(
                    ["-f", "ffmetadata", "-i", "chapters.txt", "-map", "0:v", "-map_chapters", "1"]
                        .iter()
                        .filter(|_| chapters)
                        .map(|s| s.to_string()),
                )
                .chain(
                    [
                        "-vf",
                        &vf,
                        // The fps filter (not the muxer's frame-rate conversion) places each frame on
                        // the nearest output tick: within half a frame of its real time.
                        "-fps_mode",
                        fps_mode,
                        limit_flag,
                        &limit_value,
                        "-c:v",
                        "libx264",
                        "-preset",
                        &self.opts.preset,
                        "-crf",
                        &self.opts.crf.to_string(),
                        "-threads",
                        &self.opts.threads.to_string(),
                        "-pix_fmt",
                        "yuv420p",
                        "-movflags",
                        "+faststart",
                        "-y",
                        "out.mp4",
                    ]
                    .iter()
                    .map(|s| s.to_string()),
                )
                .collect();
        let started = std::time::Instant::now();
        run_in(Some(dir), "ffmpeg", &args, self.opts.encode_timeout, Stdout::Collect).await?;
        let encode_time = started.elapsed();
        let info = probe::probe(&dir.join("out.mp4")).await?;
        move_file(&dir.join("out.mp4"), output).await?;
        Ok(Recording { output: output.to_path_buf(), info, span, frames: self.frames.len(), encode_time })
    }
}

/// Decodes a frame and re-encodes it as `to`, letterboxed (scaled to fit, centred on
/// black) into `dims` when its size differs.
fn conform(data: &[u8], from: FrameFormat, to: FrameFormat, dims: (u32, u32)) -> Result<Vec<u8>, String> {
    let img = image::load_from_memory_with_format(data, from.image_format()).map_err(|e| e.to_string())?.to_rgb8();
    let img = if img.dimensions() == dims {
        img
    } else {
        let (w, h) = img.dimensions();
        let s = (f64::from(dims.0) / f64::from(w)).min(f64::from(dims.1) / f64::from(h));
        let (sw, sh) = (
            ((f64::from(w) * s).round() as u32).clamp(1, dims.0),
            ((f64::from(h) * s).round() as u32).clamp(1, dims.1),
        );
        let scaled = image::imageops::resize(&img, sw, sh, image::imageops::FilterType::Triangle);
        let mut canvas = image::RgbImage::new(dims.0, dims.1);
        image::imageops::replace(&mut canvas, &scaled, i64::from((dims.0 - sw) / 2), i64::from((dims.1 - sh) / 2));
        canvas
    };
    let mut out = Vec::new();
    match to {
        FrameFormat::Jpeg => img.write_with_encoder(image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90)),
        FrameFormat::Png => img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png),
    }
    .map_err(|e| e.to_string())?;
    Ok(out)
}

/// The output size for a first frame of `w`×`h`: scaled down to fit the maximums, then
/// rounded up to even sides (yuv420p needs them).
fn canvas_for(w: u32, h: u32, max_w: u32, max_h: u32) -> (u32, u32) {
    let s = (f64::from(max_w) / f64::from(w)).min(f64::from(max_h) / f64::from(h)).min(1.0);
    let (w, h) = ((f64::from(w) * s).round() as u32, (f64::from(h) * s).round() as u32);
    (w.max(2).div_ceil(2) * 2, h.max(2).div_ceil(2) * 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canvases_are_even_and_within_limits() {
        assert_eq!(canvas_for(1280, 800, 1920, 1920), (1280, 800));
        assert_eq!(canvas_for(1279, 799, 1920, 1920), (1280, 800));
        assert_eq!(canvas_for(3840, 2160, 1920, 1920), (1920, 1080));
        assert_eq!(canvas_for(1, 1, 1920, 1920), (2, 2));
    }
}
