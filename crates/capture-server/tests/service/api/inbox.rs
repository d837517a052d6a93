//! The saved test inbox and the auth-test helper against the in-process service: the `inbound`
//! role's SMTP server (550 for unknown addresses, size bound, malformed mail stored safely),
//! `/v1/inbox` and its messages (cursor, one message with links and codes, the long-poll,
//! delete, rotation), accounts kept apart, the check's page probe (a magic-link site), the
//! record, and the egress guard keeping captured pages off the SMTP listener.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::*;
use capture_testkit::both_dbs;
use capture_testkit::inbox_fixture::{AuthSite, smtp_send, verification_mail, wait_for_inbox_poll};

/// A service with the inbound role on a free port (and Chromium when `browser`).
pub async fn inbound_app(db: Db, browser: bool) -> TestApp {
    let roles = if browser { "api,worker,scheduler,inbound" } else { "api,scheduler,inbound" };
    TestApp::spawn(
        Opts::api(db)
            .roles(roles)
            .env("CAPTURE_INBOUND_LISTEN", "127.0.0.1:0")
            .env("CAPTURE_INBOX_DOMAIN", "inbox.test")
            .env("CAPTURE_INBOUND_MAX_MESSAGE_BYTES", "64KB"),
    )
    .await
}

async fn json_of(r: reqwest::Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}")))
}

/// The inbox of `key` and the SMTP address to reach it.
async fn inbox_of(app: &TestApp, key: &str) -> (Value, SocketAddr) {
    let (status, inbox) = json_of(app.get(key, "/v1/inbox").await).await;
    assert_eq!(status, 200, "{inbox}");
    let smtp = format!("{}:{}", inbox["smtp"]["host"].as_str().unwrap(), inbox["smtp"]["port"]);
    (inbox, smtp.parse().unwrap())
}

async fn delete(app: &TestApp, key: &str, path: &str) -> reqwest::Response {
    app.client.delete(app.url(path)).bearer_auth(key).send().await.unwrap()
}

