//! The website end to end, over HTTP against the in-process application: sign-up and
//! sign-in, CSRF, sign-in throttling, `next=` redirects, sign-out, API keys and their
//! effect on the REST API, screenshots, webhooks, monitors, and account isolation.
//! (The real-browser tests of the same pages live in `tests/e2e/` at the repository root.)

mod audits;
mod auth;
mod campaigns;
mod dashboard;
mod front_page;
mod inbox;
mod monitors;
mod playground_options;
mod runs;
mod workspace;

use crate::helpers::{Api, Db, Opts, TestApp, rand_suffix};
use serde_json::Value;

/// A fresh service (api and scheduler roles, no Chromium) on `db`.
pub async fn spawn(db: Db) -> TestApp {
    TestApp::spawn(Opts::api(db).env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true")).await
}

/// A new, unused e-mail address.
pub fn email() -> String {
    format!("web{}@example.com", rand_suffix())
}

pub const PASSWORD: &str = "correct horse battery";

/// Upload `bytes` as a finished job through the REST API (asserting 201).
pub async fn upload(app: &TestApp, key: &str, filename: &str, bytes: Vec<u8>) -> Value {
    let part = reqwest::multipart::Part::bytes(bytes).file_name(filename.to_string());
    let form = reqwest::multipart::Form::new().part("file", part);
    let r = app.client.post(app.url("/v1/screenshot/upload")).bearer_auth(key).multipart(form).send().await.unwrap();
    let status = r.status().as_u16();
    let v: Value = r.json().await.unwrap();
    assert_eq!(status, 201, "upload failed: {v}");
    v
}

/// A small PNG of one colour.
pub fn png(w: u32, h: u32, rgb: [u8; 3]) -> Vec<u8> {
    let img = image::RgbImage::from_pixel(w, h, image::Rgb(rgb));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// A one-page PDF with a line of text (offsets computed, so viewers accept it).
pub fn pdf() -> Vec<u8> {
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"
            .to_string(),
        {
            let s = "BT /F1 18 Tf 30 100 Td (Capture web test) Tj ET";
            format!("<< /Length {} >>\nstream\n{s}\nendstream", s.len())
        },
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_string(),
    ];
    let mut out = String::from("%PDF-1.4\n");
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.push_str(&format!("{} 0 obj\n{o}\nendobj\n", i + 1));
    }
    let xref = out.len();
    out.push_str(&format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1));
    for o in offsets {
        out.push_str(&format!("{o:010} 00000 n \n"));
    }
    out.push_str(&format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1));
    out.into_bytes()
}
