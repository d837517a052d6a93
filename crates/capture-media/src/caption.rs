//! Captions: the font, line wrapping measured with the font's own advances, and the
//! ffmpeg filter text that draws them safely.
//!
//! The caption text never goes into the filter graph: each line is written to a file read
//! with `drawtext=textfile=…:expansion=none`, so quotes, colons, percent signs and
//! backslashes in a caption are plain text. Only paths are escaped (see [`filter_value`]).

use std::path::{Path, PathBuf};

use crate::error::{MediaError, Result};

/// Bold sans fonts tried in order (Debian's fonts-noto-core, fonts-liberation,
/// fonts-dejavu-core).
pub const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/noto/NotoSans-Bold.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf",
    "/usr/share/fonts/truetype/liberation2/LiberationSans-Bold.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
];

/// Finds the caption font: `preferred` if given, else the first candidate present.
pub fn find_font(preferred: Option<&Path>) -> Result<PathBuf> {
    let candidates: Vec<PathBuf> = match preferred {
        Some(p) => vec![p.to_path_buf()],
        None => FONT_CANDIDATES.iter().map(PathBuf::from).collect(),
    };
    candidates.iter().find(|p| p.is_file()).cloned().ok_or(MediaError::NoFont { searched: candidates })
}

/// Font metrics needed to lay captions out.
pub struct FontMetrics {
    data: Vec<u8>,
    units_per_em: f32,
    /// Ascender in em.
    pub ascender: f32,
    /// Descender in em (negative).
    pub descender: f32,
}

impl FontMetrics {
    /// Reads a TrueType/OpenType font.
    pub fn load(path: &Path) -> Result<Self> {
        let data = std::fs::read(path).map_err(|e| MediaError::io(format!("reading font {}", path.display()), e))?;
        let face = ttf_parser::Face::parse(&data, 0)
            .map_err(|e| MediaError::Invalid(format!("font {} is unreadable: {e}", path.display())))?;
        let upem = f32::from(face.units_per_em());
        let ascender = f32::from(face.ascender()) / upem;
        let descender = f32::from(face.descender()) / upem;
        Ok(FontMetrics { data, units_per_em: upem, ascender, descender })
    }

    /// Width of `text` in em (characters the font lacks count as 0.6 em).
    pub fn width_em(&self, text: &str) -> f32 {
        let Ok(face) = ttf_parser::Face::parse(&self.data, 0) else {
            return text.chars().count() as f32 * 0.6;
        };
        text.chars()
            .map(|c| {
                face.glyph_index(c)
                    .and_then(|g| face.glyph_hor_advance(g))
                    .map(|a| f32::from(a) / self.units_per_em)
                    .unwrap_or(0.6)
            })
            .sum()
    }
}

/// Caption text made safe to render: control characters dropped (newlines kept as line
/// breaks), runs of spaces collapsed, at most `max_chars` characters.
pub fn sanitize(text: &str, max_chars: usize) -> Result<String> {
    let len = text.chars().count();
    if len > max_chars {
        return Err(MediaError::TextTooLong { what: "a caption".into(), len, max: max_chars });
    }
    let mut out = String::with_capacity(text.len());
    for line in text.replace("\r\n", "\n").replace('\r', "\n").split('\n') {
        let clean: String = line.chars().map(|c| if c == '\t' { ' ' } else { c }).filter(|c| !c.is_control()).collect();
        let words: Vec<&str> = clean.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&words.join(" "));
    }
    Ok(out)
}

/// A caption laid out to fit: its lines and the font size that fits them.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Lines, each no wider than the width asked for.
    pub lines: Vec<String>,
    /// Font size in pixels.
    pub font_size: u32,
}

/// Wraps `text` (already [`sanitize`]d; newlines are kept as breaks) into at most
/// `max_lines` lines no wider than `max_width` px, trying each size in `sizes` from the
/// largest; at the smallest size the last line is cut with an ellipsis.
pub fn wrap(font: &FontMetrics, text: &str, max_width: f32, sizes: &[u32], max_lines: usize) -> Layout {
    let mut last = Layout { lines: Vec::new(), font_size: sizes.last().copied().unwrap_or(48) };
    for &size in sizes {
        let lines = wrap_at(font, text, max_width / size as f32);
        if lines.len() <= max_lines {
            return Layout { lines, font_size: size };
        }
        last = Layout { lines, font_size: size };
    }
    let em = max_width / last.font_size as f32;
    last.lines.truncate(max_lines);
    if let Some(l) = last.lines.last_mut() {
        let mut s: String = l.clone();
        while !s.is_empty() && font.width_em(&format!("{s}…")) > em {
            s.pop();
        }
        *l = format!("{}…", s.trim_end());
    }
    last
}

