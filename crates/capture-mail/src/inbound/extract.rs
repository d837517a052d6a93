//! Verification links and one-time codes in a received message.
//!
//! Links come from `href`s of the HTML part (with their anchor text) and from bare URLs in the
//! text; only absolute `http(s)` URLs with a host are kept, normalised by the URL parser and
//! de-duplicated in order of appearance. Each gets a score in 0–1 for how much it looks like a
//! verification, confirmation or sign-in link; `verification` is `score ≥ 0.5`.
//!
//! Codes are 4–8 digits (also written `123 456` or `123-456`) or 6–8 letters and digits with at
//! least one of each, kept only near a word such as code, verification, OTP, passcode or PIN,
//! and never when they read as a date, a time, a year, a phone number, a price, a percentage,
//! an order number or part of an address or URL.

use serde::Serialize;

/// Most links kept from one message.
pub const MAX_LINKS: usize = 200;
/// Most codes kept from one message.
pub const MAX_CODES: usize = 10;

/// Where a link was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkSource {
    /// An `href` in the HTML part.
    Html,
    /// A bare URL in the text.
    Text,
}

/// A link in a message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    /// The absolute http(s) URL, normalised.
    pub url: String,
    /// The anchor text (HTML links), whitespace collapsed, at most 200 characters.
    pub text: Option<String>,
    /// Where it was found.
    pub source: LinkSource,
    /// How much it looks like a verification / sign-in link, 0–1.
    pub score: f32,
    /// `score ≥ 0.5`.
    pub verification: bool,
}

/// A one-time code in a message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OneTimeCode {
    /// The code as the user would type it (separators removed).
    pub code: String,
    /// The text around it.
    pub context: String,
    /// Confidence, 0–1 (only codes ≥ 0.5 are kept).
    pub score: f32,
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

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

fn starts_ci(s: &str, prefix: &str) -> bool {
    s.as_bytes().get(..prefix.len()).is_some_and(|b| b.eq_ignore_ascii_case(prefix.as_bytes()))
}

