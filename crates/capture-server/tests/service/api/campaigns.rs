//! Audit campaigns through the whole service: it audits the fixture site in its
//! Chromium and mails the reports over SMTP to a real aiosmtpd server on 127.0.0.1
//! (`tests/smtp/smtp_sink.py`, from the virtualenv `tests/smtp/aiosmtpd-venv.sh` makes). The
//! service's clock is set with `CAPTURE_CLOCK_OFFSET` to walk sending hours across zones and a
//! DST change, and to move caps to the next day.

use crate::helpers::*;
use capture_audit::fixtures::{CLEAN_PAGE, FixtureSite};
use capture_testkit::campaigns::*;
use serde_json::{Value, json};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_campaign_mails_each_row_once_with_its_report_and_one_click_unsubscribe() {
    let sink = Sink::start(TARGET_TMPDIR, &["--reject-550", "gone@two.test"]);
    let site = FixtureSite::start().await.unwrap();
    let blank = Site::start(vec![("/", "text/html", solid("#ffffff"))]).await;
    // Cloudflare's block page ("Sorry, you have been blocked"), as it answers (403).
    let walled = capture_testkit::corpus::serve().await;
    let app =
        TestApp::spawn(Opts::full(Db::Sqlite).env("CAPTURE_SMTP_URL", &sink.url()).env("CAPTURE_MAIL_FROM", FROM))
            .await;
    let (_, key) = app.user_with_key("pro").await;
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
    nothing_within("a draft sends", Duration::from_secs(2), || async {
        let c = campaign(&app, &key, &id).await;
        (c["counts"]["pending"] != 2).then_some(c)
    })
    .await;

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
            {"websiteUrl": walled.url("/cf-block.html"), "recipientEmail": "walled@three.test"},
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
        // A bot wall's report is not the site's: skipped as blocked, not as a 403.
        ("walled@three.test", "quality_gate:site_blocked"),
    ] {
        let r = row(&c2, email);
        assert_eq!((r["state"].as_str(), r["reason"].as_str()), (Some("skipped"), Some(gate)), "{r}");
        assert!(r["auditId"].is_string() && r["sentAt"].is_null(), "{r}");
    }
    assert_eq!(sink.received().len(), 3, "only third@two.test got a second-campaign mail");
    // Its audit reports the page as blocked, by whom, with no scores.
    let audit_id = row(&c2, "walled@three.test")["auditId"].as_str().unwrap().to_string();
    let audit: Value = app.get(&key, &format!("/v1/audits/{audit_id}")).await.json().await.unwrap();
    let walled_page = &audit["report"]["pages"][0];
    assert_eq!(
        (walled_page["blocked"].as_str(), walled_page["status"].as_u64(), &walled_page["scores"]),
        (
            Some("cloudflare"),
            Some(403),
            &json!({"performance": null, "seo": null, "accessibility": null, "bestPractices": null})
        ),
        "{walled_page:#}"
    );
    assert!(walled_page["error"].as_str().unwrap().starts_with("blocked: cloudflare: "), "{walled_page}");
    assert_eq!(walled_page["findings"], json!([]));
    let s: Value = app.get(&key, "/v1/suppressions").await.json().await.unwrap();
    assert!(
        s["data"].as_array().unwrap().iter().any(|x| x["email"] == "gone@two.test" && x["reason"] == "bounced"),
        "{s}"
    );
    let b: Value = app.get(&key, "/v1/account/balance").await.json().await.unwrap();
    // gone, third, missing, blank and walled kept their audit's action; the failed audit of the
    // site that is down was refunded; none was spent on the suppressed address.
    assert_eq!(b["usage"]["used"], 7, "{b}");

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
    let (_, other) = app.user_with_key("free").await;
    assert_eq!(app.get(&other, &format!("/v1/campaigns/{id}")).await.status(), 404);
    assert_eq!(app.get(&other, "/v1/campaigns/cmp_nope").await.status(), 404);
    let ready: Value = app.client.get(app.url("/readyz")).send().await.unwrap().json().await.unwrap();
    assert_eq!(ready["checks"]["mail"], "ok", "{ready}");
}

/// Without an SMTP server nothing is ever mailed: the row waits saying why, and the readiness
/// check says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_smtp_rows_wait_and_readiness_says_so() {
    let site = FixtureSite::start().await.unwrap();
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("pro").await;
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

