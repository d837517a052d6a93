//! Audit campaigns through the whole service: the real binary audits the fixture site in its
//! Chromium and mails the reports over SMTP to a real aiosmtpd server on 127.0.0.1
//! (`tests/smtp/smtp_sink.py`, from the virtualenv `tests/smtp/aiosmtpd-venv.sh` makes). The
//! service's clock is set with `CAPTURE_CLOCK_OFFSET` to walk sending hours across zones and a
//! DST change, and to move caps to the next day.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use capture_audit::fixtures::{CLEAN_PAGE, FixtureSite};
use capture_core::time::{iso, parse_iso};
use serde_json::{Value, json};

use crate::helpers::*;

const FROM: &str = "Capture Reports <reports@capture.test>";

fn axe_path() -> String {
    let p = std::env::var("CAPTURE_AXE_PATH").unwrap_or_else(|_| {
        format!("{}/../../tests/audit/node_modules/axe-core/axe.min.js", env!("CARGO_MANIFEST_DIR"))
    });
    assert!(
        Path::new(&p).is_file(),
        "axe-core not found at {p}: run `npm ci --prefix tests/audit` or set CAPTURE_AXE_PATH"
    );
    p
}

/// Python with aiosmtpd: `CAPTURE_TEST_AIOSMTPD`, else the virtualenv in the target dir. These
/// tests fail without it (they never pass by skipping).
fn aiosmtpd() -> PathBuf {
    if let Some(p) = std::env::var_os("CAPTURE_TEST_AIOSMTPD").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap().join("aiosmtpd-venv/bin/python");
    assert!(venv.is_file(), "aiosmtpd missing: run `bash tests/smtp/aiosmtpd-venv.sh` or set CAPTURE_TEST_AIOSMTPD");
    venv
}

/// A running `smtp_sink.py`, killed on drop.
struct Sink {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Sink {
    fn start(args: &[&str]) -> Sink {
        let dir = tempfile::tempdir().unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/smtp/smtp_sink.py");
        let mut child = Command::new(aiosmtpd())
            .arg(&script)
            .arg(dir.path())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start smtp_sink.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().strip_prefix("PORT ").and_then(|p| p.parse().ok()).expect("smtp_sink.py's port");
        Sink { child, port, dir }
    }

    fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// The messages received so far: (raw text, envelope).
    fn received(&self) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        for n in 1.. {
            let Ok(meta) = std::fs::read_to_string(self.dir.path().join(format!("{n}.json"))) else { break };
            let raw = std::fs::read(self.dir.path().join(format!("{n}.eml"))).unwrap();
            out.push((String::from_utf8_lossy(&raw).to_string(), serde_json::from_str(&meta).unwrap()));
        }
        out
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `CAPTURE_CLOCK_OFFSET` that puts the service's clock at `instant` now.
fn offset_to(instant: &str) -> String {
    let target = parse_iso(instant).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let off = target - now;
    if off < 0 { format!("-{}ms", -off) } else { format!("+{off}ms") }
}

fn set_env(app: &mut TestApp, k: &str, v: &str) {
    app.env.retain(|(key, _)| key != k);
    app.env.push((k.into(), v.into()));
}

async fn post(app: &TestApp, key: &str, path: &str, body: &Value) -> (u16, Value) {
    let r = app.post_json(key, path, body).await;
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn campaign(app: &TestApp, key: &str, id: &str) -> Value {
    let r = app.get(key, &format!("/v1/campaigns/{id}")).await;
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

/// Poll a campaign until `done(campaign)` holds.
async fn wait_for(app: &TestApp, key: &str, id: &str, limit: Duration, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let c = campaign(app, key, id).await;
        if done(&c) {
            return c;
        }
        assert!(Instant::now() < deadline, "campaign {id} did not get there in {limit:?}: {c:#}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn row<'a>(c: &'a Value, email: &str) -> &'a Value {
    c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["recipientEmail"] == email)
        .unwrap_or_else(|| panic!("{email}: {c:#}"))
}

/// A top-level header, unfolded.
fn header(raw: &str, name: &str) -> Option<String> {
    let head = raw.split("\r\n\r\n").next().unwrap().replace("\r\n ", " ").replace("\r\n\t", " ");
    head.split("\r\n").find_map(|l| {
        l.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim().to_string())
    })
}

fn new_campaign(name: &str, zone: &str, hours: &str, send_at: &str, recipients: Value) -> Value {
    json!({"name": name, "sendAt": send_at, "timezone": zone, "sendHours": hours, "recipients": recipients})
}

/// Create (201) and launch (200) a campaign; its id.
async fn create_and_launch(app: &TestApp, key: &str, body: &Value) -> String {
    let (s, c) = post(app, key, "/v1/campaigns", body).await;
    assert_eq!(s, 201, "{c}");
    let id = c["id"].as_str().unwrap().to_string();
    let (s, l) = post(app, key, &format!("/v1/campaigns/{id}/launch"), &json!({})).await;
    assert_eq!(s, 200, "{l}");
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_campaign_mails_each_row_once_with_its_report_and_one_click_unsubscribe() {
    let sink = Sink::start(&["--reject-550", "gone@two.test"]);
    let site = FixtureSite::start().await.unwrap();
    let blank = Site::start(vec![("/", "text/html", solid("#ffffff"))]).await;
    let app = TestApp::spawn(
        Opts::full(Db::Sqlite)
            .env("CAPTURE_AXE_PATH", &axe_path())
            .env("CAPTURE_SMTP_URL", &sink.url())
            .env("CAPTURE_MAIL_FROM", FROM),
    )
    .await;
    let (_, key) = app.user_with_key("pro");
    let page = site.url(CLEAN_PAGE);

    // Validation names the field; nothing is stored.
    for (body, field) in [
        (new_campaign("x", "Mars/Base", "anytime", "2026-01-01T00:00:00Z", json!([])), "timezone"),
        (new_campaign("x", "UTC", "anytime", "soon", json!([])), "sendAt"),
        (new_campaign("x", "UTC", "night", "2026-01-01T00:00:00Z", json!([])), "sendHours"),
        (
            new_campaign(
                "x",
                "UTC",
                "anytime",
                "2026-01-01T00:00:00Z",
                json!([{"websiteUrl": page, "recipientEmail": "a@@b"}]),
            ),
            "recipients[0].recipientEmail",
        ),
        (
            new_campaign(
                "x",
                "UTC",
                "anytime",
                "2026-01-01T00:00:00Z",
                json!([{"websiteUrl": "file:///etc/passwd", "recipientEmail": "a@b.test"}]),
            ),
            "recipients[0].websiteUrl",
        ),
    ] {
        let (s, e) = post(&app, &key, "/v1/campaigns", &body).await;
        assert_eq!((s, e["details"]["field"].as_str()), (400, Some(field)), "{e}");
    }

    // Duplicates (same address, any case, same website) are stored once.
    let body = new_campaign(
        "Spring outreach",
        "Europe/Berlin",
        "anytime",
        "2020-01-01T00:00:00Z",
        json!([
            {"websiteUrl": page, "recipientEmail": "owner@one.test"},
            {"websiteUrl": page, "recipientEmail": "OWNER@one.test"},
            {"websiteUrl": page, "recipientEmail": "other@two.test"},
        ]),
    );
    let (s, c) = post(&app, &key, "/v1/campaigns", &body).await;
    assert_eq!(s, 201, "{c}");
    assert_eq!((c["status"].as_str(), c["counts"]["total"].as_i64()), (Some("draft"), Some(2)), "{c}");
    assert_eq!(c["rows"][0]["state"], "pending");
    let id = c["id"].as_str().unwrap().to_string();
    // A draft sends nothing.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(campaign(&app, &key, &id).await["counts"]["pending"], 2);

    let (s, l) = post(&app, &key, &format!("/v1/campaigns/{id}/launch"), &json!({})).await;
    assert_eq!(s, 200, "{l}");
    let launched_at = l["launchedAt"].clone();
    let (s, again) = post(&app, &key, &format!("/v1/campaigns/{id}/launch"), &json!({})).await;
    assert_eq!((s, &again["launchedAt"]), (200, &launched_at), "a second launch changes nothing: {again}");

    wait_for(&app, &key, &id, Duration::from_secs(150), |c| c["counts"]["sent"] == 2).await;
    let c = wait_for(&app, &key, &id, Duration::from_secs(10), |c| c["status"] == "completed").await;
    let mails = sink.received();
    assert_eq!(mails.len(), 2, "one mail per row");
    for email in ["owner@one.test", "other@two.test"] {
        let r = row(&c, email);
        let (raw, envelope) =
            mails.iter().find(|(_, e)| e["rcpt_tos"][0] == email).unwrap_or_else(|| panic!("no mail to {email}"));
        assert_eq!(envelope["mail_from"], "reports@capture.test");
        assert_eq!(header(raw, "From").as_deref(), Some("\"Capture Reports\" <reports@capture.test>"));
        assert_eq!(header(raw, "To").as_deref(), Some(email));
        assert_eq!(header(raw, "Subject").as_deref(), Some("Website report for 127.0.0.1"));
        assert_eq!(header(raw, "Message-ID").as_deref(), r["messageId"].as_str(), "{raw}");
        assert!(header(raw, "Message-ID").unwrap().ends_with("@capture.test>"));
        assert!(header(raw, "Date").is_some_and(|d| d.ends_with("+0000")), "{raw}");
        assert_eq!(header(raw, "List-Unsubscribe-Post").as_deref(), Some("List-Unsubscribe=One-Click"));
        let unsub = header(raw, "List-Unsubscribe").unwrap();
        assert!(
            unsub.starts_with(&format!("<{}/unsubscribe/", app.base)) && unsub.contains(", <mailto:unsubscribe+"),
            "{unsub}"
        );
        let ctype = header(raw, "Content-Type").unwrap();
        assert!(ctype.starts_with("multipart/alternative"), "{ctype}");
        let body = raw.replace("=\r\n", "");
        for part in [
            "Content-Type: text/plain",
            "Content-Type: text/html",
            "multipart/related",
            "Content-Type: image/jpeg",
            "Content-ID: <screenshot.",
        ] {
            assert!(body.contains(part), "{part} missing:\n{raw}");
        }
        let report_url = r["reportUrl"].as_str().unwrap();
        assert!(body.contains(report_url) && body.contains("Performance") && body.contains("Accessibility"), "{raw}");
        assert!(r["sentAt"].is_string() && r["waiting"].is_null() && r["reason"].is_null(), "{r}");
        // The report link works without a credential.
        let (status, ct, _) = app.fetch(report_url).await;
        assert_eq!((status, ct.starts_with("text/html")), (200, true));
    }
    // Each row cost its audit (1 action for a single page).
    let b: Value = app.get(&key, "/v1/account/balance").await.json().await.unwrap();
    assert_eq!(b["usage"]["used"], 2, "{b}");

    // One-click unsubscribe (RFC 8058 POST, no sign-in) suppresses the address at once.
    let raw = &mails.iter().find(|(_, e)| e["rcpt_tos"][0] == "owner@one.test").unwrap().0;
    let link = header(raw, "List-Unsubscribe").unwrap().split('>').next().unwrap().trim_start_matches('<').to_string();
    let r = app
        .client
        .post(&link)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let s: Value = app.get(&key, "/v1/suppressions").await.json().await.unwrap();
    assert_eq!(
        (s["data"][0]["email"].as_str(), s["data"][0]["reason"].as_str()),
        (Some("owner@one.test"), Some("unsubscribed")),
        "{s}"
    );
    let r = app.client.get(app.url("/unsubscribe/nosuchtoken0000000000")).send().await.unwrap();
    assert_eq!(r.status(), 404);

    // A later campaign of the account never mails the suppressed address (and spends no audit
    // on it); a 5xx rejection fails the row and suppresses that address too.
    let body = new_campaign(
        "Again",
        "UTC",
        "anytime",
        "2020-01-01T00:00:00Z",
        json!([
            {"websiteUrl": page, "recipientEmail": "Owner@one.test"},
            {"websiteUrl": page, "recipientEmail": "gone@two.test"},
            {"websiteUrl": page, "recipientEmail": "third@two.test"},
            {"websiteUrl": site.url("/no-such-page"), "recipientEmail": "missing@three.test"},
            {"websiteUrl": blank.url("/"), "recipientEmail": "blank@three.test"},
            {"websiteUrl": "http://127.0.0.1:9/", "recipientEmail": "down@three.test"},
        ]),
    );
    let id2 = create_and_launch(&app, &key, &body).await;
    let c2 = wait_for(&app, &key, &id2, Duration::from_secs(150), |c| c["status"] == "completed").await;
    let owner = row(&c2, "Owner@one.test");
    assert_eq!(
        (owner["state"].as_str(), owner["reason"].as_str(), owner["auditId"].as_str()),
        (Some("skipped"), Some("suppressed"), None),
        "{c2:#}"
    );
    let gone = row(&c2, "gone@two.test");
    assert_eq!(
        (gone["state"].as_str(), gone["reason"].as_str()),
        (Some("failed"), Some("smtp_rejected:550")),
        "{c2:#}"
    );
    assert_eq!(row(&c2, "third@two.test")["state"], "sent");
    // The quality gates skip a report not worth mailing; the row costs only its audit.
    for (email, gate) in [
        ("missing@three.test", "quality_gate:site_answered_2xx"),
        ("blank@three.test", "quality_gate:screenshot_not_blank"),
        ("down@three.test", "quality_gate:audit_finished"),
    ] {
        let r = row(&c2, email);
        assert_eq!((r["state"].as_str(), r["reason"].as_str()), (Some("skipped"), Some(gate)), "{r}");
        assert!(r["auditId"].is_string() && r["sentAt"].is_null(), "{r}");
    }
    assert_eq!(sink.received().len(), 3, "only third@two.test got a second-campaign mail");
    let s: Value = app.get(&key, "/v1/suppressions").await.json().await.unwrap();
    assert!(
        s["data"].as_array().unwrap().iter().any(|x| x["email"] == "gone@two.test" && x["reason"] == "bounced"),
        "{s}"
    );
    let b: Value = app.get(&key, "/v1/account/balance").await.json().await.unwrap();
    // gone, third, missing and blank kept their audit's action; the failed audit of the site
    // that is down was refunded; none was spent on the suppressed address.
    assert_eq!(b["usage"]["used"], 6, "{b}");

    // Suppressions by hand; lifting one.
    let (s, _) = post(&app, &key, "/v1/suppressions", &json!({"email": "no@one.test"})).await;
    assert_eq!(s, 201);
    let (s, _) = post(&app, &key, "/v1/suppressions", &json!({"email": "no@one.test"})).await;
    assert_eq!(s, 200);
    let (s, e) = post(&app, &key, "/v1/suppressions", &json!({"email": "nope"})).await;
    assert_eq!((s, e["details"]["field"].as_str()), (400, Some("email")));
    let del =
        |email: &str| app.client.delete(app.url(&format!("/v1/suppressions?email={email}"))).bearer_auth(&key).send();
    assert_eq!(del("no@one.test").await.unwrap().status(), 204);
    assert_eq!(del("no@one.test").await.unwrap().status(), 404);

    // Pause, resume, cancel: transitions and refusals.
    let (_, d) =
        post(&app, &key, "/v1/campaigns", &new_campaign("Later", "UTC", "office", "2099-01-01T00:00:00Z", json!([])))
            .await;
    let id3 = d["id"].as_str().unwrap();
    let (s, e) = post(&app, &key, &format!("/v1/campaigns/{id3}/pause"), &json!({})).await;
    assert_eq!((s, e["details"]["field"].as_str()), (400, Some("status")), "a draft cannot be paused: {e}");
    let (s, x) = post(&app, &key, &format!("/v1/campaigns/{id3}/launch"), &json!({})).await;
    assert_eq!((s, x["status"].as_str()), (200, Some("scheduled")));
    let (_, x) = post(&app, &key, &format!("/v1/campaigns/{id3}/pause"), &json!({})).await;
    assert_eq!(x["status"], "paused");
    let (_, x) = post(&app, &key, &format!("/v1/campaigns/{id3}/resume"), &json!({})).await;
    assert_eq!(x["status"], "scheduled");
    let (_, x) = post(&app, &key, &format!("/v1/campaigns/{id3}/cancel"), &json!({})).await;
    assert_eq!(x["status"], "cancelled");
    let (s, e) = post(&app, &key, &format!("/v1/campaigns/{id3}/launch"), &json!({})).await;
    assert_eq!((s, e["details"]["field"].as_str()), (400, Some("status")), "{e}");
    let (s, e) = post(
        &app,
        &key,
        &format!("/v1/campaigns/{id3}/targets"),
        &json!({"recipients": [{"websiteUrl": page, "recipientEmail": "z@z.test"}]}),
    )
    .await;
    assert_eq!((s, e["details"]["field"].as_str()), (400, Some("status")), "{e}");

    // Lists, and other accounts see nothing.
    let l: Value = app.get(&key, "/v1/campaigns?limit=2").await.json().await.unwrap();
    assert_eq!(l["data"].as_array().unwrap().len(), 2);
    assert!(l["data"][0].get("rows").is_none() && l["nextCursor"].is_string(), "{l}");
    for path in ["/v1/campaigns?limit=1&limit=2", "/v1/suppressions?before=x&before=y", "/v1/campaigns?limit=0"] {
        let r = app.get(&key, path).await;
        assert_eq!(r.status(), 400, "{path}");
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["code"], "VALIDATION_ERROR", "{path}: {e}");
    }
    let (_, other) = app.user_with_key("free");
    assert_eq!(app.get(&other, &format!("/v1/campaigns/{id}")).await.status(), 404);
    assert_eq!(app.get(&other, "/v1/campaigns/cmp_nope").await.status(), 404);
    let ready: Value = app.client.get(app.url("/readyz")).send().await.unwrap().json().await.unwrap();
    assert_eq!(ready["checks"]["mail"], "ok", "{ready}");
}

/// Office hours walked with the injected clock: a weekend launch in three zones waits for each
/// zone's Monday 09:00 (Berlin's after its DST change), a row added after launch waits for the
/// same window, and when the clock reaches it the mail goes out, not before.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn office_hours_hold_across_zones_and_a_dst_change() {
    let sink = Sink::start(&[]);
    let site = FixtureSite::start().await.unwrap();
    // Saturday 2027-03-27 12:00 UTC; Berlin moves to CEST (UTC+2) on Sunday 28 March, New
    // York has been on EDT (UTC-4) since 14 March, Tokyo has no DST (UTC+9).
    let mut app = TestApp::spawn(
        Opts::full(Db::Sqlite)
            .env("CAPTURE_AXE_PATH", &axe_path())
            .env("CAPTURE_SMTP_URL", &sink.url())
            .env("CAPTURE_MAIL_FROM", FROM)
            .env("CAPTURE_CLOCK_OFFSET", &offset_to("2027-03-27T12:00:00Z")),
    )
    .await;
    let (_, key) = app.user_with_key("pro");
    let page = site.url(CLEAN_PAGE);
    let one = |email: &str| json!([{"websiteUrl": page, "recipientEmail": email}]);
    let since = "2027-03-27T00:00:00Z";
    let berlin =
        create_and_launch(&app, &key, &new_campaign("be", "Europe/Berlin", "office", since, one("a@berlin.test")))
            .await;
    let newyork =
        create_and_launch(&app, &key, &new_campaign("ny", "America/New_York", "office", since, one("b@ny.test"))).await;
    let tokyo =
        create_and_launch(&app, &key, &new_campaign("tk", "Asia/Tokyo", "office", since, one("c@tokyo.test"))).await;
    // sendAt Tuesday 07:00 CEST: before that day's window, so it waits for 09:00 CEST.
    let later = create_and_launch(
        &app,
        &key,
        &new_campaign("later", "Europe/Berlin", "office", "2027-03-30T05:00:00Z", one("d@berlin.test")),
    )
    .await;
    // A recipient added after launch.
    let (s, added) =
        post(&app, &key, &format!("/v1/campaigns/{berlin}/targets"), &json!({"recipients": one("e@berlin.test")}))
            .await;
    assert_eq!((s, added["added"].as_i64()), (200, Some(1)), "{added}");

    let waits = |c: &Value, email: &str| {
        (
            row(c, email)["waiting"].as_str().map(str::to_string),
            row(c, email)["nextCheckAt"].as_str().map(str::to_string),
        )
    };
    let ready = |c: &Value| {
        c["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["state"] == "ready" && (r["waiting"] == "sending_hours" || r["waiting"] == "send_at"))
    };
    let limit = Duration::from_secs(180);
    let s = |x: &str| Some(x.to_string());
    let c = wait_for(&app, &key, &berlin, limit, ready).await;
    assert_eq!(waits(&c, "a@berlin.test"), (s("sending_hours"), s("2027-03-29T07:00:00.000Z")), "Monday 09:00 CEST");
    assert_eq!(waits(&c, "e@berlin.test"), (s("sending_hours"), s("2027-03-29T07:00:00.000Z")), "added after launch");
    let c = wait_for(&app, &key, &newyork, limit, ready).await;
    assert_eq!(waits(&c, "b@ny.test"), (s("sending_hours"), s("2027-03-29T13:00:00.000Z")), "Monday 09:00 EDT");
    let c = wait_for(&app, &key, &tokyo, limit, ready).await;
    assert_eq!(waits(&c, "c@tokyo.test"), (s("sending_hours"), s("2027-03-29T00:00:00.000Z")), "Monday 09:00 JST");
    let c = wait_for(&app, &key, &later, limit, ready).await;
    assert_eq!(waits(&c, "d@berlin.test"), (s("send_at"), s("2027-03-30T07:00:00.000Z")), "Tuesday 09:00 CEST");
    assert_eq!(sink.received().len(), 0, "launched outside hours: nothing sent");
    let cap: Value = app.get(&key, "/v1/campaigns/sender-capacity").await.json().await.unwrap();
    assert_eq!(cap["senders"][0]["sender"], "reports@capture.test", "{cap}");
    assert_eq!(
        (cap["senders"][0]["capToday"].as_i64(), cap["senders"][0]["sentToday"].as_i64()),
        (Some(20), Some(0)),
        "{cap}"
    );
    assert_eq!(cap["senders"][0]["resetsAt"], "2027-03-28T00:00:00.000Z");

    // Monday 06:59:30 UTC: 15:59:30 in Tokyo (open for 30 s more), 08:59:30 in Berlin, 02:59:30
    // in New York. The audits are done, so no browser is needed.
    app.terminate(30);
    set_env(&mut app, "CAPTURE_CLOCK_OFFSET", &offset_to("2027-03-29T06:59:30Z"));
    app.start("api,scheduler").await;
    let c = wait_for(&app, &key, &tokyo, Duration::from_secs(25), |c| row(c, "c@tokyo.test")["state"] == "sent").await;
    let sent = row(&c, "c@tokyo.test")["sentAt"].as_str().unwrap().to_string();
    assert!(sent.as_str() < "2027-03-29T07:00:00.000Z", "Tokyo sent inside its window: {sent}");
    let c = campaign(&app, &key, &berlin).await;
    assert_eq!(row(&c, "a@berlin.test")["state"], "ready", "Berlin has not opened yet: {c:#}");
    let c = wait_for(&app, &key, &berlin, Duration::from_secs(60), |c| c["counts"]["sent"] == 2).await;
    for email in ["a@berlin.test", "e@berlin.test"] {
        let at = row(&c, email)["sentAt"].as_str().unwrap();
        assert!(("2027-03-29T07:00:00.000Z".."2027-03-29T07:01:00.000Z").contains(&at), "{email} at {at}");
    }
    let mails = sink.received();
    assert_eq!(mails.len(), 3);
    let berlin_mail = &mails.iter().find(|(_, e)| e["rcpt_tos"][0] == "a@berlin.test").unwrap().0;
    assert!(header(berlin_mail, "Date").unwrap().starts_with("Mon, 29 Mar 2027 07:00:"), "{berlin_mail}");
    let c = campaign(&app, &key, &newyork).await;
    assert_eq!(waits(&c, "b@ny.test"), (s("sending_hours"), s("2027-03-29T13:00:00.000Z")));
    let c = campaign(&app, &key, &later).await;
    assert_eq!(waits(&c, "d@berlin.test"), (s("send_at"), s("2027-03-30T07:00:00.000Z")));
    assert_eq!(c["status"], "scheduled", "before its sendAt");
}

/// Caps and warmup hold exactly while two nodes (two loops each) send at once, and the next
/// day's warmup cap lets the rest go.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn caps_and_warmup_hold_exactly_with_two_nodes_sending_at_once() {
    let sink = Sink::start(&[]);
    let site = FixtureSite::start().await.unwrap();
    let mut app = TestApp::spawn(
        Opts::full(Db::Postgres)
            .env("CAPTURE_AXE_PATH", &axe_path())
            .env("CAPTURE_SMTP_URL", &sink.url())
            .env("CAPTURE_MAIL_FROM", FROM)
            .env("CAPTURE_ADMIN_EMAILS", "ops@capture.test")
            .env("CAPTURE_CAMPAIGN_DOMAIN_DAILY_CAP", "2"),
    )
    .await;
    let node2 = app.node("scheduler", &[]).await;
    let (_, key) = app.user_with_key("pro");
    app.cli(&["admin", "user", "create", "--email", "ops@capture.test", "--plan", "pro"]);
    let admin = app.new_key("ops@capture.test");

    let limits =
        json!({"sender": "reports@capture.test", "warmup": {"startPerDay": 3, "growthPercent": 100, "maxPerDay": 50}});
    let (s, e) = post(&app, &key, "/v1/campaigns/sender-limits", &limits).await;
    assert_eq!((s, e["code"].as_str()), (403, Some("FORBIDDEN")), "{e}");
    let (s, l) = post(&app, &admin, "/v1/campaigns/sender-limits", &limits).await;
    assert_eq!((s, l["capToday"].as_i64(), l["warmupDay"].as_i64()), (200, Some(3), Some(0)), "{l}");

    // All five rows become ready before sendAt; then every loop of both nodes races for them.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let send_at = iso(now + 60_000);
    let page = site.url(CLEAN_PAGE);
    let recipients: Vec<Value> = ["a1@one.test", "a2@one.test", "a3@one.test", "b1@two.test", "b2@two.test"]
        .iter()
        .map(|e| json!({"websiteUrl": page, "recipientEmail": e}))
        .collect();
    let id = create_and_launch(&app, &key, &new_campaign("caps", "UTC", "anytime", &send_at, Value::Array(recipients)))
        .await;
    let c = wait_for(&app, &key, &id, Duration::from_secs(120), |c| {
        c["counts"]["ready"] == 5 || c["counts"]["sent"].as_i64() > Some(0)
    })
    .await;
    assert_eq!(c["counts"]["sent"], 0, "nothing before sendAt: {c:#}");
    wait_for(&app, &key, &id, Duration::from_secs(90), |c| c["counts"]["sent"] == 3).await;
    // Give the losers time to try again: the cap holds.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let c = campaign(&app, &key, &id).await;
    assert_eq!(c["counts"]["sent"], 3, "{c:#}");
    assert_eq!(sink.received().len(), 3);
    let one = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["state"] == "sent" && r["recipientEmail"].as_str().unwrap().ends_with("@one.test"))
        .count();
    assert!(one <= 2, "the domain cap of 2 held: {c:#}");
    for r in c["rows"].as_array().unwrap().iter().filter(|r| r["state"] == "ready") {
        assert!(r["waiting"] == "sender_cap" || r["waiting"] == "domain_cap", "{r}");
    }
    let cap: Value = app.get(&key, "/v1/campaigns/sender-capacity").await.json().await.unwrap();
    assert_eq!(
        (cap["senders"][0]["sentToday"].as_i64(), cap["senders"][0]["remainingToday"].as_i64()),
        (Some(3), Some(0)),
        "{cap}"
    );
    let one_cap = cap["domains"].as_array().unwrap().iter().find(|d| d["domain"] == "one.test").unwrap();
    assert_eq!(one_cap["capToday"], 2);

