//! Outbound mail against a real SMTP server (Python's aiosmtpd on 127.0.0.1).

use std::collections::HashSet;
use std::sync::Arc;

use capture_mail::outbound::{CampaignMail, InlineImage, Mailer, SendError, Sender, SmtpMailer, Stage};
use chrono::{DateTime, Utc};
use mail_parser::{MessageParser, MimeHeaders, PartType};

use crate::support::*;

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-23T09:15:00Z").unwrap().with_timezone(&Utc)
}

fn campaign_mail(to: &str) -> CampaignMail {
    CampaignMail {
        from: Sender::parse("Capture Reports <reports@capture.test>").unwrap(),
        to: to.into(),
        subject: "Your website audit: 87/100 ✓".into(),
        text: "Hello,\n\nYour site scored 87.\n.\n..a line that starts with dots\nReport: https://capture.test/r/1\n"
            .into(),
        html: "<html><body><h1>Score 87</h1><img src=\"cid:desktop.1@capture.test\" alt=\"screenshot\"></body></html>"
            .into(),
        inline_image: Some(InlineImage::png("desktop.1@capture.test", PNG_1X1.to_vec())),
        unsubscribe_url: "https://capture.test/v1/unsubscribe/tok_abc123".into(),
        unsubscribe_mailto: "unsubscribe@capture.test".into(),
        extra_headers: vec![("X-Capture-Campaign".into(), "cmp_42".into())],
    }
}

#[tokio::test]
async fn campaign_mail_arrives_with_its_parts_and_headers() {
    let Some(python) = require_aiosmtpd() else { return };
    let sink = SmtpSink::start(&python, &[]);
    let mailer = SmtpMailer::from_url(&sink.url("?timeout=10s")).unwrap();
    let mail = campaign_mail("owner@site.test").build(now()).unwrap();
    let accepted = mailer.send(&mail).await.unwrap();
    assert_eq!(accepted.message_id, mail.message_id());
    assert!(accepted.response.starts_with("250"), "{}", accepted.response);
    assert!(accepted.response.contains("queued as m1"), "{}", accepted.response);

    let got = sink.wait_for(1).await;
    let r = &got[0];
    assert_eq!(r.envelope["mail_from"], "reports@capture.test");
    assert_eq!(r.envelope["rcpt_tos"], serde_json::json!(["owner@site.test"]));
    // What arrived is what we built, up to the line ends the end of data adds.
    let trim = |b: &[u8]| {
        let mut b = b.to_vec();
        while b.ends_with(b"\r\n") {
            b.truncate(b.len() - 2);
        }
        b
    };
    assert_eq!(String::from_utf8_lossy(&trim(&r.raw)), String::from_utf8_lossy(&trim(mail.raw())));

    let msg = MessageParser::default().parse(&r.raw).unwrap();
    // Headers.
    assert_eq!(msg.subject(), Some("Your website audit: 87/100 ✓"));
    let from = msg.from().unwrap().first().unwrap();
    assert_eq!((from.name(), from.address()), (Some("Capture Reports"), Some("reports@capture.test")));
    assert_eq!(msg.to().unwrap().first().unwrap().address(), Some("owner@site.test"));
    assert_eq!(format!("<{}>", msg.message_id().unwrap()), accepted.message_id);
    assert!(accepted.message_id.ends_with("@capture.test>"));
    assert_eq!(msg.date().unwrap().to_timestamp(), now().timestamp());
    let raw_header = |name: &str| {
        msg.headers_raw()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.split_whitespace().collect::<Vec<_>>().join(" "))
    };
    assert_eq!(
        raw_header("List-Unsubscribe").as_deref(),
        Some("<https://capture.test/v1/unsubscribe/tok_abc123>, <mailto:unsubscribe@capture.test?subject=unsubscribe>")
    );
    assert_eq!(raw_header("List-Unsubscribe-Post").as_deref(), Some("List-Unsubscribe=One-Click"));
    assert_eq!(raw_header("X-Capture-Campaign").as_deref(), Some("cmp_42"));
    assert_eq!(raw_header("MIME-Version").as_deref(), Some("1.0"));

    // Structure: alternative(text/plain, related(text/html, image/png)).
    let ctype = |p: &mail_parser::MessagePart| {
        let ct = p.content_type().unwrap();
        format!("{}/{}", ct.ctype(), ct.subtype().unwrap_or(""))
    };
    let root = msg.root_part();
    assert_eq!(ctype(root), "multipart/alternative");
    let PartType::Multipart(children) = &root.body else { panic!("root is not multipart") };
    assert_eq!(children.len(), 2);
    let text = msg.part(children[0]).unwrap();
    assert_eq!(ctype(text), "text/plain");
    let related = msg.part(children[1]).unwrap();
    assert_eq!(ctype(related), "multipart/related");
    let PartType::Multipart(inner) = &related.body else { panic!("related is not multipart") };
    let html = msg.part(inner[0]).unwrap();
    let image = msg.part(inner[1]).unwrap();
    assert_eq!((ctype(html), ctype(image)), ("text/html".to_string(), "image/png".to_string()));
    // The inline image's Content-ID is what the HTML points at, and its bytes are intact.
    assert_eq!(image.content_id(), Some("desktop.1@capture.test"));
    assert_eq!(image.content_disposition().map(|d| d.ctype()), Some("inline"));
    assert_eq!(image.contents(), PNG_1X1);
    let html_text = msg.body_html(0).unwrap();
    assert!(html_text.contains(&format!("cid:{}", image.content_id().unwrap())), "{html_text}");
    // Dots at line starts survive the trip (stuffed by the client, unstuffed by the server).
    assert_eq!(msg.body_text(0).unwrap().replace("\r\n", "\n"), campaign_mail("x@y.test").text);
}

