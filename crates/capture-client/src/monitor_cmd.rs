//! `capture monitor …`: monitors from the terminal. A monitor captures a page on a schedule and
//! compares each capture with its baseline (pixels, text or both); `create`, `list`, `show`,
//! `pause`, `resume` and `delete` manage them, `check` runs one now (and `--wait`s for its
//! result), `checks` lists the history and `baseline` accepts a check as the new baseline.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::client::Client;
use crate::error::{ClientError, Result, exit};

/// Monitors asked for per page while `list` reads them all (the API's most).
const LIST_PAGE: u32 = 100;
/// How often `check --wait` asks for the check.
const POLL: Duration = Duration::from_secs(1);

/// `capture monitor …`.
#[derive(clap::Subcommand)]
pub enum MonitorCmd {
    /// Monitor a page: capture it on a schedule (--every or --cron) and compare each capture
    /// with the baseline; the first good check becomes the baseline.
    Create(CreateArgs),
    /// Your monitors: id, name, status, last check, next run and URL.
    List,
    /// One monitor with its settings and latest check.
    Show { id: String },
    /// Delete a monitor and its checks.
    Delete { id: String },
    /// Pause a monitor: no check runs until it is resumed.
    Pause { id: String },
    /// Resume a paused monitor (due at once if it was never checked).
    Resume { id: String },
    /// Check a monitor now, outside its schedule (charged as one capture).
    Check {
        id: String,
        /// Wait for the check's result and print it (exit code 5 when the check failed).
        #[arg(long)]
        wait: bool,
        /// How long --wait waits, in seconds.
        #[arg(long, default_value_t = 120, value_name = "SECS")]
        timeout: u64,
    },
    /// A monitor's checks, newest first (the text diff of changed checks indented below).
    Checks {
        id: String,
        /// How many checks (1-100; default 20).
        #[arg(long)]
        limit: Option<u32>,
        /// Older checks: the cursor a previous page printed.
        #[arg(long, value_name = "CURSOR")]
        before: Option<String>,
    },
    /// Accept a done check as the monitor's baseline: the next checks are compared with it.
    Baseline {
        id: String,
        /// The check (chk_…): capture monitor checks ID lists them.
        check_id: String,
    },
}

/// What `capture monitor create` asks for.
#[derive(clap::Args)]
pub struct CreateArgs {
    /// The page to check (http or https).
    pub url: String,
    /// Check at this interval: a whole number and a unit, s, m, h or d (15m, 1h, 1d); never
    /// more often than the server allows (5m by default).
    #[arg(long, value_name = "INTERVAL", required_unless_present = "cron", conflicts_with = "cron")]
    pub every: Option<String>,
    /// Check on a cron schedule of five fields (minute hour day-of-month month day-of-week),
    /// e.g. "0 9 * * 1-5".
    #[arg(long, value_name = "EXPR")]
    pub cron: Option<String>,
    /// The IANA time zone the cron expression is read in (default UTC), e.g. Europe/Berlin.
    #[arg(long, value_name = "TZ", requires = "cron", conflicts_with = "every")]
    pub timezone: Option<String>,
    /// What to call it (default: the page's host and path).
    #[arg(long)]
    pub name: Option<String>,
    /// What to compare with the baseline (default both).
    #[arg(long, value_parser = ["pixels", "text", "both"])]
    pub compare: Option<String>,
    /// The share of the page's pixels (0 to 1) that must change for a check to count as
    /// changed (default 0.001, a tenth of a percent).
    #[arg(long, value_name = "SHARE")]
    pub threshold: Option<f64>,
    /// A CSS selector of an element left out of the comparison (a clock, an ad), repeatable.
    #[arg(long = "ignore", value_name = "SELECTOR")]
    pub ignore: Vec<String>,
    /// Mail this address when a check changes or keeps failing, repeatable.
    #[arg(long = "notify-email", value_name = "ADDR")]
    pub notify_email: Vec<String>,
    /// auto (default: a changed check becomes the baseline) or manual (only `capture monitor
    /// baseline` moves it).
    #[arg(long, value_parser = ["auto", "manual"])]
    pub baseline: Option<String>,
    /// Create it paused (no check runs until `capture monitor resume`).
    #[arg(long)]
    pub paused: bool,
    /// Viewport width of each capture, in CSS pixels.
    #[arg(long)]
    pub width: Option<u32>,
    /// Viewport height of each capture, in CSS pixels.
    #[arg(long)]
    pub height: Option<u32>,
    /// Capture the viewport only (checks capture the full page by default).
    #[arg(long)]
    pub viewport_only: bool,
    /// Each check's capture leaves through one of your proxies (id or name: capture proxy
    /// list).
    #[arg(long, value_name = "NAME")]
    pub proxy: Option<String>,
    /// For a pool with sticky rotation: the key that picks its member (default: the page's
    /// host).
    #[arg(long, value_name = "KEY")]
    pub proxy_sticky_key: Option<String>,
    /// Any capture option of the checks by its API name, as `capture shot --set` takes it
    /// (repeatable; wins over the flags): --set blockAds=true --set waitFor='#main'.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = crate::shot::parse_set)]
    pub set: Vec<(String, Value)>,
}