    // The next day (clock +1 day): warmup day 1 allows 6; the two rows left go out.
    drop(node2);
    app.terminate(30);
    set_env(&mut app, "CAPTURE_CLOCK_OFFSET", "+1d");
    app.start("api,scheduler").await;
    let _node2 = app.node("scheduler", &[]).await;
    let c = wait_for(&app, &key, &id, Duration::from_secs(60), |c| c["counts"]["sent"] == 5).await;
    assert_eq!(c["status"], "completed");
    assert_eq!(sink.received().len(), 5, "each row mailed once");
    let cap: Value = app.get(&key, "/v1/campaigns/sender-capacity").await.json().await.unwrap();
    let s0 = &cap["senders"][0];
    assert_eq!(
        (s0["warmupDay"].as_i64(), s0["capToday"].as_i64(), s0["sentToday"].as_i64()),
        (Some(1), Some(6), Some(2)),
        "{cap}"
    );
}

/// Without an SMTP server nothing is ever mailed: the row waits saying why, and the readiness
/// check says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_smtp_rows_wait_and_readiness_says_so() {
    let site = FixtureSite::start().await.unwrap();
    let app = TestApp::spawn(Opts::full(Db::Sqlite).env("CAPTURE_AXE_PATH", &axe_path())).await;
    let (_, key) = app.user_with_key("pro");
    let body = new_campaign(
        "no smtp",
        "UTC",
        "anytime",
        "2020-01-01T00:00:00Z",
        json!([{"websiteUrl": site.url(CLEAN_PAGE), "recipientEmail": "x@y.test"}]),
    );
    let id = create_and_launch(&app, &key, &body).await;
    let c =
        wait_for(&app, &key, &id, Duration::from_secs(120), |c| c["rows"][0]["waiting"] == "smtp_not_configured").await;
    assert_eq!((c["rows"][0]["state"].as_str(), c["status"].as_str()), (Some("ready"), Some("running")), "{c:#}");
    let ready: Value = app.client.get(app.url("/readyz")).send().await.unwrap().json().await.unwrap();
    assert!(ready["checks"]["mail"].as_str().unwrap().starts_with("not-configured"), "{ready}");
    assert_eq!(ready["status"], "ready", "mail is reported, not required: {ready}");
}

