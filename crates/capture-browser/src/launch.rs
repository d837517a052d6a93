//! Starting and stopping one Chromium process tree and its profile folder.
//!
//! Process tree: us → `sh` watchdog (process-group leader) → `unshare --pid --fork
//! --kill-child` (when PID namespaces are available) → Chromium (init of its own PID
//! namespace) → its helpers. Killing Chromium collapses the namespace, so no helper is
//! ever orphaned (re-parented to the machine's init); the shell reaps what it started.
//! Without namespaces, the whole process group is killed instead.
//!
//! DevTools runs over `--remote-debugging-pipe` (no TCP port a page could reach): two
//! FIFOs in the profile folder, `cdp-in` (Chromium's fd 3, it reads) and `cdp-out` (its
//! fd 4, it writes). We open our ends first (so the shell's opens do not block), then the
//! watchdog shell redirects them onto Chromium's fds 3 and 4.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};

use crate::cdp::Conn;

/// The FIFO Chromium reads DevTools commands from (its fd 3).
const PIPE_IN: &str = "cdp-in";
/// The FIFO Chromium writes DevTools replies and events to (its fd 4).
const PIPE_OUT: &str = "cdp-out";

/// Make the two DevTools FIFOs in `dir` and open our ends: the write end of `cdp-in`
/// (opened read-write, so it opens before Chromium does and its open does not block) and
/// the read end of `cdp-out` (which sees end-of-file once Chromium is gone).
async fn open_pipes(dir: &Path) -> Result<(pipe::Sender, pipe::Receiver), String> {
    let (fifo_in, fifo_out) = (dir.join(PIPE_IN), dir.join(PIPE_OUT));
    let status = Command::new("mkfifo")
        .arg("-m")
        .arg("600")
        .arg(&fifo_in)
        .arg(&fifo_out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .await
        .map_err(|e| format!("cannot run mkfifo: {e}"))?;
    if !status.status.success() {
        return Err(format!("mkfifo failed: {}", String::from_utf8_lossy(&status.stderr).trim()));
    }
    let to_browser = pipe::OpenOptions::new()
        .read_write(true)
        .open_sender(&fifo_in)
        .map_err(|e| format!("cannot open {}: {e}", fifo_in.display()))?;
    let from_browser = pipe::OpenOptions::new()
        .open_receiver(&fifo_out)
        .map_err(|e| format!("cannot open {}: {e}", fifo_out.display()))?;
    Ok((to_browser, from_browser))
}

/// Flags every Chromium of the pool gets (besides profile and proxy). Popup blocking stays
/// on (nothing of the service needs popups; the full browser then refuses popups without a
/// gesture, the headless shell has no blocker): what bounds a session's pages is its guard,
/// which closes every page past the limit (`session::guard`).
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
    "--disable-prompt-on-repost",
    "--metrics-recording-only",
    "--password-store=basic",
    "--use-mock-keychain",
    "--no-service-autorun",
    "--disable-component-extensions-with-background-pages",
    "--disable-field-trial-config",
    "--disable-search-engine-choice-screen",
    "--no-pings",
    "--disable-renderer-accessibility",
    // SpareRendererForSitePerProcess: a spare renderer per context is wasted work when
    // every context serves one page. HttpsUpgrades: capture the URL that was asked for.
    // IsolateOrigins, site-per-process (and the trials flag below): a page's cross-site frames
    // render in the page's own process, so what the capture runs at document start
    // (`cookieConsent`, scriptlets) and what it intercepts reach every frame of the page —
    // a consent pop-up in a third-party iframe, an ad frame's requests. Tenants stay apart:
    // every job has its own browser context, and a renderer never serves two contexts.
    "--disable-features=Translate,MediaRouter,OptimizationHints,OptimizationGuideModelDownloading,OptimizationHintsFetching,OptimizationTargetPrediction,AutofillServerCommunication,CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions,CalculateNativeWinOcclusion,DialMediaRouteProvider,GlobalMediaControls,DestroyProfileOnBrowserClose,PaintHolding,AcceptCHFrame,LensOverlay,BackForwardCache,HttpsUpgrades,PrivacySandboxSettings4,Prerender2,SpareRendererForSitePerProcess,IsolateOrigins,site-per-process",
    "--disable-site-isolation-trials",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--remote-debugging-pipe",
];

/// `sh -c WATCHDOG program args...`. The shell starts the program with the DevTools FIFOs
/// as its fds 3 and 4, prints its pid, and waits for it (so it is reaped, never
/// orphaned). A background reader watches the shell's stdin (kept as fd 5): when our end
/// closes (we exited, even by SIGKILL) it kills the program's children (the namespace
/// init) and the program itself.
const WATCHDOG: &str = r#"exec 5<&0; "$0" "$@" </dev/null 5<&- 3<"$CAPTURE_CDP_IN" 4>"$CAPTURE_CDP_OUT" & c=$!; echo "capture-child $c" >&2; (read -r _ <&5; for p in $(cat /proc/$c/task/$c/children 2>/dev/null); do kill -9 $p; done; kill -9 $c) & w=$!; exec 5<&-; wait $c; kill -9 $w 2>/dev/null; wait $w"#;

