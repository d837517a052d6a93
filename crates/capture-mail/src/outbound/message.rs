//! The campaign message: `multipart/alternative` of a text part and a `multipart/related` HTML
//! part that carries the report's screenshot inline (`cid:`), with the headers bulk mail needs
//! (`Message-ID` on the sender's domain, `Date`, RFC 8058 one-click unsubscribe).
//!
//! Header injection is impossible by construction: every free-text header value (subject,
//! display names, extra header values) has its control characters — CR and LF included —
//! replaced by spaces before `lettre` encodes it, extra header names must be plain tokens, and
//! addresses go through `validate_email`.

use std::time::SystemTime;

use capture_core::sending::{EmailAddress, validate_email};
use chrono::{DateTime, Utc};
use lettre::message::header::{ContentType, HeaderName, HeaderValue};
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::{Address, Message};

/// The From of campaign mail (`CAPTURE_MAIL_FROM`): an address and an optional display name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sender {
    name: Option<String>,
    address: EmailAddress,
}

impl Sender {
    /// A sender from its parts (the name is cleaned of control characters; empty means none).
    pub fn new(name: Option<&str>, address: &str) -> Result<Sender, BuildError> {
        let address =
            validate_email(address).map_err(|e| BuildError::Address { field: "from", reason: e.to_string() })?;
        let name = name.map(clean).filter(|n| !n.is_empty());
        Ok(Sender { name, address })
    }

    /// Parse `Capture Reports <reports@example.com>` or a bare `reports@example.com`.
    pub fn parse(s: &str) -> Result<Sender, BuildError> {
        let s = s.trim();
        match s.rsplit_once('<') {
            Some((name, rest)) => {
                let addr = rest.strip_suffix('>').ok_or(BuildError::Address {
                    field: "from",
                    reason: "must look like Name <name@example.com>".into(),
                })?;
                let name = name.trim().trim_matches('"').trim();
                Sender::new(Some(name), addr)
            }
            None => Sender::new(None, s),
        }
    }

    /// The address.
    pub fn address(&self) -> &str {
        self.address.as_str()
    }

    /// The display name, if any.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The sender's domain (where `Message-ID`s are made).
    pub fn domain(&self) -> &str {
        self.address.domain()
    }
}

/// An image shown inside the HTML part, referenced there as `cid:<content_id>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineImage {
    /// The Content-ID without angle brackets (`screenshot@example.com`): letters, digits and
    /// `.-_@`.
    pub content_id: String,
    /// The media type (`image/png`).
    pub content_type: String,
    /// The image bytes.
    pub bytes: Vec<u8>,
}

impl InlineImage {
    /// A PNG image with the given Content-ID.
    pub fn png(content_id: impl Into<String>, bytes: Vec<u8>) -> InlineImage {
        InlineImage { content_id: content_id.into(), content_type: "image/png".into(), bytes }
    }

    /// The URL the HTML uses for it (`cid:…`).
    pub fn url(&self) -> String {
        format!("cid:{}", self.content_id)
    }
}

/// One campaign mail to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignMail {
    /// The From.
    pub from: Sender,
    /// The recipient's address.
    pub to: String,
    /// The subject (control characters become spaces).
    pub subject: String,
    /// The plain-text body.
    pub text: String,
    /// The HTML body; it must reference `inline_image` by its `cid:` URL when there is one.
    pub html: String,
    /// The report's screenshot, shown inline in the HTML.
    pub inline_image: Option<InlineImage>,
    /// The one-click unsubscribe link (`https://…`; RFC 8058 receivers POST to it).
    pub unsubscribe_url: String,
    /// The address that unsubscribes whoever writes to it (the `mailto:` form).
    pub unsubscribe_mailto: String,
    /// More headers such as `X-Capture-Campaign` (names: letters, digits, `-`; not one of the
    /// headers this builder writes).
    pub extra_headers: Vec<(String, String)>,
}

