//! The links of a message, each scored for how much it looks like a verification or sign-in
//! link.

use serde::Serialize;

use super::html::{html_hrefs, visible_text};
use super::text::{bare_url_spans, contains_any};

/// Most links kept from one message.
pub const MAX_LINKS: usize = 200;

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

#[cfg(test)]
mod tests {
    use super::{extract_links, score_link};

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
}
