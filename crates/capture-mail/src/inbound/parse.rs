//! A received message as the inbox shows it, parsed with `mail-parser` (lenient: malformed MIME
//! gives whatever parses, never a panic), with its links and one-time codes.
//!
//! Stored sizes are bounded: at most [`MAX_HEADERS`] headers of at most [`MAX_HEADER_VALUE`]
//! bytes, text and HTML bodies of at most [`MAX_BODY`] bytes each, [`MAX_ATTACHMENTS`]
//! attachment records, and the link and code limits of the extractor.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use mail_parser::{Address, HeaderValue, MessageParser, MimeHeaders};
use serde::Serialize;

use super::extract::{self, Link, OneTimeCode};

/// Most headers kept.
pub const MAX_HEADERS: usize = 200;
/// Longest header value kept, in bytes (longer ones are cut).
pub const MAX_HEADER_VALUE: usize = 8 * 1024;
/// Longest text or HTML body kept, in bytes.
pub const MAX_BODY: usize = 1024 * 1024;
/// Most attachment records kept.
pub const MAX_ATTACHMENTS: usize = 100;

/// A mailbox in an address header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MailAddress {
    /// The display name, if any.
    pub name: Option<String>,
    /// The address (may be empty for a group or a broken header).
    pub address: String,
}

/// One header, decoded where it is text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeaderField {
    /// The name as written.
    pub name: String,
    /// The value, unfolded (encoded words decoded for text headers).
    pub value: String,
}

/// An attachment (or inline part that is not a body).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentInfo {
    /// Its place among the message's attachments, from 0.
    pub index: usize,
    /// The file name, if given.
    pub name: Option<String>,
    /// The media type (`application/pdf`).
    pub content_type: String,
    /// Decoded size in bytes.
    pub size: usize,
    /// The decoded content (not serialised: the inbox keeps it in blob storage).
    #[serde(skip)]
    pub content: Vec<u8>,
}

/// A parsed message.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParsedMail {
    /// The first From mailbox.
    pub from: Option<MailAddress>,
    /// The To mailboxes.
    pub to: Vec<MailAddress>,
    /// The Cc mailboxes.
    pub cc: Vec<MailAddress>,
    /// The Reply-To mailbox.
    pub reply_to: Option<MailAddress>,
    /// The subject, decoded.
    pub subject: Option<String>,
    /// The Date header as an instant.
    pub date: Option<DateTime<Utc>>,
    /// The Message-ID, without angle brackets.
    pub message_id: Option<String>,
    /// Every header in order (bounded).
    pub headers: Vec<HeaderField>,
    /// The text body (the HTML converted to text when there is no text part).
    pub text: Option<String>,
    /// The HTML body.
    pub html: Option<String>,
    /// Attachments.
    pub attachments: Vec<AttachmentInfo>,
    /// Links, verification-like ones flagged.
    pub links: Vec<Link>,
    /// One-time codes, best first.
    pub codes: Vec<OneTimeCode>,
    /// What could not be parsed (the message is stored regardless).
    pub problems: Vec<String>,
}

impl ParsedMail {
    /// The link most likely to be the verification link, if any is flagged.
    pub fn verification_link(&self) -> Option<&Link> {
        self.links.iter().filter(|l| l.verification).max_by(|a, b| a.score.total_cmp(&b.score))
    }

    /// The most likely one-time code.
    pub fn code(&self) -> Option<&OneTimeCode> {
        self.codes.first()
    }
}

fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

fn mailboxes(a: Option<&Address<'_>>) -> Vec<MailAddress> {
    a.map(|a| {
        a.iter()
            .map(|m| MailAddress {
                name: m.name().map(|n| cut(n, 256)),
                address: m.address().map(|x| cut(x, 320)).unwrap_or_default(),
            })
            .collect()
    })
    .unwrap_or_default()
}

fn unfold(raw: &str) -> String {
    raw.split(['\r', '\n']).map(str::trim).filter(|s| !s.is_empty()).collect::<Vec<_>>().join(" ")
}