async fn inbox_receives_verifies_and_keeps_accounts_apart(db: Db) {
    let app = inbound_app(db, false).await;
    let (_, key) = app.user_with_key("free").await;
    let (_, other) = app.user_with_key("free").await;
    let (inbox, smtp) = inbox_of(&app, &key).await;
    let address = inbox["address"].as_str().unwrap().to_string();
    assert!(address.ends_with("@inbox.test"), "{inbox}");
    let password = inbox["password"].as_str().unwrap();
    assert!(password.len() >= 20, "{inbox}");
    assert_eq!(inbox["counts"]["messages"], 0);
    // The same inbox on every read (made once).
    let (again, _) = inbox_of(&app, &key).await;
    assert_eq!((again["address"].as_str(), again["password"].as_str()), (Some(address.as_str()), Some(password)));
    let (theirs, _) = inbox_of(&app, &other).await;
    assert_ne!(theirs["address"], inbox["address"]);

    // Unknown addresses, at our domain or any other, are refused at RCPT.
    let nobody = smtp_send(smtp, "a@fixture.test", "nobody@inbox.test", b"Subject: x\r\n\r\nhi\r\n").await;
    assert_eq!(nobody.code, 550, "{nobody:?}");
    let relay = smtp_send(smtp, "a@fixture.test", "someone@example.com", b"Subject: x\r\n\r\nhi\r\n").await;
    assert_eq!(relay.code, 550, "{relay:?}");

    // A verification mail lands, parsed, with its link and code.
    let since = capture_core_time_now();
    let link = "http://127.0.0.1:9/verify?token=abcdefghijklmnopqrstuvwxyz012345";
    let sent = smtp_send(smtp, "bounces@fixture.test", &address, &verification_mail(&address, link, "482913")).await;
    assert_eq!(sent.code, 250, "{sent:?}");
    let (status, list) = json_of(app.get(&key, "/v1/inbox/messages").await).await;
    assert_eq!(status, 200, "{list}");
    let data = list["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{list}");
    let m = &data[0];
    assert_eq!(m["verificationLink"], link, "{m}");
    assert_eq!(m["code"], "482913", "{m}");
    assert_eq!(m["from"]["address"], "no-reply@fixture.test");
    assert_eq!(m["mailFrom"], "bounces@fixture.test");
    assert_eq!(m["seen"], false);
    let id = m["id"].as_str().unwrap().to_string();

    // The long-poll hands over the oldest unseen message at once, whole, and marks it seen.
    let (status, w) = json_of(app.get(&key, "/v1/inbox/messages/wait?timeoutMs=5000").await).await;
    assert_eq!(status, 200, "{w}");
    assert_eq!(w["message"]["id"], id.as_str(), "{w}");
    assert!(w["message"]["text"].as_str().unwrap().contains("Welcome to Fixture App"), "{w}");
    assert!(w["message"]["html"].as_str().unwrap().contains("<a href="), "{w}");
    assert!(w["message"]["links"].as_array().unwrap().iter().any(|l| l["url"] == link && l["verification"] == true));
    assert!(w["message"]["headers"].as_array().unwrap().iter().any(|h| h["name"] == "Message-ID"), "{w}");
    // Nothing unseen is left: a short wait times out with null.
    let t = Instant::now();
    let (_, w) = json_of(app.get(&key, "/v1/inbox/messages/wait?timeoutMs=400").await).await;
    assert!(w["message"].is_null(), "{w}");
    assert!(t.elapsed() >= Duration::from_millis(350), "the wait waited");
    // With since, the message counts again; from narrows by sender domain.
    let q = format!("/v1/inbox/messages/wait?timeoutMs=200&since={since}&from=fixture.test");
    let (_, w) = json_of(app.get(&key, &q).await).await;
    assert_eq!(w["message"]["id"], id.as_str(), "{w}");
    let (_, w) = json_of(app.get(&key, &format!("{q}x")).await).await;
    assert!(w["message"].is_null(), "another domain: {w}");

    // A waiting poll wakes when mail arrives.
    let (k2, a2) = (key.clone(), address.clone());
    let base = app.base.clone();
    let waiter = tokio::spawn(async move {
        let r = reqwest::Client::new()
            .get(format!("{base}/v1/inbox/messages/wait?timeoutMs=8000"))
            .bearer_auth(&k2)
            .send()
            .await
            .unwrap();
        (Instant::now(), r.json::<Value>().await.unwrap())
    });
    wait_for_inbox_poll(&app.client, &app.url("/metrics")).await;
    let body = format!(
        "From: Magic <login@magic.test>\r\nTo: {a2}\r\nSubject: Your magic link\r\n\r\nSign in: http://127.0.0.1:9/magic/login?token=zyxwvutsrqponmlkjihgfedcba987654\r\n"
    );
    let sent_at = Instant::now();
    assert_eq!(smtp_send(smtp, "login@magic.test", &address, body.as_bytes()).await.code, 250);
    let (woke_at, w) = waiter.await.unwrap();
    assert_eq!(w["message"]["subject"], "Your magic link", "{w}");
    assert!(woke_at.duration_since(sent_at) < Duration::from_secs(3), "woke {:?} after", woke_at - sent_at);

    // Oversized mail is refused (552), malformed mail is stored with what parses.
    let small = format!("Subject: small\r\n\r\n{}\r\n", "x".repeat(120)).into_bytes();
    let mut huge = b"Subject: huge\r\n\r\n".to_vec();
    while huge.len() < 100 * 1024 {
        huge.extend_from_slice(b"0123456789012345678901234567890123456789012345678901234567890123456789\r\n");
    }
    let r = smtp_send(smtp, "a@fixture.test", &address, &huge).await;
    assert_eq!(r.code, 552, "{r:?}");
    assert_eq!(smtp_send(smtp, "a@fixture.test", &address, &small).await.code, 250);
    let malformed = b"From: =?utf-8?B?!!!notbase64?= <broken@@fixture.test>\r\nContent-Type: multipart/mixed; boundary=\"zz\"\r\nSubject: \xff\xfe broken\r\n\r\n--zz\r\nContent-Type: text/html\r\nContent-Transfer-Encoding: base64\r\n\r\n%%%% not base64 <a href=\"javascript:alert(1)\">x</a>\r\n--zz";
    let r = smtp_send(smtp, "", &address, malformed).await;
    assert_eq!(r.code, 250, "{r:?}");
    let (status, list) = json_of(app.get(&key, "/v1/inbox/messages?limit=2").await).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["data"].as_array().unwrap().len(), 2);
    let newest = list["data"][0]["id"].as_str().unwrap().to_string();
    let (status, m) = json_of(app.get(&key, &format!("/v1/inbox/messages/{newest}")).await).await;
    assert_eq!(status, 200, "{m}");
    assert_eq!(m["mailFrom"], "", "the null sender: {m}");
    assert!(
        m["links"].as_array().unwrap().iter().all(|l| !l["url"].as_str().unwrap().starts_with("javascript")),
        "{m}"
    );
    // The cursor walks the rest: 4 stored in all (the oversized one was not).
    let cursor = list["nextCursor"].as_str().unwrap();
    let (_, rest) = json_of(app.get(&key, &format!("/v1/inbox/messages?limit=10&before={cursor}")).await).await;
    assert_eq!(rest["data"].as_array().unwrap().len(), 2, "{rest}");
    assert!(rest["nextCursor"].is_null());
    let (inbox_now, _) = inbox_of(&app, &key).await;
    assert_eq!(inbox_now["counts"]["messages"], 4, "{inbox_now}");

    // Accounts are kept apart: the other account sees nothing of this inbox.
    let (_, their_list) = json_of(app.get(&other, "/v1/inbox/messages").await).await;
    assert_eq!(their_list["data"], json!([]));
    let (status, e) = json_of(app.get(&other, &format!("/v1/inbox/messages/{id}")).await).await;
    assert_eq!((status, e["code"].as_str()), (404, Some("NOT_FOUND")), "{e}");
    assert_eq!(delete(&app, &other, &format!("/v1/inbox/messages/{id}")).await.status(), 404);
    let (_, w) = json_of(app.get(&other, "/v1/inbox/messages/wait?timeoutMs=200").await).await;
    assert!(w["message"].is_null(), "{w}");

    // Bad input is a JSON error with the field's name.
    for (path, field) in [
        ("/v1/inbox/messages?limit=0", "limit"),
        ("/v1/inbox/messages?before=yesterday", "before"),
        ("/v1/inbox/messages/wait?timeoutMs=8001", "timeoutMs"),
        ("/v1/inbox/messages/wait?timeoutMs=1&timeoutMs=2", "timeoutMs"),
        ("/v1/inbox/messages?limit=1&limit=2", "limit"),
        ("/v1/inbox/messages/wait?since=soon", "since"),
    ] {
        let (status, e) = json_of(app.get(&key, path).await).await;
        assert_eq!((status, e["details"]["field"].as_str()), (400, Some(field)), "{path}: {e}");
    }
    let (status, _) = json_of(app.get(&key, "/v1/inbox/messages/nope").await).await;
    assert_eq!(status, 404);
    let (status, _) = json_of(app.client.get(app.url("/v1/inbox")).send().await.unwrap()).await;
    assert_eq!(status, 401);

    // Delete one, then rotate the address: the old one is refused from then on.
    assert_eq!(delete(&app, &key, &format!("/v1/inbox/messages/{id}")).await.status(), 204);
    let (status, _) = json_of(app.get(&key, &format!("/v1/inbox/messages/{id}")).await).await;
    assert_eq!(status, 404);
    let (status, rotated) = json_of(app.post_json(&key, "/v1/inbox/rotate", &json!({"rotate": "both"})).await).await;
    assert_eq!(status, 200, "{rotated}");
    assert_ne!(rotated["address"], inbox["address"]);
    assert_ne!(rotated["password"], inbox["password"]);
    let r = smtp_send(smtp, "a@fixture.test", &address, b"Subject: late\r\n\r\nhi\r\n").await;
    assert_eq!(r.code, 550, "the rotated-away address: {r:?}");
    let new_address = rotated["address"].as_str().unwrap();
    assert_eq!(smtp_send(smtp, "a@fixture.test", new_address, b"Subject: new\r\n\r\nhi\r\n").await.code, 250);
    let (status, e) = json_of(app.post_json(&key, "/v1/inbox/rotate", &json!({"rotate": "everything"})).await).await;
    assert_eq!((status, e["details"]["field"].as_str()), (400, Some("rotate")), "{e}");
    let (status, d) = json_of(delete(&app, &key, "/v1/inbox/messages").await).await;
    assert_eq!((status, d["deleted"].as_u64()), (200, Some(4)), "{d}");
}
both_dbs!(inbox_receives_verifies_and_keeps_accounts_apart);

