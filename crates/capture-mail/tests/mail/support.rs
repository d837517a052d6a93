//! Shared helpers: the aiosmtpd server (`tests/smtp/smtp_sink.py` from the virtualenv
//! `tests/smtp/aiosmtpd-venv.sh` makes), a raw SMTP client for protocol edge cases, polling with
//! deadlines.

use std::io::{BufRead, BufReader as StdBufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// The virtualenv's python: `CAPTURE_TEST_AIOSMTPD`, else the one in the target dir.
fn aiosmtpd_python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CAPTURE_TEST_AIOSMTPD").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "CAPTURE_TEST_AIOSMTPD={} does not exist", p.display());
        return Some(p);
    }
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).parent()?.join("aiosmtpd-venv/bin/python");
    venv.is_file().then_some(venv)
}

/// The python with aiosmtpd, or `None` (and a loud notice) outside CI. Under `CI=true` a missing
/// server fails the test: it must never pass by skipping.
pub fn require_aiosmtpd() -> Option<PathBuf> {
    if let Some(p) = aiosmtpd_python() {
        return Some(p);
    }
    let hint = "install it with `bash tests/smtp/aiosmtpd-venv.sh` (scripts/test.sh does) or set CAPTURE_TEST_AIOSMTPD";
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("aiosmtpd (the local SMTP server) is missing: {hint}");
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\n!!!!!!!! SKIPPED: aiosmtpd (the local SMTP server) is missing; {hint} !!!!!!!!\n"
    );
    None
}

/// One message the sink received: the bytes and the envelope.
pub struct Received {
    pub raw: Vec<u8>,
    pub envelope: Value,
}

/// A running `smtp_sink.py`, killed on drop.
pub struct SmtpSink {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl SmtpSink {
    /// Start the sink; `args` are its options (`--reject-550 ADDR`, …).
    pub fn start(python: &Path, args: &[&str]) -> SmtpSink {
        let dir = tempfile::tempdir().unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/smtp/smtp_sink.py");
        let mut child = Command::new(python)
            .arg(&script)
            .arg(dir.path())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start smtp_sink.py");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = StdBufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(30)).expect("smtp_sink.py did not report its port in 30 s");
        let port = line.trim().strip_prefix("PORT ").and_then(|p| p.parse().ok()).unwrap_or_else(|| {
            let _ = child.kill();
            panic!("smtp_sink.py said {line:?}")
        });
        SmtpSink { child, port, dir }
    }

    /// `smtp://127.0.0.1:<port>` with extra query text.
    pub fn url(&self, query: &str) -> String {
        format!("smtp://127.0.0.1:{}{query}", self.port)
    }

    /// The messages received so far, in order.
    pub fn received(&self) -> Vec<Received> {
        let mut out = Vec::new();
        for n in 1.. {
            let meta = self.dir.path().join(format!("{n}.json"));
            let Ok(text) = std::fs::read_to_string(&meta) else { break };
            let raw = std::fs::read(self.dir.path().join(format!("{n}.eml"))).unwrap();
            out.push(Received { raw, envelope: serde_json::from_str(&text).unwrap() });
        }
        out
    }

    /// Wait until `n` messages have arrived (polling, 10 s deadline).
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            assert!(Instant::now() < deadline, "only {} of {n} messages arrived", got.len());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A 1×1 PNG.
pub const PNG_1X1: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0A, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

/// A raw SMTP client: write lines, read whole (multi-line) replies.
pub struct Client {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
}

impl Client {
    pub async fn connect(addr: std::net::SocketAddr) -> Client {
        Client::from_stream(TcpStream::connect(addr).await.unwrap())
    }

    pub fn from_stream(stream: TcpStream) -> Client {
        let (r, w) = stream.into_split();
        Client { reader: BufReader::new(r), writer: w }
    }

    /// Connect and read the greeting.
    pub async fn open(addr: std::net::SocketAddr) -> (Client, String) {
        let mut c = Client::connect(addr).await;
        let greeting = c.reply().await;
        (c, greeting)
    }

    pub async fn write(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.unwrap();
    }

    /// Write, ignoring a connection the server already closed.
    pub async fn try_write(&mut self, bytes: &[u8]) {
        let _ = self.writer.write_all(bytes).await;
    }

    /// The next reply (all its lines), within 10 s; empty if the server closed.
    pub async fn reply(&mut self) -> String {
        let mut out = String::new();
        loop {
            let mut line = String::new();
            let n = tokio::time::timeout(Duration::from_secs(10), self.reader.read_line(&mut line))
                .await
                .expect("no reply within 10 s")
                .unwrap_or(0);
            if n == 0 {
                return out;
            }
            out.push_str(&line);
            if line.len() < 4 || line.as_bytes()[3] != b'-' {
                return out;
            }
        }
    }

    /// Send a command line and read its reply.
    pub async fn cmd(&mut self, line: &str) -> String {
        self.write(format!("{line}\r\n").as_bytes()).await;
        self.reply().await
    }

    /// Whether the server closes the connection within `within`.
    pub async fn closed_within(&mut self, within: Duration) -> bool {
        let mut buf = [0u8; 256];
        matches!(tokio::time::timeout(within, self.reader.read(&mut buf)).await, Ok(Ok(0)) | Ok(Err(_)))
    }
}

/// Assert a reply starts with `code`.
#[track_caller]
pub fn expect(reply: &str, code: &str) {
    assert!(reply.starts_with(code), "expected {code}, got {reply:?}");
}