#[tokio::test]
async fn rejections_are_sorted_into_permanent_transient_and_configuration() {
    let Some(python) = require_aiosmtpd() else { return };
    let sink = SmtpSink::start(
        &python,
        &[
            "--reject-550",
            "gone@site.test",
            "--reject-451",
            "busy@site.test",
            "--reject-sender",
            "blocked@capture.test",
        ],
    );
    let mailer = SmtpMailer::from_url(&sink.url("?pool=1")).unwrap();

    let err = mailer.send(&campaign_mail("gone@site.test").build(now()).unwrap()).await.unwrap_err();
    match &err {
        SendError::Permanent { code: 550, stage: Stage::Recipient, message } => {
            assert!(message.contains("No such user"))
        }
        other => panic!("550 should be permanent at RCPT, got {other:?}"),
    }
    assert!(err.is_permanent() && !err.is_transient());

    let err = mailer.send(&campaign_mail("busy@site.test").build(now()).unwrap()).await.unwrap_err();
    assert!(matches!(err, SendError::Transient { code: Some(451), .. }), "{err:?}");
    assert!(err.is_transient());

    // The relay refusing our sender is not the recipient's fault: never a permanent error.
    let mut blocked = campaign_mail("owner@site.test");
    blocked.from = Sender::parse("blocked@capture.test").unwrap();
    let err = mailer.send(&blocked.build(now()).unwrap()).await.unwrap_err();
    assert!(matches!(err, SendError::Config { .. }), "{err:?}");

    // The pooled connection survived the refusals (RSET), and the next mail goes through on it.
    mailer.send(&campaign_mail("owner@site.test").build(now()).unwrap()).await.unwrap();
    let got = sink.wait_for(1).await;
    assert_eq!(got.len(), 1, "refused mail must not have been delivered");
    assert_eq!(got[0].envelope["rcpt_tos"], serde_json::json!(["owner@site.test"]));
}

#[tokio::test]
async fn nothing_listening_is_transient() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mailer = SmtpMailer::from_url(&format!("smtp://127.0.0.1:{port}?timeout=5s")).unwrap();
    let err = mailer.send(&campaign_mail("owner@site.test").build(now()).unwrap()).await.unwrap_err();
    assert!(err.is_transient(), "{err:?}");
    assert!(mailer.check().await.unwrap_err().is_transient());
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_as_transient() {
    // Accepts the TCP connection and says nothing: the greeting read must hit the deadline.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    let mailer = SmtpMailer::from_url(&format!("smtp://{addr}?timeout=300ms")).unwrap();
    let started = std::time::Instant::now();
    let err = mailer.send(&campaign_mail("owner@site.test").build(now()).unwrap()).await.unwrap_err();
    assert!(err.is_transient(), "{err:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "took {:?}", started.elapsed());
    hold.abort();
}

#[tokio::test]
async fn the_readiness_check_connects_greets_and_quits() {
    let Some(python) = require_aiosmtpd() else { return };
    let sink = SmtpSink::start(&python, &[]);
    let mailer: Arc<dyn Mailer> = Arc::new(SmtpMailer::from_url(&sink.url("")).unwrap());
    mailer.check().await.unwrap();
    assert!(sink.received().is_empty());
}

#[tokio::test]
async fn connections_are_pooled_and_bounded() {
    let Some(python) = require_aiosmtpd() else { return };
    let sink = SmtpSink::start(&python, &[]);
    let mailer = Arc::new(SmtpMailer::from_url(&sink.url("?pool=2")).unwrap());
    // Three in a row reuse one connection.
    for i in 0..3 {
        mailer.send(&campaign_mail(&format!("seq{i}@site.test")).build(now()).unwrap()).await.unwrap();
    }
    // Eight at once share at most two.
    let sends = (0..8).map(|i| {
        let mailer = mailer.clone();
        tokio::spawn(
            async move { mailer.send(&campaign_mail(&format!("par{i}@site.test")).build(now()).unwrap()).await },
        )
    });
    for s in sends {
        s.await.unwrap().unwrap();
    }
    let got = sink.wait_for(11).await;
    let peer = |r: &Received| r.envelope["peer"].to_string();
    let first: HashSet<String> = got[..3].iter().map(peer).collect();
    assert_eq!(first.len(), 1, "sequential sends should share one connection: {first:?}");
    let all: HashSet<String> = got.iter().map(peer).collect();
    assert!(all.len() <= 2, "at most two connections: {all:?}");
    let rcpts: HashSet<String> = got.iter().map(|r| r.envelope["rcpt_tos"][0].as_str().unwrap().to_string()).collect();
    assert_eq!(rcpts.len(), 11);
}

#[tokio::test]
async fn required_starttls_that_the_server_lacks_is_a_configuration_error() {
    let Some(python) = require_aiosmtpd() else { return };
    let sink = SmtpSink::start(&python, &[]);
    let mailer = SmtpMailer::from_url(&sink.url("?tls=starttls")).unwrap();
    // Never falls back to plain text: the mail is not sent and the settings are blamed.
    let err = mailer.send(&campaign_mail("owner@site.test").build(now()).unwrap()).await.unwrap_err();
    match &err {
        SendError::Config { message } => assert!(message.contains("STARTTLS"), "{message}"),
        other => panic!("expected a configuration error, got {other:?}"),
    }
    assert!(matches!(mailer.check().await, Err(SendError::Config { .. })));
    assert!(sink.received().is_empty());
}
