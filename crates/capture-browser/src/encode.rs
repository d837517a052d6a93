//! Encoding a capture: a PNG from Chromium's fast encoder is re-deflated here (smaller
//! than Chromium's default encoder, and off the browser's threads) and the thumbnail is
//! scaled from the same decoded pixels.
//!
//! Decoding is bounded: an image's size is read from its header first, and one of more
//! than [`MAX_DECODE_PIXELS`] is never decoded here (the capture keeps Chromium's own
//! encoding and Chromium scales the thumbnail); the pool lets at most
//! [`max_concurrent_decodes`] decodes run at once, so a burst of big captures cannot
//! multiply the peak memory.

use base64::Engine as _;

use crate::CaptureError;
pub use crate::imgsize::image_size;

/// The largest image decoded in this process, in pixels (25 megapixels: a 1280 px wide
/// page 16384 px tall at scale 1 is 21). Decoding needs 7 bytes per pixel at the peak
/// (the decoded RGBA and the RGB copy), so about 175 MB at this limit.
pub const MAX_DECODE_PIXELS: u64 = 25_000_000;

/// The decode budget as `image`'s limits (a second guard behind the header check).
fn limits() -> image::Limits {
    let mut l = image::Limits::default();
    l.max_image_width = Some(32_768);
    l.max_image_height = Some(32_768);
    l.max_alloc = Some(MAX_DECODE_PIXELS * 8);
    l
}

/// How many captures may be decoded and re-encoded at once: one per core, at most 4.
pub fn max_concurrent_decodes() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 4)
}

/// The process's decode budget, shared by every decode in it (captures, uploads and their
/// thumbnails): at most [`max_concurrent_decodes`] at once.
pub fn decode_permits() -> std::sync::Arc<tokio::sync::Semaphore> {
    static PERMITS: std::sync::OnceLock<std::sync::Arc<tokio::sync::Semaphore>> = std::sync::OnceLock::new();
    PERMITS.get_or_init(|| std::sync::Arc::new(tokio::sync::Semaphore::new(max_concurrent_decodes()))).clone()
}

/// Why an image given to [`thumbnail`] was not decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeRefused {
    /// Its header does not give a size (not a PNG, JPEG or WebP, or cut short).
    Unreadable,
    /// Its header claims more than [`MAX_DECODE_PIXELS`].
    TooLarge { width: u32, height: u32 },
    /// The decoder failed.
    Failed(String),
}

impl std::fmt::Display for DecodeRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeRefused::Unreadable => write!(f, "is not a readable PNG, JPEG or WebP image"),
            DecodeRefused::TooLarge { width, height } => write!(
                f,
                "is {width}×{height} pixels ({}); at most {MAX_DECODE_PIXELS} pixels are accepted",
                u64::from(*width) * u64::from(*height)
            ),
            DecodeRefused::Failed(e) => write!(f, "could not be decoded: {e}"),
        }
    }
}

/// Decode an image that came from outside (an upload) within the process's budget: its
/// size is read from the header and checked against [`MAX_DECODE_PIXELS`] before a byte is
/// decoded, and the decode waits for one of the [`decode_permits`]. Returns a `width` px
/// wide PNG thumbnail and the image's size.
pub async fn thumbnail(bytes: std::sync::Arc<[u8]>, width: u32) -> Result<(Vec<u8>, u32, u32), DecodeRefused> {
    let (w, h) = image_size(&bytes).ok_or(DecodeRefused::Unreadable)?;
    if !decodable(&bytes) {
        return Err(DecodeRefused::TooLarge { width: w, height: h });
    }
    let _permit = decode_permits().acquire_owned().await.map_err(|e| DecodeRefused::Failed(e.to_string()))?;
    tokio::task::spawn_blocking(move || {
        let mut reader = image::ImageReader::new(std::io::Cursor::new(&bytes[..]));
        reader.limits(limits());
        let img = reader
            .with_guessed_format()
            .map_err(image::ImageError::IoError)
            .and_then(|r| r.decode())
            .map_err(|e| DecodeRefused::Failed(e.to_string()))?;
        let (w, h) = (img.width(), img.height());
        let tw = w.min(width).max(1);
        let th = ((u64::from(h) * u64::from(tw)) / u64::from(w.max(1))).clamp(1, 4096) as u32;
        let thumb = image::imageops::thumbnail(&img, tw, th);
        let mut out = std::io::Cursor::new(Vec::new());
        thumb.write_to(&mut out, image::ImageFormat::Png).map_err(|e| DecodeRefused::Failed(e.to_string()))?;
        Ok((out.into_inner(), w, h))
    })
    .await
    .map_err(|e| DecodeRefused::Failed(e.to_string()))?
}

