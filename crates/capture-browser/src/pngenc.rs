//! The PNG encoder for captures (issue 17): each row gets the PNG filter libpng's heuristic
//! picks (least sum of absolute values), the filtered rows are deflated by zlib-rs 64 rows
//! at a time (never held whole), and a big image is cut into horizontal bands deflated on
//! separate threads (each band ends with a sync flush, so the pieces join into one zlib
//! stream; only the first 32 KB of a band lose their back-references). Same pixels as any
//! other PNG encoder; the size is close to Chromium's default encoder at a fraction of its
//! time.

/// 8-bit pixels, rows top to bottom without padding.
#[derive(Debug, Clone, Copy)]
pub struct Pixels<'a> {
    pub data: &'a [u8],
    pub width: u32,
    pub height: u32,
    /// 3 (RGB) or 4 (RGBA).
    pub channels: u8,
}

/// How rows are filtered before deflate (the fixed filters are for the bench's comparison).
#[cfg_attr(not(any(test, feature = "bench")), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowFilter {
    /// Per row, the one of the five filters with the least sum of absolute values.
    Adaptive,
    /// Paeth on every row.
    Paeth,
    /// Up on every row.
    Up,
}

/// Encoder settings.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// zlib level, 1..=9.
    pub level: u32,
    pub filter: RowFilter,
    /// Bands deflated at once (1: no threads).
    pub threads: usize,
}

/// What captures are encoded with: measured in the capture bench (`encode alternatives`).
pub const CAPTURE: Settings = Settings { level: 6, filter: RowFilter::Adaptive, threads: 1 };

/// Bands smaller than this many filtered bytes are not worth a thread.
const MIN_BAND: usize = 256 * 1024;

