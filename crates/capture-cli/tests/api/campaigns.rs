//! Campaigns across restarts and nodes, against the `capture` binary and a real aiosmtpd
//! server: office hours across zones and a DST change (restarted with a moved clock), caps and
//! warmup with two nodes sending at once, and a node killed mid-send. The rest:
//! `crates/capture-server/tests/service/api/campaigns.rs`.

use crate::helpers::*;
use capture_audit::fixtures::{CLEAN_PAGE, FixtureSite};
use capture_core::time::iso;
use capture_testkit::campaigns::*;
use serde_json::{Value, json};
use std::time::Duration;

/// Office hours walked with the injected clock: a weekend launch in three zones waits for each
/// zone's Monday 09:00 (Berlin's after its DST change), a row added after launch waits for the
/// same window, and when the clock reaches it the mail goes out, not before.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn office_hours_hold_across_zones_and_a_dst_change() {
    let sink = Sink::start(TARGET_TMPDIR, &[]);
    let site = FixtureSite::start().await.unwrap();
    // Saturday 2027-03-27 12:00 UTC; Berlin moves to CEST (UTC+2) on Sunday 28 March, New
    // York has been on EDT (UTC-4) since 14 March, Tokyo has no DST (UTC+9).
    let mut app = TestApp::spawn(
        Opts::full(Db::Sqlite)
            .env("CAPTURE_SMTP_URL", &sink.url())
            .env("CAPTURE_MAIL_FROM", FROM)
            .env("CAPTURE_CLOCK_OFFSET", &offset_to("2027-03-27T12:00:00Z")),
    )
    .await;
    let (_, key) = app.user_with_key("pro").await;
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
    let sink = Sink::start(TARGET_TMPDIR, &[]);
    let site = FixtureSite::start().await.unwrap();
    let mut app = TestApp::spawn(
        Opts::full(Db::Postgres)
            .env("CAPTURE_SMTP_URL", &sink.url())
            .env("CAPTURE_MAIL_FROM", FROM)
            .env("CAPTURE_ADMIN_EMAILS", "ops@capture.test")
            .env("CAPTURE_CAMPAIGN_DOMAIN_DAILY_CAP", "2"),
    )
    .await;
    let node2 = app.node("scheduler", &[]).await;
    let (_, key) = app.user_with_key("pro").await;
    app.cli(&["admin", "user", "create", "--email", "ops@capture.test", "--plan", "pro"]);
    let admin = app.new_key("ops@capture.test").await;

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
    // Every loop has had its try once the two rows left wait on a cap (a loop writes the
    // reason when the cap refuses its reservation); from then on the cap holds.
    let capped = |r: &Value| r["waiting"] == "sender_cap" || r["waiting"] == "domain_cap";
    wait_for(&app, &key, &id, Duration::from_secs(90), |c| {
        c["counts"]["sent"] == 3 && c["rows"].as_array().unwrap().iter().filter(|r| r["state"] == "ready").all(capped)
    })
    .await;
    nothing_within("a mail past the sender's cap", Duration::from_secs(3), || async {
        let c = campaign(&app, &key, &id).await;
        (c["counts"]["sent"] != 3 || sink.received().len() != 3).then_some(c)
    })
    .await;
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
    // The campaign completes in a transaction of its own once the last row is sent.
    let c =
        wait_for(&app, &key, &id, Duration::from_secs(60), |c| c["counts"]["sent"] == 5 && c["status"] == "completed")
            .await;
    assert_eq!(c["counts"]["sent"], 5);
    assert_eq!(sink.received().len(), 5, "each row mailed once");
    let cap: Value = app.get(&key, "/v1/campaigns/sender-capacity").await.json().await.unwrap();
    let s0 = &cap["senders"][0];
    assert_eq!(
        (s0["warmupDay"].as_i64(), s0["capToday"].as_i64(), s0["sentToday"].as_i64()),
        (Some(1), Some(6), Some(2)),
        "{cap}"
    );
}

/// A node killed after the SMTP server took the message but before the send was recorded: the
/// row is never mailed again (it fails as `send_interrupted` once its claim is abandoned).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_killed_mid_send_never_mails_the_row_twice() {
    // The sink stores the message, then waits 60 s before its final 250.
    let sink = Sink::start(TARGET_TMPDIR, &["--reply-delay", "60"]);
    let site = FixtureSite::start().await.unwrap();
    let mut app = TestApp::spawn(
        Opts::full(Db::Sqlite)
            .env("CAPTURE_SMTP_URL", &format!("{}?timeout=120s", sink.url()))
            .env("CAPTURE_MAIL_FROM", FROM),
    )
    .await;
    let (_, key) = app.user_with_key("pro").await;
    let body = new_campaign(
        "crash",
        "UTC",
        "anytime",
        "2020-01-01T00:00:00Z",
        json!([{"websiteUrl": site.url(CLEAN_PAGE), "recipientEmail": "once@y.test"}]),
    );
    let id = create_and_launch(&app, &key, &body).await;
    eventually("the mail reaches the SMTP server", Duration::from_secs(120), || async {
        if sink.received().is_empty() { Err(()) } else { Ok(()) }
    })
    .await;
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
    // The row is settled; the loops that keep running after it never send it again.
    nothing_within("a second mail of the row", Duration::from_secs(3), || async {
        let n = sink.received().len();
        (n != 1).then_some(n)
    })
    .await;
}

fn set_env(app: &mut TestApp, k: &str, v: &str) {
    app.env.retain(|(key, _)| key != k);
    app.env.push((k.into(), v.into()));
}