/// Thumbnail width in pixels.
pub(crate) const THUMB_WIDTH: f64 = 320.0;

/// Would decoding `bytes` stay within [`MAX_DECODE_PIXELS`]? False when the header cannot
/// be read either.
pub fn decodable(bytes: &[u8]) -> bool {
    image_size(bytes).is_some_and(|(w, h)| w > 0 && h > 0 && u64::from(w) * u64::from(h) <= MAX_DECODE_PIXELS)
}

/// A decoded capture: 8-bit RGB (or RGBA when some pixel is not opaque).
pub(crate) struct Decoded {
    pub(crate) data: Vec<u8>,
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) channels: u8,
}

impl Decoded {
    pub(crate) fn pixels(&self) -> crate::pngenc::Pixels<'_> {
        crate::pngenc::Pixels { data: &self.data, width: self.width, height: self.height, channels: self.channels }
    }
}

/// Decode a capture (PNG through the png crate, anything else through image) within
/// [`limits`]; None when it cannot be read. Opaque RGBA becomes RGB.
pub(crate) fn decode_capture(shot: &[u8]) -> Option<Decoded> {
    let d = decode_png8(shot).or_else(|| {
        let mut reader = image::ImageReader::new(std::io::Cursor::new(shot));
        reader.limits(limits());
        let img = reader.with_guessed_format().ok()?.decode().ok()?;
        let (width, height) = (img.width(), img.height());
        if img.color().has_alpha() {
            Some(Decoded { data: img.into_rgba8().into_raw(), width, height, channels: 4 })
        } else {
            Some(Decoded { data: img.into_rgb8().into_raw(), width, height, channels: 3 })
        }
    })?;
    if d.width == 0 || d.height == 0 {
        return None;
    }
    Some(drop_opaque_alpha(d))
}

/// An 8-bit RGB or RGBA PNG (what Chromium writes) decoded by the png crate; None for
/// anything else.
fn decode_png8(shot: &[u8]) -> Option<Decoded> {
    if !shot.starts_with(b"\x89PNG") {
        return None;
    }
    let mut dec = png::Decoder::new_with_limits(
        std::io::Cursor::new(shot),
        png::Limits { bytes: (MAX_DECODE_PIXELS * 4) as usize },
    );
    dec.set_transformations(png::Transformations::IDENTITY);
    let mut r = dec.read_info().ok()?;
    let info = r.info();
    let channels = match (info.color_type, info.bit_depth, info.interlaced) {
        (png::ColorType::Rgb, png::BitDepth::Eight, false) => 3,
        (png::ColorType::Rgba, png::BitDepth::Eight, false) => 4,
        _ => return None,
    };
    let mut data = vec![0; r.output_buffer_size()?];
    let frame = r.next_frame(&mut data).ok()?;
    data.truncate(frame.buffer_size());
    Some(Decoded { data, width: frame.width, height: frame.height, channels })
}

/// RGBA whose every pixel is opaque, as RGB (the same pixels, 3/4 of the bytes to deflate).
fn drop_opaque_alpha(mut d: Decoded) -> Decoded {
    if d.channels != 4 || d.data.chunks_exact(4).any(|p| p[3] != 255) {
        return d;
    }
    let n = d.data.len() / 4;
    for i in 0..n {
        d.data.copy_within(i * 4..i * 4 + 3, i * 3);
    }
    d.data.truncate(n * 3);
    d.channels = 3;
    d
}

