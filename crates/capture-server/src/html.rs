//! The escaper of every template (askama, configured in `askama.toml`): HTML is escaped
//! by default, as the pages always have been. And what every page shares below the
//! website's layout (the origin a page's CSP names).

use std::fmt::{self, Write};

use askama::filters::Escaper;

/// The templates' escaper: `&`, `<`, `>`, `"` and `'` (as `&quot;` and `&#39;` rather
/// than askama's numeric forms, so the pages read as they always have).
#[derive(Debug, Clone, Copy)]
pub struct Html;

impl Escaper for Html {
    fn write_escaped_str<W: Write>(&self, mut dest: W, s: &str) -> fmt::Result {
        let mut last = 0;
        for (i, b) in s.bytes().enumerate() {
            let rep = match b {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                b'\'' => "&#39;",
                _ => continue,
            };
            dest.write_str(&s[last..i])?;
            dest.write_str(rep)?;
            last = i + 1;
        }
        dest.write_str(&s[last..])
    }
}

/// The origin of `base_url` (where thumbnails are served), for a page's CSP.
pub fn origin(base_url: &str) -> Option<String> {
    url::Url::parse(base_url).ok().map(|u| u.origin().ascii_serialization()).filter(|o| o != "null")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &str) -> String {
        let mut out = String::new();
        Html.write_escaped_str(&mut out, s).unwrap();
        out
    }

    #[test]
    fn escapes_the_five_characters() {
        assert_eq!(
            esc("<a href=\"x\">Tom & 'Jerry'</a>"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;"
        );
        assert_eq!(esc("plain"), "plain");
    }
}
