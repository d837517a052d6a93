//! The hand-off's mail (issue 43): an agent asks for a person (MCP `request_human`) on a server
//! that sends mail; the account's address receives one mail with the reason and the live
//! view's link, and that link, opened as the person would from the mail, is the session's
//! control-mode live view, whose Done gives the agent its answer.

use std::time::Duration;

use futures_util::SinkExt;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::{App, Db, Opts, Site, TARGET_TMPDIR, eventually};
use capture_testkit::campaigns::{Sink, header};
use capture_testkit::oauth::*;

/// The mail's text with quoted-printable soft breaks and `=3D` undone.
fn unfolded(raw: &str) -> String {
    raw.replace("=\r\n", "").replace("=3D", "=")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hand_off_mails_the_account_a_link_that_hands_the_session_back() {
    let site = Site::start(vec![("/", "text/html", "<title>Stuck</title><h1>Prove you are human</h1>".into())]).await;
    let sink = Sink::start(TARGET_TMPDIR, &[]);
    let app = App::spawn_with(
        Opts::full(Db::Sqlite)
            .env("CAPTURE_SMTP_URL", &sink.url())
            .env("CAPTURE_MAIL_FROM", "Capture <agents@capture.test>"),
    )
    .await;
    let mcp = app.url("/mcp");
    let (email, _c, m) = app.tokens(Some(&mcp)).await;
    let token = m["access_token"].as_str().unwrap().to_string();
    let s =
        tool_at(&app.http, &mcp, &token, "session_start", json!({"url": site.url("/"), "recordVideo": false})).await;
    assert_eq!(s["isError"], false, "{s}");
    let sid = s["structuredContent"]["sessionId"].as_str().unwrap().to_string();

    let asked = tokio::spawn({
        let (http, mcp, token, sid) = (app.http.clone(), mcp.clone(), token.clone(), sid.clone());
        async move {
            tool_at(
                &http,
                &mcp,
                &token,
                "request_human",
                json!({"sessionId": sid, "reason": "Solve the CAPTCHA on the sign-in page", "timeoutSec": 60}),
            )
            .await
        }
    });
    let mails = eventually("the hand-off is mailed", Duration::from_secs(30), || async {
        let m = sink.received();
        if m.is_empty() { Err(()) } else { Ok(m) }
    })
    .await;
    assert_eq!(mails.len(), 1);
    let (raw, envelope) = &mails[0];
    assert_eq!(envelope["rcpt_tos"], json!([email]), "to the account's address");
    assert_eq!(
        header(raw, "Subject").as_deref(),
        Some("A browser session needs you: Solve the CAPTCHA on the sign-in page")
    );
    let text = unfolded(raw);
    assert!(text.contains("Solve the CAPTCHA on the sign-in page"), "{text}");
    // The link, as the person clicks it: this server's live view of the session.
    let start = text.find(&format!("{}/live/{sid}?t=", app.base)).unwrap_or_else(|| panic!("no live link: {text}"));
    let link: String =
        text[start..].chars().take_while(|c| !c.is_whitespace() && !matches!(c, '"' | '<' | '>')).collect();
    let page = app.http.get(&link).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.text().await.unwrap().contains("<title>Capture live view</title>"));

    let (mut ws, hello) = crate::api::live_view::connect(&link).await;
    assert_eq!(
        (&hello["t"], &hello["mode"], &hello["reason"]),
        (&json!("hello"), &json!("control"), &json!("Solve the CAPTCHA on the sign-in page")),
        "{hello}"
    );
    ws.send(Message::Text(json!({"t": "done"}).to_string().into())).await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(30), asked).await.expect("the agent is answered").unwrap();
    assert_eq!(answer["structuredContent"]["outcome"], "done", "{answer}");
    assert_eq!(answer["structuredContent"]["liveViewUrl"].as_str(), Some(link.as_str()), "{answer}");
    assert_eq!(sink.received().len(), 1, "one mail per hand-off");
}
