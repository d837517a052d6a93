//! A small HTML reader: entities, attributes, the `href`s of links with their anchor text, and
//! the text a reader sees.

use super::text::{collapse, find_ci, floor_boundary, starts_ci};

/// Decode the HTML character references that appear in URLs and anchor text.
fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest[..floor_boundary(rest, 12)].find(';');
        let decoded = end.and_then(|e| {
            let name = &rest[1..e];
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "nbsp" => Some(' '),
                _ => {
                    let num = name.strip_prefix('#')?;
                    let n = match num.strip_prefix(['x', 'X']) {
                        Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                        None => num.parse().ok()?,
                    };
                    char::from_u32(n)
                }
            }?;
            Some((c, e + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Strip tags (and comments) from an HTML fragment, for anchor text.
fn strip_tags(s: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    collapse(&decode_entities(&out))
}

/// The value of attribute `name` in the attribute text of a tag.
fn attribute(attrs: &str, name: &str) -> Option<String> {
    let b = attrs.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b'/') {
            i += 1;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'=' && b[i] != b'>' {
            i += 1;
        }
        let key = &attrs[start..i];
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value = None;
        if i < b.len() && b[i] == b'=' {
            i += 1;
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < b.len() && (b[i] == b'"' || b[i] == b'\'') {
                let q = b[i];
                let vs = i + 1;
                let ve = b[vs..].iter().position(|&c| c == q).map_or(b.len(), |p| vs + p);
                value = Some(&attrs[vs..ve]);
                i = ve + 1;
            } else {
                let vs = i;
                while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'>' {
                    i += 1;
                }
                value = Some(&attrs[vs..i]);
            }
        }
        if key.eq_ignore_ascii_case(name) {
            return value.map(decode_entities);
        }
        if i == start {
            i += 1;
        }
    }
    None
}

/// The text a reader sees: tags, comments, scripts and styles removed, entities decoded.
pub(crate) fn visible_text(html: &str) -> String {
    let mut kept = String::with_capacity(html.len());
    let mut i = 0;
    while i < html.len() {
        let Some(lt) = html[i..].find('<').map(|p| i + p) else {
            kept.push_str(&html[i..]);
            break;
        };
        kept.push_str(&html[i..lt]);
        let rest = &html[lt..];
        let skip_to = |end: &str, from: usize| find_ci(html, end, from).map_or(html.len(), |p| p + end.len());
        i = if rest.starts_with("<!--") {
            skip_to("-->", lt + 4)
        } else if starts_ci(rest, "<script") {
            skip_to("</script>", lt + 7)
        } else if starts_ci(rest, "<style") {
            skip_to("</style>", lt + 6)
        } else {
            kept.push(' ');
            rest.find('>').map_or(html.len(), |p| lt + p + 1)
        };
    }
    collapse_lines(&decode_entities(&kept))
}

/// Collapse spaces inside lines and drop blank lines, keeping line breaks (codes often stand on
/// a line of their own).
fn collapse_lines(s: &str) -> String {
    s.lines().map(collapse).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("\n")
}

/// `(href, anchor text)` of every `<a>` and `<area>` in document order, skipping comments,
/// scripts and styles.
pub(super) fn html_hrefs(html: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let b = html.as_bytes();
    let mut i = 0;
    while let Some(lt) = b[i..].iter().position(|&c| c == b'<').map(|p| i + p) {
        let rest = &html[lt..];
        if rest.starts_with("<!--") {
            i = html[lt + 4..].find("-->").map_or(html.len(), |p| lt + 4 + p + 3);
            continue;
        }
        let name_end =
            rest[1..].find(|c: char| c.is_ascii_whitespace() || c == '>' || c == '/').map_or(rest.len(), |p| p + 1);
        let name = rest[1..name_end].to_ascii_lowercase();
        // The end of the tag, skipping '>' inside quoted attribute values.
        let mut quote = None;
        let mut gt = None;
        for (j, c) in rest.char_indices().skip(1) {
            match (quote, c) {
                (Some(q), _) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '"' | '\'') => quote = Some(c),
                (None, '>') => {
                    gt = Some(lt + j);
                    break;
                }
                _ => {}
            }
        }
        let Some(gt) = gt else { break };
        match name.as_str() {
            "script" | "style" => {
                i = find_ci(html, &format!("</{name}"), gt).unwrap_or(html.len());
                continue;
            }
            "a" | "area" => {
                if let Some(href) = attribute(&html[lt + name_end..gt], "href") {
                    let text = (name == "a")
                        .then(|| {
                            let close = find_ci(html, "</a", gt + 1).unwrap_or(html.len());
                            strip_tags(&html[gt + 1..close])
                        })
                        .filter(|t| !t.is_empty())
                        .map(|t| t.chars().take(200).collect());
                    out.push((href, text));
                }
            }
            _ => {}
        }
        i = gt + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::links::extract_links;
    use super::decode_entities;

    #[test]
    fn entities_and_malformed_html_do_not_panic() {
        assert_eq!(decode_entities("a&amp;b&#38;c&#x26;d&bogus;e&"), "a&b&c&d&bogus;e&");
        for html in ["<a href=", "<a href='x", "<a", "<", "<!--", "<script>", "<a href=\"https://ü.example/é\">é</a"]
        {
            let _ = extract_links(Some(html), Some(html));
        }
        let l = extract_links(Some("<a href=\"https://ü.example/é\">é</a>"), None);
        assert_eq!(l[0].url, "https://xn--tda.example/%C3%A9");
    }
}