fn find_ci(hay: &str, needle: &str, from: usize) -> Option<usize> {
    let h = hay.as_bytes();
    let n = needle.as_bytes();
    let first = n.first()?.to_ascii_lowercase();
    (from..=h.len().checked_sub(n.len())?)
        .find(|&i| h[i].to_ascii_lowercase() == first && h[i..i + n.len()].eq_ignore_ascii_case(n))
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
fn html_hrefs(html: &str) -> Vec<(String, Option<String>)> {
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

/// Spans of bare `http(s)://` URLs in text (trailing punctuation and unbalanced closing
/// brackets left out).
fn bare_url_spans(text: &str) -> Vec<(usize, usize)> {
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

fn normalise(url: &str) -> Option<String> {
    let u = url::Url::parse(url.trim()).ok()?;
    (matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty())).then(|| u.to_string())
}

/// A path segment or query value of 20+ URL-safe characters with letters and digits mixed: the
/// shape of a token.
fn has_long_token(u: &url::Url) -> bool {
    let looks = |s: &str| {
        s.len() >= 20
            && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.~%=".contains(c))
            && s.chars().any(|c| c.is_ascii_digit())
            && s.chars().any(|c| c.is_ascii_alphabetic())
    };
    u.path_segments().is_some_and(|mut segs| segs.any(looks))
        || u.query_pairs().any(|(_, v)| looks(&v))
        || u.fragment().is_some_and(looks)
}

fn contains_any(hay: &str, words: &[&str]) -> bool {
    words.iter().any(|w| hay.contains(w))
}

/// How much `url` (with its anchor `text`) looks like a verification or sign-in link.
fn score_link(url: &str, text: Option<&str>) -> f32 {
    let Ok(u) = url::Url::parse(url) else { return 0.0 };
    let target = format!("{}?{}", u.path(), u.query().unwrap_or("")).to_ascii_lowercase();
    let host = u.host_str().unwrap_or("").to_ascii_lowercase();
    let text = text.unwrap_or("").to_lowercase();
    if contains_any(&target, &["unsubscribe", "optout", "opt-out", "preferences", "email-settings"])
        || contains_any(&text, &["unsubscribe", "preferences", "privacy", "terms"])
    {
        return 0.0;
    }
    let strong = [
        "verify",
        "verification",
        "confirm",
        "activate",
        "activation",
        "magic",
        "validate",
        "passwordless",
        "one-time",
        "onetime",
        "otp",
    ];
    let medium =
        ["token", "signin", "sign-in", "sign_in", "login", "log-in", "auth", "callback", "session", "invite", "reset"];
    let long_token = has_long_token(&u);
    let mut score: f32 = 0.0;
    if contains_any(&target, &strong) {
        score += 0.6;
    }
    if contains_any(&target, &medium) {
        score += if long_token { 0.4 } else { 0.15 };
    }
    if long_token {
        score += 0.15;
    }
    if contains_any(
        &text,
        &[
            "verify",
            "confirm",
            "activate",
            "sign in",
            "log in",
            "login",
            "magic link",
            "reset",
            "get started",
            "continue",
        ],
    ) {
        score += 0.4;
    }
    let static_file = [".png", ".jpg", ".jpeg", ".gif", ".svg", ".css", ".js", ".ico", ".webp"];
    if static_file.iter().any(|ext| u.path().to_ascii_lowercase().ends_with(ext)) {
        score -= 0.6;
    }
    let social = ["facebook.com", "twitter.com", "x.com", "linkedin.com", "instagram.com", "youtube.com", "tiktok.com"];
    if social.iter().any(|s| host == *s || host.ends_with(&format!(".{s}"))) {
        score -= 0.6;
    }
    score.clamp(0.0, 1.0)
}

/// The links of a message: HTML `href`s first, then bare URLs of the text, de-duplicated.
pub fn extract_links(html: Option<&str>, text: Option<&str>) -> Vec<Link> {
    let mut found: Vec<(String, Option<String>, LinkSource)> = Vec::new();
    if let Some(html) = html {
        found.extend(html_hrefs(html).into_iter().map(|(h, t)| (h, t, LinkSource::Html)));
        // URLs written out in the HTML's visible text, outside any tag.
        let visible = visible_text(html);
        found.extend(
            bare_url_spans(&visible).into_iter().map(|(s, e)| (visible[s..e].to_string(), None, LinkSource::Text)),
        );
    }
    if let Some(text) = text {
        found.extend(bare_url_spans(text).into_iter().map(|(s, e)| (text[s..e].to_string(), None, LinkSource::Text)));
    }
    let mut links: Vec<Link> = Vec::new();
    for (raw, text, source) in found {
        let Some(url) = normalise(&raw) else { continue };
        if let Some(existing) = links.iter_mut().find(|l| l.url == url) {
            if existing.text.is_none() && text.is_some() {
                existing.text = text;
                existing.score = score_link(&existing.url, existing.text.as_deref());
                existing.verification = existing.score >= 0.5;
            }
            continue;
        }
        if links.len() >= MAX_LINKS {
            break;
        }
        let score = score_link(&url, text.as_deref());
        links.push(Link { url, text, source, score, verification: score >= 0.5 });
    }
    links
}

/// Words that mark a one-time code nearby (lower-cased). Any word ending in `code`/`codes`
/// counts too ("passcode", "Bestätigungscode"), except [`NOT_CODE_COMPOUNDS`].
const CODE_WORDS: &[&str] = &[
    "code",
    "codes",
    "verification",
    "verify",
    "otp",
    "passcode",
    "pin",
    "token",
    "2fa",
    "security",
    "confirmation",
    "código",
    "kod",
];
/// Two-word markers ("one-time", "pass code", "two-factor").
const CODE_PAIRS: &[(&str, &str)] = &[("one", "time"), ("pass", "code"), ("two", "factor")];
/// A word before "code" that makes it something else ("zip code", "promo code").
const NOT_CODE_BEFORE: &[&str] = &["zip", "postal", "promo", "discount", "coupon", "area", "source", "country", "gift"];
/// Words ending in "code" that are not about one-time codes.
const NOT_CODE_COMPOUNDS: &[&str] = &[
    "postcode",
    "zipcode",
    "barcode",
    "qrcode",
    "promocode",
    "unicode",
    "encode",
    "decode",
    "opcode",
    "geocode",
    "encodes",
];
/// Words that make a nearby number a phone number.
const PHONE_WORDS: &[&str] = &["phone", "tel", "call", "fax", "mobile", "whatsapp"];
/// Month names and abbreviations, which make a nearby four-digit number a year.
const MONTHS: &[&str] = &[
    "jan",
    "january",
    "feb",
    "february",
    "mar",
    "march",
    "apr",
    "april",
    "may",
    "jun",
    "june",
    "jul",
    "july",
    "aug",
    "august",
    "sep",
    "sept",
    "september",
    "oct",
    "october",
    "nov",
    "november",
    "dec",
    "december",
];

/// What the words of a text say about the numbers in it, found in one pass over the words (a
/// substring search per word and candidate costs far more than the whole parse).
struct Marks {
    /// Spans of code words.
    code: Vec<(usize, usize)>,
    /// End offsets of phone words.
    phone: Vec<usize>,
    /// Spans of month names.
    months: Vec<(usize, usize)>,
}

fn marks(lower: &str) -> Marks {
    let mut words: Vec<(usize, usize)> = Vec::new();
    let mut start = None;
    for (i, c) in lower.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                words.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        words.push((s, lower.len()));
    }
    let mut m = Marks { code: Vec::new(), phone: Vec::new(), months: Vec::new() };
    for (k, &(s, e)) in words.iter().enumerate() {
        let w = &lower[s..e];
        let prev = k.checked_sub(1).map(|j| (words[j].0, &lower[words[j].0..words[j].1]));
        let is_code = CODE_WORDS.contains(&w)
            || ((w.ends_with("code") || w.ends_with("codes")) && !NOT_CODE_COMPOUNDS.contains(&w));
        let negated = matches!(w, "code" | "codes") && prev.is_some_and(|(_, p)| NOT_CODE_BEFORE.contains(&p));
        if is_code && !negated {
            m.code.push((s, e));
        }
        if let Some((ps, p)) = prev
            && CODE_PAIRS.contains(&(p, w))
        {
            m.code.push((ps, e));
        }
        if PHONE_WORDS.contains(&w) {
            m.phone.push(e);
        }
        if MONTHS.contains(&w) {
            m.months.push((s, e));
        }
    }
    m
}

/// The distance in bytes from the token at `[s, e)` to the nearest code word that lies within
/// `before` bytes ahead of it or `after` bytes behind it, and whether that word comes first.
fn keyword_distance(
    spans: &[(usize, usize)],
    s: usize,
    e: usize,
    before: usize,
    after: usize,
) -> Option<(usize, bool)> {
    spans
        .iter()
        .filter(|(ks, ke)| *ks >= s.saturating_sub(before) && *ke <= e + after)
        .filter_map(|&(ks, ke)| {
            if ke <= s {
                Some((s - ke, true))
            } else if ks >= e {
                Some((ks - e, false))
            } else {
                None
            }
        })
        .min_by_key(|(d, _)| *d)
}

fn is_year(tok: &str) -> bool {
    tok.len() == 4 && tok.parse::<u32>().is_ok_and(|y| (1900..=2099).contains(&y))
}

/// Whether the token at `[s, e)` of `text` reads as something other than a code.
fn excluded(text: &str, lower: &str, marks: &Marks, s: usize, e: usize) -> bool {
    let before = &text[..s];
    let after = &text[e..];
    let prev = before.chars().last();
    let next = after.chars().next();
    let next2 = after.chars().nth(1);
    // Part of an address, URL, path or identifier; an amount, a percentage.
    if prev.is_some_and(|c| "@/=&?#_\\.$€£¥₹+".contains(c)) || next.is_some_and(|c| "@/=&?_\\%".contains(c)) {
        return true;
    }
    // `12:30` is a time, `code:123456` is not.
    if prev == Some(':') && before.chars().rev().nth(1).is_some_and(|c| c.is_ascii_digit()) {
        return true;
    }
    // A number with decimals, or a date or time written with separators.
    if matches!(next, Some('.' | ',' | ':' | '/' | '-')) && next2.is_some_and(|c| c.is_ascii_digit()) {
        return true;
    }
    if matches!(prev, Some('-')) && before.chars().rev().nth(1).is_some_and(|c| c.is_ascii_digit()) {
        return true;
    }
    // Phone numbers: digit groups around it joined by spaces, dots, dashes or brackets.
    let tail: Vec<char> = before.chars().rev().take(2).collect();
    let head: Vec<char> = after.chars().take(2).collect();
    let digitish = |c: Option<&char>| c.is_some_and(|c| c.is_ascii_digit() || *c == ')' || *c == '(');
    if (matches!(tail.first(), Some(' ' | '.' | '-' | ')')) && digitish(tail.get(1)))
        || (matches!(head.first(), Some(' ' | '.' | '-')) && digitish(head.get(1)))
    {
        return true;
    }
    let near_before = &lower[floor_boundary(lower, s.saturating_sub(24))..s];
    if marks.phone.iter().any(|&pe| pe <= s && s - pe <= 24) {
        return true;
    }
    // Prices: a currency just before or after.
    let just_before = &lower[floor_boundary(lower, s.saturating_sub(6))..s];
    let near_after = &lower[e..ceil_boundary(lower, e + 8)];
    if contains_any(just_before, &["$", "€", "£", "¥", "₹", "usd", "eur", "gbp"])
        || contains_any(near_after, &[" usd", " eur", " gbp", " dollars", " euros"])
    {
        return true;
    }
    // Order and reference numbers.
    if contains_any(near_before, &["order", "invoice", "ticket", "ref:", "ref.", "ref ", "#", "no."]) {
        return true;
    }
    // Years next to a month name.
    if is_year(&text[s..e]) && marks.months.iter().any(|&(ms, me)| ms + 16 >= s && me <= e + 16) {
        return true;
    }
    false
}

fn context(text: &str, s: usize, e: usize) -> String {
    let lo = floor_boundary(text, s.saturating_sub(60));
    let hi = ceil_boundary(text, e + 40);
    collapse(&text[lo..hi])
}

/// Candidate tokens: `(start, end, code)`.
fn candidates(text: &str) -> Vec<(usize, usize, String)> {
    let b = text.as_bytes();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphanumeric() {
            let s = i;
            while i < b.len() && b[i].is_ascii_alphanumeric() {
                i += 1;
            }
            // A non-ASCII letter glued to the run makes it part of a word.
            let glued = text[..s].chars().last().is_some_and(|c| c.is_alphanumeric())
                || text[i..].chars().next().is_some_and(|c| c.is_alphanumeric());
            if !glued {
                runs.push((s, i));
            }
        } else {
            i += 1;
        }
    }
    let mut out = Vec::new();
    let mut k = 0;
    while k < runs.len() {
        let (s, e) = runs[k];
        let tok = &text[s..e];
        let digits = tok.bytes().all(|c| c.is_ascii_digit());
        // `123 456` / `123-456`: one six-digit code written in two halves.
        if digits && tok.len() == 3 && k + 1 < runs.len() {
            let (s2, e2) = runs[k + 1];
            let sep = &text[e..s2];
            let tok2 = &text[s2..e2];
            let third_group = runs.get(k + 2).is_some_and(|&(s3, _)| {
                matches!(&text[e2..s3], " " | "-" | ".") && text[s3..].starts_with(|c: char| c.is_ascii_digit())
            });
            if matches!(sep, " " | "-") && tok2.len() == 3 && tok2.bytes().all(|c| c.is_ascii_digit()) && !third_group {
                out.push((s, e2, format!("{tok}{tok2}")));
                k += 2;
                continue;
            }
        }
        let mixed = tok.bytes().any(|c| c.is_ascii_digit()) && tok.bytes().any(|c| c.is_ascii_alphabetic());
        if (digits && (4..=8).contains(&tok.len())) || (mixed && (6..=8).contains(&tok.len())) {
            out.push((s, e, tok.to_string()));
        }
        k += 1;
    }
    out
}

