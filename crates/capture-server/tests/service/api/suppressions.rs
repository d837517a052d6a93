//! Who may lift a suppression: the recipient's own unsubscribe (and the mail system's hard
//! bounce) cannot be undone by the sender, through the API or MCP; only the suppressions the
//! account added can be lifted. And opening the unsubscribe link changes nothing (mail
//! scanners follow links): its page has one button, whose POST unsubscribes, like RFC 8058's
//! one-click POST. Real campaigns, audited in Chromium and mailed to aiosmtpd on 127.0.0.1.

use std::time::Duration;

use capture_audit::fixtures::{CLEAN_PAGE, FixtureSite};
use serde_json::{Value, json};

use crate::helpers::*;
use capture_testkit::campaigns::*;

async fn suppressions(app: &TestApp, key: &str) -> Vec<Value> {
    let s: Value = app.get(key, "/v1/suppressions?limit=100").await.json().await.unwrap();
    s["data"].as_array().unwrap().clone()
}

fn find<'a>(list: &'a [Value], email: &str) -> Option<&'a Value> {
    list.iter().find(|s| s["email"].as_str().is_some_and(|e| e.eq_ignore_ascii_case(email)))
}

async fn delete(app: &TestApp, key: &str, email: &str) -> (u16, Value) {
    let r =
        app.client.delete(app.url(&format!("/v1/suppressions?email={email}"))).bearer_auth(key).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// The `List-Unsubscribe` https link of the mail to `email`.
fn unsubscribe_link(mails: &[(String, Value)], email: &str) -> String {
    let raw = &mails.iter().find(|(_, e)| e["rcpt_tos"][0] == email).unwrap_or_else(|| panic!("no mail to {email}")).0;
    header(raw, "List-Unsubscribe").unwrap().split('>').next().unwrap().trim_start_matches('<').to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_recipients_unsubscribe_and_a_bounce_cannot_be_lifted_by_the_sender() {
    let sink = Sink::start(TARGET_TMPDIR, &["--reject-550", "gone@two.test"]);
    let site = FixtureSite::start().await.unwrap();
    let app =
        TestApp::spawn(Opts::full(Db::Sqlite).env("CAPTURE_SMTP_URL", &sink.url()).env("CAPTURE_MAIL_FROM", FROM))
            .await;
    let (_, key) = app.user_with_key("pro").await;
    let page = site.url(CLEAN_PAGE);
    let rows = |emails: &[&str]| {
        Value::Array(emails.iter().map(|e| json!({"websiteUrl": page, "recipientEmail": e})).collect())
    };
    let first = new_campaign(
        "first",
        "UTC",
        "anytime",
        "2020-01-01T00:00:00Z",
        rows(&["reader@one.test", "keeper@one.test", "gone@two.test", "mine@two.test"]),
    );
    let id = create_and_launch(&app, &key, &first).await;
    let c = wait_for(&app, &key, &id, Duration::from_secs(150), |c| c["status"] == "completed").await;
    assert_eq!((c["counts"]["sent"].as_i64(), c["counts"]["failed"].as_i64()), (Some(3), Some(1)), "{c:#}");
    let mails = sink.received();

    // The mail system's hard bounce: suppressed with its source.
    let list = suppressions(&app, &key).await;
    let gone = find(&list, "gone@two.test").unwrap_or_else(|| panic!("{list:?}"));
    assert_eq!((gone["reason"].as_str(), gone["source"].as_str()), (Some("bounced"), Some("mail_system")), "{gone}");

    // Opening the link (as a scanner does) shows a page with one button and suppresses nothing.
    let link = unsubscribe_link(&mails, "reader@one.test");
    for _ in 0..2 {
        let r = app.client.get(&link).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let html = r.text().await.unwrap();
        assert!(
            html.contains("reader@one.test") && html.contains("<button type=\"submit\">Unsubscribe</button>"),
            "{html}"
        );
        assert!(html.contains("<form method=\"post\">"), "the button posts to the link itself: {html}");
    }
    assert!(find(&suppressions(&app, &key).await, "reader@one.test").is_none(), "a GET never suppresses");
    // The button's POST (the form's one field) does.
    let r = app
        .client
        .post(&link)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("will not receive these reports again"));
    let list = suppressions(&app, &key).await;
    let reader = find(&list, "reader@one.test").unwrap_or_else(|| panic!("{list:?}"));
    assert_eq!((reader["reason"].as_str(), reader["source"].as_str()), (Some("unsubscribed"), Some("recipient")));
    // The link now says so, still without changing anything.
    let again = app.client.get(&link).send().await.unwrap().text().await.unwrap();
    assert!(again.contains("will not receive these reports again") && !again.contains("<button"), "{again}");

    // The account suppressed keeper@ by hand before the recipient unsubscribed (RFC 8058 POST
    // with no body at all): the recipient's word replaces the account's own entry.
    let (s, k) = post(&app, &key, "/v1/suppressions", &json!({"email": "keeper@one.test"})).await;
    assert_eq!((s, k["source"].as_str()), (201, Some("tenant")), "{k}");
    // The account's entry is not the recipient's word: the link still offers the button.
    let keeper_link = unsubscribe_link(&mails, "keeper@one.test");
    let page = app.client.get(&keeper_link).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("<button type=\"submit\">Unsubscribe</button>"), "{page}");
    let r = app.client.post(&keeper_link).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let list = suppressions(&app, &key).await;
    let keeper = find(&list, "keeper@one.test").unwrap();
    assert_eq!((keeper["reason"].as_str(), keeper["source"].as_str()), (Some("unsubscribed"), Some("recipient")));
    // And a hand-made suppression of mine@, which the account may lift.
    let (s, _) = post(&app, &key, "/v1/suppressions", &json!({"email": "mine@two.test"})).await;
    assert_eq!(s, 201);

    // Each source × a delete through REST: only the account's own goes.
    for (email, source, reason) in [
        ("reader@one.test", "recipient", "unsubscribed"),
        ("Keeper@One.test", "recipient", "unsubscribed"),
        ("gone@two.test", "mail_system", "bounced"),
    ] {
        let (s, e) = delete(&app, &key, email).await;
        assert_eq!((s, e["code"].as_str()), (403, Some("FORBIDDEN")), "{email}: {e}");
        assert_eq!(
            (
                e["details"]["reason"].as_str(),
                e["details"]["source"].as_str(),
                e["details"]["suppressionReason"].as_str()
            ),
            (Some("permanent_suppression"), Some(source), Some(reason)),
            "{e}"
        );
        assert!(e["requestId"].as_str().is_some_and(|r| r.starts_with("req_")), "{e}");
        assert!(find(&suppressions(&app, &key).await, email).is_some(), "{email} is still suppressed");
    }
    assert_eq!(delete(&app, &key, "mine@two.test").await.0, 204);
    assert_eq!(delete(&app, &key, "mine@two.test").await.0, 404);
    // Another account cannot see or touch them (nor suppress on its behalf).
    let (_, other) = app.user_with_key("free").await;
    assert_eq!(delete(&app, &other, "reader@one.test").await.0, 404);
    assert!(suppressions(&app, &other).await.is_empty());

    // The next campaign mails only the address whose suppression the account lifted.
    let next = new_campaign(
        "next",
        "UTC",
        "anytime",
        "2020-01-01T00:00:00Z",
        rows(&["Reader@one.test", "keeper@one.test", "gone@two.test", "mine@two.test"]),
    );
    let id2 = create_and_launch(&app, &key, &next).await;
    let c2 = wait_for(&app, &key, &id2, Duration::from_secs(150), |c| c["status"] == "completed").await;
    for email in ["Reader@one.test", "keeper@one.test", "gone@two.test"] {
        let r = row(&c2, email);
        assert_eq!((r["state"].as_str(), r["reason"].as_str()), (Some("skipped"), Some("suppressed")), "{c2:#}");
    }
    assert_eq!(row(&c2, "mine@two.test")["state"], "sent", "{c2:#}");
    let to: Vec<String> =
        sink.received()[mails.len()..].iter().map(|(_, e)| e["rcpt_tos"][0].as_str().unwrap().to_string()).collect();
    assert_eq!(to, ["mine@two.test"], "the second campaign's mail");
}
