//! The ffmpeg filter graphs of an ad render, built as text (pure, unit-tested).

use crate::caption::{FontMetrics, Layout, filter_value};
use crate::color::CaptionColors;
use serde::{Deserialize, Serialize};

/// How the camera moves over a scene's image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Motion {
    /// Slowly closer.
    ZoomIn,
    /// Slowly back.
    ZoomOut,
    /// Down a tall (full-page) screenshot, from its top.
    PanDown,
    /// Up a tall screenshot, ending at its top.
    PanUp,
    /// Across a wide screenshot, towards its left.
    PanLeft,
    /// Across a wide screenshot, towards its right.
    PanRight,
}

/// Frames per second of every ad.
pub const FPS: u32 = 30;
/// Cross-fade between scenes, in frames (0.4 s).
pub const XFADE_FRAMES: u32 = 12;
/// How far a pan travels: at most this many screen heights (or widths) per second.
const PAN_SCREENS_PER_SECOND: f64 = 0.22;
/// A pan needs at least this much more image than the screen shows; less becomes a zoom.
const PAN_MIN_EXTRA: f64 = 0.12;
/// Zoom range of the zoom motions.
const ZOOM: f64 = 0.12;
/// Zoom scenes are composed at twice the output size so zoompan's whole-pixel crop
/// positions move in half-pixel steps on screen (measured: 12 ms/frame against 5.5 at 1×
/// on these machines, against ~28 ms/frame for x264 veryfast; the 1× version visibly
/// shakes).
const ZOOM_SUPERSAMPLE: u32 = 2;

/// One scene as the graph needs it.
pub struct SceneGraph<'a> {
    /// Image size in pixels.
    pub image_w: u32,
    /// Image height in pixels.
    pub image_h: u32,
    /// Frames the scene lasts (including its share of the cross-fades).
    pub frames: u32,
    /// The motion asked for.
    pub motion: Motion,
    /// The caption, laid out, with the name of the text file holding each line.
    pub caption: Option<(&'a Layout, Vec<String>)>,
}

/// Everything common to the scenes.
pub struct Frame<'a> {
    /// Output width.
    pub w: u32,
    /// Output height.
    pub h: u32,
    /// Caption font file.
    pub font_path: &'a str,
    /// Its metrics.
    pub font: &'a FontMetrics,
    /// Caption colours.
    pub colors: CaptionColors,
}

/// The motion a scene really gets: a pan over an image without room to pan becomes a zoom.
pub fn effective_motion(motion: Motion, iw: u32, ih: u32, w: u32, h: u32) -> Motion {
    let (iw, ih, w, h) = (f64::from(iw), f64::from(ih), f64::from(w), f64::from(h));
    match motion {
        Motion::PanUp | Motion::PanDown => {
            let visible = h * iw / w;
            if ih - visible < PAN_MIN_EXTRA * visible {
                if motion == Motion::PanDown { Motion::ZoomIn } else { Motion::ZoomOut }
            } else {
                motion
            }
        }
        Motion::PanLeft | Motion::PanRight => {
            let visible = w * ih / h;
            if iw - visible < PAN_MIN_EXTRA * visible {
                if motion == Motion::PanRight { Motion::ZoomIn } else { Motion::ZoomOut }
            } else {
                motion
            }
        }
        m => m,
    }
}

fn even(x: f64) -> u32 {
    ((x / 2.0).round() as u32).max(1) * 2
}

/// Smoothstep of `var/n` as an ffmpeg expression: eases the motion in and out.
fn ease(var: &str, n: u32) -> String {
    let n = n.max(1);
    format!("(3*pow({var}/{n},2)-2*pow({var}/{n},3))")
}

