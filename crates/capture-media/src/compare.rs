//! Two captures of a page compared (issue 42, monitors): which pixels changed beyond
//! anti-aliasing, where (regions), how much (the share of the page), a picture of it (the new
//! capture dimmed, the changed regions bright and outlined), and the visible text line by line.
//!
//! Our own, after pixelmatch (ISC, Mapbox): a pixel differs when the perceived colour distance
//! (YIQ, weighted as pixelmatch does) passes `threshold`, and is forgiven when it is
//! anti-aliasing — a pixel on an edge whose neighbourhood in either image has a pixel of the
//! same colour in the other (see [`antialiased`]). Written here rather than taken as a crate so
//! the pass is one loop over both buffers with no copy, the regions come from the same pass, and
//! masked areas (`ignoreSelectors`) skip the work; `benches/compare.rs` times it on two
//! 1280×4000 captures.

use image::{Rgba, RgbaImage};

/// A rectangle of the page in image pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Rect {
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
}

impl Rect {
    fn contains(&self, x: u32, y: u32) -> bool {
        x >= self.x && y >= self.y && x < self.x.saturating_add(self.w) && y < self.y.saturating_add(self.h)
    }
}

/// How two images are compared.
#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// The colour distance (0–1) under which two pixels are the same (pixelmatch's default 0.1).
    pub threshold: f64,
    /// Forgive anti-aliasing (text and edges rendered a shade differently).
    pub ignore_antialiasing: bool,
    /// Areas left out (their pixels never count as changed): `ignoreSelectors`' boxes.
    pub ignore: Vec<Rect>,
    /// Side of the cells changed pixels are grouped in to make regions.
    pub cell: u32,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions { threshold: 0.1, ignore_antialiasing: true, ignore: Vec::new(), cell: 16 }
    }
}

/// What changed between two images.
#[derive(Debug, Clone, PartialEq)]
pub struct PixelDiff {
    /// Pixels that changed (beyond the threshold and anti-aliasing).
    pub changed: u64,
    /// Pixels compared: the larger extent of both images, less the ignored areas.
    pub compared: u64,
    /// `changed / compared` (0 when nothing was compared).
    pub ratio: f64,
    /// Boxes around the changed pixels (neighbouring cells merged), top to bottom.
    pub regions: Vec<Rect>,
}

/// Compare `before` and `after` (any sizes: what one has and the other lacks is changed).
pub fn compare(before: &RgbaImage, after: &RgbaImage, opts: &CompareOptions) -> PixelDiff {
    let (w, h) = (before.width().max(after.width()), before.height().max(after.height()));
    let cell = opts.cell.max(1);
    let (cw, ch) = (w.div_ceil(cell), h.div_ceil(cell));
    let mut cells = vec![false; (cw as usize) * (ch as usize)];
    // Squared YIQ distance of pixelmatch's scale: 35215 is the largest possible.
    let max_delta = 35215.0 * opts.threshold * opts.threshold;
    let (mut changed, mut ignored) = (0u64, 0u64);
    for y in 0..h {
        let row_ignored: Vec<&Rect> = opts.ignore.iter().filter(|r| y >= r.y && y < r.y.saturating_add(r.h)).collect();
        for x in 0..w {
            if !row_ignored.is_empty() && row_ignored.iter().any(|r| r.contains(x, y)) {
                ignored += 1;
                continue;
            }
            let differs = match (pixel(before, x, y), pixel(after, x, y)) {
                (Some(a), Some(b)) => {
                    if a == b {
                        false
                    } else {
                        let delta = color_delta(a, b);
                        delta > max_delta
                            && !(opts.ignore_antialiasing
                                && (antialiased(before, x, y, after) || antialiased(after, x, y, before)))
                    }
                }
                // Only one image has this pixel: the page grew or shrank here.
                _ => true,
            };
            if differs {
                changed += 1;
                cells[((y / cell) * cw + x / cell) as usize] = true;
            }
        }
    }
    let compared = u64::from(w) * u64::from(h) - ignored;
    let ratio = if compared == 0 { 0.0 } else { changed as f64 / compared as f64 };
    PixelDiff { changed, compared, ratio, regions: regions(&cells, cw, ch, cell, w, h) }
}