/// Greedy word wrap to `max_em` em per line; a word wider than a line is split.
fn wrap_at(font: &FontMetrics, text: &str, max_em: f32) -> Vec<String> {
    let mut lines = Vec::new();
    for para in text.split('\n') {
        let mut line = String::new();
        for word in para.split_whitespace() {
            let candidate = if line.is_empty() { word.to_string() } else { format!("{line} {word}") };
            if font.width_em(&candidate) <= max_em {
                line = candidate;
                continue;
            }
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            // The word alone: split it if it cannot fit on a line.
            let mut piece = String::new();
            for c in word.chars() {
                piece.push(c);
                if font.width_em(&piece) > max_em && piece.chars().count() > 1 {
                    piece.pop();
                    lines.push(std::mem::take(&mut piece));
                    piece.push(c);
                }
            }
            line = piece;
        }
        if !line.is_empty() {
            lines.push(line);
        }
    }
    lines
}

/// Escapes a value for an ffmpeg filter option inside a filter graph: first for the
/// option parser (`\`, `'` and `:` backslash-escaped), then for the graph parser (`\`, `'`,
/// `[`, `]`, `,` and `;`). The result can follow `key=` in a `-filter_complex_script` file.
pub fn filter_value(value: &str) -> String {
    let mut level1 = String::with_capacity(value.len() + 8);
    for c in value.chars() {
        if matches!(c, '\\' | '\'' | ':') {
            level1.push('\\');
        }
        level1.push(c);
    }
    let mut level2 = String::with_capacity(level1.len() + 8);
    for c in level1.chars() {
        if matches!(c, '\\' | '\'' | '[' | ']' | ',' | ';') {
            level2.push('\\');
        }
        level2.push(c);
    }
    level2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn font() -> FontMetrics {
        FontMetrics::load(&find_font(None).unwrap()).unwrap()
    }

    #[test]
    fn sanitize_keeps_newlines_and_drops_control_characters() {
        assert_eq!(sanitize("  a\tb \u{7}c \r\n\n d  ", 100).unwrap(), "a b c\nd");
        assert!(matches!(sanitize(&"x".repeat(11), 10), Err(MediaError::TextTooLong { .. })));
    }

    #[test]
    fn wrapping_fits_the_width_and_shrinks_or_cuts() {
        let f = font();
        let text = "Fast screenshots of any page, with webhooks and a friendly API for every team";
        let l = wrap(&f, text, 800.0, &[72, 60, 50], 4);
        assert!(l.lines.len() <= 4 && l.lines.len() >= 2, "{l:?}");
        for line in &l.lines {
            assert!(f.width_em(line) * l.font_size as f32 <= 800.0, "{line}");
        }
        assert_eq!(l.lines.join(" "), text);
        // Too long for 2 lines at any size: cut with an ellipsis.
        let l = wrap(&f, &text.repeat(3), 800.0, &[72, 60], 2);
        assert_eq!(l.lines.len(), 2);
        assert!(l.lines[1].ends_with('…'), "{l:?}");
        // One enormous word is split rather than overflowing.
        let l = wrap(&f, &"W".repeat(60), 600.0, &[64], 10);
        assert!(l.lines.len() > 1);
        assert!(l.lines.iter().all(|x| f.width_em(x) * 64.0 <= 600.0));
    }

    #[test]
    fn filter_values_escape_both_levels() {
        assert_eq!(filter_value("plain/path.txt"), "plain/path.txt");
        assert_eq!(filter_value("a:b"), "a\\\\:b");
        assert_eq!(filter_value("it's"), "it\\\\\\'s");
        assert_eq!(filter_value("[x],y;"), "\\[x\\]\\,y\\;");
        assert_eq!(filter_value("back\\slash"), "back\\\\\\\\slash");
    }

    #[test]
    fn a_missing_font_is_a_clear_error() {
        let e = find_font(Some(Path::new("/nonexistent/font.ttf"))).unwrap_err();
        assert!(e.to_string().contains("fonts-noto-core"), "{e}");
    }
}
