//! The inbound SMTP server, driven by `lettre` as a real client and by raw TCP for protocol edge
//! cases. The sink here keeps messages in memory: it stands in for the store, which is not part
//! of this crate, and records exactly what the server handed over.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capture_mail::inbound::{Envelope, InboundConfig, InboundServer, InboundSink, SinkError, parse};
use futures_util::future::BoxFuture;
use lettre::message::{Mailbox, header::ContentType};
use lettre::transport::smtp::AsyncSmtpTransport;
use lettre::{AsyncTransport, Message, Tokio1Executor};
use tokio_util::sync::CancellationToken;

use crate::support::*;

#[derive(Default)]
struct MemorySink {
    mailboxes: HashSet<String>,
    delivered: Mutex<Vec<(Envelope, Vec<u8>)>>,
    failing: AtomicBool,
}

impl InboundSink for MemorySink {
    fn accept<'a>(&'a self, recipient: &'a str) -> BoxFuture<'a, Result<bool, SinkError>> {
        Box::pin(async move {
            if self.failing.load(Ordering::SeqCst) {
                return Err(SinkError("database unavailable".into()));
            }
            Ok(self.mailboxes.contains(&recipient.to_ascii_lowercase()))
        })
    }

    fn deliver<'a>(&'a self, envelope: &'a Envelope, message: Vec<u8>) -> BoxFuture<'a, Result<(), SinkError>> {
        Box::pin(async move {
            if self.failing.load(Ordering::SeqCst) {
                return Err(SinkError("database unavailable".into()));
            }
            self.delivered.lock().unwrap().push((envelope.clone(), message));
            Ok(())
        })
    }
}

impl MemorySink {
    fn messages(&self) -> Vec<(Envelope, Vec<u8>)> {
        self.delivered.lock().unwrap().clone()
    }