/// A default install — no audit-related setting at all, so audits run the axe-core built
/// into the binary — scores all four categories and mails a campaign: the recipient's mail,
/// received by a real SMTP server, carries the four scores. `/readyz` says both work.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_default_install_scores_all_four_categories_and_mails_a_campaign() {
    let sink = Sink::start(TARGET_TMPDIR, &[]);
    let site = FixtureSite::start().await.unwrap();
    // Only the mail server is set. CAPTURE_AXE_PATH is blanked (unset) in case the test's
    // environment carries one: this is the install `scripts/run.sh` makes.
    let app =
        TestApp::spawn(Opts::full(Db::Sqlite).env("CAPTURE_AXE_PATH", "").env("CAPTURE_SMTP_URL", &sink.url())).await;
    assert_eq!(app.state.cfg.browser.axe_path, None);
    let ready: Value = app.client.get(app.url("/readyz")).send().await.unwrap().json().await.unwrap();
    assert_eq!(ready["features"]["auditAccessibility"], json!({"status": "ok", "detail": "axe-core 4.14.1, bundled"}));
    assert_eq!(ready["features"]["mail"]["status"], "ok", "{ready}");
    assert!(!ready["unavailableFeatures"].as_array().unwrap().iter().any(|f| f == "mail" || f == "auditAccessibility"));
    let (_, key) = app.user_with_key("pro").await;

    // An audit: the four scores, accessibility measured by axe-core on the page.
    let r = app.post_json(&key, "/v1/audits", &json!({"url": site.url(CLEAN_PAGE)})).await;
    assert_eq!(r.status(), 202);
    let id = r.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_string();
    let audit = eventually("the audit finishes", Duration::from_secs(120), || {
        let (app, key, id) = (&app, &key, &id);
        async move {
            let a: Value = app.get(key, &format!("/v1/audits/{id}")).await.json().await.unwrap();
            if a["status"] == "done" || a["status"] == "failed" { Ok(a) } else { Err(a) }
        }
    })
    .await;
    assert_eq!(audit["status"], "done", "{audit}");
    let s = &audit["scores"];
    for cat in ["performance", "seo", "accessibility", "bestPractices"] {
        assert!(s[cat].as_u64().is_some_and(|v| v <= 100), "{cat}: {s}");
    }
    assert_eq!(s["accessibility"], 100, "the clean page passes every axe rule: {s}");
    let findings = audit["report"]["pages"][0]["findings"].as_array().unwrap();
    assert!(!findings.iter().any(|f| f["id"] == "axe-not-run"), "{findings:?}");

    // A campaign to one recipient: mailed, with the scores.
    let body = new_campaign(
        "default install",
        "UTC",
        "anytime",
        "2020-01-01T00:00:00Z",
        json!([{"websiteUrl": site.url(CLEAN_PAGE), "recipientEmail": "owner@site.test"}]),
    );
    let cid = create_and_launch(&app, &key, &body).await;
    let c = wait_for(&app, &key, &cid, Duration::from_secs(150), |c| c["status"] == "completed").await;
    assert_eq!((c["counts"]["sent"].as_i64(), c["counts"]["skipped"].as_i64()), (Some(1), Some(0)), "{c:#}");
    let mails = sink.received();
    assert_eq!(mails.len(), 1);
    let (raw, envelope) = &mails[0];
    assert_eq!(envelope["rcpt_tos"], json!(["owner@site.test"]));
    let mail = capture_mail::parse(raw.as_bytes());
    assert_eq!(mail.subject.as_deref(), Some("Website report for 127.0.0.1"));
    let text = mail.text.unwrap();
    let row_audit: Value = app
        .get(&key, &format!("/v1/audits/{}", row(&c, "owner@site.test")["auditId"].as_str().unwrap()))
        .await
        .json()
        .await
        .unwrap();
    let rs = &row_audit["scores"];
    for (label, cat) in [
        ("Performance", "performance"),
        ("SEO", "seo"),
        ("Accessibility", "accessibility"),
        ("Best practices", "bestPractices"),
    ] {
        let line = format!("  {label}: {}", rs[cat]);
        assert!(text.lines().any(|l| l.trim_end() == line), "{line:?} in:\n{text}");
    }
    assert!(text.lines().any(|l| l.trim_end() == "  Accessibility: 100"), "{text}");
}

