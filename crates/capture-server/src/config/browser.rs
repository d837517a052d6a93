//! The browser side of a worker: which Chromium, how many browsers and capture slots, when a
//! browser is restarted, the axe-core audits inject, and the memory video encodes may hold.

use std::path::PathBuf;

use super::parse::{ConfigError, Reader, err, parse_size};

/// How a worker runs its browsers.
#[derive(Debug, Clone)]
pub struct BrowserSettings {
    /// `CAPTURE_CHROMIUM_PATH`.
    pub chromium_path: PathBuf,
    /// Another axe-core `axe.min.js` for audits' accessibility checks (`CAPTURE_AXE_PATH`);
    /// None: the copy compiled into the binary (`capture_audit::axe`).
    pub axe_path: Option<PathBuf>,
    /// `CAPTURE_WORKER_CONCURRENCY`: capture slots of this node.
    pub worker_concurrency: usize,
    /// `CAPTURE_BROWSERS`: browser processes the slots share.
    pub browsers: usize,
    /// `CAPTURE_BROWSER_RECYCLE_AFTER`: a browser is restarted after this many captures.
    pub recycle_after: u64,
    /// Restart a browser whose process tree uses more memory than this (bytes; None = off).
    pub max_memory: Option<u64>,
    /// Memory this node lets video encodes (ffmpeg) hold at once, bytes
    /// (`CAPTURE_VIDEO_MEMORY`): an encode that would pass it waits its turn.
    pub video_memory: u64,
    /// What `POST /v1/proxies/{id}/test` fetches through a proxy unless the request names a
    /// page (`CAPTURE_PROXY_TEST_URL`; default an address-echo service, so the answer names
    /// the proxy's exit address).
    pub proxy_test_url: String,
}

impl BrowserSettings {
    pub(super) fn read(r: &Reader) -> Result<BrowserSettings, ConfigError> {
        let chromium_path =
            r.get("CAPTURE_CHROMIUM_PATH").map_or_else(capture_browser::default_chromium_path, PathBuf::from);
        // Unset: the copy compiled into the binary. No node_modules folder is looked for, so
        // what runs never depends on the directory the service was started in.
        let axe_path = match r.get("CAPTURE_AXE_PATH").map(PathBuf::from) {
            Some(p) if !p.is_file() => {
                return Err(err("CAPTURE_AXE_PATH", format!("{} is not a file (axe-core's axe.min.js)", p.display())));
            }
            p => p,
        };
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
        let worker_concurrency = r.num("CAPTURE_WORKER_CONCURRENCY", cores * 2, 1, 256)? as usize;
        let browsers = r.num("CAPTURE_BROWSERS", cores.min(worker_concurrency as u64), 1, 64)? as usize;
        let recycle_after = r.num("CAPTURE_BROWSER_RECYCLE_AFTER", 500, 1, 1_000_000)?;
        let max_memory = {
            const VAR: &str = "CAPTURE_BROWSER_MAX_MEMORY";
            let v = r.get(VAR).unwrap_or_else(|| "2GB".into());
            let size = parse_size(&v).map_err(|e| err(VAR, e))?;
            // Far below what an idle browser uses: most likely a unit left out ("2048").
            if size.is_some_and(|b| b < 16 << 20) {
                return Err(err(VAR, format!("'{v}' is below 16MB (write a unit: 2GB, 512MB; or off)")));
            }
            size
        };
        let video_memory = {
            const VAR: &str = "CAPTURE_VIDEO_MEMORY";
            let v = r.get(VAR).unwrap_or_else(|| "1GB".into());
            match parse_size(&v).map_err(|e| err(VAR, e))? {
                Some(b) if b >= 256 << 20 => b,
                _ => {
                    return Err(err(VAR, format!("'{v}' is below 256MB, what one video encode may take (2GB, 768MB)")));
                }
            }
        };
        let proxy_test_url = match r.get("CAPTURE_PROXY_TEST_URL") {
            Some(u) => capture_core::options::validate_url(&u).map_err(|e| err("CAPTURE_PROXY_TEST_URL", e.reason))?,
            None => "https://api.ipify.org/?format=json".to_string(),
        };
        Ok(BrowserSettings {
            proxy_test_url,
            chromium_path,
            axe_path,
            worker_concurrency,
            browsers,
            recycle_after,
            max_memory,
            video_memory,
        })
    }
}