    /// Wait (polling, 10 s deadline) until `n` messages were delivered.
    async fn wait_for(&self, n: usize) -> Vec<(Envelope, Vec<u8>)> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let got = self.messages();
            if got.len() >= n {
                return got;
            }
            assert!(Instant::now() < deadline, "only {} of {n} messages delivered", got.len());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

struct Running {
    addr: SocketAddr,
    sink: Arc<MemorySink>,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

fn config() -> InboundConfig {
    InboundConfig {
        hostname: "inbox.capture.test".into(),
        max_message_bytes: 64 * 1024,
        max_recipients: 3,
        per_ip_rate: 100,
        max_connections: 8,
        max_connections_per_ip: 8,
        idle_timeout: Duration::from_secs(10),
        data_timeout: Duration::from_secs(10),
    }
}

async fn start(config: InboundConfig) -> Running {
    let sink = Arc::new(MemorySink {
        mailboxes: ["agent@inbox.capture.test", "other@inbox.capture.test", "third@inbox.capture.test"]
            .map(String::from)
            .into(),
        ..Default::default()
    });
    let server = InboundServer::bind("127.0.0.1:0", config, sink.clone()).await.unwrap();
    let addr = server.local_addr();
    let cancel = CancellationToken::new();
    let task = tokio::spawn(server.run(cancel.clone()));
    Running { addr, sink, cancel, task }
}

fn lettre_client(addr: SocketAddr) -> AsyncSmtpTransport<Tokio1Executor> {
    AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(addr.ip().to_string())
        .port(addr.port())
        .timeout(Some(Duration::from_secs(10)))
        .build()
}

fn verification_mail(to: &str) -> Message {
    Message::builder()
        .from("Acme <no-reply@acme.test>".parse::<Mailbox>().unwrap())
        .to(to.parse::<Mailbox>().unwrap())
        .subject("Confirm your Acme account")
        .header(ContentType::TEXT_PLAIN)
        .body(String::from(
            "Hi!\n\nYour verification code is 482913.\n\nOr confirm here:\nhttps://acme.test/verify?token=8f14e45fceea167a5a36dedd4bea2543\n.\n..starts with two dots\n. one dot and text\n",
        ))
        .unwrap()
}

#[tokio::test]
async fn mail_sent_with_lettre_reaches_the_sink_byte_exact() {
    let srv = start(config()).await;
    let mail = verification_mail("Agent@inbox.capture.test");
    let response = lettre_client(srv.addr).send(mail.clone()).await.unwrap();
    assert_eq!(u16::from(response.code()), 250);

    let got = srv.sink.wait_for(1).await;
    let (env, raw) = &got[0];
    assert_eq!(env.mail_from, "no-reply@acme.test");
    assert_eq!(env.rcpt_to, ["Agent@inbox.capture.test"]);
    assert_eq!(env.peer.ip(), srv.addr.ip());
    // Exactly the client's bytes after unstuffing; the CRLF before the final dot ends the last line.
    let mut expected = mail.formatted();
    expected.extend_from_slice(b"\r\n");
    assert_eq!(String::from_utf8_lossy(raw), String::from_utf8_lossy(&expected));
    assert_eq!(*raw, expected);

    let parsed = parse(raw);
    assert_eq!(parsed.subject.as_deref(), Some("Confirm your Acme account"));
    assert_eq!(parsed.code().map(|c| c.code.as_str()), Some("482913"));
    assert_eq!(
        parsed.verification_link().map(|l| l.url.as_str()),
        Some("https://acme.test/verify?token=8f14e45fceea167a5a36dedd4bea2543")
    );
    srv.cancel.cancel();
    srv.task.await.unwrap();
}

#[tokio::test]
async fn an_unknown_address_is_refused_with_550() {
    let srv = start(config()).await;
    let err = lettre_client(srv.addr).send(verification_mail("nobody@inbox.capture.test")).await.unwrap_err();
    assert!(err.is_permanent(), "{err:?}");
    assert_eq!(err.status().map(u16::from), Some(550));

    let (mut c, _) = Client::open(srv.addr).await;
    expect(&c.cmd("EHLO client.test").await, "250");
    expect(&c.cmd("MAIL FROM:<a@b.test>").await, "250");
    expect(&c.cmd("RCPT TO:<nobody@inbox.capture.test>").await, "550 5.1.1");
    // Relaying is not a thing here: any other domain is just as unknown.
    expect(&c.cmd("RCPT TO:<someone@gmail.com>").await, "550 5.1.1");
    expect(&c.cmd("DATA").await, "554");
    assert!(srv.sink.messages().is_empty());
}

#[tokio::test]
async fn an_oversized_message_gets_552_and_the_connection_stays_usable() {
    let srv = start(config()).await;
    let (mut c, greeting) = Client::open(srv.addr).await;
    expect(&greeting, "220 inbox.capture.test");
    let ehlo = c.cmd("EHLO client.test").await;
    for ext in ["SIZE 65536", "8BITMIME", "PIPELINING", "SMTPUTF8", "ENHANCEDSTATUSCODES"] {
        assert!(ehlo.contains(ext), "{ext} missing from {ehlo:?}");
    }
    // Declared too big: refused before any data.
    expect(&c.cmd("MAIL FROM:<a@b.test> SIZE=70000").await, "552 5.3.4");
    // Undeclared and too big: read to the end, dropped, 552.
    expect(&c.cmd("MAIL FROM:<a@b.test> SIZE=100").await, "250");
    expect(&c.cmd("RCPT TO:<agent@inbox.capture.test>").await, "250");
    expect(&c.cmd("DATA").await, "354");
    let line = format!("{}\r\n", "x".repeat(998));
    let mut body = b"Subject: big\r\n\r\n".to_vec();
    while body.len() < 100 * 1024 {
        body.extend_from_slice(line.as_bytes());
    }
    c.write(&body).await;
    expect(&c.cmd(".").await, "552 5.3.4");
    // Same connection, a normal message.
    expect(&c.cmd("MAIL FROM:<a@b.test>").await, "250");
    expect(&c.cmd("RCPT TO:<agent@inbox.capture.test>").await, "250");
    expect(&c.cmd("DATA").await, "354");
    expect(&c.cmd("Subject: small\r\n\r\nhello\r\n.").await, "250");
    expect(&c.cmd("QUIT").await, "221");
    let got = srv.sink.wait_for(1).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1, b"Subject: small\r\n\r\nhello\r\n");
}

#[tokio::test]
async fn recipients_are_bounded_and_counted_once() {
    let srv = start(config()).await;
    let (mut c, _) = Client::open(srv.addr).await;
    expect(&c.cmd("EHLO client.test").await, "250");
    expect(&c.cmd("MAIL FROM:<>").await, "250");
    expect(&c.cmd("RCPT TO:<agent@inbox.capture.test>").await, "250");
    expect(&c.cmd("RCPT TO:<AGENT@inbox.capture.test>").await, "250");
    expect(&c.cmd("RCPT TO:<other@inbox.capture.test>").await, "250");
    expect(&c.cmd("RCPT TO:<third@inbox.capture.test>").await, "250");
    expect(&c.cmd("RCPT TO:<fourth@inbox.capture.test>").await, "452 4.5.3");
    expect(&c.cmd("DATA").await, "354");
    expect(&c.cmd("Subject: bounce\r\n\r\nnull sender\r\n.").await, "250");
    let got = srv.sink.wait_for(1).await;
    assert_eq!(got[0].0.mail_from, "");
    assert_eq!(got[0].0.rcpt_to, ["agent@inbox.capture.test", "other@inbox.capture.test", "third@inbox.capture.test"]);
}

#[tokio::test]
async fn a_client_sending_too_fast_is_limited() {
    let srv = start(InboundConfig { per_ip_rate: 3, ..config() }).await;
    let client = lettre_client(srv.addr);
    for _ in 0..3 {
        client.send(verification_mail("agent@inbox.capture.test")).await.unwrap();
    }
    // A new connection from the same address is turned away at the greeting.
    let err = client.send(verification_mail("agent@inbox.capture.test")).await.unwrap_err();
    assert!(err.is_transient() || err.to_string().contains("421"), "{err:?}");
    let (mut c, greeting) = Client::open(srv.addr).await;
    expect(&greeting, "421 4.7.0");
    assert!(c.closed_within(Duration::from_secs(5)).await);
    assert_eq!(srv.sink.messages().len(), 3);

    // Within one connection the limit answers MAIL with 450, and repeated tries end the session.
    let srv = start(InboundConfig { per_ip_rate: 1, ..config() }).await;
    let (mut c, _) = Client::open(srv.addr).await;
    expect(&c.cmd("HELO client.test").await, "250");
    expect(&c.cmd("MAIL FROM:<a@b.test>").await, "250");
    expect(&c.cmd("RCPT TO:<agent@inbox.capture.test>").await, "250");
    expect(&c.cmd("DATA").await, "354");
    expect(&c.cmd("Subject: 1\r\n\r\none\r\n.").await, "250");
    for _ in 0..3 {
        expect(&c.cmd("MAIL FROM:<a@b.test>").await, "450 4.7.1");
    }
    expect(&c.cmd("MAIL FROM:<a@b.test>").await, "421 4.7.0");
    assert!(c.closed_within(Duration::from_secs(5)).await);
}

#[tokio::test]
async fn malformed_mime_is_stored_and_parsed_without_panic() {
    let srv = start(config()).await;
    let samples: Vec<&[u8]> = vec![
        b"Content-Type: multipart/mixed; boundary=\"never-closed\"\r\nSubject: =?utf-8?B?broken base64?=\r\n\r\n--never-closed\r\nContent-Type: text/html\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!not base64!!!\r\n--never-closed\r\nContent-Type: application/pdf; name=\"a.pdf\"\r\n\r\n%PDF\xff\xfe\x00\x01\r\n",
        b"no headers at all, just words and a code 1234 maybe\r\n",
        b"Subject: \xff\xfe\xfd invalid UTF-8\r\nContent-Type: text/plain; charset=x-unknown\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n=ZZ=4\r\n=\r\n",
        b"\r\n\r\n\r\n",
        b"Content-Type: message/rfc822\r\n\r\nContent-Type: multipart/alternative; boundary=b\r\n\r\n--b\r\n--b--\r\n",
    ];
    let (mut c, _) = Client::open(srv.addr).await;
    expect(&c.cmd("EHLO client.test").await, "250");
    for sample in &samples {
        expect(&c.cmd("MAIL FROM:<a@b.test> BODY=8BITMIME").await, "250");
        expect(&c.cmd("RCPT TO:<agent@inbox.capture.test>").await, "250");
        expect(&c.cmd("DATA").await, "354");
        c.write(sample).await;
        expect(&c.cmd(".").await, "250");
    }
    let got = srv.sink.wait_for(samples.len()).await;
    for ((_, raw), sample) in got.iter().zip(&samples) {
        assert_eq!(raw.as_slice(), *sample, "stored byte for byte");
        let parsed = parse(raw);
        let _ = serde_json::to_string(&parsed).unwrap();
    }
    // What parses of the broken multipart is kept: the PDF part is listed with its name.
    let first = parse(&got[0].1);
    assert!(
        first.attachments.iter().any(|a| a.name.as_deref() == Some("a.pdf") && a.content_type == "application/pdf")
    );
}

#[tokio::test]
async fn a_slow_client_times_out() {
    let srv = start(InboundConfig {
        idle_timeout: Duration::from_millis(300),
        data_timeout: Duration::from_millis(800),
        ..config()
    })
    .await;
    // Says nothing after the greeting.
    let (mut c, _) = Client::open(srv.addr).await;
    let started = Instant::now();
    expect(&c.reply().await, "421 4.4.2");
    assert!(started.elapsed() >= Duration::from_millis(250), "{:?}", started.elapsed());
    assert!(c.closed_within(Duration::from_secs(5)).await);

    // Trickles message data: every read is in time, the message as a whole is not.
    let (mut c, _) = Client::open(srv.addr).await;
    expect(&c.cmd("EHLO client.test").await, "250");
    expect(&c.cmd("MAIL FROM:<a@b.test>").await, "250");
    expect(&c.cmd("RCPT TO:<agent@inbox.capture.test>").await, "250");
    expect(&c.cmd("DATA").await, "354");
    let started = Instant::now();
    let reply = loop {
        c.try_write(b"x").await;
        // The pause is the slowness under test, not synchronisation.
        tokio::time::sleep(Duration::from_millis(100)).await;
        if started.elapsed() > Duration::from_secs(5) {
            panic!("no timeout after 5 s");
        }
        if started.elapsed() > Duration::from_millis(700) {
            break c.reply().await;
        }
    };
    expect(&reply, "421 4.4.2");
    assert!(srv.sink.messages().is_empty());
}

#[tokio::test]
async fn protocol_edge_cases() {
    let srv = start(config()).await;
    let (mut c, _) = Client::open(srv.addr).await;
    expect(&c.cmd("MAIL FROM:<a@b.test>").await, "503 5.5.1");
    expect(&c.cmd("EHLO").await, "501");
    expect(&c.cmd("FOO bar").await, "500 5.5.2");
    expect(&c.cmd("EXPN staff").await, "502 5.5.1");
    expect(&c.cmd("STARTTLS").await, "502 5.5.1");
    expect(&c.cmd("AUTH PLAIN AGFAYg==").await, "502 5.5.1");
    expect(&c.cmd("ehlo client.test").await, "250-inbox.capture.test");
    expect(&c.cmd("VRFY agent").await, "252");
    expect(&c.cmd("NOOP").await, "250");
    expect(&c.cmd("HELP").await, "214");
    expect(&c.cmd("RCPT TO:<agent@inbox.capture.test>").await, "503 5.5.1");
    expect(&c.cmd("DATA").await, "503 5.5.1");
    expect(&c.cmd("MAIL FROM:<a@b.test>").await, "250");
    expect(&c.cmd("MAIL FROM:<a@b.test>").await, "503 5.5.1");
    expect(&c.cmd("RSET").await, "250");
    expect(&c.cmd("MAIL FROM:a@b.test").await, "501");
    expect(&c.cmd("MAIL FROM:<a@b.test> FOO=1").await, "555");
    expect(&c.cmd("MAIL FROM:<a@b.test> SIZE=abc").await, "501");
    expect(&c.cmd(&format!("NOOP {}", "x".repeat(5000))).await, "500 5.5.2 Line too long");
    // Still in sync after the long line.
    expect(&c.cmd("NOOP").await, "250");

    // Pipelining: a whole transaction in one write, the replies in order.
    c.write(
        b"MAIL FROM:<a@b.test> SMTPUTF8\r\nRCPT TO:<agent@inbox.capture.test>\r\nRCPT TO:<nobody@inbox.capture.test>\r\nDATA\r\n",
    )
    .await;
    expect(&c.reply().await, "250");
    expect(&c.reply().await, "250");
    expect(&c.reply().await, "550");
    expect(&c.reply().await, "354");
    // A dot after a bare LF does not end the data (no smuggling of a second message), and
    // dot-stuffed lines are unstuffed.
    c.write(b"Subject: one\r\n\r\nfirst\n.\nMAIL FROM:<evil@x.test>\r\n..dotted\r\n.\r\n").await;
    expect(&c.reply().await, "250");
    expect(&c.cmd("QUIT").await, "221");
    assert!(c.closed_within(Duration::from_secs(5)).await);
    let got = srv.sink.wait_for(1).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1, b"Subject: one\r\n\r\nfirst\n.\nMAIL FROM:<evil@x.test>\r\n.dotted\r\n");
    assert!(got[0].0.smtputf8);
    assert_eq!(got[0].0.helo, "client.test");

