//! Helpers of the run tests, shared by the in-process suite
//! (`crates/capture-server/tests/service/api/runs.rs`) and the multi-process one
//! (`crates/capture-cli/tests/api/runs.rs`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::*;
use crate::sse::{json_events, read_sse};
use crate::webhooks::{Receiver, verify};

/// The form page: 2 `console.error`s and an uncaught exception (3 console errors), a missing
/// image and a failing fetch (2 failed requests), and something for every step to act on.
pub const START: &str = r#"<!doctype html><html><head><title>Sign up</title>
<style>body{font:16px sans-serif} #spacer{height:2000px;background:linear-gradient(#fff,#9cf)}</style></head><body>
<h1>Sign up</h1>
<form action="/done" method="get">
<input id=name name=name> <select id=plan name=plan><option value=free>Free</option><option value=pro>Pro</option></select>
<button id=go type=submit>Go</button></form>
<div id=menu onmouseover="document.getElementById('menu-state').textContent='hovered'">Menu</div>
<p id=menu-state>idle</p>
<img src="/missing.png" alt="">
<div id=spacer></div><p id=footer>Footer</p>
<script>
console.log('a log'); console.warn('a warning');
console.error('first error'); console.error('second error');
fetch('/nope').catch(() => {});
setTimeout(() => { throw new Error('boom later'); }, 10);
</script></body></html>"#;

pub const DONE: &str = r#"<!doctype html><html><head><title>Done</title></head><body>
<p id=q></p><script>document.getElementById('q').textContent = location.search.slice(1);</script></body></html>"#;

pub const BLANK: &str = "<!doctype html><html><head><title>Blank</title></head><body><p>blank</p></body></html>";

/// A page that keeps changing, so the screencast has frames throughout.
pub const TICKER: &str = r#"<!doctype html><html><head><title>Ticker</title></head><body>
<h1 id=t>0</h1><script>let n = 0; setInterval(() => { document.getElementById('t').textContent = ++n; }, 100);</script></body></html>"#;

pub async fn site() -> Site {
    Site::start(vec![
        ("/start", "text/html", START.to_string()),
        ("/form", "text/html", START.to_string()),
        ("/done", "text/html", DONE.to_string()),
        ("/blank", "text/html", BLANK.to_string()),
        ("/ticker", "text/html", TICKER.to_string()),
    ])
    .await
}

pub fn opts(db: Db) -> Opts {
    Opts::full(db)
        .env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true")
        .env("CAPTURE_RUN_LEASE", "3s")
        .env("CAPTURE_QUEUE_POLL", "200ms")
}

pub async fn hook(app: &impl Api, key: &str, rx: &Receiver) -> String {
    let r =
        app.post_json(key, "/v1/webhooks", &json!({"url": rx.url, "events": ["run.completed", "run.failed"]})).await;
    assert_eq!(r.status().as_u16(), 201);
    let v: Value = r.json().await.unwrap();
    v["endpoint"]["secret"].as_str().unwrap().to_string()
}

pub async fn start(app: &impl Api, key: &str, body: Value) -> Value {
    let r = app.post_json(key, "/v1/runs", &body).await;
    let status = r.status().as_u16();
    let v: Value = r.json().await.unwrap();
    assert_eq!(status, 202, "{v}");
    assert!(v["id"].as_str().unwrap().starts_with("run_"), "{v}");
    v
}

/// Ask run `id` to stop.
pub async fn stop(app: &impl Api, key: &str, id: &str) -> reqwest::Response {
    app.client().post(app.url(&format!("/v1/runs/{id}/stop"))).bearer_auth(key).send().await.unwrap()
}

pub async fn get_run(app: &impl Api, key: &str, id: &str) -> Value {
    app.get(key, &format!("/v1/runs/{id}")).await.json().await.unwrap()
}

pub async fn wait_status(app: &impl Api, key: &str, id: &str, done: &[&str], secs: u64) -> Value {
    eventually(&format!("run {id} reaches {done:?}"), Duration::from_secs(secs), || async move {
        let v = get_run(app, key, id).await;
        if done.contains(&v["status"].as_str().unwrap_or("")) { Ok(v) } else { Err(v) }
    })
    .await
}

pub async fn wait_end(app: &impl Api, key: &str, id: &str) -> Value {
    wait_status(app, key, id, &["completed", "failed", "stopped"], 120).await
}