/// A node killed after the SMTP server took the message but before the send was recorded: the
/// row is never mailed again (it fails as `send_interrupted` once its claim is abandoned).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_killed_mid_send_never_mails_the_row_twice() {
    // The sink stores the message, then waits 60 s before its final 250.
    let sink = Sink::start(&["--reply-delay", "60"]);
    let site = FixtureSite::start().await.unwrap();
    let mut app = TestApp::spawn(
        Opts::full(Db::Sqlite)
            .env("CAPTURE_AXE_PATH", &axe_path())
            .env("CAPTURE_SMTP_URL", &format!("{}?timeout=120s", sink.url()))
            .env("CAPTURE_MAIL_FROM", FROM),
    )
    .await;
    let (_, key) = app.user_with_key("pro");
    let body = new_campaign(
        "crash",
        "UTC",
        "anytime",
        "2020-01-01T00:00:00Z",
        json!([{"websiteUrl": site.url(CLEAN_PAGE), "recipientEmail": "once@y.test"}]),
    );
    let id = create_and_launch(&app, &key, &body).await;
    let deadline = Instant::now() + Duration::from_secs(120);
    while sink.received().is_empty() {
        assert!(Instant::now() < deadline, "the mail never reached the SMTP server");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    app.kill9();

    // Restarted 20 minutes later (the claim is abandoned after 15).
    set_env(&mut app, "CAPTURE_CLOCK_OFFSET", "+20m");
    app.start("api,scheduler").await;
    // The sweep fails the row; the campaign completes on the loop's next round.
    let c = wait_for(&app, &key, &id, Duration::from_secs(30), |c| c["status"] == "completed").await;
    assert_eq!(
        (c["rows"][0]["state"].as_str(), c["rows"][0]["reason"].as_str()),
        (Some("failed"), Some("send_interrupted")),
        "{c:#}"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(sink.received().len(), 1, "no second mail");
}