impl CreateArgs {
    /// The body of `POST /v1/monitors`.
    fn body(self) -> Value {
        let schedule = match (self.every, self.cron) {
            (Some(every), _) => json!({"every": every}),
            (None, cron) => {
                let mut s = json!({"cron": cron});
                if let Some(tz) = self.timezone {
                    s["timezone"] = json!(tz);
                }
                s
            }
        };
        let mut body = json!({"url": self.url, "schedule": schedule});
        let mut capture = Map::new();
        if let Some(w) = self.width {
            capture.insert("width".into(), json!(w));
        }
        if let Some(h) = self.height {
            capture.insert("height".into(), json!(h));
        }
        if self.viewport_only {
            capture.insert("fullPage".into(), json!(false));
        }
        for (k, v) in [("proxy", self.proxy), ("proxyStickyKey", self.proxy_sticky_key)] {
            if let Some(v) = v {
                capture.insert(k.into(), json!(v));
            }
        }
        capture.extend(self.set);
        if !capture.is_empty() {
            body["capture"] = Value::Object(capture);
        }
        for (k, v) in [("name", self.name), ("compare", self.compare), ("baseline", self.baseline)] {
            if let Some(v) = v {
                body[k] = json!(v);
            }
        }
        if let Some(t) = self.threshold {
            body["threshold"] = json!(t);
        }
        if !self.ignore.is_empty() {
            body["ignoreSelectors"] = json!(self.ignore);
        }
        if !self.notify_email.is_empty() {
            body["notify"] = json!({"email": self.notify_email});
        }
        if self.paused {
            body["paused"] = json!(true);
        }
        body
    }
}

