//! `capture monitor …` end to end against the real `capture serve` (with a worker and
//! Chromium) and a page of our own: create, list, check now and wait for the result (the first
//! good check is the baseline), the history of checks, pause and resume, accept a baseline,
//! delete; and a schedule the server refuses, named by its field.

#[allow(dead_code)]
mod cli_support;
#[path = "api/helpers.rs"]
#[allow(dead_code)]
mod helpers;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cli_support::client;
use helpers::*;
use serde_json::Value;

/// A small page (one capture of it takes well under a second): its opening hours, or, once
/// `changed`, new ones.
fn page(changed: bool) -> String {
    let hours = if changed { "Monday to Saturday, 8:00 to 20:00." } else { "Monday to Friday, 9:00 to 17:00." };
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Opening hours</title>
<style>body {{ margin: 0; font: 16px sans-serif; }} main {{ width: 600px; height: 400px; padding: 20px; }}</style>
</head><body><main>
<h1>Opening hours</h1>
<p>{hours}</p>
</main></body></html>"#
    )
}

/// The server, a key, the page's site and a home folder for the client.
struct Setup {
    app: TestApp,
    key: String,
    site: Site,
    /// Whether `/hours` shows its new hours.
    changed: Arc<AtomicBool>,
    home: tempfile::TempDir,
}