/// Encode `px` as a PNG (8-bit RGB or RGBA, not interlaced).
pub fn encode(px: Pixels<'_>, s: Settings) -> Vec<u8> {
    let bpp = usize::from(px.channels);
    let stride = px.width as usize * bpp;
    let h = px.height as usize;
    assert!(matches!(px.channels, 3 | 4) && px.data.len() == stride * h && stride > 0 && h > 0);
    let total = (stride + 1) * h;
    let bands = s.threads.clamp(1, 16).min(total.div_ceil(MIN_BAND)).clamp(1, h);
    let rows_per = h.div_ceil(bands);
    let band = |i: usize| -> (Vec<u8>, u32, usize) {
        let (from, to) = (i * rows_per, ((i + 1) * rows_per).min(h));
        deflate_rows(px.data, stride, bpp, from..to, s, to == h)
    };
    let parts: Vec<(Vec<u8>, u32, usize)> = if bands == 1 {
        vec![band(0)]
    } else {
        std::thread::scope(|sc| {
            let hs: Vec<_> = (1..bands).map(|i| sc.spawn(move || band(i))).collect();
            let mut v = vec![band(0)];
            v.extend(hs.into_iter().map(|h| h.join().expect("a PNG band thread panicked")));
            v
        })
    };
    let mut adler = 1u32;
    let mut zlen = 2 + 4;
    for (z, a, n) in &parts {
        adler = adler32_combine(adler, *a, *n);
        zlen += z.len();
    }
    let mut zlib = Vec::with_capacity(zlen);
    zlib.extend_from_slice(&zlib_header(s.level));
    for (z, _, _) in &parts {
        zlib.extend_from_slice(z);
    }
    zlib.extend_from_slice(&adler.to_be_bytes());
    drop(parts);

    let mut out = Vec::with_capacity(zlib.len() + 64 + zlib.len() / (1 << 20) * 12);
    out.extend_from_slice(b"\x89PNG\r\n\x1a\n");
    let mut ihdr = [0u8; 13];
    ihdr[0..4].copy_from_slice(&px.width.to_be_bytes());
    ihdr[4..8].copy_from_slice(&px.height.to_be_bytes());
    ihdr[8] = 8;
    ihdr[9] = if px.channels == 4 { 6 } else { 2 };
    chunk(&mut out, b"IHDR", &ihdr);
    // Chromium writes IDAT chunks of at most 8 KB; big chunks read as well and cost less.
    for piece in zlib.chunks(1 << 20) {
        chunk(&mut out, b"IDAT", piece);
    }
    chunk(&mut out, b"IEND", &[]);
    out
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32fast::hash(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// The two zlib header bytes (deflate, 32 KB window, the level's hint, FCHECK).
fn zlib_header(level: u32) -> [u8; 2] {
    let cmf = 0x78u8;
    let flevel: u8 = match level {
        0..=1 => 0,
        2..=5 => 1,
        6 => 2,
        _ => 3,
    };
    let flg = flevel << 6;
    let check = 31 - ((u16::from(cmf) * 256 + u16::from(flg)) % 31);
    [cmf, flg | check as u8]
}

/// Rows filtered per step of [`deflate_rows`]: the filtered bytes are deflated a few
/// hundred KB at a time instead of being held whole (a 1280×800 capture would need 3 MB
/// more, freshly paged in each time).
const STEP_ROWS: usize = 64;

/// Rows `rows` of `data` filtered and raw-deflated: the compressed bytes (ending with the
/// final block when `last`, else with a sync flush — an empty stored block, byte-aligned —
/// so another raw stream can follow), the Adler-32 and the length of the filtered bytes.
fn deflate_rows(
    data: &[u8],
    stride: usize,
    bpp: usize,
    rows: std::ops::Range<usize>,
    s: Settings,
    last: bool,
) -> (Vec<u8>, u32, usize) {
    use flate2::{Compress, Compression, FlushCompress};
    let mut c = Compress::new(Compression::new(s.level.clamp(1, 9)), false);
    let mut out = Vec::with_capacity((stride + 1) * rows.len() / 4 + 1024);
    let mut adler = simd_adler32::Adler32::new();
    let mut filtered = Vec::with_capacity((stride + 1) * STEP_ROWS.min(rows.len()));
    let mut filter = Filter::new(stride);
    let mut total = 0;
    let mut y = rows.start;
    while y < rows.end {
        let end = (y + STEP_ROWS).min(rows.end);
        filtered.clear();
        for row in y..end {
            filter.row(data, stride, bpp, row, s.filter, &mut filtered);
        }
        adler.write(&filtered);
        total += filtered.len();
        let flush = match (end == rows.end, last) {
            (false, _) => FlushCompress::None,
            (true, true) => FlushCompress::Finish,
            (true, false) => FlushCompress::Sync,
        };
        deflate_into(&mut c, &filtered, &mut out, flush);
        y = end;
    }
    (out, adler.finish(), total)
}

/// Feed all of `input` to `c` with `flush`, growing `out` as needed; returns when the input
/// is consumed and the flush is complete (the stream's end for `Finish`).
fn deflate_into(c: &mut flate2::Compress, input: &[u8], out: &mut Vec<u8>, flush: flate2::FlushCompress) {
    use flate2::{FlushCompress, Status};
    let start = c.total_in();
    loop {
        if out.capacity() - out.len() < 4096 {
            out.reserve(out.capacity().max(64 * 1024));
        }
        let done_in = (c.total_in() - start) as usize;
        let status = c.compress_vec(&input[done_in..], out, flush).expect("deflate into a Vec cannot fail");
        let all_in = (c.total_in() - start) as usize == input.len();
        // Output space left over means the compressor had nothing more to write.
        let finished = match flush {
            FlushCompress::Finish => status == Status::StreamEnd,
            _ => all_in && out.len() < out.capacity(),
        };
        if finished {
            return;
        }
    }
}

#[cfg(test)]
fn adler32(data: &[u8]) -> u32 {
    let mut h = simd_adler32::Adler32::new();
    h.write(data);
    h.finish()
}

/// Adler-32 of A followed by B, from adler(A), adler(B) and B's length (as zlib's
/// `adler32_combine`).
fn adler32_combine(a: u32, b: u32, len_b: usize) -> u32 {
    const BASE: u64 = 65521;
    let rem = len_b as u64 % BASE;
    let (a1, a2) = (u64::from(a & 0xffff), u64::from(a >> 16));
    let (b1, b2) = (u64::from(b & 0xffff), u64::from(b >> 16));
    let sum1 = (a1 + b1 + BASE - 1) % BASE;
    let sum2 = (rem * a1 % BASE + a2 + b2 + BASE - rem) % BASE;
    ((sum2 << 16) | sum1) as u32
}

/// Scratch rows for filtering, reused from row to row.
struct Filter {
    zero: Vec<u8>,
    scratch: [Vec<u8>; 4],
}

impl Filter {
    fn new(stride: usize) -> Filter {
        Filter { zero: vec![0; stride], scratch: [vec![0; stride], vec![0; stride], vec![0; stride], vec![0; stride]] }
    }

    /// Row `y` of `data`, prefixed with its filter type and filtered, appended to `out`.
    fn row(&mut self, data: &[u8], stride: usize, bpp: usize, y: usize, f: RowFilter, out: &mut Vec<u8>) {
        let cur = &data[y * stride..(y + 1) * stride];
        let prev = if y == 0 { &self.zero[..] } else { &data[(y - 1) * stride..y * stride] };
        match f {
            RowFilter::Up => {
                out.push(2);
                out.extend(cur.iter().zip(prev).map(|(c, p)| c.wrapping_sub(*p)));
            }
            RowFilter::Paeth => {
                let [s, ..] = &mut self.scratch;
                paeth(cur, prev, bpp, s);
                out.push(4);
                out.extend_from_slice(s);
            }
            RowFilter::Adaptive => {
                let [sub_b, up_b, avg_b, paeth_b] = &mut self.scratch;
                sub(cur, bpp, sub_b);
                up(cur, prev, up_b);
                avg(cur, prev, bpp, avg_b);
                paeth(cur, prev, bpp, paeth_b);
                let cands: [(u8, &[u8]); 5] = [(0, cur), (1, sub_b), (2, up_b), (3, avg_b), (4, paeth_b)];
                let (kind, best) = cands.iter().min_by_key(|(_, r)| cost(r)).copied().expect("five candidates");
                out.push(kind);
                out.extend_from_slice(best);
            }
        }
    }
}

/// libpng's heuristic: the sum of the bytes read as signed magnitudes.
fn cost(row: &[u8]) -> u64 {
    // |b as i8| is min(b, −b) read unsigned (−128 gives 128); 256 of them fit a u16. Written
    // so the compiler vectorizes it: this runs five times per row.
    row.chunks(256).map(|c| u64::from(c.iter().fold(0u16, |s, &b| s + u16::from(b.min(b.wrapping_neg()))))).sum()
}

fn sub(cur: &[u8], bpp: usize, out: &mut [u8]) {
    out[..bpp].copy_from_slice(&cur[..bpp]);
    for ((o, c), l) in out[bpp..].iter_mut().zip(&cur[bpp..]).zip(cur) {
        *o = c.wrapping_sub(*l);
    }
}

fn up(cur: &[u8], prev: &[u8], out: &mut [u8]) {
    for ((o, c), p) in out.iter_mut().zip(cur).zip(prev) {
        *o = c.wrapping_sub(*p);
    }
}

fn avg(cur: &[u8], prev: &[u8], bpp: usize, out: &mut [u8]) {
    for i in 0..bpp {
        out[i] = cur[i].wrapping_sub(prev[i] >> 1);
    }
    for (((o, c), p), l) in out[bpp..].iter_mut().zip(&cur[bpp..]).zip(&prev[bpp..]).zip(cur) {
        *o = c.wrapping_sub(((u16::from(*l) + u16::from(*p)) >> 1) as u8);
    }
}

fn paeth(cur: &[u8], prev: &[u8], bpp: usize, out: &mut [u8]) {
    for i in 0..bpp {
        out[i] = cur[i].wrapping_sub(prev[i]);
    }
    for ((((o, c), b), a), cc) in out[bpp..].iter_mut().zip(&cur[bpp..]).zip(&prev[bpp..]).zip(cur).zip(prev) {
        *o = c.wrapping_sub(paeth_predictor(*a, *b, *cc));
    }
}

#[inline]
fn paeth_predictor(a: u8, b: u8, c: u8) -> u8 {
    let (ia, ib, ic) = (i16::from(a), i16::from(b), i16::from(c));
    let pa = (ib - ic).abs();
    let pb = (ia - ic).abs();
    let pc = (ia + ib - 2 * ic).abs();
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

/// Write `px` with the png crate (the alternatives the capture bench compares).
#[cfg(any(test, feature = "bench"))]
pub fn encode_png_crate(px: Pixels<'_>, compression: png::DeflateCompression, filter: png::Filter) -> Vec<u8> {
    let mut out = Vec::new();
    let mut e = png::Encoder::new(&mut out, px.width, px.height);
    e.set_color(if px.channels == 4 { png::ColorType::Rgba } else { png::ColorType::Rgb });
    e.set_depth(png::BitDepth::Eight);
    e.set_deflate_compression(compression);
    e.set_filter(filter);
    let mut w = e.write_header().expect("writing to a Vec");
    w.write_image_data(px.data).expect("writing to a Vec");
    w.finish().expect("writing to a Vec");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Noise, gradients and flat areas, like a page.
    fn page(w: u32, h: u32, channels: u8) -> Vec<u8> {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut v = Vec::with_capacity((w * h) as usize * usize::from(channels));
        for y in 0..h {
            for x in 0..w {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let noise = if x > w / 2 { (seed % 17) as u8 } else { 0 };
                v.push(((x * 255) / w) as u8 ^ noise);
                v.push(((y * 255) / h) as u8);
                v.push(if (x / 7 + y / 5) % 3 == 0 { 250 } else { 20 + noise });
                if channels == 4 {
                    v.push(if y % 9 == 0 { 128 } else { 255 });
                }
            }
        }
        v
    }

    fn decode(png_bytes: &[u8]) -> (u32, u32, png::ColorType, Vec<u8>) {
        let mut r = png::Decoder::new(std::io::Cursor::new(png_bytes)).read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size().unwrap()];
        let info = r.next_frame(&mut buf).unwrap();
        buf.truncate(info.buffer_size());
        (info.width, info.height, info.color_type, buf)
    }

    #[test]
    fn every_setting_decodes_to_the_same_pixels() {
        for (w, h, ch) in [(1, 1, 3), (3, 2, 4), (640, 400, 3), (301, 1700, 4), (1280, 800, 3)] {
            let data = page(w, h, ch);
            let px = Pixels { data: &data, width: w, height: h, channels: ch };
            for filter in [RowFilter::Adaptive, RowFilter::Paeth, RowFilter::Up] {
                for (level, threads) in [(1, 1), (4, 1), (6, 2), (4, 3), (9, 8)] {
                    let bytes = encode(px, Settings { level, filter, threads });
                    let (dw, dh, ct, pixels) = decode(&bytes);
                    assert_eq!((dw, dh), (w, h));
                    assert_eq!(ct, if ch == 4 { png::ColorType::Rgba } else { png::ColorType::Rgb });
                    assert!(pixels == data, "{w}×{h}×{ch} {filter:?} level {level} threads {threads}");
                    // image (another reader) agrees, and the zlib stream's Adler-32 checked.
                    let img = image::load_from_memory(&bytes).unwrap();
                    assert_eq!((img.width(), img.height()), (w, h));
                }
            }
        }
    }

    #[test]
    fn bands_cost_little_size() {
        let data = page(1280, 800, 3);
        let px = Pixels { data: &data, width: 1280, height: 800, channels: 3 };
        let one = encode(px, Settings { threads: 1, ..CAPTURE }).len();
        let four = encode(px, Settings { threads: 4, ..CAPTURE }).len();
        assert!(four as f64 <= one as f64 * 1.01, "{four} vs {one}");
        let reference = encode_png_crate(px, png::DeflateCompression::Level(6), png::Filter::Adaptive).len();
        assert!(one as f64 <= reference as f64 * 1.05, "{one} vs the png crate's level 6 {reference}");
    }

    #[test]
    fn adler32_combines_like_one_pass() {
        let a = b"Wikipedia, the free".as_slice();
        let b = vec![0xabu8; 200_000];
        let whole: Vec<u8> = a.iter().chain(&b).copied().collect();
        assert_eq!(adler32_combine(adler32(a), adler32(&b), b.len()), adler32(&whole));
        assert_eq!(adler32_combine(1, adler32(a), a.len()), adler32(a));
    }

    #[test]
    fn zlib_headers_check() {
        for level in 1..=9 {
            let [cmf, flg] = zlib_header(level);
            assert_eq!((u16::from(cmf) * 256 + u16::from(flg)) % 31, 0);
        }
    }
}
