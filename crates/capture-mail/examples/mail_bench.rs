//! Throughput of the mail engine on this machine: campaign mail through `SmtpMailer`'s pool into
//! our own `InboundServer` on loopback (both ends are ours, so neither a Python server nor the
//! network sets the pace), and `parse` over the test fixtures.
//!
//! `cargo run --release -p capture-mail --example mail_bench [messages] [concurrency]`

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use capture_mail::inbound::{Envelope, InboundConfig, InboundServer, InboundSink, SinkError, parse};
use capture_mail::outbound::{CampaignMail, InlineImage, Mailer, Sender, SmtpMailer};
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

struct Counter(AtomicUsize, AtomicUsize);

impl InboundSink for Counter {
    fn accept<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<bool, SinkError>> {
        Box::pin(async { Ok(true) })
    }
    fn deliver<'a>(&'a self, _: &'a Envelope, message: Vec<u8>) -> BoxFuture<'a, Result<(), SinkError>> {
        self.0.fetch_add(1, Ordering::Relaxed);
        self.1.fetch_add(message.len(), Ordering::Relaxed);
        Box::pin(async { Ok(()) })
    }
}

fn mail(i: usize, image_bytes: usize) -> CampaignMail {
    // Incompressible bytes stand in for a screenshot (base64 makes them a third larger).
    let image: Vec<u8> = (0..image_bytes).map(|j| (j.wrapping_mul(2654435761) >> 13) as u8).collect();
    CampaignMail {
        from: Sender::parse("Capture Reports <reports@capture.test>").unwrap(),
        to: format!("r{i}@inbox.test"),
        subject: format!("Audit of site {i}: 87/100"),
        text: "Your site scored 87.\nTop findings:\n- slow LCP\n- missing alt text\nReport: https://capture.test/r/1\n"
            .repeat(4),
        html: format!("<h1>87</h1><img src=\"cid:shot@capture.test\"><p>{}</p>", "Findings. ".repeat(100)),
        inline_image: (image_bytes > 0).then(|| InlineImage::png("shot@capture.test", image)),
        unsubscribe_url: "https://capture.test/u/tok".into(),
        unsubscribe_mailto: "unsubscribe@capture.test".into(),
        extra_headers: vec![("X-Capture-Campaign".into(), "cmp_bench".into())],
    }
}

async fn run(messages: usize, concurrency: usize, image_bytes: usize) {
    let sink = Arc::new(Counter(AtomicUsize::new(0), AtomicUsize::new(0)));
    let config = InboundConfig {
        per_ip_rate: 0,
        max_connections: 256,
        max_connections_per_ip: 256,
        max_message_bytes: 50 * 1024 * 1024,
        ..InboundConfig::default()
    };
    let server = InboundServer::bind("127.0.0.1:0", config, sink.clone()).await.unwrap();
    let addr = server.local_addr();
    let cancel = CancellationToken::new();
    let task = tokio::spawn(server.run(cancel.clone()));
    let mailer = Arc::new(SmtpMailer::from_url(&format!("smtp://{addr}?pool={concurrency}")).unwrap());
    let built: Arc<Vec<_>> =
        Arc::new((0..messages).map(|i| mail(i, image_bytes).build(chrono::Utc::now()).unwrap()).collect());
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (mailer, built, next) = (mailer.clone(), built.clone(), next.clone());
            tokio::spawn(async move {
                let mut lat = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(m) = built.get(i) else { break };
                    let t = Instant::now();
                    mailer.send(m).await.unwrap();
                    lat.push(t.elapsed());
                }
                lat
            })
        })
        .collect();
    let mut lat: Vec<Duration> = Vec::new();
    for w in workers {
        lat.extend(w.await.unwrap());
    }
    let elapsed = started.elapsed();
    lat.sort();
    let size = built[0].raw().len();
    println!(
        "send→receive  msg {:>7} B  conc {concurrency}: {:>7.0} msg/s  p50 {:>6.2} ms  p95 {:>6.2} ms  ({} delivered, {:.1} MB/s)",
        size,
        messages as f64 / elapsed.as_secs_f64(),
        lat[lat.len() / 2].as_secs_f64() * 1e3,
        lat[lat.len() * 95 / 100].as_secs_f64() * 1e3,
        sink.0.load(Ordering::Relaxed),
        sink.1.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64() / 1e6,
    );
    cancel.cancel();
    task.await.unwrap();
}

fn bench_parse() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mail/fixtures");
    let mut names: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    for path in names {
        let raw = std::fs::read_to_string(&path).unwrap().replace('\n', "\r\n").into_bytes();
        let n = 2000;
        let started = Instant::now();
        let mut found = 0;
        for _ in 0..n {
            found += parse(&raw).links.len();
        }
        let per = started.elapsed() / n;
        // mail-parser alone, for scale.
        let started = Instant::now();
        let mut parts = 0;
        for _ in 0..n {
            parts += mail_parser::MessageParser::default().parse(&raw).map_or(0, |m| m.parts.len());
        }
        assert!(parts > 0);
        let bare = started.elapsed() / n;
        println!(
            "parse {:<24} {:>6} B: {:>7.1} µs/message ({} links; mail-parser alone {:.1} µs)",
            path.file_name().unwrap().to_string_lossy(),
            raw.len(),
            per.as_secs_f64() * 1e6,
            found / n as usize,
            bare.as_secs_f64() * 1e6
        );
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let messages = args.first().copied().unwrap_or(2000);
    let concurrency = args.get(1).copied().unwrap_or(4);
    for image in [0, 200 * 1024] {
        for conc in [1, concurrency] {
            run(messages, conc, image).await;
        }
    }
    bench_parse();
}
