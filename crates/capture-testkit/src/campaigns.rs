//! Helpers of the campaign tests, shared by the in-process suite
//! (`crates/capture-server/tests/service/api/campaigns.rs`) and the multi-process one
//! (`crates/capture-cli/tests/api/campaigns.rs`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use capture_core::time::parse_iso;
use serde_json::{Value, json};

use crate::common::*;

pub const FROM: &str = "Capture Reports <reports@capture.test>";

/// Python with aiosmtpd: `CAPTURE_TEST_AIOSMTPD`, else the virtualenv in the target dir (the
/// parent of `target_tmpdir`, the test crate's `CARGO_TARGET_TMPDIR`: Cargo sets that only when
/// it builds a test crate, so the test passes it here). These tests fail without it (they never
/// pass by skipping).
pub fn aiosmtpd(target_tmpdir: impl AsRef<Path>) -> PathBuf {
    if let Some(p) = std::env::var_os("CAPTURE_TEST_AIOSMTPD").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let venv = target_tmpdir.as_ref().parent().unwrap().join("aiosmtpd-venv/bin/python");
    assert!(venv.is_file(), "aiosmtpd missing: run `bash tests/smtp/aiosmtpd-venv.sh` or set CAPTURE_TEST_AIOSMTPD");
    venv
}

/// A running `smtp_sink.py`, killed on drop.
pub struct Sink {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Sink {
    /// Start it with `args`; `target_tmpdir` is the test crate's `CARGO_TARGET_TMPDIR` (see
    /// [`aiosmtpd`]).
    pub fn start(target_tmpdir: impl AsRef<Path>, args: &[&str]) -> Sink {
        let dir = tempfile::tempdir().unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/smtp/smtp_sink.py");
        let mut child = Command::new(aiosmtpd(target_tmpdir))
            .arg(&script)
            .arg(dir.path())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start smtp_sink.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().strip_prefix("PORT ").and_then(|p| p.parse().ok()).expect("smtp_sink.py's port");
        Sink { child, port, dir }
    }

    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// The messages received so far: (raw text, envelope).
    pub fn received(&self) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        for n in 1.. {
            let Ok(meta) = std::fs::read_to_string(self.dir.path().join(format!("{n}.json"))) else { break };
            let raw = std::fs::read(self.dir.path().join(format!("{n}.eml"))).unwrap();
            out.push((String::from_utf8_lossy(&raw).to_string(), serde_json::from_str(&meta).unwrap()));
        }
        out
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `CAPTURE_CLOCK_OFFSET` that puts the service's clock at `instant` now.
pub fn offset_to(instant: &str) -> String {
    let target = parse_iso(instant).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let off = target - now;
    if off < 0 { format!("-{}ms", -off) } else { format!("+{off}ms") }
}

pub async fn post(app: &impl Api, key: &str, path: &str, body: &Value) -> (u16, Value) {
    let r = app.post_json(key, path, body).await;
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

pub async fn campaign(app: &impl Api, key: &str, id: &str) -> Value {
    let r = app.get(key, &format!("/v1/campaigns/{id}")).await;
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

/// Poll a campaign until `done(campaign)` holds.
pub async fn wait_for(app: &impl Api, key: &str, id: &str, limit: Duration, done: impl Fn(&Value) -> bool) -> Value {
    let done = &done;
    eventually(&format!("campaign {id} gets there"), limit, || async move {
        let c = campaign(app, key, id).await;
        if done(&c) { Ok(c) } else { Err(c) }
    })
    .await
}

pub fn row<'a>(c: &'a Value, email: &str) -> &'a Value {
    c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["recipientEmail"] == email)
        .unwrap_or_else(|| panic!("{email}: {c:#}"))
}

/// A top-level header, unfolded.
pub fn header(raw: &str, name: &str) -> Option<String> {
    let head = raw.split("\r\n\r\n").next().unwrap().replace("\r\n ", " ").replace("\r\n\t", " ");
    head.split("\r\n").find_map(|l| {
        l.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim().to_string())
    })
}

pub fn new_campaign(name: &str, zone: &str, hours: &str, send_at: &str, recipients: Value) -> Value {
    json!({"name": name, "sendAt": send_at, "timezone": zone, "sendHours": hours, "recipients": recipients})
}

/// Create (201) and launch (200) a campaign; its id.
pub async fn create_and_launch(app: &impl Api, key: &str, body: &Value) -> String {
    let (s, c) = post(app, key, "/v1/campaigns", body).await;
    assert_eq!(s, 201, "{c}");
    let id = c["id"].as_str().unwrap().to_string();
    let (s, l) = post(app, key, &format!("/v1/campaigns/{id}/launch"), &json!({})).await;
    assert_eq!(s, 200, "{l}");
    id
}