/// A built message ready for [`super::Mailer::send`]: the envelope and the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingMail {
    message_id: String,
    from: Address,
    to: Address,
    raw: Vec<u8>,
}

impl OutgoingMail {
    /// The `Message-ID` (with angle brackets).
    pub fn message_id(&self) -> &str {
        &self.message_id
    }

    /// The envelope sender (`MAIL FROM`).
    pub fn envelope_from(&self) -> &Address {
        &self.from
    }

    /// The envelope recipient (`RCPT TO`).
    pub fn envelope_to(&self) -> &Address {
        &self.to
    }

    /// The message as sent (RFC 5322, CRLF line ends).
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }
}

/// Why a message could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// An address is not valid.
    #[error("{field} address {reason}")]
    Address { field: &'static str, reason: String },
    /// The unsubscribe link is not an absolute http(s) URL.
    #[error("unsubscribe URL must be an absolute https:// URL")]
    UnsubscribeUrl,
    /// An extra header has a name that is not a plain token, or one the builder owns.
    #[error("header name {0:?} is not allowed")]
    HeaderName(String),
    /// The inline image's Content-ID is not a plain token.
    #[error("inline image Content-ID {0:?} is not allowed")]
    ContentId(String),
    /// The HTML does not show the inline image (mail clients would list it as an attachment).
    #[error("the HTML does not reference the inline image as {0}")]
    UnreferencedImage(String),
    /// The image's media type is not `image/*`.
    #[error("inline image type {0:?} is not an image type")]
    ImageType(String),
    /// lettre refused the message.
    #[error("message could not be built: {0}")]
    Message(String),
}

/// Headers the builder writes itself; extra headers may not replace them.
const OWN_HEADERS: &[&str] = &[
    "from",
    "to",
    "cc",
    "bcc",
    "reply-to",
    "sender",
    "subject",
    "date",
    "message-id",
    "mime-version",
    "content-type",
    "content-transfer-encoding",
    "content-disposition",
    "content-id",
    "list-unsubscribe",
    "list-unsubscribe-post",
    "return-path",
    "received",
];

