//! How long the strings the service stores for a user may be. What a page or a client
//! controls is bounded before it is written: the page's own strings (its title, the reason
//! it failed) are cut at a character boundary, a client's input past its limit is refused
//! with `VALIDATION_ERROR` naming the field. The other limits live beside their fields
//! (`options::bounds` for capture options, the webhook and OAuth types for theirs).

/// Longest page title kept, in characters (`document.title` can be megabytes).
pub const PAGE_TITLE_MAX: usize = 512;
/// Longest uploaded file name accepted, in bytes (what common file systems allow).
pub const FILENAME_MAX: usize = 255;
/// Longest failure reason kept for a job, in characters (a page's exception text is the
/// page's to choose).
pub const ERROR_MAX: usize = 2048;

/// `s` cut to at most `max` characters, on a character boundary; an ellipsis marks a cut.
pub fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some(_) if max == 0 => String::new(),
        Some(_) => {
            let end = s.char_indices().nth(max - 1).map_or(s.len(), |(i, _)| i);
            format!("{}…", &s[..end])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_fall_on_character_boundaries_and_keep_the_limit() {
        assert_eq!(truncate_chars("short", 10), "short");
        assert_eq!(truncate_chars("exactly10!", 10), "exactly10!");
        assert_eq!(truncate_chars("abcdefghijk", 10), "abcdefghi…");
        let wide = "é".repeat(600) + "🙂🙂";
        let cut = truncate_chars(&wide, PAGE_TITLE_MAX);
        assert_eq!(cut.chars().count(), PAGE_TITLE_MAX);
        assert!(cut.ends_with('…'));
        let emoji = "🙂".repeat(1000);
        assert_eq!(truncate_chars(&emoji, 3), "🙂🙂…");
        assert_eq!(truncate_chars("abc", 0), "");
    }
}