/// The filter chain of scene `k`, from input `[k:v]` to `[s{k}]`.
pub fn scene_chain(k: usize, s: &SceneGraph<'_>, f: &Frame<'_>) -> String {
    let (w, h) = (f.w, f.h);
    let n = s.frames.max(1);
    let last = n.saturating_sub(1).max(1);
    let secs = f64::from(n) / f64::from(FPS);
    let (iw, ih) = (f64::from(s.image_w), f64::from(s.image_h));
    let motion = effective_motion(s.motion, s.image_w, s.image_h, w, h);
    let mut g = String::new();
    match motion {
        Motion::PanUp | Motion::PanDown => {
            let scale = f64::from(w) / iw;
            let visible = f64::from(h) / scale;
            let travel = (ih - visible).min(PAN_SCREENS_PER_SECOND * visible * secs);
            let src_h = (visible + travel).min(ih).floor();
            let canvas_h = even(src_h * scale).max(h);
            let e = ease("n", last);
            let y = if motion == Motion::PanDown {
                format!("({canvas_h}-{h})*{e}")
            } else {
                format!("({canvas_h}-{h})*(1-{e})")
            };
            g += &format!(
                "[{k}:v]crop=iw:{src_h}:0:0,scale={w}:{canvas_h}:flags=bicubic,setsar=1,\
                 loop=loop={}:size=1:start=0,setpts=N/{FPS}/TB,crop={w}:{h}:0:'{y}'",
                n - 1
            );
        }
        Motion::PanLeft | Motion::PanRight => {
            let scale = f64::from(h) / ih;
            let visible = f64::from(w) / scale;
            let travel = (iw - visible).min(PAN_SCREENS_PER_SECOND * visible * secs);
            let src_w = (visible + travel).min(iw).floor();
            let x0 = ((iw - src_w) / 2.0).floor();
            let canvas_w = even(src_w * scale).max(w);
            let e = ease("n", last);
            let x = if motion == Motion::PanRight {
                format!("({canvas_w}-{w})*{e}")
            } else {
                format!("({canvas_w}-{w})*(1-{e})")
            };
            g += &format!(
                "[{k}:v]crop={src_w}:ih:{x0}:0,scale={canvas_w}:{h}:flags=bicubic,setsar=1,\
                 loop=loop={}:size=1:start=0,setpts=N/{FPS}/TB,crop={w}:{h}:'{x}':0",
                n - 1
            );
        }
        Motion::ZoomIn | Motion::ZoomOut => {
            let (cw, ch) = (w * ZOOM_SUPERSAMPLE, h * ZOOM_SUPERSAMPLE);
            let (img_ar, out_ar) = (iw / ih, f64::from(w) / f64::from(h));
            if (img_ar / out_ar).ln().abs() < 0.2 {
                // Close to the frame's shape: fill the frame, cropping from the top.
                g += &format!(
                    "[{k}:v]scale={cw}:{ch}:force_original_aspect_ratio=increase:flags=bicubic,\
                     crop={cw}:{ch}:(iw-ow)/2:0,setsar=1"
                );
            } else {
                // The picture whole (a tall one from its top) over a blurred, darkened copy
                // filling the frame.
                let sc = if img_ar < out_ar {
                    0.9 * f64::from(cw) / iw
                } else {
                    (0.9 * f64::from(cw) / iw).min(0.9 * f64::from(ch) / ih)
                };
                let fw = even(iw * sc);
                let fh = even((ih * sc).min(0.9 * f64::from(ch)));
                let src_h = (f64::from(fh) / sc).min(ih).floor();
                let (bw, bh) = (w / 4, h / 4);
                g += &format!(
                    "[{k}:v]split=2[b{k}][f{k}];\
                     [b{k}]scale={bw}:{bh}:force_original_aspect_ratio=increase,crop={bw}:{bh},\
                     boxblur=12:2,scale={cw}:{ch},drawbox=x=0:y=0:w=iw:h=ih:color=black@0.35:t=fill,setsar=1[bb{k}];\
                     [f{k}]crop=iw:{src_h}:0:0,scale={fw}:{fh}:flags=bicubic,setsar=1[ff{k}];\
                     [bb{k}][ff{k}]overlay=(W-w)/2:(H-h)/2"
                );
            }
            let e = ease("on", last);
            let z = if motion == Motion::ZoomIn { format!("1+{ZOOM}*{e}") } else { format!("1+{ZOOM}-{ZOOM}*{e}") };
            g += &format!(",zoompan=z='{z}':x='iw/2-iw/zoom/2':y='ih/2-ih/zoom/2':d={n}:s={w}x{h}:fps={FPS}");
        }
    }
    g += ",setsar=1,format=yuv420p";
    if let Some((layout, files)) = &s.caption {
        g += &caption_filters(layout, files, f);
    }
    g += &format!("[s{k}]");
    g
}

/// drawbox plates and drawtext lines of a caption: each line centred on its own plate,
/// baselines evenly spaced whatever glyphs a line has.
fn caption_filters(layout: &Layout, files: &[String], f: &Frame<'_>) -> String {
    let (w, h) = (f64::from(f.w), f64::from(f.h));
    let fs = f64::from(layout.font_size);
    let asc = f64::from(f.font.ascender) * fs;
    let desc = -f64::from(f.font.descender) * fs;
    let (pad_x, pad_y, gap) = (0.45 * fs, 0.14 * fs, 0.12 * fs);
    let line_h = asc + desc + 2.0 * pad_y;
    let n = layout.lines.len() as f64;
    let block = n * line_h + (n - 1.0).max(0.0) * gap;
    // Portrait: the lower third, clear of the bottom where apps put their buttons.
    // Landscape: near the bottom.
    let centre = if f.h > f.w { 0.70 * h } else { 0.82 * h };
    let top = (centre - block / 2.0).max(0.0);
    let plate = format!("{}@0.88", f.colors.plate.ffmpeg());
    let font = filter_value(f.font_path);
    let mut g = String::new();
    for (i, (line, file)) in layout.lines.iter().zip(files).enumerate() {
        let text_w = f64::from(f.font.width_em(line)) * fs;
        let bw = (text_w + 2.0 * pad_x).min(w).round();
        let bx = ((w - bw) / 2.0).round();
        let by = (top + i as f64 * (line_h + gap)).round();
        let baseline = (by + pad_y + asc).round();
        g += &format!(",drawbox=x={bx}:y={by}:w={bw}:h={}:color={plate}:t=fill", line_h.round());
        g += &format!(
            ",drawtext=fontfile={font}:textfile={}:expansion=none:fontsize={}:fontcolor={}:x=(w-text_w)/2:y={baseline}-ascent",
            filter_value(file),
            layout.font_size,
            f.colors.text.ffmpeg()
        );
    }
    g
}