    // A web client on the SMTP port is sent away.
    let (mut c, _) = Client::open(srv.addr).await;
    expect(&c.cmd("GET / HTTP/1.1").await, "421");
    assert!(c.closed_within(Duration::from_secs(5)).await);

    // Garbage without end closes the session after a bounded number of errors.
    let (mut c, _) = Client::open(srv.addr).await;
    let mut last = String::new();
    for _ in 0..25 {
        last = c.cmd("XYZZY").await;
        if last.starts_with("421") {
            break;
        }
    }
    expect(&last, "421 4.7.0");
}

#[tokio::test]
async fn sink_failures_are_temporary_for_the_client() {
    let srv = start(config()).await;
    let (mut c, _) = Client::open(srv.addr).await;
    expect(&c.cmd("EHLO client.test").await, "250");
    expect(&c.cmd("MAIL FROM:<a@b.test>").await, "250");
    expect(&c.cmd("RCPT TO:<agent@inbox.capture.test>").await, "250");
    srv.sink.failing.store(true, Ordering::SeqCst);
    expect(&c.cmd("RCPT TO:<other@inbox.capture.test>").await, "451 4.3.0");
    expect(&c.cmd("DATA").await, "354");
    expect(&c.cmd("Subject: x\r\n\r\ny\r\n.").await, "451 4.3.0");
    assert!(srv.sink.messages().is_empty());
}

