//! Helpers of the hardening tests, shared by the in-process suite
//! (`crates/capture-server/tests/service/api/hardening.rs`) and the multi-process one
//! (`crates/capture-cli/tests/api/hardening.rs`).

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::*;

pub fn site_pages() -> Vec<(&'static str, &'static str, String)> {
    vec![("/red", "text/html", solid("#ff0000")), ("/blue", "text/html", solid("#0000ff"))]
}

/// A job whose own script never finishes: it holds a worker for its `timeoutMs` (half a
/// minute), the bound a script gets.
pub fn hanging_job(url: &str) -> Value {
    json!({"url": url, "waitUntil": "load", "timeoutMs": 30000, "preScreenshotJs": "await new Promise(() => {})"})
}

pub async fn statuses(app: &impl Api, key: &str, ids: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for id in ids {
        let v: Value = app.get(key, &format!("/v1/screenshot/{id}")).await.json().await.unwrap();
        out.push(v["status"].as_str().unwrap().to_string());
    }
    out
}

// ---- The smaller holes: credentials, uploads, the share page, logs. ----

/// A PNG whose header claims `w`×`h` (a valid IHDR, checksum and all) over one pixel of
/// data: what a decompression bomb looks like before it is inflated.
pub fn png_claiming(w: u32, h: u32) -> Vec<u8> {
    let mut b = Vec::new();
    image::RgbImage::from_pixel(1, 1, image::Rgb([1, 2, 3]))
        .write_to(&mut std::io::Cursor::new(&mut b), image::ImageFormat::Png)
        .unwrap();
    b[16..20].copy_from_slice(&w.to_be_bytes());
    b[20..24].copy_from_slice(&h.to_be_bytes());
    let crc = crc32(&b[12..29]);
    b[29..33].copy_from_slice(&crc.to_be_bytes());
    b
}

pub fn crc32(data: &[u8]) -> u32 {
    let mut c = 0xFFFF_FFFFu32;
    for &byte in data {
        c ^= u32::from(byte);
        for _ in 0..8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
        }
    }
    !c
}

pub async fn upload_file(app: &impl Api, key: &str, bytes: Vec<u8>, name: &str) -> reqwest::Response {
    let form = reqwest::multipart::Form::new()
        .part("file", reqwest::multipart::Part::bytes(bytes).file_name(name.to_string()));
    app.client().post(app.url("/v1/screenshot/upload")).bearer_auth(key).multipart(form).send().await.unwrap()
}

pub fn small_png() -> Vec<u8> {
    let mut b = Vec::new();
    image::RgbImage::from_pixel(64, 48, image::Rgb([200, 10, 10]))
        .write_to(&mut std::io::Cursor::new(&mut b), image::ImageFormat::Png)
        .unwrap();
    b
}

pub const TINY_PDF: &[u8] = b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj 3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n";

/// `name=value` of every Set-Cookie, joined for a Cookie header.
pub fn cookies(r: &reqwest::Response) -> String {
    r.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok()?.split(';').next().map(str::to_string))
        .collect::<Vec<_>>()
        .join("; ")
}

pub fn hidden_field(html: &str, name: &str) -> String {
    let at = html.find(&format!("name=\"{name}\"")).expect("the hidden field");
    let rest = &html[at..];
    rest.split("value=\"").nth(1).unwrap().split('"').next().unwrap().to_string()
}

pub fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// A client whose connections come from `ip` (any 127.x address reaches the loopback
/// listener on Linux), so the service sees another client address.
pub fn client_from(ip: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .local_address(ip.parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap()
}

/// `POST /login` with the form's CSRF token, from 127.0.0.1.
pub async fn sign_in_attempt(app: &impl Api, email: &str, password: &str) -> reqwest::Response {
    sign_in_from(&no_redirects(), app, email, password).await
}

/// `POST /login` with the form's CSRF token, through `http`.
pub async fn sign_in_from(http: &reqwest::Client, app: &impl Api, email: &str, password: &str) -> reqwest::Response {
    let page = http.get(app.url("/login")).send().await.unwrap();
    let anon = cookies(&page);
    let csrf = hidden_field(&page.text().await.unwrap(), "csrf");
    let body = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("csrf", &csrf)
        .append_pair("email", email)
        .append_pair("password", password)
        .finish();
    http.post(app.url("/login"))
        .header("cookie", anon)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap()
}

/// A new account with a password, signed in: (email, the session's Cookie header).
pub async fn signed_in(app: &impl Harness) -> (String, String) {
    let email = format!("w{}@example.com", rand_suffix());
    let password = "correct horse battery staple";
    app.create_user(&email, "free", Some(password), false).await;
    let r = sign_in_attempt(app, &email, password).await;
    assert_eq!(r.status(), 303, "sign-in failed");
    let c = cookies(&r);
    assert!(c.contains("capture_session="), "{c}");
    (email, c)
}

/// A running `tests/smtp/smtp_sink.py` (aiosmtpd) that keeps what it receives; killed on drop.
pub struct SmtpSink {
    child: std::process::Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl SmtpSink {
    /// Start it, or None (with a notice) when aiosmtpd is not installed outside CI.
    /// `target_tmpdir` is the test crate's `CARGO_TARGET_TMPDIR`, whose parent (the target dir)
    /// holds the virtualenv (Cargo sets it only when it builds a test crate).
    pub fn start(target_tmpdir: impl AsRef<std::path::Path>) -> Option<SmtpSink> {
        use std::io::BufRead;
        let python = match std::env::var_os("CAPTURE_TEST_AIOSMTPD").filter(|p| !p.is_empty()) {
            Some(p) => std::path::PathBuf::from(p),
            None => {
                let venv = target_tmpdir.as_ref().parent()?.join("aiosmtpd-venv/bin/python");
                if !venv.is_file() {
                    assert!(
                        std::env::var("CI").as_deref() != Ok("true"),
                        "aiosmtpd is missing (CAPTURE_TEST_AIOSMTPD)"
                    );
                    eprintln!("\n!!!!!!!! SKIPPED: aiosmtpd is missing; set CAPTURE_TEST_AIOSMTPD !!!!!!!!\n");
                    return None;
                }
                venv
            }
        };
        let dir = tempfile::tempdir().unwrap();
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/smtp/smtp_sink.py");
        let mut child = std::process::Command::new(python)
            .arg(&script)
            .arg(dir.path())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start smtp_sink.py");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().strip_prefix("PORT ").and_then(|p| p.parse().ok()).expect("PORT n");
        Some(SmtpSink { child, port, dir })
    }

    /// The messages received so far (raw bytes), waiting up to 10 s for `n`.
    pub async fn wait_for(&self, n: usize) -> Vec<String> {
        eventually(&format!("{n} messages arrive"), Duration::from_secs(10), || async move {
            let got: Vec<String> = (1..)
                .map_while(|i| {
                    std::fs::metadata(self.dir.path().join(format!("{i}.json"))).ok()?;
                    std::fs::read(self.dir.path().join(format!("{i}.eml"))).ok()
                })
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .collect();
            if got.len() >= n { Ok(got) } else { Err(got.len()) }
        })
        .await
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The verification link in a raw mail (undoing quoted-printable soft breaks).
pub fn verification_link(raw: &str) -> String {
    let text = raw.replace("=\r\n", "").replace("=3D", "=");
    let at = text.find("/verify-email?token=").expect("a verification link");
    let start = text[..at].rfind("http").unwrap();
    let rest = &text[start..];
    let end = rest.find(|c: char| c.is_whitespace() || c == '"' || c == '<').unwrap_or(rest.len());
    rest[..end].to_string()
}
