//! Plain-text scanning shared by links and codes: char boundaries, white space, case-insensitive
//! search and the spans of bare URLs.

pub(super) fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

pub(super) fn ceil_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

pub(super) fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(super) fn starts_ci(s: &str, prefix: &str) -> bool {
    s.as_bytes().get(..prefix.len()).is_some_and(|b| b.eq_ignore_ascii_case(prefix.as_bytes()))
}

pub(super) fn find_ci(hay: &str, needle: &str, from: usize) -> Option<usize> {
    let h = hay.as_bytes();
    let n = needle.as_bytes();
    let first = n.first()?.to_ascii_lowercase();
    (from..=h.len().checked_sub(n.len())?)
        .find(|&i| h[i].to_ascii_lowercase() == first && h[i..i + n.len()].eq_ignore_ascii_case(n))
}

/// Spans of bare `http(s)://` URLs in text (trailing punctuation and unbalanced closing
/// brackets left out).
pub(super) fn bare_url_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(start) = find_ci(text, "http", from) {
        let rest = &text[start..];
        let scheme = if starts_ci(rest, "https://") {
            8
        } else if starts_ci(rest, "http://") {
            7
        } else {
            from = start + 4;
            continue;
        };
        let mut end = start
            + scheme
            + rest[scheme..]
                .find(|c: char| {
                    c.is_whitespace() || matches!(c, '<' | '>' | '"' | '\'' | '`' | '{' | '}' | '|' | '\\' | '^')
                })
                .unwrap_or(rest.len() - scheme);
        loop {
            let s = &text[start..end];
            let Some(last) = s.chars().last() else { break };
            let unbalanced =
                |open: char, close: char| last == close && s.matches(open).count() < s.matches(close).count();
            if ".,;:!?*".contains(last) || unbalanced('(', ')') || unbalanced('[', ']') {
                end -= last.len_utf8();
            } else {
                break;
            }
        }
        if end > start + scheme {
            spans.push((start, end));
        }
        from = end.max(start + scheme);
    }
    spans
}

pub(super) fn contains_any(hay: &str, words: &[&str]) -> bool {
    words.iter().any(|w| hay.contains(w))
}
