//! Colour helpers (pure): `#RRGGBB`, WCAG contrast, readable caption colours and the
//! dominant colours of an image.

use std::fmt;
use std::str::FromStr;

use crate::error::MediaError;

/// An sRGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rgb {
    /// Red, 0–255.
    pub r: u8,
    /// Green, 0–255.
    pub g: u8,
    /// Blue, 0–255.
    pub b: u8,
}

impl Rgb {
    /// Black.
    pub const BLACK: Rgb = Rgb::new(0, 0, 0);
    /// White.
    pub const WHITE: Rgb = Rgb::new(255, 255, 255);

    /// A colour from its channels.
    pub const fn new(r: u8, g: u8, b: u8) -> Self {
        Rgb { r, g, b }
    }

    /// Parses `#RRGGBB` (the `#` is required; hex digits in either case).
    pub fn parse_hex(s: &str) -> Result<Rgb, MediaError> {
        let bad = || MediaError::BadColor(s.chars().take(32).collect());
        let hex = s.strip_prefix('#').ok_or_else(bad)?;
        if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        let ch = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).map_err(|_| bad());
        Ok(Rgb::new(ch(0)?, ch(2)?, ch(4)?))
    }

    /// `#RRGGBB` in upper case.
    pub fn hex(&self) -> String {
        format!("#{:02X}{:02X}{:02X}", self.r, self.g, self.b)
    }

    /// The colour as ffmpeg's filters want it: `0xRRGGBB`.
    pub fn ffmpeg(&self) -> String {
        format!("0x{:02X}{:02X}{:02X}", self.r, self.g, self.b)
    }

    /// WCAG 2 relative luminance, 0 (black) to 1 (white).
    pub fn relative_luminance(&self) -> f64 {
        fn lin(c: u8) -> f64 {
            let c = f64::from(c) / 255.0;
            if c <= 0.04045 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
        }
        0.2126 * lin(self.r) + 0.7152 * lin(self.g) + 0.0722 * lin(self.b)
    }

    /// HSV saturation, 0 (grey) to 1 (pure hue).
    pub fn saturation(&self) -> f64 {
        let max = self.r.max(self.g).max(self.b);
        let min = self.r.min(self.g).min(self.b);
        if max == 0 { 0.0 } else { f64::from(max - min) / f64::from(max) }
    }

    /// Squared Euclidean distance in RGB space.
    pub fn distance2(&self, other: Rgb) -> u32 {
        let d = |a: u8, b: u8| (i32::from(a) - i32::from(b)).pow(2) as u32;
        d(self.r, other.r) + d(self.g, other.g) + d(self.b, other.b)
    }
}

impl FromStr for Rgb {
    type Err = MediaError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Rgb::parse_hex(s)
    }
}

impl fmt::Display for Rgb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

/// WCAG 2 contrast ratio between two colours, 1 (same) to 21 (black on white).
pub fn contrast_ratio(a: Rgb, b: Rgb) -> f64 {
    let (la, lb) = (a.relative_luminance(), b.relative_luminance());
    let (hi, lo) = if la > lb { (la, lb) } else { (lb, la) };
    (hi + 0.05) / (lo + 0.05)
}

/// WCAG AA contrast for normal text.
pub const AA_NORMAL: f64 = 4.5;

/// The dark plate colour captions use.
pub const DARK_PLATE: Rgb = Rgb::new(0x10, 0x10, 0x14);
/// The light plate colour captions use.
pub const LIGHT_PLATE: Rgb = Rgb::new(0xFF, 0xFF, 0xFF);

/// How a caption in a given colour is drawn so it stays readable.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CaptionColors {
    /// The text colour (the brand colour).
    pub text: Rgb,
    /// The plate behind the text.
    pub plate: Rgb,
    /// Contrast between the two.
    pub contrast: f64,
}

/// Picks the plate for text in `brand`: the dark or the light one, whichever contrasts
/// more; for the few mid-tones where neither reaches WCAG AA (4.5:1), pure black or white,
/// one of which always reaches at least √21 ≈ 4.58:1.
pub fn caption_colors(brand: Rgb) -> CaptionColors {
    let pick = |dark_plate: Rgb, light_plate: Rgb| {
        let dark = contrast_ratio(brand, dark_plate);
        let light = contrast_ratio(brand, light_plate);
        if dark >= light { (dark_plate, dark) } else { (light_plate, light) }
    };
    let (mut plate, mut contrast) = pick(DARK_PLATE, LIGHT_PLATE);
    if contrast < AA_NORMAL {
        (plate, contrast) = pick(Rgb::BLACK, Rgb::WHITE);
    }
    CaptionColors { text: brand, plate, contrast }
}

