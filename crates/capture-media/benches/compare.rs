//! Monitors' comparison (issue 42): how long two 1280×4000 captures of a page take to compare
//! (goal: under 150 ms on these machines), beside what decoding the two PNGs costs — the
//! baseline every check pays anyway.
//!
//! `cargo bench -p capture-media --bench compare` (add `-- --runs N`). The pages are
//! page-like (bands of colour, lines of "text" with anti-aliased edges, photos as noise), the
//! second with a changed price line, a moved banner and text a sub-pixel shade off.

use std::time::{Duration, Instant};

use capture_media::compare::{CompareOptions, compare, diff_image, text_diff};
use image::{ImageFormat, Rgba, RgbaImage};

const W: u32 = 1280;
const H: u32 = 4000;

/// A page-like capture; `changed` moves a banner, rewrites a line and shades text edges.
fn page(changed: bool) -> RgbaImage {
    RgbaImage::from_fn(W, H, |x, y| {
        let band = y / 400;
        let bg = [[255, 255, 255], [244, 246, 250], [255, 250, 240]][(band % 3) as usize];
        // A photo: noise in a block of each band.
        if (80..480).contains(&x) && (y % 400) < 260 && band % 2 == 0 {
            let v = (x.wrapping_mul(31) ^ y.wrapping_mul(17)) % 200;
            return Rgba([v as u8, (v / 2) as u8, (255 - v) as u8, 255]);
        }
        // Lines of text: dark strokes 2 px wide every 9 px, their edges anti-aliased.
        let line = (y % 400) / 24;
        let in_text = x > 560 && x < 1200 && (y % 24) < 14 && line < 14;
        if in_text {
            let stroke = (x + line * 7) % 9;
            if stroke < 2 {
                let price_line = changed && band == 3 && line == 2;
                let v = if price_line { 200 } else { 30 };
                return Rgba([v, v, v, 255]);
            }
            if stroke == 2 {
                // The edge: a shade that differs a little between renders.
                let v = if changed { 140 } else { 128 };
                return Rgba([v, v, v, 255]);
            }
        }
        // A banner that moves 20 px down.
        let top = if changed { 1220 } else { 1200 };
        if (top..top + 90).contains(&y) && x < 1280 {
            return Rgba([20, 90, 200, 255]);
        }
        Rgba([bg[0], bg[1], bg[2], 255])
    })
}

fn png(img: &RgbaImage) -> Vec<u8> {
    let mut out = Vec::new();
    image::DynamicImage::ImageRgba8(img.clone())
        .write_to(&mut std::io::Cursor::new(&mut out), ImageFormat::Png)
        .unwrap();
    out
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let runs: usize = std::env::args().skip_while(|a| a != "--runs").nth(1).and_then(|n| n.parse().ok()).unwrap_or(9);
    let (a, b) = (png(&page(false)), png(&page(true)));
    println!("two {W}x{H} captures: {} KB and {} KB of PNG", a.len() / 1024, b.len() / 1024);
    let (mut decode, mut cmp, mut picture) = (Vec::new(), Vec::new(), Vec::new());
    let mut last = None;
    // Interleaved, so a busy moment lands on every step alike.
    for _ in 0..runs {
        let t = Instant::now();
        let before = image::load_from_memory(&a).unwrap().to_rgba8();
        let after = image::load_from_memory(&b).unwrap().to_rgba8();
        decode.push(t.elapsed());
        let t = Instant::now();
        let d = compare(&before, &after, &CompareOptions::default());
        cmp.push(t.elapsed());
        let t = Instant::now();
        let img = diff_image(&after, &d.regions);
        let _ = png(&img);
        picture.push(t.elapsed());
        last = Some(d);
    }
    let d = last.unwrap();
    println!(
        "changed {} of {} pixels (ratio {:.5}), {} regions: {:?}",
        d.changed,
        d.compared,
        d.ratio,
        d.regions.len(),
        d.regions
    );
    println!("decode both PNGs (baseline)   median {:>7.1} ms", median(decode).as_secs_f64() * 1e3);
    println!("compare (goal < 150 ms)       median {:>7.1} ms", median(cmp).as_secs_f64() * 1e3);
    println!("diff picture, encoded as PNG  median {:>7.1} ms", median(picture).as_secs_f64() * 1e3);
    let text_a: String = (0..2000).map(|i| format!("line {i}: the plan costs ${}\n", 10 + i % 7)).collect();
    let text_b = text_a.replace("line 1000: the plan costs $16", "line 1000: the plan costs $19");
    let t = Instant::now();
    let diff = text_diff(&text_a, &text_b, "before", "after");
    println!(
        "text diff of 2,000 lines         {:>7.1} ms ({} lines)",
        t.elapsed().as_secs_f64() * 1e3,
        diff.lines().count()
    );
}
