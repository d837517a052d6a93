//! Test support: a shared runtime, a tiny HTTP fixture server and image helpers.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capture_browser::{
    BrowserConfig, CaptureOptions, CaptureRequest, EgressAllow, EgressPolicy, PageSource, WaitUntil,
};
use futures_util::StreamExt;

pub fn chromium_path() -> PathBuf {
    std::env::var_os("CAPTURE_CHROMIUM_PATH").map_or_else(capture_browser::default_chromium_path, PathBuf::from)
}

/// The policy tests run under: the fixture servers on 127.0.0.1 allowed (`allow_local`),
/// or public addresses only.
pub fn egress(allow_local: bool) -> EgressPolicy {
    if allow_local {
        EgressPolicy::new(EgressAllow::parse("127.0.0.1").unwrap(), Vec::new())
    } else {
        EgressPolicy::strict()
    }
}

pub fn config(work_dir: PathBuf, allow_local: bool) -> BrowserConfig {
    BrowserConfig {
        chromium_path: chromium_path(),
        browsers: 2,
        pages_per_browser: 2,
        recycle_after: 1000,
        memory_limit: None,
        egress: egress(allow_local),
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
    /// A 302 to this location.
    Redirect(&'static str),
}

pub fn html(body: &str) -> Resp {
    Resp::Full(200, "text/html; charset=utf-8", body.as_bytes().to_vec(), 0)
}

pub type Router = Arc<dyn Fn(&str, &str) -> Resp + Send + Sync>;

/// A fixture HTTP server on 127.0.0.1 (axum), answering every path through a router
/// closure and counting the requests per path.
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
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hits: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let h = hits.clone();
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let router = router.clone();
            let hits = h.clone();
            async move { respond(req, &router, &hits).await }
        });
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Server { addr, hits }
    }
}

async fn respond(
    req: axum::extract::Request,
    router: &Router,
    hits: &Mutex<HashMap<String, usize>>,
) -> axum::response::Response {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    let path = req.uri().path().to_owned();
    let cookie = req.headers().get(header::COOKIE).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    *hits.lock().unwrap().entry(path.clone()).or_default() += 1;
    match router(&path, &cookie) {
        Resp::Full(status, ctype, body, delay) => {
            if delay > 0 {
                tokio::time::sleep(Duration::from_millis(delay)).await;
            }
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            (status, [(header::CONTENT_TYPE, ctype), (header::CACHE_CONTROL, "no-store")], body).into_response()
        }
        Resp::Redirect(to) => (StatusCode::FOUND, [(header::LOCATION, to)]).into_response(),
        Resp::Hang => {
            // The head and a little of the body, then nothing more, ever.
            let first = futures_util::stream::once(async {
                Ok::<_, std::io::Error>(axum::body::Bytes::from_static(b"<html><body>loading"))
            });
            let body = axum::body::Body::from_stream(first.chain(futures_util::stream::pending()));
            (
                [
                    (header::CONTENT_TYPE, "text/html"),
                    (header::CONTENT_LENGTH, "100000"),
                    (header::CACHE_CONTROL, "no-store"),
                ],
                body,
            )
                .into_response()
        }
    }
}

pub fn req(source: PageSource) -> CaptureRequest {
    let options = CaptureOptions {
        width: 800,
        height: 600,
        cookie_consent: capture_core::options::CookieConsent::None,
        wait_until: WaitUntil::Load,
        ..CaptureOptions::default()
    };
    CaptureRequest { source, options, deadline: Duration::from_secs(30), proxy: None }
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

/// Pids of every process whose command line names `pattern` (the browser's profile folder
/// names its whole tree: the watchdog shell, `unshare`, Chromium and its helpers).
pub fn pids_naming(pattern: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else { continue };
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmd).contains(pattern) && pid != std::process::id() {
            out.push(pid);
        }
    }
    out
}

/// The process tree under `root` (root included), through each thread's children.
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut order = vec![root];
    let mut i = 0;
    while i < order.len() {
        let pid = order[i];
        i += 1;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { continue };
        for t in tasks.flatten() {
            let list = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            for c in list.split_whitespace().filter_map(|p| p.parse::<u32>().ok()) {
                if !order.contains(&c) {
                    order.push(c);
                }
            }
        }
    }
    order
}

/// Socket inodes held open by `pid` (None when its fds cannot be read).
pub fn socket_inodes(pid: u32) -> Option<Vec<u64>> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    let mut out = Vec::new();
    for fd in dir.flatten() {
        if let Ok(target) = std::fs::read_link(fd.path())
            && let Some(n) = target.to_str().and_then(|t| t.strip_prefix("socket:[")).and_then(|t| t.strip_suffix(']'))
            && let Ok(n) = n.parse()
        {
            out.push(n);
        }
    }
    Some(out)
}

/// Listening TCP sockets of this network namespace: (local port, inode), from
/// `/proc/net/tcp` and `/proc/net/tcp6`.
pub fn tcp_listeners() -> Vec<(u16, u64)> {
    let mut out = Vec::new();
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            if f.len() > 9 && f[3] == "0A" {
                let port = f[1].rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok()).unwrap_or(0);
                out.push((port, f[9].parse().unwrap_or(0)));
            }
        }
    }
    out
}
