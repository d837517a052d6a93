//! Narrated, branded video ads from a storyboard of screenshots.
//!
//! Stages: the voice-over (`espeak-ng`), the music (synthesised here) mixed under it with
//! side-chain ducking and measured for loudness, the scenes (one ffmpeg run: pans and zooms,
//! captions, cross-fades, H.264), the mux (AAC normalised to −16 LUFS by a measured gain
//! and a limiter, `+faststart`) and a thumbnail. Each subprocess has its own time limit; everything lives
//! in one temporary directory removed however the render ends (dropping the future kills
//! the running tool and removes it too).

pub mod graph;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::caption::{self, FontMetrics, Layout};
use crate::color::{CaptionColors, Rgb, caption_colors};
use crate::error::{MediaError, Result};
use crate::probe::{self, MediaInfo};
use crate::process::{Stdout, move_file, run_in};
use crate::{music, voice};

pub use graph::Motion;
use graph::{FPS, Frame, SceneGraph, plan_frames, video_graph};

/// Shortest ad, in seconds.
pub const MIN_SECONDS: f64 = 15.0;
/// Longest ad, in seconds.
pub const MAX_SECONDS: f64 = 30.0;
/// Silence before the voice starts.
pub const VOICE_LEAD_IN: f64 = 0.6;
/// Music after the voice ends, at least.
pub const VOICE_TAIL: f64 = 1.6;
/// Most scenes in one ad.
pub const MAX_SCENES: usize = 12;
/// Longest caption, in characters.
pub const MAX_CAPTION_CHARS: usize = 200;
/// Longest voice-over script, in characters.
pub const MAX_SCRIPT_CHARS: usize = 1200;
/// Largest scene image side, in pixels.
pub const MAX_IMAGE_SIDE: u32 = 16_384;
/// Largest scene image area, in pixels.
pub const MAX_IMAGE_PIXELS: u64 = 40_000_000;
/// Shortest scene, in frames (1.5 s).
const MIN_SCENE_FRAMES: u32 = 45;
/// How much faster than usual a script may be spoken to fit 30 s.
const MAX_SPEEDUP: f64 = 1.3;

/// Output frame size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AdSize {
    /// 1080×1920, for stories and short-video feeds.
    #[default]
    Portrait,
    /// 1920×1080.
    Landscape,
}

impl AdSize {
    /// Width and height in pixels.
    pub fn dimensions(self) -> (u32, u32) {
        match self {
            AdSize::Portrait => (1080, 1920),
            AdSize::Landscape => (1920, 1080),
        }
    }
}

/// One scene of the storyboard.
#[derive(Clone)]
pub struct Scene {
    /// The picture: PNG, JPEG or WebP bytes.
    pub image: Vec<u8>,
    /// Text shown over it (may be empty; newlines are kept as line breaks).
    pub caption: String,
    /// How long it should last, in seconds: a hint, scaled with the others so the ad fits
    /// the voice-over.
    pub duration: f64,
    /// How the camera moves.
    pub motion: Motion,
}

impl std::fmt::Debug for Scene {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scene")
            .field("image_bytes", &self.image.len())
            .field("caption", &self.caption)
            .field("duration", &self.duration)
            .field("motion", &self.motion)
            .finish()
    }
}

/// What to render.
#[derive(Debug, Clone)]
pub struct AdSpec {
    /// The scenes, in order (1 to [`MAX_SCENES`]).
    pub scenes: Vec<Scene>,
    /// The voice-over text; empty for an ad with music only.
    pub script: String,
    /// One of [`crate::voices`].
    pub voice_id: String,
    /// One of [`crate::music`].
    pub music_id: String,
    /// Caption colour, `#RRGGBB`.
    pub brand_color: String,
    /// Frame size.
    pub size: AdSize,
}