/// Whether `unshare --pid --fork --kill-child` works here (root or user namespaces).
fn pid_namespaces() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        if std::env::var_os("CAPTURE_BROWSER_NO_PIDNS").is_some() {
            return false;
        }
        std::process::Command::new("unshare")
            .args(["--pid", "--fork", "--kill-child", "true"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    })
}

/// A running Chromium process.
pub(crate) struct Chromium {
    child: Mutex<Option<Child>>,
    /// Closing this (dropping it) makes the watchdog shell kill Chromium.
    _watchdog: Option<tokio::process::ChildStdin>,
    /// The watchdog shell (process-group leader).
    pid: Option<u32>,
    /// The shell's child: `unshare` (namespaced) or Chromium itself.
    launcher_pid: Option<u32>,
    namespaced: bool,
    /// The profile folder (unique; also used to find strays).
    pub profile_dir: PathBuf,
}

fn run_quiet(cmd: &str, args: &[&str]) {
    let _ = std::process::Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

impl Chromium {
    /// Start Chromium with a fresh profile folder, connect to it over the DevTools pipe
    /// and wait until it answers.
    pub(crate) async fn launch(
        chromium_path: &Path,
        profile_dir: PathBuf,
        proxy: Option<std::net::SocketAddr>,
    ) -> Result<(Chromium, Arc<Conn>), String> {
        let chromium_path = resolve_binary(chromium_path)?;
        std::fs::create_dir_all(&profile_dir).map_err(|e| format!("cannot create {}: {e}", profile_dir.display()))?;
        let (to_browser, from_browser) = match open_pipes(&profile_dir).await {
            Ok(p) => p,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&profile_dir);
                return Err(e);
            }
        };
        let namespaced = pid_namespaces();
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg(WATCHDOG);
        if namespaced {
            cmd.args(["unshare", "--pid", "--fork", "--kill-child"]);
        }
        cmd.arg(&chromium_path).args(BASE_FLAGS).arg(format!("--user-data-dir={}", profile_dir.display()));
        if let Some(proxy) = proxy {
            cmd.arg(format!("--proxy-server=http://{proxy}")).arg("--proxy-bypass-list=<-loopback>");
        }
        cmd.arg("about:blank")
            .env("CAPTURE_CDP_IN", profile_dir.join(PIPE_IN))
            .env("CAPTURE_CDP_OUT", profile_dir.join(PIPE_OUT))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&profile_dir);
                return Err(format!("cannot start Chromium at {}: {e}", chromium_path.display()));
            }
        };
        let pid = child.id();
        let stderr = child.stderr.take();
        let watchdog = child.stdin.take();
        let mut this = Chromium {
            child: Mutex::new(Some(child)),
            _watchdog: watchdog,
            pid,
            launcher_pid: None,
            namespaced,
            profile_dir,
        };
        let Some(stderr) = stderr else {
            this.kill().await;
            return Err("Chromium stderr unavailable".into());
        };
        // Keep draining stderr (Chromium must never block on a full pipe); remember the
        // launcher's pid and the last lines, for an error message.
        let tail: Arc<Mutex<Vec<String>>> = Arc::default();
        let (pid_tx, pid_rx) = tokio::sync::oneshot::channel::<u32>();
        let tail_w = tail.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            let mut pid_tx = Some(pid_tx);
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(p) = line.trim().strip_prefix("capture-child ")
                    && let (Some(tx), Ok(p)) = (pid_tx.take(), p.trim().parse())
                {
                    let _ = tx.send(p);
                    continue;
                }
                tracing::trace!(target: "chromium", "{line}");
                let mut t = tail_w.lock().unwrap();
                if t.len() >= 8 {
                    t.remove(0);
                }
                t.push(line);
            }
        });
        this.launcher_pid = tokio::time::timeout(Duration::from_secs(30), pid_rx).await.ok().and_then(Result::ok);
        let conn = Conn::start(from_browser, to_browser);
        let ready = tokio::select! {
            r = conn.cmd(&crate::protocol::GetVersion {}, None) => r.map(|v| {
                tracing::debug!(product = %v.product, protocol = %v.protocol_version, "Chromium is ready");
            }).map_err(|e| e.to_string()),
            () = tokio::time::sleep(Duration::from_secs(30)) => Err("Chromium did not answer over DevTools within 30 s".into()),
        };
        if let Err(e) = ready {
            // Let it finish writing why it exited.
            let child = this.child.lock().unwrap().take();
            if let Some(mut child) = child {
                let exited = tokio::time::timeout(Duration::from_secs(2), child.wait()).await.is_ok();
                *this.child.lock().unwrap() = Some(child);
                if exited {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            this.kill().await;
            let tail = tail.lock().unwrap().join(" | ");
            return Err(if conn.is_closed() {
                format!("Chromium exited before DevTools was ready: {tail}")
            } else {
                format!("{e}: {tail}")
            });
        }
        Ok((this, conn))
    }

    /// The top of the browser's process tree: `unshare` (in a PID namespace) or Chromium
    /// itself; the watchdog shell when the launcher's pid was not reported.
    pub(crate) fn root_pid(&self) -> Option<u32> {
        self.launcher_pid.or(self.pid)
    }

    /// SIGKILL Chromium without orphaning anything: in a PID namespace, kill its init
    /// (the namespace collapses, `unshare` and the shell exit by themselves); else kill
    /// the whole process group.
    fn force_kill_sync(&self) {
        match self.launcher_pid {
            Some(launcher) if self.namespaced => {
                let inner = children_of(launcher);
                if inner.is_empty() {
                    run_quiet("kill", &["-9", &launcher.to_string()]);
                }
                for p in inner {
                    run_quiet("kill", &["-9", &p.to_string()]);
                }
            }
            _ => self.kill_group_sync(),
        }
    }

    /// Last resort: SIGKILL the process group and anything naming the profile.
    fn kill_group_sync(&self) {
        if let Some(pid) = self.pid.filter(|p| *p > 1) {
            run_quiet("kill", &["-9", &format!("-{pid}")]);
        }
        run_quiet("pkill", &["-9", "-f", "--", &format!("--user-data-dir={}", self.profile_dir.display())]);
    }

    /// Stop Chromium: ask it to close (`Browser.close` over `conn`, so it reaps its own
    /// helpers), else SIGKILL it; reap the tree and delete the profile.
    pub(crate) async fn kill_gracefully(&self, conn: Option<&crate::cdp::Conn>) {
        let child = self.child.lock().unwrap().take();
        let Some(mut child) = child else { return };
        let mut exited = false;
        if let Some(conn) = conn.filter(|c| !c.is_closed()) {
            conn.cmd_forget(&crate::protocol::CloseBrowser {}, None);
            exited = tokio::time::timeout(Duration::from_secs(3), child.wait()).await.is_ok();
        }
        if !exited {
            let this = self.clone_handles();
            let _ = tokio::task::spawn_blocking(move || this.force_kill_sync()).await;
            exited = tokio::time::timeout(Duration::from_secs(3), child.wait()).await.is_ok();
        }
        if !exited {
            let this = self.clone_handles();
            let _ = tokio::task::spawn_blocking(move || this.kill_group_sync()).await;
            let _ = child.start_kill();
            let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
        }
        let dir = self.profile_dir.clone();
        let _ = tokio::task::spawn_blocking(move || remove_dir_retry(&dir)).await;
    }

    /// SIGKILL Chromium, reap the tree and delete the profile.
    pub(crate) async fn kill(&self) {
        self.kill_gracefully(None).await;
    }

    /// The process ids and profile path, for blocking helpers.
    fn clone_handles(&self) -> Handles {
        Handles {
            pid: self.pid,
            launcher_pid: self.launcher_pid,
            namespaced: self.namespaced,
            profile_dir: self.profile_dir.clone(),
        }
    }
}

/// What the kill helpers need, detached from the `Chromium` value.
struct Handles {
    pid: Option<u32>,
    launcher_pid: Option<u32>,
    namespaced: bool,
    profile_dir: PathBuf,
}

impl Handles {
    fn as_chromium(&self) -> Chromium {
        Chromium {
            child: Mutex::new(None),
            _watchdog: None,
            pid: self.pid,
            launcher_pid: self.launcher_pid,
            namespaced: self.namespaced,
            profile_dir: self.profile_dir.clone(),
        }
    }

    fn force_kill_sync(&self) {
        self.as_chromium().force_kill_sync();
    }

    fn kill_group_sync(&self) {
        self.as_chromium().kill_group_sync();
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
        let Some(rest) = name.strip_prefix("chromium-").or_else(|| name.strip_prefix("floor-")) else {
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
        let Some(mut child) = child else { return };
        self.force_kill_sync();
        // Give the tree a moment to unwind so the shell reaps it, then make sure.
        for _ in 0..100 {
            if matches!(child.try_wait(), Ok(Some(_))) {
                remove_dir_retry(&self.profile_dir);
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill_group_sync();
        let _ = child.start_kill();
        let _ = child.try_wait();
        remove_dir_retry(&self.profile_dir);
    }
}
