//! Reading media files back: `ffprobe` for structure, ffmpeg's analysers for levels and
//! loudness, and single decoded frames.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::error::{MediaError, Result};
use crate::process::{Stdout, run};

const PROBE_LIMIT: Duration = Duration::from_secs(30);
const MEASURE_LIMIT: Duration = Duration::from_secs(120);

/// What `ffprobe` says about a file.
#[derive(Debug, Clone, PartialEq)]
pub struct MediaInfo {
    /// The container's names as ffprobe lists them, e.g. `mov,mp4,m4a,3gp,3g2,mj2`.
    pub container: String,
    /// Duration of the whole file in seconds.
    pub duration: f64,
    /// File size in bytes.
    pub size_bytes: u64,
    /// Every stream, in file order.
    pub streams: Vec<StreamInfo>,
}

/// Kind of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// Pictures.
    Video,
    /// Sound.
    Audio,
    /// Subtitles, data, attachments.
    Other,
}

/// One stream of a file.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamInfo {
    /// Video, audio or other.
    pub kind: StreamKind,
    /// Codec name as ffmpeg spells it (`h264`, `aac`, `vp9`, …).
    pub codec: String,
    /// Width in pixels (video).
    pub width: Option<u32>,
    /// Height in pixels (video).
    pub height: Option<u32>,
    /// Average frames per second (video).
    pub frame_rate: Option<f64>,
    /// Pixel format (video), e.g. `yuv420p`.
    pub pix_fmt: Option<String>,
    /// Number of frames when the container says it (video).
    pub frames: Option<u64>,
    /// Samples per second (audio).
    pub sample_rate: Option<u32>,
    /// Channel count (audio).
    pub channels: Option<u32>,
    /// The stream's own duration in seconds, when known.
    pub duration: Option<f64>,
}

impl MediaInfo {
    /// The first video stream.
    pub fn video(&self) -> Option<&StreamInfo> {
        self.streams.iter().find(|s| s.kind == StreamKind::Video)
    }

    /// The first audio stream.
    pub fn audio(&self) -> Option<&StreamInfo> {
        self.streams.iter().find(|s| s.kind == StreamKind::Audio)
    }
}

#[derive(Deserialize)]
struct ProbeJson {
    #[serde(default)]
    streams: Vec<ProbeStream>,
    format: Option<ProbeFormat>,
}

#[derive(Deserialize)]
struct ProbeStream {
    codec_type: Option<String>,
    codec_name: Option<String>,
    width: Option<u32>,
    height: Option<u32>,
    avg_frame_rate: Option<String>,
    r_frame_rate: Option<String>,
    pix_fmt: Option<String>,
    nb_frames: Option<String>,
    sample_rate: Option<String>,
    channels: Option<u32>,
    duration: Option<String>,
}

#[derive(Deserialize)]
struct ProbeFormat {
    format_name: Option<String>,
    duration: Option<String>,
    size: Option<String>,
}

/// Runs `ffprobe -print_format json` on a file.
pub async fn probe(path: &Path) -> Result<MediaInfo> {
    let out = run(
        "ffprobe",
        [
            "-v".as_ref(),
            "error".as_ref(),
            "-print_format".as_ref(),
            "json".as_ref(),
            "-show_format".as_ref(),
            "-show_streams".as_ref(),
            path.as_os_str(),
        ],
        PROBE_LIMIT,
        Stdout::Collect,
    )
    .await?;
    parse_probe(&out.stdout)
}

fn parse_probe(json: &[u8]) -> Result<MediaInfo> {
    let bad = |reason: String| MediaError::BadToolOutput { tool: "ffprobe", reason };
    let p: ProbeJson = serde_json::from_slice(json).map_err(|e| bad(e.to_string()))?;
    let format = p.format.ok_or_else(|| bad("no format section".into()))?;
    let streams = p
        .streams
        .into_iter()
        .map(|s| {
            let kind = match s.codec_type.as_deref() {
                Some("video") => StreamKind::Video,
                Some("audio") => StreamKind::Audio,
                _ => StreamKind::Other,
            };
            let frame_rate = s
                .avg_frame_rate
                .as_deref()
                .and_then(parse_ratio)
                .or_else(|| s.r_frame_rate.as_deref().and_then(parse_ratio));
            StreamInfo {
                kind,
                codec: s.codec_name.unwrap_or_default(),
                width: s.width,
                height: s.height,
                frame_rate: if kind == StreamKind::Video { frame_rate } else { None },
                pix_fmt: s.pix_fmt,
                frames: s.nb_frames.and_then(|n| n.parse().ok()),
                sample_rate: s.sample_rate.and_then(|r| r.parse().ok()),
                channels: s.channels,
                duration: s.duration.and_then(|d| d.parse().ok()),
            }
        })
        .collect();
    Ok(MediaInfo {
        container: format.format_name.unwrap_or_default(),
        duration: format.duration.and_then(|d| d.parse().ok()).ok_or_else(|| bad("no duration".into()))?,
        size_bytes: format.size.and_then(|s| s.parse().ok()).unwrap_or(0),
        streams,
    })
}