/// A render stage, reported in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Stage {
    /// Speaking the script.
    Voice,
    /// Synthesising, ducking and measuring the music.
    Music,
    /// Drawing and encoding the scenes (the long one).
    Scenes,
    /// Adding the normalised audio and finishing the file.
    Mux,
    /// Grabbing the thumbnail.
    Thumbnail,
}

impl Stage {
    /// (start, weight) of the stage on the 0–1 overall scale.
    fn span(self) -> (f64, f64) {
        match self {
            Stage::Voice => (0.0, 0.05),
            Stage::Music => (0.05, 0.10),
            Stage::Scenes => (0.15, 0.75),
            Stage::Mux => (0.90, 0.07),
            Stage::Thumbnail => (0.97, 0.03),
        }
    }
}

/// A progress report.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// The stage running.
    pub stage: Stage,
    /// How far the stage is, 0–1.
    pub stage_fraction: f64,
    /// How far the whole render is, 0–1.
    pub overall: f64,
}

/// Receives progress reports (called from the rendering task; keep it quick, e.g. send on
/// a channel).
pub type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;

/// Time limits of each step.
#[derive(Debug, Clone)]
pub struct StepLimits {
    /// `espeak-ng`, per run.
    pub voice: Duration,
    /// Music synthesis, mixing and loudness measurement.
    pub music: Duration,
    /// The scenes' encode.
    pub scenes: Duration,
    /// The mux.
    pub mux: Duration,
    /// The thumbnail.
    pub thumbnail: Duration,
}

impl Default for StepLimits {
    fn default() -> Self {
        StepLimits {
            voice: Duration::from_secs(30),
            music: Duration::from_secs(60),
            scenes: Duration::from_secs(600),
            mux: Duration::from_secs(60),
            thumbnail: Duration::from_secs(30),
        }
    }
}

/// How to render.
#[derive(Clone)]
pub struct RenderOptions {
    /// Where the MP4 goes; written only when the render succeeds.
    pub output: PathBuf,
    /// Where the temporary directory is made (the system's by default).
    pub temp_root: Option<PathBuf>,
    /// Caption font (found among [`crate::caption::FONT_CANDIDATES`] by default).
    pub font: Option<PathBuf>,
    /// Step time limits.
    pub limits: StepLimits,
    /// x264 preset (`veryfast`: see the crate's README for the measurements).
    pub preset: String,
    /// x264 constant rate factor.
    pub crf: u32,
    /// Encoder threads.
    pub threads: u32,
    /// Progress reports.
    pub progress: Option<ProgressFn>,
}

impl RenderOptions {
    /// Defaults, writing to `output`.
    pub fn new(output: impl Into<PathBuf>) -> Self {
        RenderOptions {
            output: output.into(),
            temp_root: None,
            font: None,
            limits: StepLimits::default(),
            preset: "veryfast".into(),
            crf: 23,
            threads: 2,
            progress: None,
        }
    }

    fn report(&self, stage: Stage, fraction: f64) {
        if let Some(p) = &self.progress {
            let f = fraction.clamp(0.0, 1.0);
            let (start, weight) = stage.span();
            p(Progress { stage, stage_fraction: f, overall: start + weight * f });
        }
    }
}

impl std::fmt::Debug for RenderOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RenderOptions")
            .field("output", &self.output)
            .field("temp_root", &self.temp_root)
            .field("font", &self.font)
            .field("limits", &self.limits)
            .field("preset", &self.preset)
            .field("crf", &self.crf)
            .field("threads", &self.threads)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// A finished render.
#[derive(Debug, Clone)]
pub struct RenderedAd {
    /// The MP4 (the `output` asked for).
    pub output: PathBuf,
    /// What ffprobe says about it.
    pub info: MediaInfo,
    /// Its duration in seconds.
    pub duration: f64,
    /// Frame width.
    pub width: u32,
    /// Frame height.
    pub height: u32,
    /// PNG thumbnail (half size): the first scene with its caption.
    pub thumbnail_png: Vec<u8>,
    /// When the voice-over starts and ends, in seconds (None without a script).
    pub voice_span: Option<(f64, f64)>,
    /// When each scene starts on the timeline and how long it is shown, in seconds.
    pub scenes: Vec<(f64, f64)>,
    /// The caption colours used.
    pub caption_colors: CaptionColors,
    /// Wall-clock seconds each stage took.
    pub stage_seconds: Vec<(Stage, f64)>,
}

