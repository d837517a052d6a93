//! Test support: a shared runtime, a tiny HTTP fixture server and image helpers.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capture_browser::{BrowserConfig, CaptureRequest, ImageFormat, PageSource, WaitUntil};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub fn chromium_path() -> PathBuf {
    std::env::var_os("CAPTURE_CHROMIUM_PATH").map_or_else(capture_browser::default_chromium_path, PathBuf::from)
}

pub fn config(work_dir: PathBuf, allow_private: bool) -> BrowserConfig {
    BrowserConfig {
        chromium_path: chromium_path(),
        browsers: 2,
        pages_per_browser: 2,
        recycle_after: 1000,
        memory_limit: None,
        allow_private_networks: allow_private,
        work_dir,
    }
}

/// A fixture response.
#[derive(Clone)]
pub enum Resp {
    /// status, content type, body, delay before answering (ms)
    Full(u16, &'static str, Vec<u8>, u64),
    /// Send headers and part of the body, then hang.
    Hang,
}

pub fn html(body: &str) -> Resp {
    Resp::Full(200, "text/html; charset=utf-8", body.as_bytes().to_vec(), 0)
}

pub type Router = Arc<dyn Fn(&str, &str) -> Resp + Send + Sync>;

/// A fixture HTTP server on 127.0.0.1 (one request per connection).
pub struct Server {
    pub addr: SocketAddr,
    hits: Arc<Mutex<HashMap<String, usize>>>,
}

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    /// Start serving on the current runtime.
    pub async fn start(router: Router) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hits: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let h = hits.clone();
        tokio::spawn(async move {
            loop {
                let Ok((s, _)) = listener.accept().await else {
                    continue;
                };
                let router = router.clone();
                let hits = h.clone();
                tokio::spawn(async move {
                    let _ = serve_conn(s, router, hits).await;
                });
            }
        });
        Server { addr, hits }
    }
}

async fn serve_conn(mut s: TcpStream, router: Router, hits: Arc<Mutex<HashMap<String, usize>>>) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let head_end = loop {
        let n = s.read(&mut tmp).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut parts = head.split_whitespace();
    let _method = parts.next().unwrap_or("");
    let target = parts.next().unwrap_or("/").to_string();
    let path = target.split('?').next().unwrap_or("/").to_string();
    let cookie = head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("cookie:"))
        .map(|l| l[7..].trim().to_string())
        .unwrap_or_default();
    *hits.lock().unwrap().entry(path.clone()).or_default() += 1;
    match router(&path, &cookie) {
        Resp::Full(status, ctype, body, delay) => {
            if delay > 0 {
                tokio::time::sleep(Duration::from_millis(delay)).await;
            }
            let head = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
                body.len()
            );
            s.write_all(head.as_bytes()).await?;
            s.write_all(&body).await?;
            s.shutdown().await?;
        }
        Resp::Hang => {
            s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n<html><body>loading",
            )
            .await?;
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
    }
    Ok(())
}

pub fn req(source: PageSource) -> CaptureRequest {
    CaptureRequest {
        source,
        width: 800,
        height: 600,
        full_page: false,
        format: ImageFormat::Png,
        pdf: false,
        delay_ms: 0,
        dark_mode: false,
        cookie_consent_auto: false,
        wait_for: None,
        wait_until: WaitUntil::Load,
        timeout_ms: 10_000,
        pre_screenshot_js: None,
        device_scale_factor: 1.0,
        click_before: None,
        deadline: Duration::from_secs(30),
    }
}

pub fn url_req(url: String) -> CaptureRequest {
    req(PageSource::Url(url))
}

pub fn decode(bytes: &[u8]) -> image::RgbaImage {
    image::load_from_memory(bytes).expect("decodable image").to_rgba8()
}

/// Assert the pixel at (x, y) is within `tol` of `rgb`.
#[track_caller]
pub fn assert_px(img: &image::RgbaImage, x: u32, y: u32, rgb: [u8; 3], tol: u8) {
    let p = img.get_pixel(x, y).0;
    let ok = (0..3).all(|i| p[i].abs_diff(rgb[i]) <= tol);
    assert!(ok, "pixel ({x},{y}) is {:?}, expected about {rgb:?}", &p[..3]);
}

pub fn px(img: &image::RgbaImage, x: u32, y: u32) -> [u8; 3] {
    let p = img.get_pixel(x, y).0;
    [p[0], p[1], p[2]]
}

/// A solid PNG of one colour.
pub fn solid_png(w: u32, h: u32, rgb: [u8; 3]) -> Vec<u8> {
    let img = image::RgbImage::from_pixel(w, h, image::Rgb(rgb));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}