/// Parse a raw message. Never panics: a message that is not MIME at all yields its bytes as text
/// and a problem noted.
pub fn parse(raw: &[u8]) -> ParsedMail {
    let mut out = ParsedMail::default();
    let Some(msg) = MessageParser::default().parse(raw) else {
        out.problems.push("not a MIME message".into());
        let text = String::from_utf8_lossy(raw);
        out.text = Some(cut(&text, MAX_BODY));
        out.codes = extract::extract_codes(None, out.text.as_deref().unwrap_or(""));
        out.links = extract::extract_links(None, out.text.as_deref());
        return out;
    };
    if msg.headers().is_empty() {
        out.problems.push("no headers".into());
    }
    out.from = mailboxes(msg.from()).into_iter().next();
    out.to = mailboxes(msg.to());
    out.cc = mailboxes(msg.cc());
    out.reply_to = mailboxes(msg.reply_to()).into_iter().next();
    out.subject = msg.subject().map(|s| cut(s, MAX_HEADER_VALUE));
    out.date = msg.date().and_then(|d| DateTime::<Utc>::from_timestamp(d.to_timestamp(), 0));
    if msg.header("Date").is_some() && out.date.is_none() {
        out.problems.push("unreadable Date header".into());
    }
    out.message_id = msg.message_id().map(|s| cut(s, 998));

    let raw_values: Vec<(&str, &str)> = msg.headers_raw().collect();
    for (i, h) in msg.headers().iter().enumerate().take(MAX_HEADERS) {
        let decoded: Option<Cow<'_, str>> = match h.value() {
            HeaderValue::Text(t) => Some(Cow::Borrowed(t.as_ref())),
            HeaderValue::TextList(l) => Some(Cow::Owned(l.join(", "))),
            _ => None,
        };
        let value = match decoded {
            Some(v) => v.into_owned(),
            None => raw_values.get(i).map(|(_, v)| unfold(v)).unwrap_or_default(),
        };
        out.headers.push(HeaderField { name: cut(h.name(), 256), value: cut(&value, MAX_HEADER_VALUE) });
    }
    if msg.headers().len() > MAX_HEADERS {
        out.problems.push(format!("more than {MAX_HEADERS} headers; the rest were dropped"));
    }

    // mail-parser converts between the two when one is missing; keep only real parts here and
    // make the text from the HTML ourselves, so `html` is never a made-up page.
    out.html = msg.html_bodies().find(|p| p.is_text_html()).and_then(|p| p.text_contents()).map(|h| cut(h, MAX_BODY));
    let plain = msg.text_bodies().find(|p| p.is_text() && !p.is_text_html()).and_then(|p| p.text_contents());
    out.text = match plain {
        Some(t) => Some(cut(t, MAX_BODY)),
        None => msg.body_text(0).map(|t| cut(&t, MAX_BODY)),
    };
    for (index, part) in msg.attachments().take(MAX_ATTACHMENTS).enumerate() {
        let content_type = part
            .content_type()
            .map(|ct| match ct.subtype() {
                Some(sub) => format!("{}/{}", ct.ctype(), sub),
                None => ct.ctype().to_string(),
            })
            .unwrap_or_else(|| "application/octet-stream".into());
        out.attachments.push(AttachmentInfo {
            index,
            name: part.attachment_name().map(|n| cut(n, 256)),
            content_type: cut(&content_type.to_ascii_lowercase(), 256),
            size: part.len(),
            content: part.contents().to_vec(),
        });
    }

    // Codes read best in the text a person sees: the text part, else the HTML's visible text.
    let visible = match (&out.text, &out.html) {
        (Some(t), _) => t.clone(),
        (None, Some(h)) => extract::visible_text(h),
        (None, None) => String::new(),
    };
    out.links = extract::extract_links(out.html.as_deref(), out.text.as_deref());
    out.codes = extract::extract_codes(out.subject.as_deref(), &visible);
    out
}