/// Run `capture monitor CMD` (`--json`: the API's JSON as it came).
pub async fn run(c: &Client, cmd: MonitorCmd, as_json: bool) -> Result<()> {
    match cmd {
        MonitorCmd::Create(a) => create(c, a, as_json).await,
        MonitorCmd::List => list(c, as_json).await,
        MonitorCmd::Show { id } => show(c, &id, as_json).await,
        MonitorCmd::Delete { id } => delete(c, &id, as_json).await,
        MonitorCmd::Pause { id } => set_paused(c, &id, true, as_json).await,
        MonitorCmd::Resume { id } => set_paused(c, &id, false, as_json).await,
        MonitorCmd::Check { id, wait, timeout } => check(c, &id, wait, Duration::from_secs(timeout), as_json).await,
        MonitorCmd::Checks { id, limit, before } => checks(c, &id, limit, before, as_json).await,
        MonitorCmd::Baseline { id, check_id } => baseline(c, &id, &check_id, as_json).await,
    }
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or("")
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// A path segment (ids come from the user).
fn seg(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>().replace('+', "%20")
}

/// `every 1h` or `cron "0 9 * * 1-5" (Europe/Berlin)`.
fn schedule(m: &Value) -> String {
    let sch = &m["schedule"];
    if let Some(every) = sch["every"].as_str() {
        return format!("every {every}");
    }
    match (sch["cron"].as_str(), sch["timezone"].as_str()) {
        (Some(cron), Some(tz)) => format!("cron \"{cron}\" ({tz})"),
        (Some(cron), None) => format!("cron \"{cron}\""),
        _ => sch.to_string(),
    }
}

/// When the next check is due, or why none is.
fn next_run(m: &Value) -> String {
    match m["nextRunAt"].as_str() {
        Some(t) => t.to_string(),
        None if s(m, "status") == "paused" => "— (paused)".to_string(),
        None => "—".to_string(),
    }
}

/// A share of the page as a percentage (`0.42%`), or `—` when pixels were not compared.
fn percent(ratio: &Value) -> String {
    match ratio.as_f64() {
        Some(r) => format!("{:.2}%", r * 100.0),
        None => "—".to_string(),
    }
}

/// `text` with each line indented by `by` spaces.
fn indent(text: &str, by: usize) -> String {
    let pad = " ".repeat(by);
    text.lines().map(|l| format!("{pad}{l}\n")).collect()
}

async fn create(c: &Client, a: CreateArgs, as_json: bool) -> Result<()> {
    let m = c.post("/v1/monitors", Some(&a.body())).await?;
    if as_json {
        println!("{}", pretty(&m));
        return Ok(());
    }
    println!("Created the monitor {} ({})", s(&m, "id"), s(&m, "name"));
    println!("URL:       {}", s(&m, "url"));
    println!("Schedule:  {}", schedule(&m));
    println!("Next run:  {}", next_run(&m));
    if s(&m, "status") == "paused" {
        println!("Start it:  capture monitor resume {}", s(&m, "id"));
    }
    Ok(())
}

async fn list(c: &Client, as_json: bool) -> Result<()> {
    // Every page, oldest cursor last: a plan keeps at most a few hundred monitors.
    let mut all = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let mut path = format!("/v1/monitors?limit={LIST_PAGE}");
        if let Some(b) = &before {
            path.push_str(&format!("&before={}", seg(b)));
        }
        let v = c.get(&path).await?;
        all.extend(v["data"].as_array().cloned().unwrap_or_default());
        match v["nextCursor"].as_str() {
            Some(next) if !next.is_empty() && before.as_deref() != Some(next) => before = Some(next.to_string()),
            _ => break,
        }
    }
    if as_json {
        println!("{}", pretty(&json!({"data": all, "nextCursor": null})));
        return Ok(());
    }
    if all.is_empty() {
        println!("No monitors yet: capture monitor create URL --every 1h makes one.");
        return Ok(());
    }
    let header = ["ID", "NAME", "STATUS", "LAST CHECK", "NEXT RUN", "URL"];
    let rows: Vec<[String; 6]> = all
        .iter()
        .map(|m| {
            let last = m["lastCheck"]["status"].as_str().unwrap_or("—").to_string();
            [s(m, "id").into(), s(m, "name").into(), s(m, "status").into(), last, next_run(m), s(m, "url").into()]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 6]| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i == cells.len() - 1 {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  "));
            }
        }
        out
    };
    println!("{}", line(header));
    for r in &rows {
        println!("{}", line(r.each_ref().map(String::as_str)));
    }
    Ok(())
}

async fn show(c: &Client, id: &str, as_json: bool) -> Result<()> {
    let m = c.get(&format!("/v1/monitors/{}", seg(id))).await?;
    if as_json {
        println!("{}", pretty(&m));
        return Ok(());
    }
    let list = |k: &Value| -> String {
        let items: Vec<&str> = k.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        if items.is_empty() { "—".into() } else { items.join(", ") }
    };
    println!("{}  {}", s(&m, "id"), s(&m, "name"));
    println!("  URL:         {}", s(&m, "url"));
    println!("  Status:      {}", s(&m, "status"));
    println!("  Schedule:    {}", schedule(&m));
    println!("  Next run:    {}", next_run(&m));
    println!("  Compare:     {} (threshold {})", s(&m, "compare"), percent(&m["threshold"]));
    println!("  Ignore:      {}", list(&m["ignoreSelectors"]));
    println!("  Notify:      {}", list(&m["notify"]["email"]));
    let base = m["baselineCheckId"].as_str().unwrap_or("none yet");
    println!("  Baseline:    {} ({base})", s(&m, "baseline"));
    if let Some(capture) = m["capture"].as_object().filter(|o| !o.is_empty()) {
        println!("  Capture:     {}", Value::Object(capture.clone()));
    }
    let last = &m["lastCheck"];
    if last.is_object() {
        let diff =
            if last["diffRatio"].is_null() { String::new() } else { format!(", diff {}", percent(&last["diffRatio"])) };
        println!("  Last check:  {} {} at {}{diff}", s(last, "id"), s(last, "status"), s(last, "createdAt"));
        if let Some(e) = last["error"].as_str() {
            println!("               {e}");
        }
    } else {
        println!("  Last check:  none yet");
    }
    let failures = m["failuresInARow"].as_i64().unwrap_or(0);
    if failures > 0 {
        println!("  Failing:     {failures} checks in a row");
    }
    println!("  Created:     {}", s(&m, "createdAt"));
    Ok(())
}