fn pixel(img: &RgbaImage, x: u32, y: u32) -> Option<[u8; 4]> {
    (x < img.width() && y < img.height()).then(|| img.get_pixel(x, y).0)
}

/// A pixel blended over white (captures are opaque, but a transparent background may not be).
fn blend(p: [u8; 4]) -> [f64; 3] {
    let a = f64::from(p[3]) / 255.0;
    [0, 1, 2].map(|i| 255.0 + (f64::from(p[i]) - 255.0) * a)
}

/// pixelmatch's colour distance: squared, in YIQ, luma weighted most.
fn color_delta(a: [u8; 4], b: [u8; 4]) -> f64 {
    let (a, b) = (blend(a), blend(b));
    let y = |c: [f64; 3]| c[0] * 0.298_895_31 + c[1] * 0.586_622_47 + c[2] * 0.114_482_23;
    let i = |c: [f64; 3]| c[0] * 0.595_977_99 - c[1] * 0.274_176_47 - c[2] * 0.321_801_52;
    let q = |c: [f64; 3]| c[0] * 0.211_470_19 - c[1] * 0.522_617_24 + c[2] * 0.311_147_05;
    let (dy, di, dq) = (y(a) - y(b), i(a) - i(b), q(a) - q(b));
    0.5053 * dy * dy + 0.299 * di * di + 0.1957 * dq * dq
}

fn brightness(p: [u8; 4]) -> f64 {
    let c = blend(p);
    c[0] * 0.298_895_31 + c[1] * 0.586_622_47 + c[2] * 0.114_482_23
}

/// pixelmatch's anti-aliasing test: the pixel at (x, y) of `img` has at most two neighbours of
/// its own brightness, and its darkest and brightest neighbours each sit where `other` has
/// more than two equal neighbours (a flat area on one side of an edge).
fn antialiased(img: &RgbaImage, x: u32, y: u32, other: &RgbaImage) -> bool {
    let (x0, y0) = (x.saturating_sub(1), y.saturating_sub(1));
    let (x1, y1) = ((x + 1).min(img.width().saturating_sub(1)), (y + 1).min(img.height().saturating_sub(1)));
    let Some(center) = pixel(img, x, y) else { return false };
    let c = brightness(center);
    let mut zeroes = u32::from(x == x0 || x == x1 || y == y0 || y == y1);
    let (mut min, mut max) = (0.0f64, 0.0f64);
    let (mut min_at, mut max_at) = ((0, 0), (0, 0));
    for ny in y0..=y1 {
        for nx in x0..=x1 {
            if nx == x && ny == y {
                continue;
            }
            let Some(p) = pixel(img, nx, ny) else { continue };
            let delta = brightness(p) - c;
            if delta == 0.0 {
                zeroes += 1;
                if zeroes > 2 {
                    return false;
                }
            } else if delta < min {
                min = delta;
                min_at = (nx, ny);
            } else if delta > max {
                max = delta;
                max_at = (nx, ny);
            }
        }
    }
    if min == 0.0 || max == 0.0 {
        return false;
    }
    (has_many_siblings(img, min_at) && has_many_siblings(other, min_at))
        || (has_many_siblings(img, max_at) && has_many_siblings(other, max_at))
}

/// More than two of the pixel's neighbours have exactly its colour.
fn has_many_siblings(img: &RgbaImage, (x, y): (u32, u32)) -> bool {
    let Some(center) = pixel(img, x, y) else { return false };
    let (x0, y0) = (x.saturating_sub(1), y.saturating_sub(1));
    let (x1, y1) = ((x + 1).min(img.width().saturating_sub(1)), (y + 1).min(img.height().saturating_sub(1)));
    let mut zeroes = u32::from(x == x0 || x == x1 || y == y0 || y == y1);
    for ny in y0..=y1 {
        for nx in x0..=x1 {
            if (nx, ny) != (x, y) && pixel(img, nx, ny) == Some(center) {
                zeroes += 1;
                if zeroes > 2 {
                    return true;
                }
            }
        }
    }
    false
}

