//! Pixel size from PNG / JPEG / WebP headers.

fn be16(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])))
}

fn le16(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from(u16::from_le_bytes([*b.get(i)?, *b.get(i + 1)?])))
}

fn le24(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_le_bytes([*b.get(i)?, *b.get(i + 1)?, *b.get(i + 2)?, 0]))
}

/// (width, height) of a PNG, JPEG or WebP image, read from its header.
pub fn image_size(b: &[u8]) -> Option<(u32, u32)> {
    if b.starts_with(b"\x89PNG\r\n\x1a\n") && b.get(12..16) == Some(b"IHDR") {
        let w = u32::from_be_bytes(b.get(16..20)?.try_into().ok()?);
        let h = u32::from_be_bytes(b.get(20..24)?.try_into().ok()?);
        return Some((w, h));
    }
    if b.starts_with(&[0xFF, 0xD8]) {
        let mut i = 2;
        while i + 4 <= b.len() {
            if b[i] != 0xFF {
                i += 1;
                continue;
            }
            let marker = b[i + 1];
            if marker == 0xFF {
                i += 1;
                continue;
            }
            if marker == 0xD8 || marker == 0x01 || (0xD0..=0xD7).contains(&marker) {
                i += 2;
                continue;
            }
            let len = be16(b, i + 2)? as usize;
            if matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
                let h = be16(b, i + 5)?;
                let w = be16(b, i + 7)?;
                return Some((w, h));
            }
            i += 2 + len;
        }
        return None;
    }
    if b.get(0..4) == Some(b"RIFF") && b.get(8..12) == Some(b"WEBP") {
        match b.get(12..16)? {
            b"VP8 " => {
                let w = le16(b, 26)? & 0x3FFF;
                let h = le16(b, 28)? & 0x3FFF;
                return Some((w, h));
            }
            b"VP8L" => {
                let b0 = u32::from(*b.get(21)?);
                let b1 = u32::from(*b.get(22)?);
                let b2 = u32::from(*b.get(23)?);
                let b3 = u32::from(*b.get(24)?);
                let w = 1 + (b0 | ((b1 & 0x3F) << 8));
                let h = 1 + ((b1 >> 6) | (b2 << 2) | ((b3 & 0x0F) << 10));
                return Some((w, h));
            }
            b"VP8X" => {
                return Some((1 + le24(b, 24)?, 1 + le24(b, 27)?));
            }
            _ => return None,
        }
    }
    None
}