/// Encodes running right now (see [`encode_threads`]).
static ENCODING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Threads for one PNG encode: the cores no other encode is using (at least one), so a
/// lone capture is deflated on every core and a busy node does not oversubscribe them.
fn encode_threads() -> (usize, impl Drop) {
    struct Running;
    impl Drop for Running {
        fn drop(&mut self) {
            ENCODING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let others = ENCODING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
    ((cores / (others + 1)).max(1), Running)
}

/// Finish a capture from one decode: a PNG is re-encoded by [`crate::pngenc`] (kept only
/// when smaller than Chromium's fast encode) and the thumbnail (THUMB_WIDTH px wide) of its
/// top `top_px` rows is scaled from the same pixels. A thumbnail of None means the capture
/// was not decoded (too big, or unreadable): the caller asks the browser for one.
pub(crate) fn finish_image(shot: Vec<u8>, png: bool, top_px: u32) -> (Vec<u8>, Option<Vec<u8>>) {
    if !decodable(&shot) {
        return (shot, None);
    }
    let Some(d) = decode_capture(&shot) else {
        return (shot, None);
    };
    if !png {
        return (shot, Some(thumbnail_of(&d, top_px)));
    }
    let (threads, _running) = encode_threads();
    let encode = || crate::pngenc::encode(d.pixels(), crate::pngenc::Settings { threads, ..crate::pngenc::CAPTURE });
    // With a core to spare the thumbnail is scaled beside the encode, not after it.
    let (out, thumb) = if threads > 1 {
        std::thread::scope(|sc| {
            let thumb = sc.spawn(|| thumbnail_of(&d, top_px));
            let out = encode();
            (out, thumb.join().expect("the thumbnail thread panicked"))
        })
    } else {
        (encode(), thumbnail_of(&d, top_px))
    };
    (if out.len() < shot.len() { out } else { shot }, Some(thumb))
}

/// The thumbnail (THUMB_WIDTH px wide) of the top `top_px` rows of `d`, as a PNG.
pub(crate) fn thumbnail_of(d: &Decoded, top_px: u32) -> Vec<u8> {
    let (w, h) = (d.width, d.height);
    let top = top_px.clamp(1, h);
    let th = ((f64::from(top) * THUMB_WIDTH / f64::from(w)).round() as u32).max(1);
    let tw = THUMB_WIDTH as u32;
    let (data, channels) = if d.channels == 4 {
        let view = image::ImageBuffer::<image::Rgba<u8>, &[u8]>::from_raw(w, h, &d.data[..]).expect("sized buffer");
        (image::imageops::thumbnail(&*image::imageops::crop_imm(&view, 0, 0, w, top), tw, th).into_raw(), 4)
    } else {
        let view = image::ImageBuffer::<image::Rgb<u8>, &[u8]>::from_raw(w, h, &d.data[..]).expect("sized buffer");
        (image::imageops::thumbnail(&*image::imageops::crop_imm(&view, 0, 0, w, top), tw, th).into_raw(), 3)
    };
    let px = crate::pngenc::Pixels { data: &data, width: tw, height: th, channels };
    crate::pngenc::encode(px, crate::pngenc::Settings { level: 6, threads: 1, ..crate::pngenc::CAPTURE })
}

/// One way of encoding a capture, timed by [`encode_alternatives`].
#[cfg(feature = "bench")]
pub struct Alternative {
    pub name: String,
    /// Best of the runs, in milliseconds.
    pub millis: f64,
    pub png: Vec<u8>,
}

/// Time the steps of finishing a PNG capture and the ways of re-encoding it (issue 17):
/// decode, thumbnail, this crate's encoder at several levels, filters and thread counts,
/// and the png crate's fdeflate and zlib levels. Each is run `runs` times; the best time
/// counts. The first entry is the decode (its `png` is the input).
#[cfg(feature = "bench")]
pub fn encode_alternatives(fast_png: &[u8], runs: usize) -> Vec<Alternative> {
    use crate::pngenc::{RowFilter, Settings, encode, encode_png_crate};
    fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (f64, T) {
        let mut out = None;
        let mut best = f64::MAX;
        for _ in 0..runs.max(1) {
            let t = std::time::Instant::now();
            let r = f();
            best = best.min(t.elapsed().as_secs_f64() * 1000.0);
            out = Some(r);
        }
        (best, out.expect("one run"))
    }
    let mut v = Vec::new();
    let (ms, d) = best(runs, || decode_capture(fast_png).expect("a decodable PNG"));
    v.push(Alternative { name: format!("decode ({} channels kept)", d.channels), millis: ms, png: fast_png.to_vec() });
    let (ms, thumb) = best(runs, || thumbnail_of(&d, d.height));
    v.push(Alternative { name: "thumbnail from the decoded pixels".into(), millis: ms, png: thumb });
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut ours = vec![];
    for level in [1, 2, 3, 4, 5, 6] {
        ours.push(Settings { level, filter: RowFilter::Adaptive, threads: 1 });
    }
    ours.push(Settings { level: 4, filter: RowFilter::Paeth, threads: 1 });
    ours.push(Settings { level: 4, filter: RowFilter::Up, threads: 1 });
    for threads in [2, cores.max(2) * 2] {
        ours.push(Settings { level: 4, filter: RowFilter::Adaptive, threads });
        ours.push(Settings { level: 6, filter: RowFilter::Adaptive, threads });
    }
    for s in ours {
        let (ms, png) = best(runs, || encode(d.pixels(), s));
        let name = format!("pngenc zlib-rs level {} {:?} filter, {} band(s)", s.level, s.filter, s.threads);
        v.push(Alternative { name, millis: ms, png });
    }
    let crate_alts: [(&str, png::DeflateCompression, png::Filter); 5] = [
        ("png crate Fast (fdeflate), Adaptive", png::DeflateCompression::FdeflateUltraFast, png::Filter::Adaptive),
        ("png crate Fast (fdeflate), Paeth", png::DeflateCompression::FdeflateUltraFast, png::Filter::Paeth),
        ("png crate Fast (fdeflate), Up", png::DeflateCompression::FdeflateUltraFast, png::Filter::Up),
        ("png crate Balanced (level 6), Adaptive", png::DeflateCompression::Level(6), png::Filter::Adaptive),
        ("png crate level 3, Adaptive", png::DeflateCompression::Level(3), png::Filter::Adaptive),
    ];
    for (name, c, f) in crate_alts {
        let (ms, png) = best(runs, || encode_png_crate(d.pixels(), c, f));
        v.push(Alternative { name: name.into(), millis: ms, png });
    }
    v
}

/// Base64 data from the browser (a screenshot, a PDF).
pub(crate) fn decode_base64(data: &str, what: &str) -> Result<Vec<u8>, CaptureError> {
    if data.is_empty() {
        return Err(CaptureError::Browser(format!("the browser returned no {what} data")));
    }
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| CaptureError::Browser(format!("bad {what} data: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> Vec<u8> {
        let img = image::RgbImage::from_pixel(w, h, image::Rgb([10, 200, 30]));
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    /// A PNG whose header claims `w`×`h` with almost no data (a decompression bomb's head).
    fn bomb_header(w: u32, h: u32) -> Vec<u8> {
        let mut b = png(1, 1);
        b[16..20].copy_from_slice(&w.to_be_bytes());
        b[20..24].copy_from_slice(&h.to_be_bytes());
        b
    }

    #[test]
    fn small_images_are_reencoded_and_thumbnailed() {
        let shot = png(640, 480);
        let (bytes, thumb) = finish_image(shot, true, 480);
        assert_eq!(image_size(&bytes), Some((640, 480)));
        let thumb = image::load_from_memory(&thumb.expect("a thumbnail")).unwrap();
        assert_eq!((thumb.width(), thumb.height()), (320, 240));
    }

    /// An RGBA PNG like Chromium's fast encode: opaque except (3, 2), which gets `alpha`.
    fn capture_like(w: u32, h: u32, alpha: u8) -> (Vec<u8>, image::RgbaImage) {
        let mut seed = 7u32;
        let img = image::RgbaImage::from_fn(w, h, |x, y| {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let a = if (x, y) == (3, 2) { alpha } else { 255 };
            image::Rgba([(x % 256) as u8, (y % 256) as u8, ((seed >> 24) as u8) & 0x1f, a])
        });
        let mut out = Vec::new();
        let mut e = png::Encoder::new(&mut out, w, h);
        e.set_color(png::ColorType::Rgba);
        e.set_depth(png::BitDepth::Eight);
        e.set_deflate_compression(png::DeflateCompression::FdeflateUltraFast);
        e.set_filter(png::Filter::Up);
        let mut wr = e.write_header().unwrap();
        wr.write_image_data(img.as_raw()).unwrap();
        wr.finish().unwrap();
        (out, img)
    }

    #[test]
    fn png_captures_keep_their_pixels_get_smaller_and_thumbnail_the_same_pixels() {
        let (shot, img) = capture_like(640, 400, 255);
        let (bytes, thumb) = finish_image(shot.clone(), true, 200);
        assert!(bytes.len() < shot.len(), "{} vs the fast encode's {}", bytes.len(), shot.len());
        let back = image::load_from_memory(&bytes).unwrap();
        assert_eq!(back.color(), image::ColorType::Rgb8, "an opaque alpha channel is dropped");
        assert!(back.to_rgba8() == img, "same pixels");
        // The size rule (issue 17): within 105 % of a zlib level 6 encode with adaptive filters.
        let rgb = image::DynamicImage::ImageRgba8(img.clone()).to_rgb8();
        let px = crate::pngenc::Pixels { data: rgb.as_raw(), width: 640, height: 400, channels: 3 };
        let reference =
            crate::pngenc::encode_png_crate(px, png::DeflateCompression::Level(6), png::Filter::Adaptive).len();
        assert!(bytes.len() as f64 <= reference as f64 * 1.05, "{} vs {reference}", bytes.len());
        // The thumbnail is the top 200 rows of those pixels, scaled to 320 px.
        let thumb = image::load_from_memory(&thumb.expect("a thumbnail")).unwrap().to_rgb8();
        let top = image::imageops::crop_imm(&rgb, 0, 0, 640, 200);
        assert!(thumb == image::imageops::thumbnail(&*top, 320, 100), "thumbnail from the same pixels");
    }

    #[test]
    fn translucent_captures_keep_their_alpha() {
        let (shot, img) = capture_like(64, 40, 10);
        let (bytes, thumb) = finish_image(shot, true, 40);
        let back = image::load_from_memory(&bytes).unwrap();
        assert_eq!(back.color(), image::ColorType::Rgba8);
        assert!(back.to_rgba8() == img);
        assert_eq!(image_size(&thumb.unwrap()), Some((320, 200)));
    }

    #[test]
    fn images_past_the_pixel_limit_are_not_decoded() {
        assert!(decodable(&png(100, 100)));
        assert!(decodable(&bomb_header(5000, 5000)));
        assert!(!decodable(&bomb_header(5001, 5000)));
        assert!(!decodable(&bomb_header(11_000, 11_000)));
        assert!(!decodable(&bomb_header(0, 10)));
        assert!(!decodable(b"not an image"));
        let bomb = bomb_header(11_000, 11_000);
        let (bytes, thumb) = finish_image(bomb.clone(), true, 100);
        assert_eq!(bytes, bomb, "kept as it came");
        assert!(thumb.is_none(), "the browser makes the thumbnail");
    }

    #[tokio::test]
    async fn outside_images_are_sized_from_their_header_before_decoding() {
        let (thumb, w, h) = thumbnail(png(640, 480).into(), 320).await.unwrap();
        assert_eq!((w, h), (640, 480));
        assert_eq!(image_size(&thumb), Some((320, 240)));
        let refused = thumbnail(bomb_header(11_000, 11_000).into(), 320).await.unwrap_err();
        assert_eq!(refused, DecodeRefused::TooLarge { width: 11_000, height: 11_000 });
        assert!(refused.to_string().contains("11000×11000"), "{refused}");
        assert_eq!(thumbnail(b"not an image".to_vec().into(), 320).await.unwrap_err(), DecodeRefused::Unreadable);
    }

    #[test]
    fn base64_errors_name_what_was_decoded() {
        assert_eq!(decode_base64("aGk=", "PDF").unwrap(), b"hi");
        assert_eq!(decode_base64("", "PDF").unwrap_err().to_string(), "the browser returned no PDF data");
        assert!(decode_base64("%%%", "screenshot").unwrap_err().to_string().starts_with("bad screenshot data"));
    }
}