/// Now as ISO 8601 (the service's clock is this machine's).
fn capture_core_time_now() -> String {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64 - 1000;
    chrono_like_iso(ms)
}

fn chrono_like_iso(ms: i64) -> String {
    // Days since the epoch to a civil date (Howard Hinnant's algorithm).
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z", rem / 3600, rem % 3600 / 60, rem % 60, ms.rem_euclid(1000))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_check_reads_a_magic_link_site_and_the_smtp_port_is_out_of_reach() {
    let app = inbound_app(Db::Sqlite, true).await;
    let site = AuthSite::start().await;
    let (_, key) = app.user_with_key("free").await;
    let (_, smtp) = inbox_of(&app, &key).await;

    let (status, c) =
        json_of(app.post_json(&key, "/v1/auth-test/check", &json!({"url": site.url("/magic")})).await).await;
    assert_eq!(status, 200, "{c}");
    assert_eq!(c["origin"], site.base.as_str());
    assert_eq!(c["probed"], true, "{c}");
    assert_eq!(c["likelyAuthMethod"], "magic_link", "{c}");
    assert_eq!(c["expectedFollowUp"], "magic_link", "{c}");
    assert_eq!(c["recommendation"], "sign_up", "{c}");
    let evidence = c["evidence"].to_string();
    assert!(evidence.contains("magic-link wording"), "{evidence}");
    assert!(evidence.contains("OAuth sign-in offered (google)"), "{evidence}");
    // The sign-in page reads as a sign-in form; the home page as a sign-up form.
    let (_, c) = json_of(app.post_json(&key, "/v1/auth-test/check", &json!({"url": site.url("/signin")})).await).await;
    assert_eq!(c["likelyAuthMethod"], "password", "{c}");
    assert!(c["evidence"].to_string().contains("sign-in form"), "{c}");

    // Record validation and origin normalization.
    for (body, field) in [
        (json!({"url": site.url("/"), "action": "dance", "outcome": "success"}), "action"),
        (json!({"url": site.url("/"), "action": "sign_in", "outcome": "meh"}), "outcome"),
        (json!({"url": "ftp://x.test", "action": "sign_in", "outcome": "success"}), "url"),
        (json!({"url": site.url("/"), "action": "sign_in", "outcome": "success", "extra": 1}), "extra"),
    ] {
        let (status, e) = json_of(app.post_json(&key, "/v1/auth-test/record", &body).await).await;
        assert_eq!((status, e["details"]["field"].as_str()), (400, Some(field)), "{body}: {e}");
    }
    let upper = site.base.replace("http://", "HTTP://") + "/Some/Path?q=1";
    let (status, a) = json_of(
        app.post_json(
            &key,
            "/v1/auth-test/record",
            &json!({"url": upper, "action": "sign_in", "outcome": "success", "method": "password"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "{a}");
    assert_eq!(a["origin"], site.base.as_str());
    let (_, c) = json_of(app.post_json(&key, "/v1/auth-test/check", &json!({"url": site.url("/")})).await).await;
    assert_eq!((c["recommendation"].as_str(), c["probed"].as_bool()), (Some("sign_in"), Some(false)), "{c}");
    // Another account has no history there.
    let (_, other) = app.user_with_key("free").await;
    let (_, c) =
        json_of(app.post_json(&other, "/v1/auth-test/check", &json!({"url": site.url("/"), "probe": "never"})).await)
            .await;
    assert_eq!(c["history"], json!([]), "{c}");
    assert_eq!(c["recommendation"], "sign_up");

    // A captured page cannot reach the inbound SMTP listener.
    let job = app.create(&key, json!({"url": format!("http://{smtp}/"), "waitUntil": "load", "timeoutMs": 5000})).await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "failed", "{done}");
    let e = done["error"].as_str().unwrap().to_lowercase();
    assert!(e.contains("own listener") || e.contains("egress") || e.contains("blocked"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_sending_too_fast_is_told_to_wait() {
    let app = TestApp::spawn(
        Opts::api(Db::Sqlite)
            .roles("api,inbound")
            .env("CAPTURE_INBOUND_LISTEN", "127.0.0.1:0")
            .env("CAPTURE_INBOX_DOMAIN", "inbox.test")
            .env("CAPTURE_INBOUND_RATE", "2"),
    )
    .await;
    let (_, key) = app.user_with_key("free").await;
    let (inbox, smtp) = inbox_of(&app, &key).await;
    let address = inbox["address"].as_str().unwrap();
    for _ in 0..2 {
        assert_eq!(smtp_send(smtp, "a@fixture.test", address, b"Subject: x\r\n\r\nhi\r\n").await.code, 250);
    }
    // The bucket is empty: 421 at the greeting (450 at MAIL on a connection opened before).
    let r = smtp_send(smtp, "a@fixture.test", address, b"Subject: x\r\n\r\nhi\r\n").await;
    assert!(r.code == 421 || r.code == 450, "{r:?}");
    assert!(r.text.contains("Too many messages"), "{r:?}");
    let (_, inbox) = json_of(app.get(&key, "/v1/inbox").await).await;
    assert_eq!(inbox["counts"]["messages"], 2, "{inbox}");
}

/// The attachment blobs (`inbox-…`) in the service's local file store.
fn attachment_blobs(app: &TestApp) -> Vec<String> {
    std::fs::read_dir(app.data_dir.join("files"))
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().to_string()))
                .filter(|n| n.starts_with("inbox-"))
                .collect()
        })
        .unwrap_or_default()
}

/// A mail with two attachments: a text file and `bytes` as a binary one.
fn mail_with_two_attachments(to: &str, bytes: &[u8]) -> Vec<u8> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    format!(
        "From: a@fixture.test\r\nTo: {to}\r\nSubject: files\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=\"zz\"\r\n\r\n--zz\r\nContent-Type: text/plain\r\n\r\nSee attached.\r\n\
         --zz\r\nContent-Type: text/csv; name=\"a.csv\"\r\nContent-Disposition: attachment; filename=\"a.csv\"\r\n\r\n\
         x,y\r\n1,2\r\n--zz\r\nContent-Type: image/png\r\nContent-Disposition: attachment; filename=\"dot.png\"\r\n\
         Content-Transfer-Encoding: base64\r\n\r\n{b64}\r\n--zz--\r\n"
    )
    .into_bytes()
}

