//! Encoding a scrolling page's frames (JPEG files `f00000.jpg`, `f00001.jpg`, … at a fixed
//! rate, one per video frame) into an MP4 (H.264), a WebM (VP9) or an animated GIF, bounded
//! in bitrate, size and time.

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
    /// An animated GIF (one palette made for the whole video).
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
    let mut args: Vec<&str> =
        vec!["-hide_banner", "-nostdin", "-v", "error", "-framerate", &rate, "-i", "f%05d.jpg", "-frames:v", &count];
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
        // A GIF has no inter-frame compression worth the name: at most 640 px wide (10 s of a
        // 1280×720 page measured 62.9 MB at full size), one palette for the whole video.
        VideoKind::Gif => args.extend([
            "-filter_complex",
            "scale='min(iw,640)':-2:flags=lanczos,split[a][b];[a]palettegen=stats_mode=diff:max_colors=256[p];\
             [b][p]paletteuse=dither=bayer:bayer_scale=5:diff_mode=rectangle",
            "-loop",
            "0",
        ]),
    }
    args.extend(["-y", &out]);
    let started = Instant::now();
    run_in(Some(dir), "ffmpeg", &args, limit, Stdout::Collect).await?;
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