/// Transitions cycled between scenes.
const TRANSITIONS: &[&str] = &["fade", "smoothleft", "smoothup"];

/// The whole video graph: every scene chain, cross-faded in order, faded out at the end,
/// ending in `[vout]`.
pub fn video_graph(scenes: &[SceneGraph<'_>], f: &Frame<'_>, total_frames: u32) -> String {
    let mut parts: Vec<String> = scenes.iter().enumerate().map(|(k, s)| scene_chain(k, s, f)).collect();
    let mut acc = "s0".to_string();
    let mut start_frames = 0u32;
    for k in 1..scenes.len() {
        start_frames += scenes[k - 1].frames - XFADE_FRAMES;
        let offset = f64::from(start_frames) / f64::from(FPS);
        let out = format!("x{k}");
        parts.push(format!(
            "[{acc}][s{k}]xfade=transition={}:duration={:.6}:offset={offset:.6}[{out}]",
            TRANSITIONS[(k - 1) % TRANSITIONS.len()],
            f64::from(XFADE_FRAMES) / f64::from(FPS),
        ));
        acc = out;
    }
    let total = f64::from(total_frames) / f64::from(FPS);
    let fade = 0.5f64.min(total / 4.0);
    parts.push(format!("[{acc}]fade=t=out:st={:.3}:d={fade:.3},format=yuv420p[vout]", total - fade));
    parts.join(";\n")
}

/// Splits `total_frames` of ad (cross-fades included) over scenes in proportion to their
/// duration hints, each getting at least `min_frames`. Returns None when they cannot fit.
pub fn plan_frames(hints: &[f64], total_frames: u32, min_frames: u32) -> Option<Vec<u32>> {
    let n = hints.len() as u32;
    if n == 0 {
        return None;
    }
    let needed = total_frames + (n - 1) * XFADE_FRAMES;
    if n * min_frames > needed {
        return None;
    }
    let weights: Vec<f64> =
        hints.iter().map(|h| if h.is_finite() && *h > 0.0 { h.clamp(1.0, 10.0) } else { 4.0 }).collect();
    let sum: f64 = weights.iter().sum();
    let mut frames: Vec<u32> =
        weights.iter().map(|w| ((w / sum) * f64::from(needed)).floor() as u32).map(|x| x.max(min_frames)).collect();
    // Settle rounding and the minimums: take from or give to the longest scenes.
    loop {
        let have: u32 = frames.iter().sum();
        if have == needed {
            break;
        }
        let i = (0..frames.len()).max_by_key(|&i| (frames[i], usize::MAX - i)).unwrap_or(0);
        if have < needed {
            frames[i] += 1;
        } else if frames[i] > min_frames {
            frames[i] -= 1;
        } else {
            return None;
        }
    }
    Some(frames)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_split_by_hint_and_add_up() {
        let f = plan_frames(&[3.0, 6.0, 3.0], 600, 45).unwrap();
        assert_eq!(f.iter().sum::<u32>(), 600 + 2 * XFADE_FRAMES);
        assert!(f[1] > f[0] && f[1] > f[2], "{f:?}");
        let f = plan_frames(&[f64::NAN, -1.0], 450, 45).unwrap();
        assert_eq!(f.iter().sum::<u32>(), 450 + XFADE_FRAMES);
        assert!(plan_frames(&[1.0; 20], 450, 45).is_none());
        assert!(plan_frames(&[], 450, 45).is_none());
    }

    #[test]
    fn pans_without_room_become_zooms() {
        // A 1280×800 hero cannot pan down in a 1080×1920 frame, but can pan sideways.
        assert_eq!(effective_motion(Motion::PanDown, 1280, 800, 1080, 1920), Motion::ZoomIn);
        assert_eq!(effective_motion(Motion::PanRight, 1280, 800, 1080, 1920), Motion::PanRight);
        // A tall page pans down in both orientations.
        assert_eq!(effective_motion(Motion::PanDown, 1280, 6000, 1080, 1920), Motion::PanDown);
        assert_eq!(effective_motion(Motion::PanUp, 1280, 6000, 1920, 1080), Motion::PanUp);
        assert_eq!(effective_motion(Motion::PanLeft, 1280, 6000, 1920, 1080), Motion::ZoomOut);
    }
}