async fn delete(c: &Client, id: &str, as_json: bool) -> Result<()> {
    c.delete(&format!("/v1/monitors/{}", seg(id))).await?;
    if as_json {
        println!("{}", pretty(&json!({"deleted": id})));
    } else {
        println!("Deleted the monitor {id} and its checks.");
    }
    Ok(())
}

async fn set_paused(c: &Client, id: &str, pause: bool, as_json: bool) -> Result<()> {
    let action = if pause { "pause" } else { "resume" };
    let m = c.post(&format!("/v1/monitors/{}/{action}", seg(id)), None).await?;
    if as_json {
        println!("{}", pretty(&m));
        return Ok(());
    }
    println!("{} ({}) is {}; next run: {}", s(&m, "id"), s(&m, "name"), s(&m, "status"), next_run(&m));
    Ok(())
}

/// `capture monitor check ID [--wait [--timeout S]]`: start a check; with `--wait`, ask for it
/// every second until it is no longer pending (a check already running is waited for instead
/// of refused), then print it. A failed check exits with the capture-failed code.
async fn check(c: &Client, id: &str, wait: bool, timeout: Duration, as_json: bool) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let mut chk = match c.post_or_failure(&format!("/v1/monitors/{}/check", seg(id)), None).await? {
        Ok(v) => v,
        Err(f) if wait && f.code == "CONCURRENCY_LIMIT" => match running_check(c, id).await? {
            Some(v) => {
                eprintln!("A check of {id} is already running ({}): waiting for it.", s(&v, "id"));
                v
            }
            None => return Err(f.into_error()),
        },
        Err(f) => return Err(f.into_error()),
    };
    if wait && s(&chk, "status") == "pending" {
        if !as_json {
            eprintln!("Checking {id} ({}): waiting up to {} s for the result…", s(&chk, "id"), timeout.as_secs());
        }
        let path = format!("/v1/monitors/{}/checks/{}", seg(id), seg(s(&chk, "id")));
        while s(&chk, "status") == "pending" {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ClientError::new(
                    exit::FAILURE,
                    format!(
                        "the check {} is still pending after {} s; its result will be in: capture monitor checks {id}",
                        s(&chk, "id"),
                        timeout.as_secs()
                    ),
                ));
            }
            tokio::time::sleep(POLL.min(left)).await;
            chk = c.get(&path).await?;
        }
    }
    if as_json {
        println!("{}", pretty(&chk));
    } else if wait || s(&chk, "status") != "pending" {
        print_check(&chk);
    } else {
        println!("Started the check {} of {id} (pending).", s(&chk, "id"));
        println!("Its result: capture monitor checks {id}  (or check with --wait)");
    }
    if s(&chk, "status") == "failed" {
        let why = chk["error"].as_str().unwrap_or("no reason given");
        return Err(ClientError::new(exit::CAPTURE_FAILED, format!("the check {} failed: {why}", s(&chk, "id"))));
    }
    Ok(())
}

/// The monitor's newest check when it is still pending.
async fn running_check(c: &Client, id: &str) -> Result<Option<Value>> {
    let v = c.get(&format!("/v1/monitors/{}/checks?limit=1", seg(id))).await?;
    Ok(v["data"].as_array().and_then(|d| d.first()).filter(|chk| s(chk, "status") == "pending").cloned())
}

/// A check's result: status, diff, regions, the pictures' addresses and the text diff.
fn print_check(chk: &Value) {
    let mut status = s(chk, "status").to_string();
    if chk["isBaseline"].as_bool() == Some(true) {
        status.push_str(" (the monitor's baseline)");
    }
    println!("Check:       {}", s(chk, "id"));
    println!("Status:      {status}");
    if !chk["diffRatio"].is_null() {
        let regions = chk["changedRegions"].as_array().map_or(0, Vec::len);
        let plural = if regions == 1 { "" } else { "s" };
        println!("Diff:        {} of the page, {regions} changed region{plural}", percent(&chk["diffRatio"]));
    }
    for (label, k) in [("Diff image:", "diffUrl"), ("Image:", "imageUrl"), ("Baseline:", "baselineImageUrl")] {
        if let Some(u) = chk[k].as_str() {
            println!("{label:<12} {u}");
        }
    }
    if let Some(e) = chk["error"].as_str() {
        println!("Error:       {e}");
    }
    match chk["textDiff"].as_str() {
        Some("") => println!("Text:        unchanged"),
        Some(d) => print!("Text diff:\n{}", indent(d, 4)),
        None => {}
    }
}

