//! The media engine of Capture: probing media files, recording browser screencasts to MP4
//! and rendering narrated, branded video ads — all with Debian's `ffmpeg`, `ffprobe` and
//! `espeak-ng` run as bounded subprocesses.
//!
//! Nothing here depends on the rest of the workspace; the server calls it.

pub mod ad;
pub mod caption;
pub mod color;
pub mod compare;
mod error;
pub mod music;
pub mod probe;
mod process;
pub mod screencast;
pub mod scroll_video;
pub mod tools;
pub mod voice;

pub use ad::{
    AdSize, AdSpec, Motion, Progress, ProgressFn, RenderOptions, RenderedAd, Scene, Stage, StepLimits, render_ad,
};
pub use color::{
    CaptionColors, DominantColor, Rgb, brand_color_guess, caption_colors, contrast_ratio, dominant_colors,
};
pub use error::{MediaError, Result};
pub use music::{Track, find_track, music};
pub use probe::{Levels, Loudness, MediaInfo, StreamInfo, StreamKind, audio_levels, frame_at, loudness, probe};
pub use screencast::{RecorderOptions, Recording, ScreencastRecorder};
pub use scroll_video::{
    EncodedVideo, GIF_PALETTE_SAMPLE, MAX_VIDEO_BYTES, VideoKind, encode_frames, encode_memory_mib,
};
pub use voice::{Voice, find_voice, voices};