/// ffprobe's duration of a video URL's file, in seconds.
pub async fn video_seconds(app: &impl Api, url: &str) -> f64 {
    let (status, ct, bytes) = app.fetch(url).await;
    assert_eq!((status, ct.as_str()), (200, "video/mp4"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.mp4");
    std::fs::write(&path, bytes).unwrap();
    let out = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-show_entries", "format=duration:stream=codec_name", "-of", "json"])
        .arg(&path)
        .output()
        .expect("ffprobe runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["streams"][0]["codec_name"], "h264", "{v}");
    v["format"]["duration"].as_str().unwrap().parse().unwrap()
}

/// The SSE stream of a run, read to its end: (event, data) pairs.
pub async fn stream(app: &impl Api, key: &str, id: &str) -> Vec<(String, Value)> {
    let url = app.url(&format!("/v1/runs/{id}/stream"));
    json_events(read_sse(app.client(), &url, key, Duration::from_secs(60)).await)
}

/// The one webhook event of run `id`, its signature verified.
pub async fn event_of(rx: &Receiver, secret: &str, id: &str) -> Value {
    let first = eventually(&format!("an event for {id}"), Duration::from_secs(30), || async move {
        let mine: Vec<Value> = rx
            .all()
            .iter()
            .map(|r| verify(secret, r).expect("the signature verifies"))
            .filter(|b| b["data"]["runId"] == id)
            .collect();
        mine.first().cloned().ok_or_else(|| rx.all())
    })
    .await;
    nothing_within(&format!("exactly one event for {id}"), Duration::from_millis(300), || async move {
        let all = rx.all();
        (all.iter().filter(|r| r.body.contains(id)).count() > 1).then_some(all)
    })
    .await;
    first
}

pub fn every_step(site: &Site) -> Value {
    json!([
        {"action": "goto", "url": site.url("/start")},
        {"action": "waitFor", "selector": "#name"},
        {"action": "type", "selector": "#name", "text": "Ada"},
        {"action": "select", "selector": "#plan", "value": "pro"},
        {"action": "hover", "selector": "#menu"},
        {"action": "assertText", "text": "hovered", "selector": "#menu-state"},
        {"action": "scroll", "y": 600},
        {"action": "scroll", "selector": "#footer"},
        {"action": "screenshot"},
        {"action": "evaluate", "expression": "document.title + ' ' + (6 * 7)"},
        {"action": "wait", "ms": 300},
        {"action": "click", "selector": "#go"},
        {"action": "waitFor", "url": "/done"},
        {"action": "assertUrl", "url": site.url("/done?name=Ada&plan=pro")},
        {"action": "waitFor", "text": "name=Ada"},
        {"action": "assertText", "text": "plan=pro"},
        {"action": "press", "key": "Tab"},
        {"action": "evaluate", "expression": "[navigator.userAgent, navigator.maxTouchPoints > 0, screen.width, devicePixelRatio]"}
    ])
}

pub fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../capture-browser/tests/relay")
}

/// `npm ci` the DevTools clients once (their lock file; never a browser download).
pub fn install_clients() {
    static ONCE: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    let mut done = ONCE.lock().unwrap();
    if *done || clients_dir().join("node_modules/puppeteer-core/package.json").exists() {
        *done = true;
        return;
    }
    let status = std::process::Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(clients_dir())
        .env("PUPPETEER_SKIP_DOWNLOAD", "1")
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .status()
        .expect("npm runs");
    assert!(status.success(), "npm ci in {} failed", clients_dir().display());
    *done = true;
}

/// Run a node script; its last stdout line as JSON.
pub async fn node(script: &Path, args: &[String]) -> Value {
    install_clients();
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(script).args(args).current_dir(clients_dir()).kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(90), cmd.output()).await.expect("in time").expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{} failed: {}\n{stdout}", script.display(), String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{stdout}: {e}"))
}

/// Start a node script that prints `connected` on stderr once its DevTools client is
/// connected, wait for that line, and hand back the rest of its run (its last stdout line
/// as JSON).
pub async fn node_connected(script: &Path, args: &[String]) -> tokio::task::JoinHandle<Value> {
    use tokio::io::AsyncBufReadExt;
    install_clients();
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(script)
        .args(args)
        .current_dir(clients_dir())
        .kill_on_drop(true)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("node runs");
    let mut stderr = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let before = tokio::time::timeout(Duration::from_secs(60), async {
        let mut seen = String::new();
        while let Ok(Some(line)) = stderr.next_line().await {
            if line.trim() == "connected" {
                return Ok(seen);
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        Err(seen)
    })
    .await
    .expect("the client connects in time");
    if let Err(seen) = before {
        panic!("{} ended before it connected: {seen}", script.display());
    }
    let name = script.display().to_string();
    tokio::spawn(async move {
        let rest = tokio::spawn(async move {
            let mut s = String::new();
            while let Ok(Some(line)) = stderr.next_line().await {
                s.push_str(&line);
                s.push('\n');
            }
            s
        });
        let out = tokio::time::timeout(Duration::from_secs(90), child.wait_with_output())
            .await
            .expect("in time")
            .expect("node runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name} failed: {}\n{stdout}", rest.await.unwrap_or_default());
        serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{stdout}: {e}"))
    })
}

pub fn chromium() -> String {
    ["/usr/bin/chromium", "/usr/lib/chromium/chromium"].into_iter().find(|p| Path::new(p).exists()).unwrap().into()
}

/// One of the DevTools client scripts in this crate's `clients/` (run with [`node`]).
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("clients").join(name)
}