/// A connection from another loopback address (127.0.0.2), a second client.
async fn connect_from(source: &str, addr: SocketAddr) -> Client {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    Client::from_stream(socket.connect(addr).await.unwrap())
}

#[tokio::test]
async fn one_client_cannot_hold_every_connection() {
    let srv = start(InboundConfig { max_connections: 3, max_connections_per_ip: 2, ..config() }).await;
    let (mut a1, g) = Client::open(srv.addr).await;
    expect(&g, "220");
    let (_a2, g) = Client::open(srv.addr).await;
    expect(&g, "220");
    let (mut a3, g) = Client::open(srv.addr).await;
    expect(&g, "421 4.7.0 Too many connections from your address");
    assert!(a3.closed_within(Duration::from_secs(5)).await);
    // Another client still gets in.
    let mut b = connect_from("127.0.0.2", srv.addr).await;
    expect(&b.reply().await, "220");
    // The count goes down when a connection ends.
    expect(&a1.cmd("QUIT").await, "221");
    assert!(a1.closed_within(Duration::from_secs(5)).await);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (_c, g) = Client::open(srv.addr).await;
        if g.starts_with("220") {
            break;
        }
        assert!(Instant::now() < deadline, "the slot was never given back: {g}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn connections_beyond_the_bound_are_turned_away_and_cancel_ends_the_server() {
    let srv = start(InboundConfig { max_connections: 1, ..config() }).await;
    let (mut first, greeting) = Client::open(srv.addr).await;
    expect(&greeting, "220");
    let (mut second, greeting) = Client::open(srv.addr).await;
    expect(&greeting, "421 4.3.2");
    assert!(second.closed_within(Duration::from_secs(5)).await);
    expect(&first.cmd("NOOP").await, "250");

    // Cancelling tells the idle session and stops the server.
    srv.cancel.cancel();
    expect(&first.reply().await, "421 4.3.2");
    tokio::time::timeout(Duration::from_secs(10), srv.task).await.expect("server did not stop").unwrap();
    assert!(tokio::net::TcpStream::connect(srv.addr).await.is_err());
}
