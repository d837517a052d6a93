//! A crashed tab: the renderer processes under the server's own process are killed with
//! SIGKILL. The rest: `crates/capture-server/tests/service/api/captures.rs`.

use crate::helpers::*;
use capture_testkit::captures::*;
use serde_json::{Value, json};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crashed_tab_fails_its_job_after_retries_and_the_browser_goes_on() {
    let site = Site::start(pages()).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free").await;
    let server = app.child.as_ref().unwrap().id();
    let job = app.create(&key, json!({"url": site.url("/red"), "waitUntil": "load", "delay": 5000})).await;
    let id = job["id"].as_str().unwrap().to_string();
    // Kill the page's renderer process (a crashed tab) every time one appears, retries
    // included, until the job ends: the browser process itself is never touched.
    let kills = std::cell::Cell::new(0);
    let done = eventually("the job ends", Duration::from_secs(90), || async {
        let v: Value = app.get(&key, &format!("/v1/screenshot/{id}")).await.json().await.unwrap();
        if v["status"] == "done" || v["status"] == "failed" {
            return Ok(v);
        }
        if v["status"] == "processing" {
            for pid in renderers_under(server) {
                if std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap().success() {
                    kills.set(kills.get() + 1);
                }
            }
        }
        Err(v)
    })
    .await;
    let kills = kills.get();
    eprintln!("crashed tab: {kills} renderer kills, job: {done}");
    assert!(kills >= 3, "the first attempt and both retries lost their tab ({kills} kills)");
    assert_eq!(done["status"], "failed", "{done}");
    let err = done["error"].as_str().unwrap();
    assert!(err.contains("crashed"), "a readable error: {err}");
    assert!(done["publicUrl"].is_null());
    let b: Value = app.get(&key, "/v1/account/balance").await.json().await.unwrap();
    assert_eq!(b["usage"]["used"], 0, "the failed job gave its action back: {b}");
    // The same browser goes on: the next capture works and no browser was restarted.
    let (_, bytes) = shot(&app, &key, json!({"url": site.url("/red"), "waitUntil": "load"})).await;
    assert_px(&decode(&bytes), 10, 10, [255, 0, 0]);
    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    let restarts: Vec<&str> = metrics.lines().filter(|l| l.starts_with("capture_browser_restarts_total{")).collect();
    assert_eq!(restarts.len(), 4, "one line per reason: {restarts:?}");
    assert!(restarts.iter().all(|l| l.ends_with(" 0")), "no browser restart: {restarts:?}");
}

/// Chromium renderer processes started (at any depth) by process `root`.
fn renderers_under(root: u32) -> Vec<u32> {
    let mut parent = std::collections::HashMap::new();
    let mut renderer = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // pid (comm) state ppid …; comm may contain spaces, so split after the last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { continue };
        let ppid: u32 = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        parent.insert(pid, ppid);
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmd).contains("--type=renderer") {
            renderer.push(pid);
        }
    }
    renderer
        .into_iter()
        .filter(|pid| {
            let mut p = *pid;
            for _ in 0..32 {
                match parent.get(&p) {
                    Some(&pp) if pp == root => return true,
                    Some(&pp) if pp > 1 => p = pp,
                    _ => return false,
                }
            }
            false
        })
        .collect()
}