/// `"30000/1001"` → 29.97; `"0/0"` → None.
fn parse_ratio(s: &str) -> Option<f64> {
    let (n, d) = s.split_once('/')?;
    let (n, d): (f64, f64) = (n.parse().ok()?, d.parse().ok()?);
    (d != 0.0 && n != 0.0).then(|| n / d)
}

/// Sound levels of a stretch of a file's audio (ffmpeg's `volumedetect`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Levels {
    /// Mean (RMS) level in dBFS; `-91` or lower is digital silence.
    pub mean_db: f64,
    /// Highest sample level in dBFS.
    pub peak_db: f64,
}

/// Measures the audio levels between `start` and `start + duration` seconds.
pub async fn audio_levels(path: &Path, start: f64, duration: f64) -> Result<Levels> {
    let out = run("ffmpeg", ffmpeg_measure_args(path, start, duration, "volumedetect"), MEASURE_LIMIT, Stdout::Collect)
        .await?;
    let find = |key: &str| -> Option<f64> {
        let line = out.stderr.lines().rev().find(|l| l.contains(key))?;
        let v = line.split(key).nth(1)?.trim();
        v.trim_end_matches("dB").trim().parse().ok()
    };
    match (find("mean_volume:"), find("max_volume:")) {
        (Some(mean_db), Some(peak_db)) => Ok(Levels { mean_db, peak_db }),
        _ => Err(MediaError::BadToolOutput {
            tool: "ffmpeg",
            reason: "volumedetect printed no levels (is there an audio stream?)".into(),
        }),
    }
}

/// EBU R 128 loudness of a file's audio, as ffmpeg's `loudnorm` measures it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Loudness {
    /// Integrated loudness in LUFS.
    pub integrated_lufs: f64,
    /// True peak in dBTP.
    pub true_peak_db: f64,
    /// Loudness range in LU.
    pub range_lu: f64,
    /// The gating threshold in LUFS (needed for a second, linear `loudnorm` pass).
    pub threshold_lufs: f64,
}

/// Measures the loudness of the audio between `start` and `start + duration` seconds.
pub async fn loudness(path: &Path, start: f64, duration: f64) -> Result<Loudness> {
    let out = run(
        "ffmpeg",
        ffmpeg_measure_args(path, start, duration, "loudnorm=print_format=json"),
        MEASURE_LIMIT,
        Stdout::Collect,
    )
    .await?;
    parse_loudnorm(&out.stderr)
}

/// Reads the JSON block `loudnorm=print_format=json` prints at the end of stderr.
pub(crate) fn parse_loudnorm(stderr: &str) -> Result<Loudness> {
    let bad = |reason: &str| MediaError::BadToolOutput { tool: "ffmpeg", reason: format!("loudnorm: {reason}") };
    let start = stderr.rfind('{').ok_or_else(|| bad("no JSON block"))?;
    let end = stderr[start..].find('}').ok_or_else(|| bad("unterminated JSON"))? + start;
    let v: serde_json::Value = serde_json::from_str(&stderr[start..=end]).map_err(|e| bad(&e.to_string()))?;
    let num = |k: &str| -> Result<f64> {
        let s = v.get(k).and_then(|x| x.as_str()).ok_or_else(|| bad(k))?;
        // Silence measures as "-inf".
        Ok(s.parse::<f64>().unwrap_or(f64::NEG_INFINITY))
    };
    Ok(Loudness {
        integrated_lufs: num("input_i")?,
        true_peak_db: num("input_tp")?,
        range_lu: num("input_lra")?,
        threshold_lufs: num("input_thresh")?,
    })
}

fn ffmpeg_measure_args(path: &Path, start: f64, duration: f64, filter: &str) -> Vec<std::ffi::OsString> {
    let mut a: Vec<std::ffi::OsString> = Vec::new();
    for s in ["-hide_banner", "-nostdin", "-nostats", "-v", "info"] {
        a.push(s.into());
    }
    a.push("-ss".into());
    a.push(format!("{:.3}", start.max(0.0)).into());
    a.push("-t".into());
    a.push(format!("{:.3}", duration.max(0.001)).into());
    a.push("-i".into());
    a.push(path.as_os_str().to_owned());
    for s in ["-vn", "-sn", "-af"] {
        a.push(s.into());
    }
    a.push(filter.into());
    for s in ["-f", "null", "-"] {
        a.push(s.into());
    }
    a
}