/// Boxes around groups of changed cells that touch (8-neighbourhood), clipped to the image.
fn regions(cells: &[bool], cw: u32, ch: u32, cell: u32, w: u32, h: u32) -> Vec<Rect> {
    let mut seen = vec![false; cells.len()];
    let mut out = Vec::new();
    let mut stack = Vec::new();
    for start in 0..cells.len() {
        if !cells[start] || seen[start] {
            continue;
        }
        let (mut x0, mut y0, mut x1, mut y1) = (u32::MAX, u32::MAX, 0, 0);
        seen[start] = true;
        stack.push(start);
        while let Some(i) = stack.pop() {
            let (cx, cy) = (i as u32 % cw, i as u32 / cw);
            (x0, y0, x1, y1) = (x0.min(cx), y0.min(cy), x1.max(cx), y1.max(cy));
            for dy in -1i64..=1 {
                for dx in -1i64..=1 {
                    let (nx, ny) = (i64::from(cx) + dx, i64::from(cy) + dy);
                    if nx < 0 || ny < 0 || nx >= i64::from(cw) || ny >= i64::from(ch) {
                        continue;
                    }
                    let j = (ny as u32 * cw + nx as u32) as usize;
                    if cells[j] && !seen[j] {
                        seen[j] = true;
                        stack.push(j);
                    }
                }
            }
        }
        let (px, py) = (x0 * cell, y0 * cell);
        out.push(Rect { x: px, y: py, w: ((x1 + 1) * cell).min(w) - px, h: ((y1 + 1) * cell).min(h) - py });
    }
    out.sort_by_key(|r| (r.y, r.x));
    out
}

/// The picture of a diff: `after` dimmed to a pale grey, its changed regions at full colour
/// with a red outline (3 px) — what changed stands out, and where it is on the page.
pub fn diff_image(after: &RgbaImage, regions: &[Rect]) -> RgbaImage {
    let mut out = RgbaImage::from_fn(after.width(), after.height(), |x, y| {
        let p = after.get_pixel(x, y).0;
        let g = brightness(p);
        // 25 % of the page's luma over 75 % white.
        let v = (255.0 * 0.75 + g * 0.25).round().clamp(0.0, 255.0) as u8;
        Rgba([v, v, v, 255])
    });
    const RED: Rgba<u8> = Rgba([230, 30, 40, 255]);
    for r in regions {
        let (x1, y1) = ((r.x + r.w).min(after.width()), (r.y + r.h).min(after.height()));
        for y in r.y..y1 {
            for x in r.x..x1 {
                let edge = x < r.x + 3 || y < r.y + 3 || x + 3 >= x1 || y + 3 >= y1;
                let p = if edge { RED } else { *after.get_pixel(x, y) };
                out.put_pixel(x, y, p);
            }
        }
    }
    out
}