/// The one-time codes in `text` (and the subject), best first.
pub fn extract_codes(subject: Option<&str>, text: &str) -> Vec<OneTimeCode> {
    let mut found: Vec<(OneTimeCode, usize)> = Vec::new();
    let sources = [subject.unwrap_or(""), text];
    for (which, source) in sources.iter().enumerate() {
        // URLs are not prose: blank them out so their digits are not codes.
        let mut blanked = source.to_string();
        for (s, e) in bare_url_spans(source) {
            blanked.replace_range(s..e, &" ".repeat(e - s));
        }
        // ASCII lower-casing keeps byte offsets, so positions in both strings agree.
        let lower = blanked.to_ascii_lowercase();
        let marks = marks(&lower);
        if marks.code.is_empty() {
            continue;
        }
        for (s, e, code) in candidates(&blanked) {
            let Some((distance, is_before)) = keyword_distance(&marks.code, s, e, 80, 40) else { continue };
            let tok_digits = code.bytes().all(|c| c.is_ascii_digit());
            if excluded(&blanked, &lower, &marks, s, e) {
                continue;
            }
            if tok_digits && is_year(&code) && !(is_before && distance <= 12) {
                continue;
            }
            let mut score: f32 = 0.5;
            if is_before && distance <= 30 {
                score += 0.25;
            }
            if code.len() == 6 {
                score += 0.1;
            }
            let line_start = blanked[..s].rfind('\n').map_or(0, |p| p + 1);
            let line_end = blanked[e..].find('\n').map_or(blanked.len(), |p| e + p);
            if blanked[line_start..s].trim().is_empty() && blanked[e..line_end].trim().is_empty() {
                score += 0.1;
            }
            let ctx = context(source, s, e);
            match found.iter_mut().find(|(c, _)| c.code == code) {
                Some((c, _)) => c.score = (c.score.max(score) + 0.05).min(1.0),
                None => found.push((OneTimeCode { code, context: ctx, score: score.min(1.0) }, which * 1_000_000 + s)),
            }
        }
    }
    found.sort_by(|a, b| b.0.score.total_cmp(&a.0.score).then(a.1.cmp(&b.1)));
    found.into_iter().map(|(c, _)| c).take(MAX_CODES).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(text: &str) -> Vec<String> {
        extract_codes(None, text).into_iter().map(|c| c.code).collect()
    }

    #[test]
    fn codes_next_to_code_words() {
        let cases: &[(&str, &[&str])] = &[
            ("Your verification code is 482913.", &["482913"]),
            ("Use code 4829 to sign in", &["4829"]),
            ("Your one-time passcode:\n\n  73910284\n\nIt expires in 10 minutes.", &["73910284"]),
            ("Enter this code: 123-456", &["123456"]),
            ("Code de vérification : 654 321", &["654321"]),
            ("Your login code is A7K9Q2", &["A7K9Q2"]),
            ("Your PIN is 0042", &["0042"]),
            ("OTP: 998877. Do not share it.", &["998877"]),
            ("Dein Bestätigungscode lautet 552211", &["552211"]),
            ("Your code: 2024", &["2024"]),
            ("Code:482913", &["482913"]),
        ];
        for (text, expected) in cases {
            assert_eq!(codes(text), *expected, "{text}");
        }
    }

    #[test]
    fn numbers_that_are_not_codes() {
        let cases = [
            "Your verification code was sent on 2026-03-08 at 12:30.",
            "Verification requested in 2026 for your account.",
            "Verify by calling +1 (555) 123-4567 or 555 123 4567.",
            "Security notice: your order #48213 ships soon.",
            "Code review costs $1999 or 2500 USD, 15% off.",
            "Verification price: €1299.99",
            "Enter your zip code 94107 to continue",
            "Verify your email at https://example.com/verify/839201 now",
            "Your code is in the email sent to user123456@example.com",
            "Verification: 08.03.2026",
            "Your verification code expires on March 8, 2026",
            "Hello, welcome aboard! Your account number 12345678 is ready.",
        ];
        for text in cases {
            assert_eq!(codes(text), Vec::<String>::new(), "{text}");
        }
    }

    #[test]
    fn the_subject_counts_too() {
        let c = extract_codes(Some("123456 is your Acme code"), "Hi!\nThanks for signing up.");
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].code, "123456");
        assert!(c[0].context.contains("Acme code"));
    }

    #[test]
    fn links_from_hrefs_and_text() {
        let html = r#"<html><head><style>a{}</style><script>var u="https://evil.example/js"</script></head>
            <body><!-- <a href="https://hidden.example/x">x</a> -->
            <p>Welcome! <a class=btn HREF='https://app.example.com/verify?token=a1B2c3D4e5F6g7H8i9J0&amp;u=7'>Verify
            <b>email</b></a></p><a href="https://app.example.com/">Home</a>
            <a href="mailto:help@app.example.com">Help</a><a href=https://app.example.com/unsubscribe?u=1>Unsubscribe</a>
            <img src="https://cdn.example.com/logo.png"> Or paste https://app.example.com/verify?token=a1B2c3D4e5F6g7H8i9J0&amp;u=7.
            </body></html>"#;
        let text =
            "Or visit (https://app.example.com/login/cb/ZXhhbXBsZTEyMzQ1Njc4OTAx).\nDocs: http://docs.example.com/a_b,";
        let links = extract_links(Some(html), Some(text));
        let urls: Vec<&str> = links.iter().map(|l| l.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "https://app.example.com/verify?token=a1B2c3D4e5F6g7H8i9J0&u=7",
                "https://app.example.com/",
                "https://app.example.com/unsubscribe?u=1",
                "https://app.example.com/login/cb/ZXhhbXBsZTEyMzQ1Njc4OTAx",
                "http://docs.example.com/a_b",
            ]
        );
        assert_eq!(links[0].text.as_deref(), Some("Verify email"));
        let verification: Vec<&str> = links.iter().filter(|l| l.verification).map(|l| l.url.as_str()).collect();
        assert_eq!(
            verification,
            [
                "https://app.example.com/verify?token=a1B2c3D4e5F6g7H8i9J0&u=7",
                "https://app.example.com/login/cb/ZXhhbXBsZTEyMzQ1Njc4OTAx"
            ]
        );
        assert_eq!(links[2].score, 0.0);
    }

    #[test]
    fn scores_rank_verification_shapes() {
        let s = |u: &str, t: Option<&str>| score_link(u, t);
        assert!(s("https://x.example/auth/magic-link?t=abc", None) >= 0.5);
        assert!(s("https://x.example/account/activate/8f14e45fceea167a5a36dedd4bea2543", None) >= 0.5);
        assert!(s("https://x.example/a/b", Some("Confirm my account")) < 0.5);
        assert!(s("https://x.example/e/8f14e45fceea167a5a36dedd4bea2543", Some("Confirm my account")) >= 0.5);
        assert!(s("https://x.example/login", None) < 0.5);
        assert!(s("https://x.example/img/verify.png", None) < 0.5);
        assert!(s("https://www.facebook.com/verify", None) < 0.5);
    }

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