/// Black or white, whichever reads better on `background`.
pub fn readable_text_on(background: Rgb) -> Rgb {
    if contrast_ratio(background, Rgb::BLACK) >= contrast_ratio(background, Rgb::WHITE) {
        Rgb::BLACK
    } else {
        Rgb::WHITE
    }
}

/// One of an image's dominant colours.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DominantColor {
    /// The cluster's mean colour.
    pub color: Rgb,
    /// Its share of the pixels that are not near-white or near-black, 0–1.
    pub share: f64,
}

/// Whether a pixel is page background (near-white, near-black) rather than colour.
fn is_background(c: Rgb) -> bool {
    let (max, min) = (c.r.max(c.g).max(c.b), c.r.min(c.g).min(c.b));
    (min >= 235) || (max <= 28) || (max - min <= 12 && (min >= 225 || max <= 40))
}

/// The `k` dominant colours of an image, largest share first, ignoring near-white and
/// near-black background pixels. k-means on a copy downscaled to at most 96 px a side,
/// seeded from a coarse histogram so the result is deterministic.
pub fn dominant_colors(img: &image::DynamicImage, k: usize) -> Vec<DominantColor> {
    let k = k.clamp(1, 16);
    // Nearest-neighbour sampling: a smoothing filter would blend black text into white
    // paper and invent greys the page does not have.
    let (w, h) = (img.width().max(1), img.height().max(1));
    let s = (96.0 / f64::from(w.max(h))).min(1.0);
    let small = img
        .resize_exact(
            ((f64::from(w) * s).round() as u32).max(1),
            ((f64::from(h) * s).round() as u32).max(1),
            image::imageops::FilterType::Nearest,
        )
        .to_rgb8();
    let px: Vec<Rgb> = small.pixels().map(|p| Rgb::new(p[0], p[1], p[2])).filter(|c| !is_background(*c)).collect();
    if px.is_empty() {
        return Vec::new();
    }
    // Seeds: the fullest bins of a 4-bit-per-channel histogram, skipping bins next to a
    // seed already taken so two seeds do not split one colour.
    let mut bins = vec![(0u32, [0u64; 3]); 4096];
    for c in &px {
        let i = (usize::from(c.r >> 4) << 8) | (usize::from(c.g >> 4) << 4) | usize::from(c.b >> 4);
        bins[i].0 += 1;
        bins[i].1[0] += u64::from(c.r);
        bins[i].1[1] += u64::from(c.g);
        bins[i].1[2] += u64::from(c.b);
    }
    let mut order: Vec<usize> = (0..bins.len()).filter(|&i| bins[i].0 > 0).collect();
    order.sort_by(|&a, &b| bins[b].0.cmp(&bins[a].0).then(a.cmp(&b)));
    let mean = |i: usize| {
        let (n, s) = bins[i];
        let n = u64::from(n);
        Rgb::new((s[0] / n) as u8, (s[1] / n) as u8, (s[2] / n) as u8)
    };
    let mut centers: Vec<Rgb> = Vec::new();
    for &i in &order {
        let c = mean(i);
        if centers.iter().all(|s| s.distance2(c) > 40 * 40) {
            centers.push(c);
            if centers.len() == k {
                break;
            }
        }
    }
    let mut counts = vec![0usize; centers.len()];
    for _ in 0..10 {
        let mut sums = vec![[0u64; 3]; centers.len()];
        counts.iter_mut().for_each(|c| *c = 0);
        for c in &px {
            let j = nearest(&centers, *c);
            counts[j] += 1;
            sums[j][0] += u64::from(c.r);
            sums[j][1] += u64::from(c.g);
            sums[j][2] += u64::from(c.b);
        }
        for (j, s) in sums.iter().enumerate() {
            if counts[j] > 0 {
                let n = counts[j] as u64;
                centers[j] = Rgb::new((s[0] / n) as u8, (s[1] / n) as u8, (s[2] / n) as u8);
            }
        }
    }
    let total = px.len() as f64;
    let mut out: Vec<DominantColor> = centers
        .into_iter()
        .zip(counts)
        .filter(|(_, n)| *n > 0)
        .map(|(color, n)| DominantColor { color, share: n as f64 / total })
        .collect();
    out.sort_by(|a, b| b.share.total_cmp(&a.share));
    out
}

fn nearest(centers: &[Rgb], c: Rgb) -> usize {
    let mut best = (0, u32::MAX);
    for (j, s) in centers.iter().enumerate() {
        let d = s.distance2(c);
        if d < best.1 {
            best = (j, d);
        }
    }
    best.0
}

