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
