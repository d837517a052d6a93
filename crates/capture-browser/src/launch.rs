//! Starting and killing one Chromium process (its whole process group) and its profile.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Flags every Chromium of the pool gets (besides profile and proxy).
const BASE_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-quic",
    "--hide-scrollbars",
    "--mute-audio",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-dev-shm-usage",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-renderer-backgrounding",
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-hang-monitor",
    "--disable-popup-blocking",
    "--disable-prompt-on-repost",
    "--metrics-recording-only",
    "--password-store=basic",
    "--use-mock-keychain",
    "--no-service-autorun",
    "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions,CalculateNativeWinOcclusion,DialMediaRouteProvider,GlobalMediaControls,DestroyProfileOnBrowserClose,PaintHolding,AcceptCHFrame,LensOverlay",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--remote-debugging-port=0",
];

/// A running Chromium process.
pub(crate) struct Chromium {
    child: Mutex<Option<Child>>,
    /// Closing this (dropping it) makes the watchdog shell kill the process group.
    _watchdog: Option<tokio::process::ChildStdin>,
    pid: Option<u32>,
    /// The profile folder (unique; also used to find strays).
    pub profile_dir: PathBuf,
    /// `ws://127.0.0.1:PORT/devtools/browser/UUID`.
    pub ws_url: String,
}

impl Chromium {
    /// Start Chromium with a fresh profile folder and wait for its DevTools address.
    pub(crate) async fn launch(
        chromium_path: &Path,
        profile_dir: PathBuf,
        proxy: Option<std::net::SocketAddr>,
    ) -> Result<Chromium, String> {
        let chromium_path = resolve_binary(chromium_path)?;
        let chromium_path = chromium_path.as_path();
        std::fs::create_dir_all(&profile_dir)
            .map_err(|e| format!("cannot create {}: {e}", profile_dir.display()))?;
        // A tiny sh watchdog leads the process group: it starts Chromium and, when our
        // end of its stdin closes (we exited, even by SIGKILL), kills the whole group.
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(r#""$0" "$@" </dev/null & read -r _ignored; kill -9 0"#)
            .arg(chromium_path)
            .args(BASE_FLAGS)
            .arg(format!("--user-data-dir={}", profile_dir.display()));
        if let Some(proxy) = proxy {
            cmd.arg(format!("--proxy-server=http://{proxy}"))
                .arg("--proxy-bypass-list=<-loopback>");
        }
        cmd.arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&profile_dir);
                return Err(format!(
                    "cannot start Chromium at {}: {e}",
                    chromium_path.display()
                ));
            }
        };
        let pid = child.id();
        let stderr = child.stderr.take();
        let watchdog = child.stdin.take();
        let mut this = Chromium {
            child: Mutex::new(Some(child)),
            _watchdog: watchdog,
            pid,
            profile_dir,
            ws_url: String::new(),
        };
        let Some(stderr) = stderr else {
            return Err("Chromium stderr unavailable".into());
        };
        let mut lines = BufReader::new(stderr).lines();
        let mut tail: Vec<String> = Vec::new();
        let found = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(rest) = line.trim().strip_prefix("DevTools listening on ") {
                    return Some(rest.trim().to_owned());
                }
                if tail.len() >= 8 {
                    tail.remove(0);
                }
                tail.push(line);
            }
            None
        })
        .await;
        match found {
            Ok(Some(url)) => this.ws_url = url,
            Ok(None) => {
                this.kill().await;
                return Err(format!(
                    "Chromium exited before DevTools was ready: {}",
                    tail.join(" | ")
                ));
            }
            Err(_) => {
                this.kill().await;
                return Err("Chromium did not start DevTools within 30 s".into());
            }
        }
        // Keep draining stderr so Chromium never blocks on a full pipe.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::trace!(target: "chromium", "{line}");
            }
        });
        Ok(this)
    }

    /// Kill the whole process group, reap the main process and delete the profile.
    pub(crate) async fn kill(&self) {
        let child = self.child.lock().unwrap().take();
        let Some(mut child) = child else { return };
        let pid = self.pid;
        let dir = self.profile_dir.clone();
        let _ = tokio::task::spawn_blocking(move || kill_group_sync(pid, &dir)).await;
        let _ = child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
        let dir = self.profile_dir.clone();
        let _ = tokio::task::spawn_blocking(move || remove_dir_retry(&dir)).await;
    }
}

/// Find the Chromium binary (a bare name is looked up in PATH).
fn resolve_binary(path: &Path) -> Result<PathBuf, String> {
    let is_file = |p: &Path| std::fs::metadata(p).map(|m| m.is_file()).unwrap_or(false);
    if path.components().count() > 1 || path.is_absolute() {
        return if is_file(path) {
            Ok(path.to_owned())
        } else {
            Err(format!("Chromium not found at {}", path.display()))
        };
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(path))
        .find(|p| is_file(p))
        .ok_or_else(|| format!("Chromium ({}) not found in PATH", path.display()))
}

/// Remove profile folders left in `work_dir` by processes that no longer exist.
pub(crate) fn remove_stale_profiles(work_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(work_dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name
            .strip_prefix("chromium-")
            .or_else(|| name.strip_prefix("floor-"))
        else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// SIGKILL the process group led by `pid`, and any process still naming the profile.
fn kill_group_sync(pid: Option<u32>, profile_dir: &Path) {
    if let Some(pid) = pid {
        let _ = std::process::Command::new("kill")
            .arg("-9")
            .arg(format!("-{pid}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    // Helpers that left the group still carry the unique profile path.
    let _ = std::process::Command::new("pkill")
        .arg("-9")
        .arg("-f")
        .arg("--")
        .arg(format!("--user-data-dir={}", profile_dir.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn remove_dir_retry(dir: &Path) {
    for _ in 0..5 {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let child = self.child.get_mut().map(Option::take).unwrap_or(None);
        if let Some(mut child) = child {
            kill_group_sync(self.pid, &self.profile_dir);
            let _ = child.start_kill();
            let _ = child.try_wait();
            remove_dir_retry(&self.profile_dir);
        }
    }
}
