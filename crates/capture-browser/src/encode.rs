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

/// Thumbnail width in pixels.
pub(crate) const THUMB_WIDTH: f64 = 320.0;

/// Would decoding `bytes` stay within [`MAX_DECODE_PIXELS`]? False when the header cannot
/// be read either.
pub fn decodable(bytes: &[u8]) -> bool {
    image_size(bytes).is_some_and(|(w, h)| w > 0 && h > 0 && u64::from(w) * u64::from(h) <= MAX_DECODE_PIXELS)
}

/// Decode a capture once: re-encode a PNG with a better deflate (kept only when
/// smaller) and make the thumbnail (THUMB_WIDTH px wide) of its top `top_px` rows.
/// A thumbnail of None means the capture was not decoded (too big, or unreadable): the
/// caller asks the browser for one.
pub(crate) fn finish_image(shot: Vec<u8>, png: bool, top_px: u32) -> (Vec<u8>, Option<Vec<u8>>) {
    if !decodable(&shot) {
        return (shot, None);
    }
    let mut reader = image::ImageReader::new(std::io::Cursor::new(&shot));
    reader.limits(limits());
    let Ok(img) = reader.with_guessed_format().map_err(image::ImageError::IoError).and_then(|r| r.decode()) else {
        return (shot, None);
    };
    let img = img.into_rgb8();
    let (w, h) = img.dimensions();
    if w == 0 || h == 0 {
        return (shot, None);
    }
    let bytes = if png {
        let mut out = Vec::with_capacity(shot.len());
        let enc = image::codecs::png::PngEncoder::new_with_quality(
            &mut out,
            image::codecs::png::CompressionType::Default,
            image::codecs::png::FilterType::Adaptive,
        );
        let ok = image::ImageEncoder::write_image(enc, img.as_raw(), w, h, image::ExtendedColorType::Rgb8).is_ok();
        if ok && out.len() < shot.len() { out } else { shot }
    } else {
        shot
    };
    let top = top_px.clamp(1, h);
    let th = ((f64::from(top) * THUMB_WIDTH / f64::from(w)).round() as u32).max(1);
    let view = image::imageops::crop_imm(&img, 0, 0, w, top);
    let thumb = image::imageops::thumbnail(&*view, THUMB_WIDTH as u32, th);
    let mut out = std::io::Cursor::new(Vec::with_capacity(32 * 1024));
    let thumb = thumb.write_to(&mut out, image::ImageFormat::Png).ok().map(|()| out.into_inner());
    (bytes, thumb)
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

    #[test]
    fn base64_errors_name_what_was_decoded() {
        assert_eq!(decode_base64("aGk=", "PDF").unwrap(), b"hi");
        assert_eq!(decode_base64("", "PDF").unwrap_err().to_string(), "the browser returned no PDF data");
        assert!(decode_base64("%%%", "screenshot").unwrap_err().to_string().starts_with("bad screenshot data"));
    }
}