/// Attachment contents are kept in blob storage for their message's life: downloadable by
/// index by the owner only, deleted with the message when the inbox goes past its limit and
/// when the messages are deleted.
async fn attachments_are_kept_downloaded_and_deleted_with_their_message(db: Db) {
    let app = TestApp::spawn(
        Opts::api(db)
            .roles("api,scheduler,inbound")
            .env("CAPTURE_INBOUND_LISTEN", "127.0.0.1:0")
            .env("CAPTURE_INBOX_DOMAIN", "inbox.test")
            .env("CAPTURE_INBOX_MAX_MESSAGES", "1"),
    )
    .await;
    let (_, key) = app.user_with_key("free").await;
    let (_, other) = app.user_with_key("free").await;
    let (inbox, smtp) = inbox_of(&app, &key).await;
    let address = inbox["address"].as_str().unwrap().to_string();
    let png: Vec<u8> = vec![0x89, b'P', b'N', b'G', 0, 0xff, 13, 10, 26];
    assert_eq!(smtp_send(smtp, "a@fixture.test", &address, &mail_with_two_attachments(&address, &png)).await.code, 250);
    let (_, w) = json_of(app.get(&key, "/v1/inbox/messages/wait?timeoutMs=5000").await).await;
    let first = w["message"]["id"].as_str().unwrap_or_else(|| panic!("{w}")).to_string();
    let atts = &w["message"]["attachments"];
    assert_eq!(atts[0]["name"], "a.csv", "{w}");
    assert_eq!((atts[1]["index"].as_u64(), atts[1]["contentType"].as_str()), (Some(1), Some("image/png")), "{w}");
    assert_eq!(attachment_blobs(&app).len(), 2);
    // The public file route never serves an attachment, even to someone who knows its name:
    // only the owner's credential on the attachment route does.
    for name in attachment_blobs(&app) {
        let r = reqwest::get(app.url(&format!("/files/{name}"))).await.unwrap();
        assert_eq!(r.status(), 404, "/files/{name}");
    }
    let r = app.get(&key, &format!("/v1/inbox/messages/{first}/attachments/1")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.bytes().await.unwrap().to_vec(), png);
    let r = app.get(&key, &format!("/v1/inbox/messages/{first}/attachments/0")).await;
    assert_eq!(r.bytes().await.unwrap().as_ref(), b"x,y\r\n1,2");
    let (status, e) = json_of(app.get(&other, &format!("/v1/inbox/messages/{first}/attachments/0")).await).await;
    assert_eq!((status, e["code"].as_str()), (404, Some("NOT_FOUND")), "{e}");
    let (status, e) = json_of(app.get(&key, &format!("/v1/inbox/messages/{first}/attachments/2")).await).await;
    assert_eq!((status, e["code"].as_str()), (404, Some("NOT_FOUND")), "{e}");

    // A second mail pushes the first out (at most 1 kept): its contents go with it.
    assert_eq!(smtp_send(smtp, "a@fixture.test", &address, &mail_with_two_attachments(&address, b"2")).await.code, 250);
    let (_, list) = json_of(app.get(&key, "/v1/inbox/messages").await).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "{list}");
    assert_ne!(list["data"][0]["id"].as_str(), Some(first.as_str()));
    assert_eq!(attachment_blobs(&app).len(), 2, "only the kept message's");
    assert_eq!(app.get(&key, &format!("/v1/inbox/messages/{first}/attachments/1")).await.status(), 404);
    let (status, d) = json_of(delete(&app, &key, "/v1/inbox/messages").await).await;
    assert_eq!((status, d["deleted"].as_u64()), (200, Some(1)), "{d}");
    assert_eq!(attachment_blobs(&app), Vec::<String>::new());
}
both_dbs!(attachments_are_kept_downloaded_and_deleted_with_their_message);
