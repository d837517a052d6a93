//! One-time codes in a message: candidates near a code word, minus what reads as a date, a
//! time, a phone number, a price or an order number.

use serde::Serialize;

use super::text::{bare_url_spans, ceil_boundary, collapse, contains_any, floor_boundary};

/// Most codes kept from one message.
pub const MAX_CODES: usize = 10;

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
    use super::extract_codes;

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
}