/// A unified diff of two texts, line by line (`---`/`+++` headers, `@@` hunks with three lines
/// of context); empty when they are the same.
pub fn text_diff(before: &str, after: &str, before_name: &str, after_name: &str) -> String {
    let d = similar::TextDiff::from_lines(before, after);
    if d.ratio() == 1.0 && before == after {
        return String::new();
    }
    d.unified_diff().context_radius(3).header(before_name, after_name).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(w: u32, h: u32, c: [u8; 3]) -> RgbaImage {
        RgbaImage::from_pixel(w, h, Rgba([c[0], c[1], c[2], 255]))
    }

    #[test]
    fn the_same_image_has_no_change() {
        let a = flat(100, 80, [250, 250, 250]);
        let d = compare(&a, &a.clone(), &CompareOptions::default());
        assert_eq!(d, PixelDiff { changed: 0, compared: 8000, ratio: 0.0, regions: vec![] });
    }

    #[test]
    fn a_changed_block_is_one_region_with_its_share() {
        let a = flat(200, 100, [255, 255, 255]);
        let mut b = a.clone();
        for y in 40..60 {
            for x in 50..90 {
                b.put_pixel(x, y, Rgba([0, 0, 0, 255]));
            }
        }
        let d = compare(&a, &b, &CompareOptions::default());
        assert_eq!(d.changed, 800);
        assert_eq!(d.ratio, 800.0 / 20_000.0);
        // The cells (16 px) the block touches.
        assert_eq!(d.regions, vec![Rect { x: 48, y: 32, w: 48, h: 32 }]);
        // Ignored, it is no change at all.
        let opts = CompareOptions { ignore: vec![Rect { x: 40, y: 30, w: 60, h: 40 }], ..Default::default() };
        let d = compare(&a, &b, &opts);
        assert_eq!((d.changed, d.compared, d.regions.len()), (0, 20_000 - 2400, 0));
        // A pale shade under the threshold is the same.
        let mut c = a.clone();
        c.put_pixel(10, 10, Rgba([250, 250, 250, 255]));
        assert_eq!(compare(&a, &c, &CompareOptions::default()).changed, 0);
    }

    #[test]
    fn two_far_apart_changes_are_two_regions_and_a_taller_page_is_changed_below() {
        let a = flat(100, 100, [255, 255, 255]);
        let mut b = flat(100, 120, [255, 255, 255]);
        b.put_pixel(5, 5, Rgba([255, 0, 0, 255]));
        for x in 0..100 {
            for y in 100..120 {
                b.put_pixel(x, y, Rgba([255, 255, 255, 255]));
            }
        }
        let d = compare(&a, &b, &CompareOptions::default());
        // One red pixel, and the 20 rows the old page did not have.
        assert_eq!(d.changed, 1 + 2000);
        assert_eq!(d.regions, vec![Rect { x: 0, y: 0, w: 16, h: 16 }, Rect { x: 0, y: 96, w: 100, h: 24 }]);
    }

    #[test]
    fn anti_aliased_edges_are_forgiven() {
        // A black square on white; in the other image its edge pixels are grey (a shade of
        // anti-aliasing, as a font rendered a sub-pixel off).
        let mut a = flat(40, 40, [255, 255, 255]);
        for y in 10..30 {
            for x in 10..30 {
                a.put_pixel(x, y, Rgba([0, 0, 0, 255]));
            }
        }
        let mut b = a.clone();
        for y in 10..30 {
            b.put_pixel(30, y, Rgba([128, 128, 128, 255]));
        }
        assert_eq!(compare(&a, &b, &CompareOptions::default()).changed, 0);
        let strict = CompareOptions { ignore_antialiasing: false, ..Default::default() };
        assert_eq!(compare(&a, &b, &strict).changed, 20);
    }

    #[test]
    fn the_diff_picture_dims_the_page_and_outlines_what_changed() {
        let after = flat(64, 64, [0, 0, 255]);
        let img = diff_image(&after, &[Rect { x: 16, y: 16, w: 32, h: 32 }]);
        // 75 % white and 25 % of the blue's luma (29.2): 191.25 + 7.3.
        assert_eq!(img.get_pixel(0, 0).0, [199, 199, 199, 255], "dimmed");
        assert_eq!(img.get_pixel(16, 30).0, [230, 30, 40, 255], "outline");
        assert_eq!(img.get_pixel(30, 30).0, [0, 0, 255, 255], "the change at full colour");
    }

    #[test]
    fn the_text_diff_is_unified() {
        assert_eq!(text_diff("a\nb\n", "a\nb\n", "before", "after"), "");
        assert_eq!(
            text_diff("Plans\nPro: $10\nTeam: $30\n", "Plans\nPro: $12\nTeam: $30\n", "before", "after"),
            "--- before\n+++ after\n@@ -1,3 +1,3 @@\n Plans\n-Pro: $10\n+Pro: $12\n Team: $30\n"
        );
    }
}