/// Replace control characters (CR, LF, tabs, and the Unicode line and paragraph separators) by
/// spaces and collapse the runs, so no value can start a header of its own.
fn clean(s: &str) -> String {
    s.split(|c: char| c.is_control() || c.is_whitespace()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

fn is_token(s: &str, extra: &str) -> bool {
    !s.is_empty() && s.len() <= 200 && s.chars().all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
}

fn address(field: &'static str, s: &str) -> Result<(EmailAddress, Address), BuildError> {
    let bad = |reason: String| BuildError::Address { field, reason };
    let a = validate_email(s).map_err(|e| bad(e.to_string()))?;
    let lettre = a.as_str().parse::<Address>().map_err(|e| bad(e.to_string()))?;
    Ok((a, lettre))
}

fn header(name: &str, value: String) -> Result<HeaderValue, BuildError> {
    let name = HeaderName::new_from_ascii(name.to_string()).map_err(|_| BuildError::HeaderName(name.to_string()))?;
    Ok(HeaderValue::new(name, value))
}

impl CampaignMail {
    /// Build the message, dated `now` (the service's clock), with a fresh `Message-ID` on the
    /// sender's domain.
    pub fn build(&self, now: DateTime<Utc>) -> Result<OutgoingMail, BuildError> {
        let from = &self.from;
        let (_, from_addr) = address("from", from.address())?;
        let (_, to_addr) = address("to", &self.to)?;
        let (unsub_to, _) = address("unsubscribe", &self.unsubscribe_mailto)?;
        let unsub_url = url::Url::parse(self.unsubscribe_url.trim()).map_err(|_| BuildError::UnsubscribeUrl)?;
        // RFC 8058 asks for HTTPS; plain http stays possible for a test instance on loopback.
        if !matches!(unsub_url.scheme(), "https" | "http") || unsub_url.host_str().is_none() {
            return Err(BuildError::UnsubscribeUrl);
        }
        let message_id = format!(
            "<{}.{}@{}>",
            now.timestamp_millis(),
            capture_core::ids::random_string(20).to_ascii_lowercase(),
            from.domain()
        );
        let mut builder = Message::builder()
            .from(Mailbox::new(from.name().map(str::to_string), from_addr.clone()))
            .to(Mailbox::new(None, to_addr.clone()))
            .subject(clean(&self.subject))
            .date(SystemTime::from(now))
            .message_id(Some(message_id.clone()))
            .raw_header(header(
                "List-Unsubscribe",
                format!("<{}>, <mailto:{}?subject=unsubscribe>", unsub_url.as_str(), unsub_to.as_str()),
            )?)
            .raw_header(header("List-Unsubscribe-Post", "List-Unsubscribe=One-Click".into())?);
        for (name, value) in &self.extra_headers {
            if !is_token(name, "-") || OWN_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
                return Err(BuildError::HeaderName(name.clone()));
            }
            builder = builder.raw_header(header(name, clean(value))?);
        }

        let text = SinglePart::plain(self.text.clone());
        let html = SinglePart::html(self.html.clone());
        let body = match &self.inline_image {
            None => MultiPart::alternative().singlepart(text).singlepart(html),
            Some(img) => {
                if !is_token(&img.content_id, ".-_@") {
                    return Err(BuildError::ContentId(img.content_id.clone()));
                }
                if !self.html.contains(&img.url()) {
                    return Err(BuildError::UnreferencedImage(img.url()));
                }
                let ctype = ContentType::parse(&img.content_type)
                    .ok()
                    .filter(|_| img.content_type.starts_with("image/"))
                    .ok_or_else(|| BuildError::ImageType(img.content_type.clone()))?;
                let image = Attachment::new_inline(img.content_id.clone()).body(img.bytes.clone(), ctype);
                MultiPart::alternative()
                    .singlepart(text)
                    .multipart(MultiPart::related().singlepart(html).singlepart(image))
            }
        };
        let message = builder.multipart(body).map_err(|e| BuildError::Message(e.to_string()))?;
        Ok(OutgoingMail { message_id, from: from_addr, to: to_addr, raw: message.formatted() })
    }
}

/// A transactional mail (an address to verify, a sign-in link): text and HTML to one
/// person who asked for it, so no unsubscribe headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoticeMail {
    pub from: Sender,
    pub to: String,
    pub subject: String,
    pub text: String,
    pub html: String,
    /// Pictures shown in the HTML by their `cid:` URLs (a monitor's before, after and diff).
    pub images: Vec<InlineImage>,
}

impl NoticeMail {
    /// Build the message, dated `now`, with a fresh `Message-ID` on the sender's domain.
    pub fn build(&self, now: DateTime<Utc>) -> Result<OutgoingMail, BuildError> {
        let (_, from_addr) = address("from", self.from.address())?;
        let (_, to_addr) = address("to", &self.to)?;
        let message_id = format!(
            "<{}.{}@{}>",
            now.timestamp_millis(),
            capture_core::ids::random_string(20).to_ascii_lowercase(),
            self.from.domain()
        );
        let message = Message::builder()
            .from(Mailbox::new(self.from.name().map(str::to_string), from_addr.clone()))
            .to(Mailbox::new(None, to_addr.clone()))
            .subject(clean(&self.subject))
            .date(SystemTime::from(now))
            .message_id(Some(message_id.clone()))
            .multipart(self.body()?)
            .map_err(|e| BuildError::Message(e.to_string()))?;
        Ok(OutgoingMail { message_id, from: from_addr, to: to_addr, raw: message.formatted() })
    }

