//! Encoding a scrolling page's frames (JPEG files `f00000.jpg`, `f00001.jpg`, … at a fixed
//! rate, one per video frame) into an MP4 (H.264), a WebM (VP9) or an animated GIF, bounded
//! in bitrate, size, time and memory.
//!
//! A GIF takes two passes so its memory does not grow with its length: one palette made from a
//! sample of the frames (at most [`GIF_PALETTE_SAMPLE`], read through a concat list), then the
//! frames streamed through `paletteuse` with that palette. The one-pass filter graph
//! (`split` → `palettegen` → `paletteuse`) buffered every frame until the palette was done: a
//! 30 s noise video peaked at ~1 GB of ffmpeg here (1.3 GB on the attack's machine); two
//! passes peak at ~100 MB (`cargo test -p capture-media --test media -- gif_memory --nocapture`).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{MediaError, Result};
use crate::probe::{self, MediaInfo};
use crate::process::{Stdout, run_in};

/// The container and codec of a scrolling video.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VideoKind {
    /// H.264 in MP4 (`+faststart`, yuv420p: plays everywhere).
    Mp4,
    /// VP9 in WebM.
    Webm,
    /// An animated GIF (one palette for the whole video, made from a sample of its frames).
    Gif,
}

impl VideoKind {
    /// File extension.
    pub fn ext(self) -> &'static str {
        match self {
            VideoKind::Mp4 => "mp4",
            VideoKind::Webm => "webm",
            VideoKind::Gif => "gif",
        }
    }
}

/// Largest encoded video, in bytes.
pub const MAX_VIDEO_BYTES: u64 = 64 * 1024 * 1024;

/// Frames a GIF's palette is made from at most (evenly spread over the video).
pub const GIF_PALETTE_SAMPLE: u32 = 100;

/// The GIF filter: at most 640 px wide (10 s of a 1280×720 page measured 62.9 MB at full size).
const GIF_SCALE: &str = "scale='min(iw,640)':-2:flags=lanczos";

/// What one encode of `kind` at `width`×`height` (the frames' size) may hold, in MiB: ffmpeg's
/// peak resident memory measured here on noise (the worst case for every encoder: mp4 158,
/// 389 and 795 MB at 1280×800, 2560×1440 and 3840×2160; webm 220, 542 and 1,076 MB; a GIF's
/// second pass ~100 MB at its 640 px), fitted as a line in megapixels with a quarter more kept
/// for safety. Callers hold this much of their node's video memory while it runs.
pub fn encode_memory_mib(kind: VideoKind, width: u32, height: u32) -> u64 {
    let mp = f64::from(width.max(1)) * f64::from(height.max(1)) / 1e6;
    let mib = match kind {
        VideoKind::Mp4 => 70.0 + 88.0 * mp,
        VideoKind::Webm => 100.0 + 118.0 * mp,
        VideoKind::Gif => {
            let out_w = f64::from(width.clamp(1, 640));
            let out_mp = out_w * f64::from(height.max(1)) * out_w / f64::from(width.max(1)) / 1e6;
            80.0 + 100.0 * out_mp + 10.0 * mp
        }
    };
    (mib * 1.25).ceil() as u64
}

/// An encoded video.
#[derive(Debug, Clone)]
pub struct EncodedVideo {
    pub bytes: Vec<u8>,
    /// What ffprobe says about it.
    pub info: MediaInfo,
    /// Wall time of the encode.
    pub encode_time: Duration,
}

