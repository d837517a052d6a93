//! The "raw DevTools floor" for benchmarks: one warm 1280×800 page, the fewest calls per
//! capture (Page.navigate, wait for load, Page.captureScreenshot png with Chromium's default
//! encoder), no context per job, no proxy.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cdp::Conn;
use crate::launch::Chromium;
use crate::protocol::{self as p, PageEvent};

/// A bare Chromium with one warm page (its own window).
pub struct FloorBrowser {
    chromium: Chromium,
    conn: Arc<Conn>,
    sid: String,
    events: tokio::sync::mpsc::UnboundedReceiver<crate::cdp::Event>,
    /// The last capture's PNG, as Chromium's default encoder made it.
    pub last_png: Vec<u8>,
}

fn cdp_err(e: crate::cdp::CdpError) -> String {
    e.to_string()
}

/// The service's default viewport, so the floor renders the same pixels.
fn viewport() -> p::SetDeviceMetricsOverride {
    p::SetDeviceMetricsOverride {
        width: 1280,
        height: 800,
        device_scale_factor: 1.0,
        mobile: false,
        screen_orientation: None,
    }
}

/// Navigate session `sid` to `url` and wait (30 s at most) for its load event.
async fn load(
    conn: &Arc<Conn>,
    sid: &str,
    events: &mut tokio::sync::mpsc::UnboundedReceiver<crate::cdp::Event>,
    url: &str,
) -> Result<(), String> {
    let nav = conn.cmd(&p::Navigate { url }, Some(sid)).await.map_err(cdp_err)?;
    if let Some(e) = nav.error_text {
        return Err(format!("navigation failed: {e}"));
    }
    let wait = async {
        while let Some(ev) = events.recv().await {
            if matches!(PageEvent::decode(&ev.method, ev.params), PageEvent::LoadEventFired) {
                return true;
            }
        }
        false
    };
    match tokio::time::timeout(Duration::from_secs(30), wait).await {
        Ok(true) => Ok(()),
        _ => Err("no load event".into()),
    }
}

/// A PNG of the whole viewport of session `sid`, Chromium's default encoder or (`fast`) its
/// `optimizeForSpeed` one; an empty reply is an error.
async fn screenshot(conn: &Arc<Conn>, sid: &str, fast: bool) -> Result<p::Data, String> {
    let png = p::CaptureScreenshot {
        format: "png",
        quality: None,
        clip: None,
        from_surface: true,
        optimize_for_speed: fast,
        capture_beyond_viewport: false,
    };
    let shot = conn.cmd(&png, Some(sid)).await.map_err(cdp_err)?;
    if shot.data.is_empty() {
        return Err("empty screenshot".into());
    }
    Ok(shot)
}

impl FloorBrowser {
    /// Launch Chromium (profile under `work_dir`) and open one page with Page events on.
    pub async fn launch(chromium_path: &Path, work_dir: &Path) -> Result<FloorBrowser, String> {
        let dir = work_dir.join(format!("floor-{}-{:08x}", std::process::id(), rand::random::<u32>()));
        let (chromium, conn) = Chromium::launch(chromium_path, dir, None).await?;
        let create = p::CreateTarget {
            url: "about:blank",
            browser_context_id: None,
            new_window: true,
            width: None,
            height: None,
        };
        let target_id = conn.cmd(&create, None).await.map_err(cdp_err)?.target_id;
        let attach = p::AttachToTarget { target_id: &target_id, flatten: true };
        let sid = conn.cmd(&attach, None).await.map_err(cdp_err)?.session_id;
        let events = conn.register_session(&sid);
        conn.cmd(&p::PageEnable {}, Some(&sid)).await.map_err(cdp_err)?;
        // The service's default viewport, so the floor renders the same pixels (set once).
        conn.cmd(&viewport(), Some(&sid)).await.map_err(cdp_err)?;
        Ok(FloorBrowser { chromium, conn, sid, events, last_png: Vec::new() })
    }

    /// The top of this browser's process tree (to read its CPU time while it runs).
    pub fn root_pid(&self) -> Option<u32> {
        self.chromium.root_pid()
    }