impl Setup {
    async fn start(opts: Opts) -> Setup {
        let changed = Arc::new(AtomicBool::new(false));
        let flag = changed.clone();
        let router = axum::Router::new().route(
            "/hours",
            axum::routing::get(move || {
                let body = page(flag.load(Ordering::SeqCst));
                async move { ([(axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8")], body) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let site = Site::from_parts(base, tokio::spawn(async move { axum::serve(listener, router).await.unwrap() }));
        let app = TestApp::spawn(opts).await;
        let (_, key) = app.user_with_key("free").await;
        Setup { app, key, site, changed, home: tempfile::tempdir().unwrap() }
    }

    async fn run(&self, args: &[&str]) -> cli_support::Run {
        let run = client(self.home.path(), &self.app.base, &self.key, args).await;
        println!("capture {args:?} → {:?}\n--- stdout:\n{}--- stderr:\n{}", run.code, run.stdout, run.stderr);
        run
    }

    /// `capture monitor ARGS --json`, succeeding, as JSON.
    async fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["monitor"];
        all.extend(args);
        all.push("--json");
        let run = self.run(&all).await;
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
    }
}

/// The value after `label` on the line that starts with it.
fn field<'a>(out: &'a str, label: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(label))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no line starting {label:?} in:\n{out}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_monitor_is_created_listed_checked_paused_resumed_and_deleted() {
    let s = Setup::start(Opts::full(Db::Sqlite)).await;
    let url = s.site.url("/hours");

    // Created paused, so the scheduler starts no check of its own: the check below is the
    // first, and so the baseline.
    let run = s
        .run(&["monitor", "create", &url, "--every", "1h", "--name", "Opening hours", "--ignore", ".clock", "--paused"])
        .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let created = field(&run.stdout, "Created the monitor ");
    let (id, rest) = created.split_once(' ').unwrap();
    assert!(id.starts_with("mon_"), "{created}");
    assert_eq!(rest, "(Opening hours)");
    assert_eq!(field(&run.stdout, "URL:"), url);
    assert_eq!(field(&run.stdout, "Schedule:"), "every 1h");
    assert_eq!(field(&run.stdout, "Next run:"), "— (paused)");
    assert_eq!(field(&run.stdout, "Start it:"), format!("capture monitor resume {id}"));

    // The table: a header, then its row with the id, name, status, no check yet, and the URL.
    let run = s.run(&["monitor", "list"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    assert!(lines[0].starts_with("ID ") && lines[0].ends_with("  URL"), "{}", run.stdout);
    let cells: Vec<&str> = lines[1].split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(cells, [id, "Opening hours", "paused", "—", "— (paused)", url.as_str()], "{}", run.stdout);

    // Check now and wait: the first good check becomes the baseline.
    let run = s.run(&["monitor", "check", id, "--wait", "--timeout", "60"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let check_id = field(&run.stdout, "Check:").to_string();
    assert!(check_id.starts_with("chk_"), "{}", run.stdout);
    assert_eq!(field(&run.stdout, "Status:"), "baseline (the monitor's baseline)");
    assert!(field(&run.stdout, "Image:").starts_with("http"), "{}", run.stdout);
    assert!(run.took.as_secs() < 60);
    let m = s.json(&["show", id]).await;
    assert_eq!(m["baselineCheckId"], check_id.as_str());
    assert_eq!(m["lastCheck"]["id"], check_id.as_str());
    assert_eq!(m["lastCheck"]["status"], "baseline");
    assert_eq!(m["ignoreSelectors"], serde_json::json!([".clock"]));

    // The history: that check, marked as the baseline.
    let run = s.run(&["monitor", "checks", id]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let first = run.stdout.lines().next().unwrap();
    assert!(first.starts_with(&format!("{check_id}* baseline ")), "{}", run.stdout);
    assert_eq!(run.stdout.lines().last(), Some("(* the monitor's baseline)"));

    // The page changes: the next check is `changed`, with the share of pixels, the regions,
    // the diff picture and the text's diff; `checks` shows it above the first, its text diff
    // indented under it.
    s.changed.store(true, Ordering::SeqCst);
    let run = s.run(&["monitor", "check", id, "--wait", "--timeout", "60"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let changed_id = field(&run.stdout, "Check:").to_string();
    assert_eq!(field(&run.stdout, "Status:"), "changed (the monitor's baseline)", "auto baseline");
    let diff = field(&run.stdout, "Diff:");
    assert!(diff.ends_with(" of the page, 1 changed region") || diff.contains(" changed regions"), "{diff}");
    assert!(field(&run.stdout, "Diff image:").starts_with("http"), "{}", run.stdout);
    let text_diff: Vec<&str> = run.stdout.lines().skip_while(|l| *l != "Text diff:").skip(1).collect();
    assert!(text_diff.contains(&"    -Monday to Friday, 9:00 to 17:00."), "{}", run.stdout);
    assert!(text_diff.contains(&"    +Monday to Saturday, 8:00 to 20:00."), "{}", run.stdout);
    let run = s.run(&["monitor", "checks", id, "--limit", "5"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].starts_with(&format!("{changed_id}* changed ")) && lines[0].ends_with('%'), "{}", run.stdout);
    assert!(lines.contains(&"    +Monday to Saturday, 8:00 to 20:00."), "{}", run.stdout);
    let first = lines.iter().position(|l| l.starts_with(&check_id)).unwrap();
    assert!(lines[first].starts_with(&format!("{check_id}  baseline ")), "{}", run.stdout);
    assert!(lines[1..first].iter().all(|l| l.starts_with("    ")), "only the diff between them: {}", run.stdout);

    // Readable show.
    let run = s.run(&["monitor", "show", id]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(field(&run.stdout, "  Baseline:"), format!("auto ({changed_id})"));
    assert!(field(&run.stdout, "  Last check:").starts_with(&format!("{changed_id} changed at ")), "{}", run.stdout);

    // Resume (it has a baseline: due in an hour, not at once), then pause again.
    let run = s.run(&["monitor", "resume", id]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.starts_with(&format!("{id} (Opening hours) is active; next run: 20")), "{}", run.stdout);
    let m = s.json(&["show", id]).await;
    assert_eq!(m["status"], "active");
    assert!(m["nextRunAt"].is_string(), "{m}");
    let m = s.json(&["pause", id]).await;
    assert_eq!(m["status"], "paused");
    assert_eq!(m["nextRunAt"], Value::Null);
    let run = s.run(&["monitor", "list"]).await;
    let row = run.stdout.lines().find(|l| l.starts_with(id)).unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(row.contains("  paused  ") && row.contains("  changed  "), "{row}");

    // Back to the first check as the baseline; a made-up one is refused naming checkId.
    let run = s.run(&["monitor", "baseline", id, &check_id]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains(&format!("is now {check_id}")), "{}", run.stdout);
    assert_eq!(s.json(&["show", id]).await["baselineCheckId"], check_id.as_str());
    let run = s.run(&["monitor", "baseline", id, "chk_nope"]).await;
    assert_eq!(run.code, Some(6), "{}", run.stderr);
    assert!(run.stderr.contains("checkId") && run.stderr.contains("VALIDATION_ERROR"), "{}", run.stderr);

    // Deleted: gone from show (not found, exit code 6) and from the list.
    let run = s.run(&["monitor", "delete", id]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, format!("Deleted the monitor {id} and its checks.\n"));
    let run = s.run(&["monitor", "show", id]).await;
    assert_eq!(run.code, Some(6), "{}", run.stderr);
    assert!(run.stderr.starts_with("error: ") && run.stderr.contains("not found"), "{}", run.stderr);
    assert!(run.stderr.contains("HTTP 404, NOT_FOUND"), "{}", run.stderr);
    assert_eq!(run.stdout, "");
    let run = s.run(&["monitor", "list"]).await;
    assert_eq!(run.stdout, "No monitors yet: capture monitor create URL --every 1h makes one.\n");

    // A page that answers 404: the check fails (an HTTP error status fails a check), is
    // printed, and the command exits with the capture-failed code.
    let m = s.json(&["create", &s.site.url("/gone"), "--every", "1h", "--paused"]).await;
    let id = m["id"].as_str().unwrap();
    let run = s.run(&["monitor", "check", id, "--wait", "--timeout", "60"]).await;
    assert_eq!(run.code, Some(5), "{}", run.stderr);
    assert_eq!(field(&run.stdout, "Status:"), "failed");
    let check_id = field(&run.stdout, "Check:");
    let error = field(&run.stdout, "Error:");
    assert!(error.contains("404"), "{}", run.stdout);
    assert_eq!(run.stderr.lines().last(), Some(format!("error: the check {check_id} failed: {error}").as_str()));
    let run = s.run(&["monitor", "checks", id]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.starts_with(&format!("{check_id}  failed ")), "{}", run.stdout);
    assert!(run.stdout.trim_end().ends_with(error), "{}", run.stdout);
}

/// Schedules: one under the server's minimum is refused by the server naming
/// `schedule.every`; a cron schedule in a time zone is shown as given; `--timezone` without
/// `--cron` is a usage error. No captures: the api and scheduler roles only.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn schedules_are_checked_by_the_server_and_shown_as_given() {
    let s = Setup::start(Opts::api(Db::Sqlite)).await;
    let url = s.site.url("/hours");

    let run = s.run(&["monitor", "create", &url, "--every", "1m"]).await;
    assert_eq!(run.code, Some(6), "{}", run.stderr);
    assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
    assert!(run.stderr.contains("VALIDATION_ERROR") && run.stderr.contains("schedule.every"), "{}", run.stderr);
    assert!(run.stderr.contains("at least 5m"), "{}", run.stderr);
    assert_eq!(run.stdout, "");

    let run = s.run(&["monitor", "create", &url, "--every", "1h", "--timezone", "Europe/Berlin"]).await;
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("'--every <INTERVAL>' cannot be used with '--timezone <TZ>'"), "{}", run.stderr);

    let m = s
        .json(&[
            "create",
            &url,
            "--cron",
            "0 9 * * 1-5",
            "--timezone",
            "Europe/Berlin",
            "--compare",
            "text",
            "--paused",
        ])
        .await;
    let id = m["id"].as_str().unwrap();
    assert_eq!(m["schedule"], serde_json::json!({"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"}));
    assert_eq!(m["compare"], "text");
    assert_eq!(m["status"], "paused");
    let run = s.run(&["monitor", "show", id]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(field(&run.stdout, "  Schedule:"), "cron \"0 9 * * 1-5\" (Europe/Berlin)");
    assert_eq!(field(&run.stdout, "  Last check:"), "none yet");
    let run = s.run(&["monitor", "checks", id]).await;
    assert_eq!(run.stdout, format!("No checks yet: capture monitor check {id} --wait runs one now.\n"));
}

/// `check --wait` while a check of the monitor is already running (the server answers 429
/// CONCURRENCY_LIMIT, as right after a monitor is created active): it waits for that check
/// instead. Without --wait the refusal is the answer. A scripted server, no captures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_wait_follows_the_check_already_running() {
    use cli_support::{Reply, Scripted};
    use serde_json::json;

    let api = Scripted::start().await;
    let home = tempfile::tempdir().unwrap();
    let pending = json!({"id": "chk_running", "monitorId": "mon_m", "status": "pending", "diffRatio": null,
        "changedRegions": [], "textDiff": null, "error": null, "isBaseline": false, "createdAt": "2026-01-01T00:00:00.000Z"});
    let mut done = pending.clone();
    done["status"] = json!("baseline");
    done["isBaseline"] = json!(true);
    done["imageUrl"] = json!("http://files.example/a.png");
    api.on("POST /v1/monitors/mon_m/check", vec![Reply::error(429, "CONCURRENCY_LIMIT")]);
    api.on("GET /v1/monitors/mon_m/checks", vec![Reply::json(200, json!({"data": [pending], "nextCursor": null}))]);
    api.on(
        "GET /v1/monitors/mon_m/checks/chk_running",
        vec![Reply::json(200, pending.clone()), Reply::json(200, done)],
    );

    let run = client(home.path(), &api.base, "key", &["monitor", "check", "mon_m"]).await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(run.stderr, "error: scripted CONCURRENCY_LIMIT (HTTP 429, CONCURRENCY_LIMIT)\n");

    let run = client(home.path(), &api.base, "key", &["monitor", "check", "mon_m", "--wait"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.starts_with("A check of mon_m is already running (chk_running): waiting for it.\n"),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stdout,
        "Check:       chk_running\nStatus:      baseline (the monitor's baseline)\nImage:       http://files.example/a.png\n"
    );
    assert_eq!(api.seen("GET /v1/monitors/mon_m/checks/chk_running").len(), 2, "asked again after a second");
    assert_eq!(api.seen("POST /v1/monitors/mon_m/check").len(), 2, "one POST per run, never repeated");
}