/// Encode `frames` JPEG frames in `dir` at `fps` into `kind`; the frames' size is the video's
/// (odd sides are padded by one pixel for yuv420p). Fails past `limit` or `MAX_VIDEO_BYTES`.
pub async fn encode_frames(
    dir: &Path,
    frames: u32,
    fps: u32,
    kind: VideoKind,
    limit: Duration,
) -> Result<EncodedVideo> {
    if frames == 0 {
        return Err(MediaError::NoFrames);
    }
    let out = format!("out.{}", kind.ext());
    let rate = fps.to_string();
    let count = frames.to_string();
    let gif_graph = format!("[0:v]{GIF_SCALE}[v];[v][1:v]paletteuse=dither=bayer:bayer_scale=5:diff_mode=rectangle");
    let mut args: Vec<&str> = vec!["-hide_banner", "-nostdin", "-v", "error", "-framerate", &rate, "-i", "f%05d.jpg"];
    match kind {
        VideoKind::Mp4 => args.extend([
            "-vf",
            "pad=ceil(iw/2)*2:ceil(ih/2)*2,format=yuv420p",
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
            "-crf",
            "26",
            "-maxrate",
            "6M",
            "-bufsize",
            "12M",
            "-threads",
            "2",
            "-movflags",
            "+faststart",
        ]),
        VideoKind::Webm => args.extend([
            "-vf",
            "pad=ceil(iw/2)*2:ceil(ih/2)*2,format=yuv420p",
            "-c:v",
            "libvpx-vp9",
            "-deadline",
            "realtime",
            "-cpu-used",
            "8",
            "-row-mt",
            "1",
            "-crf",
            "36",
            "-b:v",
            "6M",
            "-threads",
            "2",
        ]),
        // The palette pass runs first (below); this pass streams the frames through it.
        VideoKind::Gif => args.extend(["-i", "palette.png", "-filter_complex", &gif_graph, "-loop", "0"]),
    }
    args.extend(["-frames:v", &count, "-y", &out]);
    let started = Instant::now();
    if kind == VideoKind::Gif {
        gif_palette(dir, limit).await?;
    }
    let left = limit.saturating_sub(started.elapsed()).max(Duration::from_secs(1));
    run_in(Some(dir), "ffmpeg", &args, left, Stdout::Collect).await?;
    let encode_time = started.elapsed();
    let path = dir.join(&out);
    let len = tokio::fs::metadata(&path).await.map_err(|e| MediaError::io("reading the encoded video", e))?.len();
    if len > MAX_VIDEO_BYTES {
        return Err(MediaError::RecordingLimit(format!(
            "the video is {len} bytes, more than the {MAX_VIDEO_BYTES} allowed (shorten scroll.durationMs or the viewport)"
        )));
    }
    let info = probe::probe(&path).await?;
    let bytes = tokio::fs::read(&path).await.map_err(|e| MediaError::io("reading the encoded video", e))?;
    Ok(EncodedVideo { bytes, info, encode_time })
}

/// A GIF's first pass: `palette.png` in `dir`, made from at most [`GIF_PALETTE_SAMPLE`] of the
/// frames evenly spread (listed for ffmpeg's concat reader, so the others are not decoded).
async fn gif_palette(dir: &Path, limit: Duration) -> Result<()> {
    let mut frames = Vec::new();
    let mut entries = tokio::fs::read_dir(dir).await.map_err(|e| MediaError::io("listing the frames", e))?;
    while let Some(e) = entries.next_entry().await.map_err(|e| MediaError::io("listing the frames", e))? {
        let name = e.file_name().to_string_lossy().into_owned();
        let numbered = name.strip_prefix('f').and_then(|n| n.strip_suffix(".jpg"));
        if numbered.is_some_and(|n| n.len() == 5 && n.bytes().all(|b| b.is_ascii_digit())) {
            frames.push(name);
        }
    }
    if frames.is_empty() {
        return Err(MediaError::NoFrames);
    }
    frames.sort();
    let step = frames.len().div_ceil(GIF_PALETTE_SAMPLE as usize).max(1);
    let list: String = frames.iter().step_by(step).map(|f| format!("file '{f}'\n")).collect();
    tokio::fs::write(dir.join("palette-sample.txt"), list)
        .await
        .map_err(|e| MediaError::io("writing the sample list", e))?;
    let filter = format!("{GIF_SCALE},palettegen=stats_mode=diff:max_colors=256");
    let args = [
        "-hide_banner",
        "-nostdin",
        "-v",
        "error",
        "-f",
        "concat",
        "-safe",
        "0",
        "-i",
        "palette-sample.txt",
        "-vf",
        &filter,
        "-frames:v",
        "1",
        "-update",
        "1",
        "-y",
        "palette.png",
    ];
    run_in(Some(dir), "ffmpeg", &args, limit, Stdout::Collect).await?;
    Ok(())
}