async fn checks(c: &Client, id: &str, limit: Option<u32>, before: Option<String>, as_json: bool) -> Result<()> {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    if let Some(l) = limit {
        q.append_pair("limit", &l.to_string());
    }
    if let Some(b) = &before {
        q.append_pair("before", b);
    }
    let q = q.finish();
    let q = if q.is_empty() { q } else { format!("?{q}") };
    let v = c.get(&format!("/v1/monitors/{}/checks{q}", seg(id))).await?;
    if as_json {
        println!("{}", pretty(&v));
        return Ok(());
    }
    let data = v["data"].as_array().cloned().unwrap_or_default();
    if data.is_empty() {
        println!("No checks yet: capture monitor check {id} --wait runs one now.");
    }
    for chk in &data {
        let mark = if chk["isBaseline"].as_bool() == Some(true) { "*" } else { " " };
        let mut line = format!(
            "{}{mark} {:<9}  {}  {:>7}",
            s(chk, "id"),
            s(chk, "status"),
            s(chk, "createdAt"),
            percent(&chk["diffRatio"])
        );
        if let Some(e) = chk["error"].as_str() {
            line.push_str(&format!("  {e}"));
        }
        println!("{}", line.trim_end());
        if s(chk, "status") == "changed"
            && let Some(d) = chk["textDiff"].as_str().filter(|d| !d.is_empty())
        {
            print!("{}", indent(d, 4));
        }
    }
    if !data.is_empty() && data.iter().any(|chk| chk["isBaseline"].as_bool() == Some(true)) {
        println!("(* the monitor's baseline)");
    }
    if let Some(next) = v["nextCursor"].as_str() {
        println!("Older checks: capture monitor checks {id} --before {next}");
    }
    Ok(())
}

async fn baseline(c: &Client, id: &str, check_id: &str, as_json: bool) -> Result<()> {
    let m = c.post(&format!("/v1/monitors/{}/baseline", seg(id)), Some(&json!({"checkId": check_id}))).await?;
    if as_json {
        println!("{}", pretty(&m));
        return Ok(());
    }
    println!(
        "The baseline of {} ({}) is now {}: the next checks are compared with it.",
        s(&m, "id"),
        s(&m, "name"),
        m["baselineCheckId"].as_str().unwrap_or(check_id)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(every: Option<&str>, cron: Option<&str>) -> CreateArgs {
        CreateArgs {
            url: "https://example.com/".into(),
            every: every.map(str::to_string),
            cron: cron.map(str::to_string),
            timezone: None,
            name: None,
            compare: None,
            threshold: None,
            ignore: vec![],
            notify_email: vec![],
            baseline: None,
            paused: false,
            width: None,
            height: None,
            viewport_only: false,
            proxy: None,
            proxy_sticky_key: None,
            set: vec![],
        }
    }

    #[test]
    fn the_create_body_carries_only_what_was_given() {
        assert_eq!(args(Some("1h"), None).body(), json!({"url": "https://example.com/", "schedule": {"every": "1h"}}));
        let mut a = args(None, Some("0 9 * * 1-5"));
        a.timezone = Some("Europe/Berlin".into());
        a.name = Some("Home".into());
        a.compare = Some("text".into());
        a.threshold = Some(0.01);
        a.ignore = vec![".clock".into(), "#ad".into()];
        a.notify_email = vec!["a@example.com".into()];
        a.paused = true;
        a.width = Some(800);
        a.viewport_only = true;
        a.proxy = Some("office".into());
        a.set = vec![("blockAds".into(), json!(true)), ("width".into(), json!(1024))];
        assert_eq!(
            a.body(),
            json!({
                "url": "https://example.com/",
                "schedule": {"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"},
                "name": "Home",
                "compare": "text",
                "threshold": 0.01,
                "ignoreSelectors": [".clock", "#ad"],
                "notify": {"email": ["a@example.com"]},
                "paused": true,
                "capture": {"width": 1024, "fullPage": false, "proxy": "office", "blockAds": true}
            })
        );
    }

    #[test]
    fn schedules_and_shares_read_as_text() {
        assert_eq!(schedule(&json!({"schedule": {"every": "15m"}})), "every 15m");
        assert_eq!(
            schedule(&json!({"schedule": {"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"}})),
            "cron \"0 9 * * 1-5\" (Europe/Berlin)"
        );
        assert_eq!(percent(&json!(0.0042)), "0.42%");
        assert_eq!(percent(&Value::Null), "—");
        assert_eq!(next_run(&json!({"status": "paused", "nextRunAt": null})), "— (paused)");
        assert_eq!(indent("-a\n+b\n", 2), "  -a\n  +b\n");
    }
}