/// Decodes the frame a viewer sees at `seconds` (the last one starting at or before it,
/// also in a variable-frame-rate file) into RGB.
pub async fn frame_at(path: &Path, seconds: f64) -> Result<image::RgbImage> {
    let t = seconds.max(0.0);
    // Decode a short window ending at `t` and keep its last frame; a sparse
    // variable-frame-rate file may need the whole start.
    let mut png = None;
    for window in [0.5f64, t] {
        let from = (t - window).max(0.0);
        let mut a: Vec<std::ffi::OsString> = Vec::new();
        for s in ["-hide_banner", "-nostdin", "-v", "error", "-ss"] {
            a.push(s.into());
        }
        a.push(format!("{from:.3}").into());
        a.push("-i".into());
        a.push(path.as_os_str().to_owned());
        a.push("-t".into());
        a.push(format!("{:.3}", t - from + 0.001).into());
        for s in ["-an", "-f", "image2pipe", "-c:v", "png", "-compression_level", "1", "-"] {
            a.push(s.into());
        }
        let out = run("ffmpeg", a, PROBE_LIMIT, Stdout::Collect).await?;
        png = last_png(&out.stdout).map(<[u8]>::to_vec);
        if png.is_some() || window >= t {
            break;
        }
    }
    let png = match png {
        Some(p) => p,
        // Before the first frame: show the first frame.
        None => frame_png(path, seconds, None).await?,
    };
    let img = image::load_from_memory_with_format(&png, image::ImageFormat::Png)
        .map_err(|e| MediaError::BadToolOutput { tool: "ffmpeg", reason: format!("frame is not a PNG: {e}") })?;
    Ok(img.to_rgb8())
}

/// The last of several PNG files written back to back (ffmpeg's `image2pipe`), found by
/// walking their chunks rather than searching for the signature.
fn last_png(mut b: &[u8]) -> Option<&[u8]> {
    const SIG: &[u8] = b"\x89PNG\r\n\x1a\n";
    let mut last = None;
    while b.starts_with(SIG) {
        let mut i = SIG.len();
        loop {
            // A truncated file ends the walk at the last complete one.
            let (Some(len), Some(kind)) = (b.get(i..i + 4), b.get(i + 4..i + 8)) else {
                return last;
            };
            let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
            i += 12 + len;
            if i > b.len() {
                return last;
            }
            if kind == b"IEND" {
                break;
            }
        }
        last = Some(&b[..i]);
        b = &b[i..];
    }
    last
}

/// The first frame at or after `seconds` as PNG bytes, optionally scaled to `width` (height
/// follows the aspect).
pub(crate) async fn frame_png(path: &Path, seconds: f64, width: Option<u32>) -> Result<Vec<u8>> {
    let mut a: Vec<std::ffi::OsString> = Vec::new();
    for s in ["-hide_banner", "-nostdin", "-v", "error", "-ss"] {
        a.push(s.into());
    }
    a.push(format!("{:.3}", seconds.max(0.0)).into());
    a.push("-i".into());
    a.push(path.as_os_str().to_owned());
    if let Some(w) = width {
        a.push("-vf".into());
        a.push(format!("scale={w}:-2:flags=lanczos").into());
    }
    for s in ["-frames:v", "1", "-f", "image2pipe", "-c:v", "png", "-"] {
        a.push(s.into());
    }
    let out = run("ffmpeg", a, PROBE_LIMIT, Stdout::Collect).await?;
    if out.stdout.is_empty() {
        return Err(MediaError::BadToolOutput {
            tool: "ffmpeg",
            reason: format!("no frame at {seconds:.3}s (past the end?)"),
        });
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_parse_and_zero_is_none() {
        assert_eq!(parse_ratio("30/1"), Some(30.0));
        assert!((parse_ratio("30000/1001").unwrap() - 29.97).abs() < 0.01);
        assert_eq!(parse_ratio("0/0"), None);
        assert_eq!(parse_ratio("x"), None);
    }

    #[test]
    fn the_last_of_back_to_back_pngs_is_found() {
        let png = |c: u8| {
            let mut out = Vec::new();
            image::DynamicImage::ImageRgb8(image::RgbImage::from_pixel(3, 2, image::Rgb([c, c, c])))
                .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
                .unwrap();
            out
        };
        let (a, b) = (png(10), png(200));
        let both = [a.clone(), b.clone()].concat();
        assert_eq!(last_png(&both), Some(&b[..]));
        assert_eq!(last_png(&a), Some(&a[..]));
        assert_eq!(last_png(b""), None);
        // A truncated second file: the first complete one.
        assert_eq!(last_png(&both[..both.len() - 5]), Some(&a[..]));
    }

    #[test]
    fn loudnorm_json_is_read_from_the_end_of_stderr() {
        let stderr = "noise {not json\n[Parsed_loudnorm_0 @ 0x1] \n{\n\t\"input_i\" : \"-23.51\",\n\t\"input_tp\" : \"-5.20\",\n\t\"input_lra\" : \"3.10\",\n\t\"input_thresh\" : \"-33.80\",\n\t\"output_i\" : \"-16.0\"\n}\n";
        let l = parse_loudnorm(stderr).unwrap();
        assert_eq!(l.integrated_lufs, -23.51);
        assert_eq!(l.true_peak_db, -5.2);
        assert_eq!(l.threshold_lufs, -33.8);
    }
}