    /// Text and HTML as alternatives; the HTML with its pictures as one related part.
    fn body(&self) -> Result<MultiPart, BuildError> {
        let text = SinglePart::plain(self.text.clone());
        let html = SinglePart::html(self.html.clone());
        if self.images.is_empty() {
            return Ok(MultiPart::alternative().singlepart(text).singlepart(html));
        }
        let mut related = MultiPart::related().singlepart(html);
        for img in &self.images {
            if !is_token(&img.content_id, ".-_@") {
                return Err(BuildError::ContentId(img.content_id.clone()));
            }
            if !self.html.contains(&img.url()) {
                return Err(BuildError::UnreferencedImage(img.url()));
            }
            let ctype = ContentType::parse(&img.content_type)
                .ok()
                .filter(|_| img.content_type.starts_with("image/"))
                .ok_or_else(|| BuildError::ImageType(img.content_type.clone()))?;
            related = related.singlepart(Attachment::new_inline(img.content_id.clone()).body(img.bytes.clone(), ctype));
        }
        Ok(MultiPart::alternative().singlepart(text).multipart(related))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mail() -> CampaignMail {
        CampaignMail {
            from: Sender::parse("Capture Reports <reports@capture.example>").unwrap(),
            to: "owner@site.example".into(),
            subject: "Your site audit".into(),
            text: "Hello".into(),
            html: "<p>Hello <img src=\"cid:shot@capture.example\"></p>".into(),
            inline_image: Some(InlineImage::png("shot@capture.example", vec![0x89, b'P', b'N', b'G'])),
            unsubscribe_url: "https://capture.example/u/tok".into(),
            unsubscribe_mailto: "unsubscribe@capture.example".into(),
            extra_headers: vec![("X-Capture-Campaign".into(), "cmp_1".into())],
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-03-23T09:00:00Z").unwrap().with_timezone(&Utc)
    }

    fn headers(raw: &[u8]) -> String {
        let s = String::from_utf8_lossy(raw);
        s.split("\r\n\r\n").next().unwrap().to_string()
    }

    #[test]
    fn a_notice_carries_its_pictures_inline_and_refuses_one_it_does_not_show() {
        let mut n = NoticeMail {
            from: Sender::parse("Capture <no-reply@capture.example>").unwrap(),
            to: "me@site.example".into(),
            subject: "Changed: pricing".into(),
            text: "It changed".into(),
            html: "<img src=\"cid:before.chk@capture.example\"><img src=\"cid:diff.chk@capture.example\">".into(),
            images: vec![
                InlineImage::png("before.chk@capture.example", vec![0x89, b'P', b'N', b'G', 1]),
                InlineImage::png("diff.chk@capture.example", vec![0x89, b'P', b'N', b'G', 2]),
            ],
        };
        let raw = String::from_utf8_lossy(n.clone().build(now()).unwrap().raw()).to_string();
        assert!(raw.contains("multipart/related"), "{raw}");
        for cid in ["<before.chk@capture.example>", "<diff.chk@capture.example>"] {
            assert_eq!(raw.matches(&format!("Content-ID: {cid}")).count(), 1, "{raw}");
        }
        n.images.push(InlineImage::png("after.chk@capture.example", vec![1]));
        assert!(matches!(n.build(now()), Err(BuildError::UnreferencedImage(_))));
    }

    #[test]
    fn notices_have_both_bodies_and_no_unsubscribe_headers() {
        let n = NoticeMail {
            from: Sender::parse("Capture <no-reply@capture.example>").unwrap(),
            to: "new@site.example".into(),
            subject: "Verify\r\nBcc: x@y.example".into(),
            text: "Open https://capture.example/verify-email?token=abc".into(),
            html: "<a href=\"https://capture.example/verify-email?token=abc\">Verify</a>".into(),
            images: Vec::new(),
        };
        let m = n.build(now()).unwrap();
        assert_eq!(m.envelope_to().to_string(), "new@site.example");
        let h = headers(m.raw());
        assert!(h.contains("Subject: Verify Bcc: x@y.example"), "{h}");
        assert!(!h.to_ascii_lowercase().contains("list-unsubscribe"), "{h}");
        assert!(!h.lines().any(|l| l.starts_with("Bcc:")), "{h}");
        let raw = String::from_utf8_lossy(m.raw());
        assert!(raw.contains("text/plain") && raw.contains("text/html"), "{raw}");
        assert!(m.message_id().ends_with("@capture.example>"));
    }

    #[test]
    fn senders_parse_with_and_without_a_name() {
        let s = Sender::parse("\"Capture Reports\" <Reports@Capture.Example>").unwrap();
        assert_eq!(
            (s.name(), s.address(), s.domain()),
            (Some("Capture Reports"), "Reports@capture.example", "capture.example")
        );
        let s = Sender::parse("reports@capture.example").unwrap();
        assert_eq!((s.name(), s.address()), (None, "reports@capture.example"));
        assert!(Sender::parse("Capture <reports@capture.example").is_err());
        assert!(Sender::parse("Capture <not an address>").is_err());
        assert_eq!(
            Sender::parse("Evil\r\nBcc: x@y.example <a@capture.example>").unwrap().name(),
            Some("Evil Bcc: x@y.example")
        );
    }

    #[test]
    fn crlf_in_subject_names_and_values_cannot_add_headers() {
        let mut m = mail();
        m.subject = "Hi\r\nBcc: victim@else.example\r\n\r\nbody".into();
        m.from = Sender::new(Some("Name\nX-Injected: 1"), "reports@capture.example").unwrap();
        m.extra_headers = vec![("X-Capture-Campaign".into(), "cmp\r\nX-Other: 2".into())];
        let raw = m.build(now()).unwrap();
        let h = headers(raw.raw());
        for line in h.lines() {
            let name = line.split(':').next().unwrap().to_ascii_lowercase();
            assert!(!["bcc", "x-injected", "x-other"].contains(&name.as_str()), "injected header: {line}\n{h}");
        }
        assert!(h.contains("Subject: Hi Bcc: victim@else.example body"), "{h}");
    }

    #[test]
    fn extra_header_names_are_checked() {
        for name in ["Bcc", "subject", "X Bad", "X-Bad:", "", "List-Unsubscribe"] {
            let mut m = mail();
            m.extra_headers = vec![(name.into(), "v".into())];
            assert_eq!(m.build(now()), Err(BuildError::HeaderName(name.into())), "{name}");
        }
    }

    #[test]
    fn bad_inputs_are_named() {
        let mut m = mail();
        m.to = "not an address".into();
        assert!(matches!(m.build(now()), Err(BuildError::Address { field: "to", .. })));
        let mut m = mail();
        m.unsubscribe_url = "javascript:alert(1)".into();
        assert_eq!(m.build(now()), Err(BuildError::UnsubscribeUrl));
        let mut m = mail();
        m.html = "<p>no image</p>".into();
        assert_eq!(m.build(now()), Err(BuildError::UnreferencedImage("cid:shot@capture.example".into())));
        let mut m = mail();
        m.inline_image.as_mut().unwrap().content_id = "a b>".into();
        assert_eq!(m.build(now()), Err(BuildError::ContentId("a b>".into())));
        let mut m = mail();
        m.inline_image.as_mut().unwrap().content_type = "text/html".into();
        assert_eq!(m.build(now()), Err(BuildError::ImageType("text/html".into())));
    }

    #[test]
    fn message_ids_are_fresh_and_on_the_senders_domain() {
        let a = mail().build(now()).unwrap();
        let b = mail().build(now()).unwrap();
        assert_ne!(a.message_id(), b.message_id());
        assert!(a.message_id().starts_with('<') && a.message_id().ends_with("@capture.example>"));
        assert_eq!(a.envelope_from().to_string(), "reports@capture.example");
        assert_eq!(a.envelope_to().to_string(), "owner@site.example");
        assert!(headers(a.raw()).contains("Date: Mon, 23 Mar 2026 09:00:00 +0000"), "{}", headers(a.raw()));
    }
}