/// A scene checked and decoded enough to plan it.
struct Checked {
    ext: &'static str,
    bytes: Vec<u8>,
    width: u32,
    height: u32,
    caption: String,
}

/// Validates everything that can be checked without running a tool: colour, ids, scene
/// count, captions, script, and every image (decoded in full). Cheap enough to call when
/// a render is requested, so bad input fails at once.
pub fn validate(spec: &AdSpec) -> Result<()> {
    check_spec(spec)?;
    for (i, s) in spec.scenes.iter().enumerate() {
        check_image(i, &s.image)?;
    }
    Ok(())
}

fn check_spec(spec: &AdSpec) -> Result<(Rgb, voice::Voice)> {
    let brand = Rgb::parse_hex(&spec.brand_color)?;
    let voice = voice::find_voice(&spec.voice_id)?;
    music::find_track(&spec.music_id)?;
    if spec.scenes.is_empty() {
        return Err(MediaError::EmptyStoryboard);
    }
    if spec.scenes.len() > MAX_SCENES {
        return Err(MediaError::TooManyScenes { count: spec.scenes.len(), max: MAX_SCENES });
    }
    for s in &spec.scenes {
        caption::sanitize(&s.caption, MAX_CAPTION_CHARS)?;
    }
    let len = spec.script.chars().count();
    if len > MAX_SCRIPT_CHARS {
        return Err(MediaError::TextTooLong { what: "the voice-over script".into(), len, max: MAX_SCRIPT_CHARS });
    }
    Ok((brand, voice))
}

fn check_image(index: usize, bytes: &[u8]) -> Result<(image::ImageFormat, u32, u32, Option<image::DynamicImage>)> {
    let bad = |reason: String| MediaError::BadImage { index, reason };
    let reader =
        image::ImageReader::new(std::io::Cursor::new(bytes)).with_guessed_format().map_err(|e| bad(e.to_string()))?;
    let format = reader.format().ok_or_else(|| bad("not a PNG, JPEG or WebP image".into()))?;
    if !matches!(format, image::ImageFormat::Png | image::ImageFormat::Jpeg | image::ImageFormat::WebP) {
        return Err(bad(format!("{format:?} images are not accepted; use PNG, JPEG or WebP")));
    }
    let (w, h) = reader.into_dimensions().map_err(|e| bad(e.to_string()))?;
    if w > MAX_IMAGE_SIDE || h > MAX_IMAGE_SIDE || u64::from(w) * u64::from(h) > MAX_IMAGE_PIXELS {
        return Err(MediaError::ImageTooLarge {
            what: format!("scene {}'s image", index + 1),
            width: w,
            height: h,
            max_side: MAX_IMAGE_SIDE,
            max_pixels: MAX_IMAGE_PIXELS,
        });
    }
    // Decode in full now (dimensions were checked first, so this is bounded): a truncated
    // file fails here with the scene's number rather than deep inside ffmpeg.
    let img = image::load_from_memory_with_format(bytes, format).map_err(|e| bad(e.to_string()))?;
    let keep = (format == image::ImageFormat::WebP).then_some(img);
    Ok((format, w, h, keep))
}

