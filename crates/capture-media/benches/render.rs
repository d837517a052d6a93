//! Media engine benchmark: seconds and CPU per ad render and per screencast encode.
//!
//! `cargo bench -p capture-media --bench render` (add `-- --runs N` for more renders).
//! CPU of the ffmpeg/espeak-ng children comes from `/proc/self/stat`'s `cutime`/`cstime`
//! — the kernel's sum over waited-for children, i.e. `getrusage(RUSAGE_CHILDREN)` read
//! without `unsafe` — and this process's own CPU (image checks, music synthesis) from its
//! `utime`/`stime`.

use std::time::Instant;

use capture_media::{AdSize, AdSpec, Motion, RecorderOptions, RenderOptions, Scene, ScreencastRecorder, render_ad};
use image::{ImageFormat, Rgb as Px, RgbImage};

/// (own CPU, children's CPU) in seconds.
fn cpu() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let after = &stat[stat.rfind(')').expect("comm") + 1..];
    let f: Vec<f64> = after.split_whitespace().map(|x| x.parse().unwrap_or(0.0)).collect();
    // Fields 14–17 of proc(5) (utime stime cutime cstime), counted from field 3 here.
    let tick = clock_ticks();
    ((f[11] + f[12]) / tick, (f[13] + f[14]) / tick)
}

fn clock_ticks() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

fn encode(img: &RgbImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(img.clone()).write_to(&mut std::io::Cursor::new(&mut out), format).unwrap();
    out
}

/// A page-like picture: coloured sections with text-like lines.
fn page(w: u32, h: u32, shift: u32) -> RgbImage {
    let bands = [[0x1E, 0x3A, 0x8A], [0xF3, 0xF4, 0xF6], [0x0F, 0x76, 0x6E], [0xFF, 0xFF, 0xFF]];
    RgbImage::from_fn(w, h, |x, y| {
        let yy = (y + shift) % 700;
        let base = bands[((y + shift) / 700) as usize % bands.len()];
        if (100..500).contains(&yy) && (yy - 100) % 50 < 18 && x > w / 8 && x < w * 7 / 8 && !(x / 6).is_multiple_of(9)
        {
            return Px(if base[0] < 0x80 { [0xF9, 0xFA, 0xFB] } else { [0x11, 0x18, 0x27] });
        }
        Px(base)
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs: usize =
        args.iter().position(|a| a == "--runs").and_then(|i| args.get(i + 1)).and_then(|n| n.parse().ok()).unwrap_or(2);
    let tmp = tempfile::tempdir().unwrap();

    // ---- ad render: portrait, ~20 s ----
    let hero = encode(&page(1280, 800, 0), ImageFormat::Png);
    let tall = encode(&page(1280, 5000, 300), ImageFormat::Jpeg);
    let mobile = encode(&page(390, 844, 100), ImageFormat::Png);
    let spec = AdSpec {
        scenes: vec![
            Scene {
                image: hero.clone(),
                caption: "Screenshots of any page in seconds".into(),
                duration: 4.0,
                motion: Motion::ZoomIn,
            },
            Scene { image: tall, caption: "Full pages, every pixel".into(), duration: 6.0, motion: Motion::PanDown },
            Scene { image: mobile, caption: "Mobile views included".into(), duration: 4.0, motion: Motion::ZoomOut },
            Scene { image: hero, caption: "Start free today".into(), duration: 4.0, motion: Motion::PanRight },
        ],
        script: "Meet Capture, the screenshot service for busy teams. Point it at any web page \
                 and get a pixel perfect image in seconds: full pages, mobile views, even PDFs. \
                 Webhooks tell you when it is done. Start free today at capture dot dev."
            .into(),
        voice_id: "en-us+f3".into(),
        music_id: "upbeat".into(),
        brand_color: "#FF6A00".into(),
        size: AdSize::Portrait,
    };
    let mut walls = Vec::new();
    let mut per_video_second = Vec::new();
    for i in 0..runs {
        let out = tmp.path().join(format!("ad{i}.mp4"));
        let mut opts = RenderOptions::new(&out);
        opts.temp_root = Some(tmp.path().to_path_buf());
        let (own0, kids0) = cpu();
        let t = Instant::now();
        let ad = render_ad(&spec, &opts).await.expect("render");
        let wall = t.elapsed().as_secs_f64();
        let (own1, kids1) = cpu();
        let kids = kids1 - kids0;
        println!(
            "ad render {i}: {:.1}s of video in {wall:.1}s wall; ffmpeg+espeak CPU {kids:.1}s ({:.2} CPU-s per video second), in-process CPU {:.1}s; stages {:?}; {} KB",
            ad.duration,
            kids / ad.duration,
            own1 - own0,
            ad.stage_seconds.iter().map(|(s, t)| format!("{s:?} {t:.1}s")).collect::<Vec<_>>(),
            ad.info.size_bytes / 1024,
        );
        walls.push(wall);
        per_video_second.push(kids / ad.duration);
    }
    println!(
        "ad render median: {:.1}s wall per render, {:.2} CPU-s of children per second of video",
        median(walls),
        median(per_video_second)
    );

    // ---- screencast: 60 s of 1280×800 frames, 10 per second, a page scrolling ----
    let mut rec = ScreencastRecorder::new(RecorderOptions {
        temp_root: Some(tmp.path().to_path_buf()),
        ..RecorderOptions::default()
    })
    .unwrap();
    let frames: Vec<Vec<u8>> = (0..50).map(|i| encode(&page(1280, 800, i * 37), ImageFormat::Jpeg)).collect();
    let t0 = 1_700_000_000.0;
    for k in 0..600u32 {
        // Bursts of change and idle stretches, as a real session has.
        let idle = (k / 100) % 2 == 1;
        let f = if idle { &frames[((k / 100) * 7 % 50) as usize] } else { &frames[(k % 50) as usize] };
        if idle && k % 25 != 0 {
            continue;
        }
        rec.push_frame(f, t0 + f64::from(k) * 0.1).await.unwrap();
    }
    let n = rec.frame_count();
    let (_, kids0) = cpu();
    let t = Instant::now();
    let r = rec.finish(t0 + 60.0, &tmp.path().join("session.mp4")).await.unwrap();
    let wall = t.elapsed().as_secs_f64();
    let (_, kids1) = cpu();
    println!(
        "screencast: {n} frames over {:.1}s at 1280×800 → {:.1}s MP4 in {wall:.1}s wall ({:.1}s encode), ffmpeg CPU {:.1}s, {} KB",
        r.span,
        r.info.duration,
        r.encode_time.as_secs_f64(),
        kids1 - kids0,
        r.info.size_bytes / 1024
    );
}