    /// Capture `url` `n` times (navigate, wait for load, PNG); per-capture latencies.
    pub async fn capture_loop(&mut self, url: &str, n: usize) -> Result<Vec<Duration>, String> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            while self.events.try_recv().is_ok() {}
            let t0 = Instant::now();
            load(&self.conn, &self.sid, &mut self.events, url).await?;
            let shot = screenshot(&self.conn, &self.sid, false).await?;
            out.push(t0.elapsed());
            self.last_png = crate::encode::decode_base64(&shot.data, "screenshot").map_err(|e| e.to_string())?;
        }
        Ok(out)
    }

    /// Capture `url` `n` times, each in a fresh browser context of its own made for it (the
    /// fewest calls that isolate captures from each other: create the context and a page in
    /// its window, attach, enable Page, set the viewport, navigate, wait for load, Chromium's
    /// fast PNG, dispose of the context); per-capture latencies. What isolation alone costs
    /// in raw DevTools, beside [`FloorBrowser::capture_loop`]'s one warm page.
    pub async fn fresh_context_loop(&mut self, url: &str, n: usize) -> Result<Vec<Duration>, String> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let t0 = Instant::now();
            let ctx = self.conn.cmd(&p::CreateBrowserContext::plain(), None).await.map_err(cdp_err)?;
            let id = ctx.browser_context_id;
            let create = p::CreateTarget {
                url: "about:blank",
                browser_context_id: Some(&id),
                new_window: true,
                width: Some(1280),
                height: Some(800),
            };
            let target_id = self.conn.cmd(&create, None).await.map_err(cdp_err)?.target_id;
            let attach = p::AttachToTarget { target_id: &target_id, flatten: true };
            let sid = self.conn.cmd(&attach, None).await.map_err(cdp_err)?.session_id;
            let mut events = self.conn.register_session(&sid);
            let (enable, size) = (self.conn.cmd(&p::PageEnable {}, Some(&sid)), self.conn.cmd(&viewport(), Some(&sid)));
            enable.await.map_err(cdp_err)?;
            size.await.map_err(cdp_err)?;
            load(&self.conn, &sid, &mut events, url).await?;
            screenshot(&self.conn, &sid, true).await?;
            self.conn.unregister_session(&sid);
            self.conn.cmd(&p::DisposeBrowserContext { browser_context_id: &id }, None).await.map_err(cdp_err)?;
            out.push(t0.elapsed());
        }
        Ok(out)
    }

    /// Screenshot the page as it is `n` times with Chromium's default PNG encoder and `n`
    /// times with its fast one (`optimizeForSpeed`); the best time of each (the screenshot
    /// call, transfer included) and the last PNG of each.
    pub async fn encoder_times(&mut self, n: usize) -> Result<[(Duration, Vec<u8>); 2], String> {
        let mut out = [(Duration::MAX, Vec::new()), (Duration::MAX, Vec::new())];
        for (i, fast) in [false, true].into_iter().enumerate() {
            for _ in 0..n.max(1) {
                let t0 = Instant::now();
                let shot = screenshot(&self.conn, &self.sid, fast).await?;
                let bytes = crate::encode::decode_base64(&shot.data, "screenshot").map_err(|e| e.to_string())?;
                out[i].0 = out[i].0.min(t0.elapsed());
                out[i].1 = bytes;
            }
        }
        Ok(out)
    }

    /// Evaluate `expression` (by value) `n` times; per-call latencies and the reply's size.
    /// With a big string result this times the DevTools transport with big messages.
    pub async fn evaluate_loop(&mut self, expression: &str, n: usize) -> Result<(Vec<Duration>, usize), String> {
        let mut out = Vec::with_capacity(n);
        let mut size = 0;
        for _ in 0..n {
            let t0 = Instant::now();
            let eval = p::Evaluate {
                expression,
                await_promise: false,
                return_by_value: true,
                user_gesture: false,
                repl_mode: false,
                silent: false,
                object_group: None,
                context_id: None,
            };
            let r = self.conn.cmd(&eval, Some(&self.sid)).await.map_err(cdp_err)?;
            out.push(t0.elapsed());
            size = r.result.value.as_ref().and_then(serde_json::Value::as_str).map_or(0, str::len);
        }
        Ok((out, size))
    }

    /// Kill the browser and remove its profile.
    pub async fn shutdown(self) {
        self.chromium.kill_gracefully(Some(&self.conn)).await;
    }
}

/// Launch a bare browser, load `url` and time Chromium's default and fast PNG encoders on
/// it ([`FloorBrowser::encoder_times`]).
pub async fn encoder_times(
    chromium_path: &Path,
    work_dir: &Path,
    url: &str,
    n: usize,
) -> Result<[(Duration, Vec<u8>); 2], String> {
    let mut b = FloorBrowser::launch(chromium_path, work_dir).await?;
    let r = match b.capture_loop(url, 1).await {
        Ok(_) => b.encoder_times(n).await,
        Err(e) => Err(e),
    };
    b.shutdown().await;
    r
}

/// Launch a bare browser, capture `url` `n` times on one warm page, shut down; returns
/// the per-capture latencies (the raw DevTools floor).
pub async fn bare_devtools_capture_loop(
    chromium_path: &Path,
    work_dir: &Path,
    url: &str,
    n: usize,
) -> Result<Vec<Duration>, String> {
    bare_devtools_captures(chromium_path, work_dir, url, n).await.map(|(lat, _)| lat)
}

/// As [`bare_devtools_capture_loop`], also returning the last capture's PNG (Chromium's
/// default encode, the reference for size and pixels).
pub async fn bare_devtools_captures(
    chromium_path: &Path,
    work_dir: &Path,
    url: &str,
    n: usize,
) -> Result<(Vec<Duration>, Vec<u8>), String> {
    let mut b = FloorBrowser::launch(chromium_path, work_dir).await?;
    // One warm-up capture, not counted.
    let r = match b.capture_loop(url, 1).await {
        Ok(_) => b.capture_loop(url, n).await,
        Err(e) => Err(e),
    };
    let png = std::mem::take(&mut b.last_png);
    b.shutdown().await;
    r.map(|lat| (lat, png))
}