fn check_scenes(scenes: Vec<Scene>) -> Result<Vec<Checked>> {
    let mut out = Vec::with_capacity(scenes.len());
    for (i, s) in scenes.into_iter().enumerate() {
        let (format, width, height, decoded) = check_image(i, &s.image)?;
        let caption = caption::sanitize(&s.caption, MAX_CAPTION_CHARS)?;
        let (ext, bytes) = match (format, decoded) {
            (image::ImageFormat::Png, _) => ("png", s.image),
            (image::ImageFormat::Jpeg, _) => ("jpg", s.image),
            // WebP goes to ffmpeg as PNG: Debian's ffmpeg 5 cannot decode every WebP.
            (_, Some(img)) => {
                let mut png = Vec::new();
                img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
                    .map_err(|e| MediaError::BadImage { index: i, reason: e.to_string() })?;
                ("png", png)
            }
            _ => unreachable!("check_image returns the decoded image for WebP"),
        };
        out.push(Checked { ext, bytes, width, height, caption });
    }
    Ok(out)
}

/// Renders an ad. See the module documentation for the stages.
pub async fn render_ad(spec: &AdSpec, opts: &RenderOptions) -> Result<RenderedAd> {
    let (brand, voice) = check_spec(spec)?;
    let scenes = spec.scenes.clone();
    let checked = tokio::task::spawn_blocking(move || check_scenes(scenes))
        .await
        .map_err(|e| MediaError::Invalid(format!("image check panicked: {e}")))??;
    let font_path = caption::find_font(opts.font.as_deref())?;
    let font = FontMetrics::load(&font_path)?;
    let colors = caption_colors(brand);
    let (w, h) = spec.size.dimensions();

    let root = opts.temp_root.clone().unwrap_or_else(std::env::temp_dir);
    let tmp = tempfile::Builder::new()
        .prefix("capture-ad-")
        .tempdir_in(&root)
        .map_err(|e| MediaError::io(format!("creating a temporary directory in {}", root.display()), e))?;
    let dir = tmp.path();
    let mut stage_seconds = Vec::new();

    // ---- voice ----
    let t = Instant::now();
    opts.report(Stage::Voice, 0.0);
    let script: String = spec
        .script
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let max_voice = MAX_SECONDS - VOICE_LEAD_IN - VOICE_TAIL;
    let voice_secs = if script.is_empty() {
        None
    } else {
        write(dir, "script.txt", script.as_bytes())?;
        let mut speed = 1.0;
        let mut secs;
        loop {
            voice::speak(&voice, &dir.join("script.txt"), speed, &dir.join("voice.wav"), opts.limits.voice).await?;
            secs = probe::probe(&dir.join("voice.wav")).await?.duration;
            if secs <= max_voice || speed > 1.0 {
                break;
            }
            speed = (secs / max_voice * 1.04).min(MAX_SPEEDUP);
        }
        if secs > max_voice {
            return Err(MediaError::VoiceTooLong { seconds: secs, max: max_voice });
        }
        Some(secs)
    };
    opts.report(Stage::Voice, 1.0);
    stage_seconds.push((Stage::Voice, t.elapsed().as_secs_f64()));

    // ---- timing ----
    let hints: Vec<f64> = spec.scenes.iter().map(|s| s.duration).collect();
    let n = hints.len() as u32;
    let xfade = f64::from(graph::XFADE_FRAMES) / f64::from(FPS);
    let wanted = match voice_secs {
        Some(v) => VOICE_LEAD_IN + v + VOICE_TAIL,
        None => {
            hints.iter().map(|d| if d.is_finite() && *d > 0.0 { d.clamp(1.0, 10.0) } else { 4.0 }).sum::<f64>()
                - f64::from(n - 1) * xfade
        }
    };
    let total = wanted.clamp(MIN_SECONDS, MAX_SECONDS);
    let total_frames = (total * f64::from(FPS)).round() as u32;
    let total = f64::from(total_frames) / f64::from(FPS);
    let frames = plan_frames(&hints, total_frames, MIN_SCENE_FRAMES)
        .ok_or(MediaError::TooManyScenes { count: hints.len(), max: MAX_SCENES })?;

    // ---- music: synthesise, duck under the voice, measure loudness ----
    let t = Instant::now();
    opts.report(Stage::Music, 0.0);
    let music_id = spec.music_id.clone();
    let music_path = dir.join("music.wav");
    let mp = music_path.clone();
    let synth = tokio::task::spawn_blocking(move || -> Result<()> {
        let pcm = music::synthesize(&music_id, total)?;
        music::write_wav(&mp, &pcm, 2)
    });
    tokio::time::timeout(opts.limits.music, synth)
        .await
        .map_err(|_| MediaError::Timeout {
            tool: "music synthesiser",
            after: opts.limits.music,
            stderr: String::new(),
        })?
        .map_err(|e| MediaError::Invalid(format!("music synthesis panicked: {e}")))??;
    opts.report(Stage::Music, 0.5);
    let mix_gain_db = mix_audio(dir, voice_secs.is_some(), total, opts.limits.music).await?;
    opts.report(Stage::Music, 1.0);
    stage_seconds.push((Stage::Music, t.elapsed().as_secs_f64()));

    // ---- scenes ----
    let t = Instant::now();
    opts.report(Stage::Scenes, 0.0);
    let sizes: &[u32] = if h > w { &[76, 66, 58, 50] } else { &[64, 56, 48] };
    let max_text_w = if h > w { f64::from(w) * 0.80 } else { f64::from(w) * 0.62 };
    let mut layouts: Vec<Option<(Layout, Vec<String>)>> = Vec::new();
    for (k, c) in checked.iter().enumerate() {
        write(dir, &format!("scene{k}.{}", c.ext), &c.bytes)?;
        if c.caption.is_empty() {
            layouts.push(None);
            continue;
        }
        let layout = caption::wrap(&font, &c.caption, max_text_w as f32, sizes, 4);
        let mut files = Vec::new();
        for (i, line) in layout.lines.iter().enumerate() {
            let name = format!("caption{k}_{i}.txt");
            write(dir, &name, line.as_bytes())?;
            files.push(name);
        }
        layouts.push(Some((layout, files)));
    }
    let scene_graphs: Vec<SceneGraph<'_>> = checked
        .iter()
        .zip(&frames)
        .zip(&layouts)
        .zip(&spec.scenes)
        .map(|(((c, &fr), l), s)| SceneGraph {
            image_w: c.width,
            image_h: c.height,
            frames: fr,
            motion: s.motion,
            caption: l.as_ref().map(|(layout, files)| (layout, files.clone())),
        })
        .collect();
    let font_str = font_path.to_string_lossy().to_string();
    let frame = Frame { w, h, font_path: &font_str, font: &font, colors };
    write(dir, "video.graph", video_graph(&scene_graphs, &frame, total_frames).as_bytes())?;
    let mut args: Vec<String> = vec!["-hide_banner".into(), "-nostdin".into(), "-v".into(), "error".into()];
    for (k, c) in checked.iter().enumerate() {
        args.extend(["-f", "image2", "-pattern_type", "none", "-framerate", "30", "-i"].iter().map(|s| s.to_string()));
        args.push(format!("scene{k}.{}", c.ext));
    }
    args.extend(
        ["-filter_complex_script", "video.graph", "-map", "[vout]", "-an", "-c:v", "libx264", "-preset"]
            .iter()
            .map(|s| s.to_string()),
    );
    args.push(opts.preset.clone());
    args.extend(["-crf".into(), opts.crf.to_string(), "-threads".into(), opts.threads.to_string()]);
    args.extend(["-pix_fmt", "yuv420p", "-profile:v", "high", "-r", "30", "-frames:v"].iter().map(|s| s.to_string()));
    args.push(total_frames.to_string());
    args.extend(["-progress", "pipe:1", "-nostats", "-y", "video.mp4"].iter().map(|s| s.to_string()));
    let total_us = total * 1e6;
    let mut on_line = |line: &str| {
        if let Some(v) = line.strip_prefix("out_time_us=").or_else(|| line.strip_prefix("out_time_ms="))
            && let Ok(us) = v.trim().parse::<f64>()
        {
            opts.report(Stage::Scenes, us / total_us);
        }
    };
    run_in(Some(dir), "ffmpeg", &args, opts.limits.scenes, Stdout::Lines(&mut on_line)).await?;
    opts.report(Stage::Scenes, 1.0);
    stage_seconds.push((Stage::Scenes, t.elapsed().as_secs_f64()));

    // ---- mux: normalised AAC + faststart ----
    let t = Instant::now();
    opts.report(Stage::Mux, 0.0);
    let master = format!("{},aresample=48000", master_filter(mix_gain_db));
    let total_s = format!("{total:.3}");
    run_in(
        Some(dir),
        "ffmpeg",
        [
            "-hide_banner",
            "-nostdin",
            "-v",
            "error",
            "-i",
            "video.mp4",
            "-i",
            "mix.wav",
            "-map",
            "0:v:0",
            "-map",
            "1:a:0",
            "-c:v",
            "copy",
            "-af",
            &master,
            "-c:a",
            "aac",
            "-b:a",
            "160k",
            "-ar",
            "48000",
            "-ac",
            "2",
            "-t",
            &total_s,
            "-movflags",
            "+faststart",
            "-y",
            "ad.mp4",
        ],
        opts.limits.mux,
        Stdout::Collect,
    )
    .await?;
    let info = probe::probe(&dir.join("ad.mp4")).await?;
    opts.report(Stage::Mux, 1.0);
    stage_seconds.push((Stage::Mux, t.elapsed().as_secs_f64()));

    // ---- thumbnail: the middle of the first scene, caption shown ----
    let t = Instant::now();
    opts.report(Stage::Thumbnail, 0.0);
    let first = f64::from(frames[0].saturating_sub(graph::XFADE_FRAMES)) / f64::from(FPS);
    let thumbnail_png =
        tokio::time::timeout(opts.limits.thumbnail, probe::frame_png(&dir.join("ad.mp4"), first / 2.0, Some(w / 2)))
            .await
            .map_err(|_| MediaError::Timeout {
                tool: "ffmpeg",
                after: opts.limits.thumbnail,
                stderr: String::new(),
            })??;
    opts.report(Stage::Thumbnail, 1.0);
    stage_seconds.push((Stage::Thumbnail, t.elapsed().as_secs_f64()));

    move_file(&dir.join("ad.mp4"), &opts.output).await?;
    drop(tmp);

    let mut scenes = Vec::new();
    let mut start = 0u32;
    for f in &frames {
        scenes.push((f64::from(start) / f64::from(FPS), f64::from(*f) / f64::from(FPS)));
        start += f - graph::XFADE_FRAMES;
    }
    let video = info.video().cloned();
    Ok(RenderedAd {
        output: opts.output.clone(),
        duration: info.duration,
        width: video.as_ref().and_then(|v| v.width).unwrap_or(w),
        height: video.as_ref().and_then(|v| v.height).unwrap_or(h),
        info,
        thumbnail_png,
        voice_span: voice_secs.map(|v| (VOICE_LEAD_IN, VOICE_LEAD_IN + v)),
        scenes,
        caption_colors: colors,
        stage_seconds,
    })
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    std::fs::write(dir.join(name), bytes).map_err(|e| MediaError::io(format!("writing {name}"), e))
}