/// `campaign.completed` is emitted once, when the campaign's last row is done, with its
/// counts, signed, to the endpoints subscribed to it; an endpoint subscribed to another
/// event gets nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn campaign_completed_reaches_its_subscribers_once_with_the_counts() {
    use capture_testkit::webhooks::{Receiver, create_endpoint, verify};
    let sink = Sink::start(TARGET_TMPDIR, &[]);
    let site = FixtureSite::start().await.unwrap();
    let app = TestApp::spawn(
        Opts::full(Db::Sqlite).env("CAPTURE_SMTP_URL", &sink.url()).env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true"),
    )
    .await;
    let (_, key) = app.user_with_key("pro").await;
    let (want, other) =
        (Receiver::start(vec![(200, Duration::ZERO)]).await, Receiver::start(vec![(200, Duration::ZERO)]).await);
    let ep = create_endpoint(&app, &key, json!({"url": want.url, "events": ["campaign.completed"]})).await;
    create_endpoint(&app, &key, json!({"url": other.url, "events": ["screenshot.completed"]})).await;
    // Subscribing to an unknown event is still refused, naming the new one among the known.
    let r = app.post_json(&key, "/v1/webhooks", &json!({"url": want.url, "events": ["campaign.done"]})).await;
    assert_eq!(r.status(), 400);
    let e: Value = r.json().await.unwrap();
    assert!(e["error"].as_str().unwrap().contains("campaign.completed"), "{e}");

    // One row mailed, one skipped (its address is suppressed beforehand).
    let (s, _) = post(&app, &key, "/v1/suppressions", &json!({"email": "no@site.test"})).await;
    assert_eq!(s, 201);
    let body = new_campaign(
        "with a hook",
        "UTC",
        "anytime",
        "2020-01-01T00:00:00Z",
        json!([
            {"websiteUrl": site.url(CLEAN_PAGE), "recipientEmail": "yes@site.test"},
            {"websiteUrl": site.url(CLEAN_PAGE), "recipientEmail": "no@site.test"},
        ]),
    );
    let id = create_and_launch(&app, &key, &body).await;
    let c = wait_for(&app, &key, &id, Duration::from_secs(150), |c| c["status"] == "completed").await;
    let got = want.wait_for(1, Duration::from_secs(30)).await;
    let event = verify(ep["secret"].as_str().unwrap(), &got[0]).expect("signed with the endpoint's secret");
    assert_eq!(got[0].headers["x-service-event"], "campaign.completed");
    assert_eq!(event["type"], "campaign.completed");
    assert_eq!(event["id"], got[0].headers["webhook-id"].to_str().unwrap());
    let data = &event["data"];
    assert_eq!(
        (data["campaignId"].as_str(), data["name"].as_str(), data["status"].as_str()),
        (Some(id.as_str()), Some("with a hook"), Some("completed"))
    );
    assert_eq!(
        data["counts"],
        json!({"pending": 0, "auditing": 0, "ready": 0, "sent": 1, "skipped": 1, "failed": 0, "total": 2})
    );
    assert_eq!(data["counts"], serde_json::to_value(&c["counts"]).unwrap(), "the campaign's own counts");
    assert_eq!(data["reasons"], json!({"suppressed": 1}));
    assert_eq!(
        (data["completedAt"].as_str(), data["launchedAt"].as_str()),
        (c["completedAt"].as_str(), c["launchedAt"].as_str())
    );
    // Exactly once, and nothing for the other endpoint.
    nothing_within(
        "a second campaign.completed or any delivery to the other endpoint",
        Duration::from_secs(3),
        || async { (want.all().len() != 1 || !other.all().is_empty()).then(|| (want.all().len(), other.all().len())) },
    )
    .await;
}

/// One clock (`CAPTURE_CLOCK_OFFSET`): a campaign launched on a service whose clock is three
/// days ahead completes and its `campaign.completed` is delivered at once — queued, claimed and
/// sent on the same shifted clock — while the endpoint's `createdAt` and the event's own time
/// read that clock too. The signature's timestamp stays on the system clock: the receiver checks
/// it against its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn under_a_shifted_clock_a_campaigns_webhook_is_delivered_at_once() {
    use capture_testkit::webhooks::{Receiver, create_endpoint, verify};
    const AHEAD_MS: i64 = 3 * 24 * 3600 * 1000;
    let sink = Sink::start(TARGET_TMPDIR, &[]);
    let site = FixtureSite::start().await.unwrap();
    let app = TestApp::spawn(
        Opts::full(Db::Sqlite)
            .env("CAPTURE_SMTP_URL", &sink.url())
            .env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true")
            .env("CAPTURE_CLOCK_OFFSET", "+3d"),
    )
    .await;
    let (_, key) = app.user_with_key("pro").await;
    let want = Receiver::start(vec![(200, Duration::ZERO)]).await;
    let ep = create_endpoint(&app, &key, json!({"url": want.url, "events": ["campaign.completed"]})).await;
    let shifted = |field: &Value| {
        let at = chrono::DateTime::parse_from_rfc3339(field.as_str().expect("a time")).unwrap().timestamp_millis();
        let ahead = at - capture_core::time::now_ms();
        assert!(
            (AHEAD_MS - 120_000..=AHEAD_MS + 1_000).contains(&ahead),
            "{field} is {ahead} ms from the system clock"
        );
    };
    shifted(&ep["createdAt"]);
    let body = new_campaign(
        "shifted",
        "UTC",
        "anytime",
        "2020-01-01T00:00:00Z",
        json!([{"websiteUrl": site.url(CLEAN_PAGE), "recipientEmail": "yes@site.test"}]),
    );
    let id = create_and_launch(&app, &key, &body).await;
    let c = wait_for(&app, &key, &id, Duration::from_secs(150), |c| c["status"] == "completed").await;
    shifted(&c["completedAt"]);
    // Delivered within seconds, not three days later.
    let got = want.wait_for(1, Duration::from_secs(30)).await;
    let event = verify(ep["secret"].as_str().unwrap(), &got[0]).expect("signed, its timestamp on the system clock");
    assert_eq!(
        (event["type"].as_str(), event["data"]["campaignId"].as_str()),
        (Some("campaign.completed"), Some(id.as_str()))
    );
    shifted(&event["createdAt"]);
}
