//! Parsing real-looking verification mails: plain text, HTML only in quoted-printable (with soft
//! line breaks inside the URLs), multipart in base64 with encoded-word headers, a magic link, an
//! attachment. Fixtures are stored with LF line ends and sent with CRLF, as SMTP carries them.

use capture_mail::inbound::{ParsedMail, parse};
use chrono::{DateTime, Utc};

fn fixture(name: &str) -> ParsedMail {
    let path = format!("{}/tests/mail/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    parse(text.replace('\n', "\r\n").as_bytes())
}

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn codes(m: &ParsedMail) -> Vec<&str> {
    m.codes.iter().map(|c| c.code.as_str()).collect()
}

fn verification_links(m: &ParsedMail) -> Vec<&str> {
    m.links.iter().filter(|l| l.verification).map(|l| l.url.as_str()).collect()
}

#[test]
fn plain_text_device_verification() {
    let m = fixture("plain.eml");
    let from = m.from.as_ref().unwrap();
    assert_eq!((from.name.as_deref(), from.address.as_str()), (Some("GitHub"), "noreply@github.test"));
    assert_eq!(m.to[0].address, "agent-7f3k@inbox.capture.test");
    assert_eq!(m.subject.as_deref(), Some("[GitHub] Please verify your device"));
    assert_eq!(m.date, Some(at("2026-03-23T09:15:01Z")));
    assert_eq!(m.message_id.as_deref(), Some("0a1b2c3d.4e5f@github.test"));
    assert!(m.html.is_none());
    assert!(m.text.as_deref().unwrap().contains("Verification code: 804213"));
    // The phone number, the order number and the year are not codes.
    assert_eq!(codes(&m), ["804213"]);
    assert!(m.codes[0].context.contains("Verification code"));
    assert_eq!(m.links.iter().map(|l| l.url.as_str()).collect::<Vec<_>>(), ["https://github.test/settings/security"]);
    assert!(verification_links(&m).is_empty());
    let received = m.headers.iter().find(|h| h.name == "Received").unwrap();
    assert!(received.value.starts_with("from out-1.smtp.github.test"), "{}", received.value);
    assert!(!received.value.contains('\n'));
    assert!(m.problems.is_empty(), "{:?}", m.problems);
}

#[test]
fn html_only_quoted_printable_confirmation() {
    let m = fixture("html_only_qp.eml");
    assert_eq!(m.date, Some(at("2026-03-23T14:02:11Z")));
    assert_eq!(m.from.as_ref().unwrap().name.as_deref(), Some("Shop"));
    let html = m.html.as_deref().unwrap();
    assert!(html.contains("token=Q2hlY2tPdXRUaGlzVG9rZW4xMjM0NTY3ODkw"), "soft line breaks decoded");
    // The text body is made from the HTML when there is no text part.
    let text = m.text.as_deref().unwrap();
    assert!(text.contains("Please confirm your email address"), "{text}");
    assert!(!text.contains("<p>"));
    assert_eq!(
        verification_links(&m),
        [
            "https://shop.test/account/confirm?email=agent-7f3k%40inbox.capture.test&token=Q2hlY2tPdXRUaGlzVG9rZW4xMjM0NTY3ODkw&utm_source=email"
        ]
    );
    let confirm = m.verification_link().unwrap();
    assert_eq!(confirm.text.as_deref(), Some("Confirm email address"));
    let urls: Vec<&str> = m.links.iter().map(|l| l.url.as_str()).collect();
    assert!(urls.contains(&"https://shop.test/help") && urls.contains(&"https://shop.test/unsubscribe?u=991"));
    assert!(!urls.iter().any(|u| u.ends_with("logo.png")), "images are not links: {urls:?}");
    assert_eq!(codes(&m), ["739215"]);
}

#[test]
fn multipart_base64_with_encoded_words() {
    let m = fixture("multipart_base64.eml");
    assert_eq!(m.subject.as_deref(), Some("Bestätige deine E-Mail-Adresse"));
    assert_eq!(m.from.as_ref().unwrap().name.as_deref(), Some("Beispiel Konto"));
    assert_eq!(m.date, Some(at("2026-03-24T07:00:00Z")));
    assert!(m.text.as_deref().unwrap().contains("Bestätigungscode"));
    assert!(m.html.as_deref().unwrap().contains("<b>552 871</b>"));
    assert_eq!(codes(&m), ["552871"], "written in two halves; the price is not a code");
    assert_eq!(verification_links(&m), ["https://konto.beispiel.test/verify/8f14e45fceea167a5a36dedd4bea2543"]);
    assert_eq!(m.links.len(), 1, "the same link in text and HTML counts once");
    assert_eq!(m.links[0].text.as_deref(), Some("E-Mail bestätigen"));
}

#[test]
fn magic_link_sign_in() {
    let m = fixture("magic_link.eml");
    assert_eq!(
        verification_links(&m),
        ["https://app.acme.test/auth/callback?token=eyJhbGciOiJIUzI1NiJ9.a1b2c3d4e5f6g7h8i9j0&redirect=%2Fdashboard"]
    );
    assert_eq!(m.verification_link().unwrap().text.as_deref(), Some("Sign in to Acme"));
    let preferences = m.links.iter().find(|l| l.url.ends_with("/settings/email")).unwrap();
    assert!(!preferences.verification);
    assert!(m.links.iter().any(|l| l.url.contains("linkedin.com") && !l.verification));
    assert!(codes(&m).is_empty(), "dates and times are not codes: {:?}", m.codes);
}

#[test]
fn attachments_are_listed_and_alphanumeric_codes_found() {
    let m = fixture("with_attachment.eml");
    assert_eq!(m.attachments.len(), 1);
    let a = &m.attachments[0];
    assert_eq!(
        (a.name.as_deref(), a.content_type.as_str(), a.size),
        (Some("invoice-2026-0042.pdf"), "application/pdf", 3016)
    );
    assert_eq!(codes(&m), ["K7P2QX"], "the invoice number and the amount are not codes");
    let json = serde_json::to_value(&m).unwrap();
    assert_eq!(json["attachments"][0]["contentType"], "application/pdf");
    assert_eq!(json["codes"][0]["code"], "K7P2QX");
    // The decoded content is kept for the inbox's blob storage, but never serialised.
    assert_eq!((a.index, a.content.len()), (0, 3016));
    assert!(a.content.starts_with(b"%PDF"), "decoded from base64");
    assert_eq!(json["attachments"][0]["index"], 0);
    assert!(json["attachments"][0].get("content").is_none());
}

#[test]
fn not_mime_at_all_still_gives_text() {
    let m = parse(b"");
    assert!(m.text.as_deref().unwrap_or("").is_empty());
    assert!(!m.problems.is_empty(), "an empty message is noted as a problem");
    let m = parse(b"\xff\xfe\x00 garbage\r\n\r\nyour code: 4821\r\n");
    let _ = serde_json::to_string(&m).unwrap();
    assert!(m.text.as_deref().unwrap_or("").contains("4821"), "{m:?}");
}