/// Music level under the mix before ducking, in dB (the synthesiser masters to −20 dBFS
/// RMS; espeak-ng speaks at about −19 dBFS RMS, brought up by the compressor's make-up).
const MUSIC_GAIN_DB: f64 = -12.0;

/// Lowers the mix 6 dB and caps its peaks at −9 dBFS (gentle limiting of the loudest
/// peaks) so less is left for the final limiter.
const LIMITER: &str = "volume=-6dB,alimiter=limit=0.355:attack=5:release=60:level=0";

/// Integrated loudness ads are normalised to, in LUFS.
pub const TARGET_LUFS: f64 = -16.0;

/// The mastering chain of the final mix: one gain, then a look-ahead limiter with its
/// ceiling at −3 dBFS so the true peak stays under −1.5 dBTP after AAC.
fn master_filter(gain_db: f64) -> String {
    format!("volume={gain_db:.2}dB,alimiter=limit=0.708:attack=5:release=50:level=0")
}

/// Mixes `voice.wav` (if any) over `music.wav` into `mix.wav`, ducking the music under the
/// voice with a side-chain compressor, measures the mix's loudness in the same run, and
/// returns the gain in dB that brings it to [`TARGET_LUFS`] through [`master_filter`].
async fn mix_audio(dir: &Path, has_voice: bool, total: f64, limit: Duration) -> Result<f64> {
    let lead_ms = (VOICE_LEAD_IN * 1000.0).round() as u32;
    let graph = if has_voice {
        format!(
            "[0:a]aresample=48000,aformat=channel_layouts=mono,highpass=f=90,\
             acompressor=threshold=0.125:ratio=3:attack=5:release=120:makeup=2,\
             adelay=delays={lead_ms}:all=1,apad=whole_dur={total:.3},atrim=0:{total:.3},\
             pan=stereo|c0=c0|c1=c0,asplit=2[vmix][vkey];\n\
             [1:a]aresample=48000,volume={MUSIC_GAIN_DB}dB[mus];\n\
             [mus][vkey]sidechaincompress=threshold=0.02:ratio=12:attack=20:release=450[duck];\n\
             [vmix][duck]amix=inputs=2:duration=first:normalize=0,{LIMITER},asplit=2[mix][meas];\n\
             [meas]loudnorm=I=-16:TP=-1.5:LRA=11:print_format=json[measured]"
        )
    } else {
        format!(
            "[0:a]aresample=48000,volume={MUSIC_GAIN_DB}dB,atrim=0:{total:.3},{LIMITER},asplit=2[mix][meas];\n\
             [meas]loudnorm=I=-16:TP=-1.5:LRA=11:print_format=json[measured]"
        )
    };
    write(dir, "mix.graph", graph.as_bytes())?;
    let mut args: Vec<&str> = vec!["-hide_banner", "-nostdin", "-nostats", "-v", "info"];
    if has_voice {
        args.extend(["-i", "voice.wav"]);
    }
    args.extend([
        "-i",
        "music.wav",
        "-filter_complex_script",
        "mix.graph",
        "-map",
        "[mix]",
        "-c:a",
        "pcm_s16le",
        "-y",
        "mix.wav",
        "-map",
        "[measured]",
        "-f",
        "null",
        "-",
    ]);
    let out = run_in(Some(dir), "ffmpeg", &args, limit, Stdout::Collect).await?;
    let measured = probe::parse_loudnorm(&out.stderr)?.integrated_lufs;
    if !measured.is_finite() || measured < -70.0 {
        // Silence (no voice, no music): nothing to normalise.
        return Ok(0.0);
    }
    // Normalising is one gain then the limiter; the limiter takes some loudness back
    // (measured 1.6 LU on a drum-heavy track), so the gain is corrected from a measurement
    // of the limited result until it lands within 0.3 LU. loudnorm's own linear mode gives
    // up and compresses dynamically when peaks are in the way (ads came out at −17.3 LUFS).
    let mut gain = TARGET_LUFS - measured;
    for _ in 0..3 {
        let af = format!("{},loudnorm=print_format=json", master_filter(gain));
        let out = run_in(
            Some(dir),
            "ffmpeg",
            ["-hide_banner", "-nostdin", "-nostats", "-v", "info", "-i", "mix.wav", "-af", &af, "-f", "null", "-"],
            limit,
            Stdout::Collect,
        )
        .await?;
        let got = probe::parse_loudnorm(&out.stderr)?.integrated_lufs;
        if (got - TARGET_LUFS).abs() <= 0.3 {
            break;
        }
        gain += TARGET_LUFS - got;
    }
    Ok(gain.clamp(-30.0, 40.0))
}