/// A brand colour guessed from a screenshot: the most common clearly coloured (saturated)
/// dominant colour covering at least 2 % of the non-background pixels.
pub fn brand_color_guess(img: &image::DynamicImage) -> Option<Rgb> {
    dominant_colors(img, 6)
        .into_iter()
        .find(|d| d.color.saturation() >= 0.3 && d.share >= 0.02 && d.color.r.max(d.color.g).max(d.color.b) >= 60)
        .map(|d| d.color)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_colours_parse_and_print() {
        assert_eq!(Rgb::parse_hex("#1a73E8").unwrap(), Rgb::new(0x1A, 0x73, 0xE8));
        assert_eq!(Rgb::new(0x1A, 0x73, 0xE8).hex(), "#1A73E8");
        assert_eq!("#000000".parse::<Rgb>().unwrap(), Rgb::BLACK);
        for bad in ["", "#", "1a73e8", "#1a73e", "#1a73e80", "#gg0000", "#ÿÿÿ", "red"] {
            let err = Rgb::parse_hex(bad).unwrap_err();
            assert!(matches!(err, MediaError::BadColor(_)), "{bad}");
            assert!(err.to_string().contains("#RRGGBB"), "{err}");
        }
    }

    #[test]
    fn contrast_matches_the_wcag_reference_values() {
        assert!((contrast_ratio(Rgb::BLACK, Rgb::WHITE) - 21.0).abs() < 1e-9);
        assert!((contrast_ratio(Rgb::WHITE, Rgb::WHITE) - 1.0).abs() < 1e-9);
        // #767676 on white is the classic 4.54:1 AA threshold grey.
        let c = contrast_ratio(Rgb::new(0x76, 0x76, 0x76), Rgb::WHITE);
        assert!((c - 4.54).abs() < 0.01, "{c}");
        assert!((Rgb::WHITE.relative_luminance() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn caption_plates_are_readable_for_every_brand_colour() {
        // Yellow text wants the dark plate, navy text the light one.
        assert_eq!(caption_colors(Rgb::new(0xFF, 0xD6, 0x00)).plate, DARK_PLATE);
        assert_eq!(caption_colors(Rgb::new(0x0B, 0x1F, 0x5C)).plate, LIGHT_PLATE);
        for r in (0..=255).step_by(17) {
            for g in (0..=255).step_by(17) {
                for b in (0..=255).step_by(17) {
                    let cc = caption_colors(Rgb::new(r as u8, g as u8, b as u8));
                    assert!(cc.contrast >= AA_NORMAL, "{:?}", cc);
                }
            }
        }
        assert_eq!(readable_text_on(Rgb::new(0xFF, 0xD6, 0x00)), Rgb::BLACK);
        assert_eq!(readable_text_on(Rgb::new(0x0B, 0x1F, 0x5C)), Rgb::WHITE);
    }

    #[test]
    fn dominant_colours_skip_white_and_black_backgrounds() {
        // A white page with black text lines, a large orange band and a small teal button.
        let mut img = image::RgbImage::from_pixel(200, 300, image::Rgb([255, 255, 255]));
        for y in 0..300 {
            for x in 0..200 {
                let p = if (40..120).contains(&y) {
                    [0xF2, 0x6B, 0x1D]
                } else if (200..220).contains(&y) && (60..140).contains(&x) {
                    [0x00, 0x96, 0x88]
                } else if y % 20 < 3 {
                    [10, 10, 10]
                } else {
                    continue;
                };
                img.put_pixel(x, y, image::Rgb(p));
            }
        }
        let img = image::DynamicImage::ImageRgb8(img);
        let d = dominant_colors(&img, 4);
        assert!(d[0].color.distance2(Rgb::new(0xF2, 0x6B, 0x1D)) < 20 * 20, "{d:?}");
        assert!(d[0].share > 0.8, "{d:?}");
        assert!(d.iter().any(|c| c.color.distance2(Rgb::new(0, 0x96, 0x88)) < 20 * 20), "{d:?}");
        assert_eq!(brand_color_guess(&img).map(|c| c.distance2(Rgb::new(0xF2, 0x6B, 0x1D)) < 400), Some(true));
        let blank = image::DynamicImage::ImageRgb8(image::RgbImage::from_pixel(50, 50, image::Rgb([255, 255, 255])));
        assert!(dominant_colors(&blank, 3).is_empty());
        assert_eq!(brand_color_guess(&blank), None);
    }
}
