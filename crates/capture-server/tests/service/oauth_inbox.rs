//! The inbox over MCP, in-process: the auth-test and inbox tools against the inbound SMTP
//! server, and `upload_file` handing an inbox attachment to a live automation session.

use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

use crate::helpers::{self, Api, App, Db, Opts, TestApp};
use capture_testkit::inbox_fixture;
use capture_testkit::oauth::*;

/// The auth-test and inbox tools over MCP: listed; a record, a check that answers from it
/// (with the inbox password), the inbox with its messages, and a wait that hands over a mail
/// delivered to the inbound SMTP server with its code.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mcp_auth_test_and_inbox_tools_call_the_inbox_service() {
    let app = App::spawn_with(
        Opts::api(Db::Sqlite)
            .roles("api,scheduler,inbound")
            .env("CAPTURE_INBOUND_LISTEN", "127.0.0.1:0")
            .env("CAPTURE_INBOX_DOMAIN", "inbox.test"),
    )
    .await;
    let (_e, _c, m) = app.tokens(Some(&app.url("/mcp"))).await;
    let token = m["access_token"].as_str().unwrap();
    let tools = mcp_call(&app, token, "tools/list", json!({})).await;
    let names: Vec<&str> = tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    for t in ["auth_test_check", "auth_test_record", "inbox_messages", "inbox_wait"] {
        assert!(names.contains(&t), "{t} in {names:?}");
    }
    let call = |name: &'static str, args: Value| {
        let app = &app;
        async move { mcp_call(app, token, "tools/call", json!({"name": name, "arguments": args})).await }
    };
    let site = "https://www.Shop.example/sign-up";
    let r = call("auth_test_record", json!({"url": site, "action": "sign_up", "outcome": "verification_sent"})).await;
    assert_eq!(r["structuredContent"]["origin"], "https://shop.example", "{r}");
    let r = call("auth_test_check", json!({"url": "https://shop.example/login", "probe": "never"})).await;
    let c = &r["structuredContent"];
    assert_eq!(c["recommendation"], "expect_verification", "{r}");
    assert_eq!(c["history"].as_array().unwrap().len(), 1);
    assert!(c["inbox"]["password"].as_str().unwrap().len() >= 20, "{r}");
    let r = call("auth_test_record", json!({"url": site, "action": "dance", "outcome": "success"})).await;
    assert_eq!(
        (r["isError"].as_bool(), r["structuredContent"]["code"].as_str()),
        (Some(true), Some("VALIDATION_ERROR")),
        "{r}"
    );

    let r = call("inbox_messages", json!({"limit": 5})).await;
    let inbox = &r["structuredContent"]["inbox"];
    assert_eq!(inbox["password"], c["inbox"]["password"]);
    let address = inbox["address"].as_str().unwrap().to_string();
    let smtp = format!("{}:{}", inbox["smtp"]["host"].as_str().unwrap(), inbox["smtp"]["port"]).parse().unwrap();
    let mail =
        inbox_fixture::verification_mail(&address, "https://shop.example/verify?token=0123456789abcdefghij", "739182");
    assert_eq!(inbox_fixture::smtp_send(smtp, "no-reply@shop.example", &address, &mail).await.code, 250);
    let r = call("inbox_wait", json!({"timeoutMs": 5000})).await;
    assert_eq!(r["structuredContent"]["message"]["code"], "739182", "{r}");
    assert!(r["content"][0]["text"].as_str().unwrap().contains("https://shop.example/verify?token="), "{r}");
    let r = call("inbox_messages", json!({"from": "fixture.test"})).await;
    assert_eq!(r["structuredContent"]["messages"]["data"].as_array().unwrap().len(), 1, "{r}");
    let r = call("inbox_wait", json!({"timeoutMs": 100})).await;
    assert!(r["structuredContent"]["message"].is_null(), "{r}");
}

/// A mail with a text body and one binary attachment (`name`, base64 content).
fn mail_with_attachment(to: &str, name: &str, content: &[u8]) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(content);
    format!(
        "From: Forms <no-reply@forms.example>\r\nTo: {to}\r\nSubject: Your document\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n\
         Attached: your document.\r\n--b1\r\nContent-Type: application/octet-stream; name=\"{name}\"\r\n\
         Content-Disposition: attachment; filename=\"{name}\"\r\nContent-Transfer-Encoding: base64\r\n\r\n{b64}\r\n--b1--\r\n"
    )
    .into_bytes()
}

/// The attachment blobs in the service's local file store.
fn attachment_blobs(app: &TestApp) -> Vec<String> {
    std::fs::read_dir(app.data_dir.join("files"))
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().to_string()))
                .filter(|n| n.starts_with("inbox-"))
                .collect()
        })
        .unwrap_or_default()
}

/// Issue 14's `upload_file` from an inbox attachment, end to end: a mail with an attachment
/// sent to the account's inbox over SMTP keeps the attachment's bytes (downloadable over REST
/// by its owner only), an automation session gives it to a fixture page's file input and the
/// page reads the same name and bytes; another account's upload of it is NOT_FOUND; deleting
/// the message deletes the stored content.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn upload_file_gives_an_inbox_attachment_to_the_page() {
    let page = "<!doctype html><title>Upload</title><input type=file id=f><p id=out>none</p><script>\
        document.getElementById('f').addEventListener('change', async e => { const f = e.target.files[0]; \
        const b = new Uint8Array(await f.arrayBuffer()); document.getElementById('out').textContent = f.name + '|' + \
        b.length + '|' + Array.from(b).map(x => x.toString(16).padStart(2, '0')).join(''); });</script>"
        .to_string();
    let site = helpers::Site::start(vec![("/", "text/html", page)]).await;
    let app = App::spawn_with(
        Opts::full(Db::Sqlite)
            .roles("api,worker,scheduler,inbound")
            .env("CAPTURE_INBOUND_LISTEN", "127.0.0.1:0")
            .env("CAPTURE_INBOX_DOMAIN", "inbox.test"),
    )
    .await;
    let mcp = app.url("/mcp");
    let (email, _c, m) = app.tokens(Some(&mcp)).await;
    let token = m["access_token"].as_str().unwrap().to_string();
    let key = app.app.new_key(&email).await;
    let (other_email, _c, m2) = app.tokens(Some(&mcp)).await;
    let other_token = m2["access_token"].as_str().unwrap().to_string();
    let other_key = app.app.new_key(&other_email).await;
    let call = |name: &'static str, args: Value| tool_at(&app.http, &mcp, &token, name, args);

    // The mail, over SMTP, to this account's inbox.
    let content: Vec<u8> = (0u8..=255).chain(b"%PDF-ish tail\r\n.\r\n".iter().copied()).collect();
    let r = call("inbox_messages", json!({"limit": 1})).await;
    let inbox = &r["structuredContent"]["inbox"];
    let address = inbox["address"].as_str().unwrap().to_string();
    let smtp = format!("{}:{}", inbox["smtp"]["host"].as_str().unwrap(), inbox["smtp"]["port"]).parse().unwrap();
    let mail = mail_with_attachment(&address, "report 1.bin", &content);
    assert_eq!(inbox_fixture::smtp_send(smtp, "no-reply@forms.example", &address, &mail).await.code, 250);
    let r = call("inbox_wait", json!({"timeoutMs": 5000})).await;
    let msg = &r["structuredContent"]["message"];
    let id = msg["id"].as_str().unwrap_or_else(|| panic!("{r}")).to_string();
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(&format!("Attachments of {id}: #0 report 1.bin")), "{text}");
    let atts = msg["attachments"].as_array().unwrap();
    assert_eq!(atts.len(), 1, "{msg}");
    assert_eq!(
        (
            atts[0]["index"].as_u64(),
            atts[0]["name"].as_str(),
            atts[0]["size"].as_u64(),
            atts[0]["downloadable"].as_bool()
        ),
        (Some(0), Some("report 1.bin"), Some(content.len() as u64), Some(true)),
        "{msg}"
    );
    assert!(atts[0].get("blob").is_none(), "the storage name stays private: {msg}");
    assert_eq!(attachment_blobs(&app.app).len(), 1);

    // REST download: the owner gets the bytes; anyone else, or a wrong index, a JSON 404.
    let path = format!("/v1/inbox/messages/{id}/attachments/0");
    let r = app.app.get(&key, &path).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/octet-stream");
    let cd = r.headers()["content-disposition"].to_str().unwrap().to_string();
    assert!(cd.starts_with("attachment;") && cd.contains("report%201.bin"), "{cd}");
    assert_eq!(r.bytes().await.unwrap().to_vec(), content);
    for (k, p) in [
        (&other_key, path.clone()),
        (&key, format!("/v1/inbox/messages/{id}/attachments/1")),
        (&key, format!("/v1/inbox/messages/{id}/attachments/x")),
        (&key, "/v1/inbox/messages/eml_nope/attachments/0".to_string()),
    ] {
        let r = app.app.get(k, &p).await;
        assert_eq!(r.status(), 404, "{p}");
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["code"], "NOT_FOUND", "{p}: {e}");
    }

    // An automation session gives it to the page's file input.
    let r = call("session_start", json!({"url": site.url("/"), "device": "pixel-7", "recordVideo": false})).await;
    assert_ne!(r["isError"], true, "{r}");
    let sid = r["structuredContent"]["sessionId"].as_str().unwrap().to_string();
    let r = call(
        "upload_file",
        json!({"sessionId": sid, "selector": "#f", "inboxAttachment": {"messageId": id, "index": 0}}),
    )
    .await;
    assert_ne!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["files"], json!(["report 1.bin"]), "{r}");
    assert_eq!(r["structuredContent"]["bytes"].as_u64(), Some(content.len() as u64), "{r}");
    let hex: String = content.iter().map(|b| format!("{b:02x}")).collect();
    let want = format!("report 1.bin|{}|{hex}", content.len());
    let mut seen = String::new();
    for _ in 0..50 {
        let r = call("get_text", json!({"sessionId": sid, "selector": "#out"})).await;
        seen = r["structuredContent"]["text"].as_str().unwrap_or_default().to_string();
        if seen != "none" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(seen, want, "the page read the attachment's name and bytes");
    // A wrong index is NOT_FOUND.
    let r = call(
        "upload_file",
        json!({"sessionId": sid, "selector": "#f", "inboxAttachment": {"messageId": id, "index": 3}}),
    )
    .await;
    assert_eq!((r["isError"].as_bool(), r["structuredContent"]["code"].as_str()), (Some(true), Some("NOT_FOUND")));

    // Another account, in its own session, cannot use this account's message.
    let r = tool_at(
        &app.http,
        &mcp,
        &other_token,
        "session_start",
        json!({"url": site.url("/"), "device": "pixel-7", "recordVideo": false}),
    )
    .await;
    let other_sid = r["structuredContent"]["sessionId"].as_str().unwrap_or_else(|| panic!("{r}")).to_string();
    let r = tool_at(
        &app.http,
        &mcp,
        &other_token,
        "upload_file",
        json!({"sessionId": other_sid, "selector": "#f", "inboxAttachment": {"messageId": id, "index": 0}}),
    )
    .await;
    assert_eq!(
        (r["isError"].as_bool(), r["structuredContent"]["code"].as_str()),
        (Some(true), Some("NOT_FOUND")),
        "{r}"
    );
    let r =
        tool_at(&app.http, &mcp, &other_token, "get_text", json!({"sessionId": other_sid, "selector": "#out"})).await;
    assert_eq!(r["structuredContent"]["text"], "none", "{r}");
    tool_at(&app.http, &mcp, &other_token, "session_end", json!({"sessionId": other_sid})).await;
    call("session_end", json!({"sessionId": sid})).await;

    // Deleting the message deletes the attachment's content.
    let r = app.app.client.delete(app.app.url(&format!("/v1/inbox/messages/{id}"))).bearer_auth(&key).send().await;
    assert_eq!(r.unwrap().status(), 204);
    assert_eq!(attachment_blobs(&app.app), Vec::<String>::new());
    assert_eq!(app.app.get(&key, &path).await.status(), 404);
}

/// The profile tools over MCP: `profile_login` signs in to the members' site with the
/// account's inbox (the mailed code), `session_start` with the profile opens the members'
/// settings as a member (their localStorage restored), `session_end` with `saveProfile`
/// keeps the session's state as another profile, `profile_list` shows both,
/// `profile_delete` removes one; another client of another account sees none.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mcp_profile_tools_sign_in_once_and_sessions_save_their_state() {
    let app = App::spawn_with(
        Opts::full(Db::Sqlite)
            .roles("api,worker,scheduler,inbound")
            .env("CAPTURE_INBOUND_LISTEN", "127.0.0.1:0")
            .env("CAPTURE_INBOX_DOMAIN", "inbox.test"),
    )
    .await;
    let mcp = app.url("/mcp");
    let (_email, _c, m) = app.tokens(Some(&mcp)).await;
    let token = m["access_token"].as_str().unwrap().to_string();
    let (_e2, _c2, m2) = app.tokens(Some(&mcp)).await;
    let other_token = m2["access_token"].as_str().unwrap().to_string();
    let call = |name: &'static str, args: Value| tool_at(&app.http, &mcp, &token, name, args);

    let tools = mcp_call(&app, &token, "tools/list", json!({})).await;
    let tool = |n: &str| {
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == n)
            .cloned()
            .unwrap_or_else(|| panic!("{n} listed"))
    };
    for t in ["profile_login", "profile_list", "profile_delete"] {
        tool(t);
    }
    assert!(tool("session_start")["inputSchema"]["properties"]["profile"].is_object());
    assert!(tool("session_end")["inputSchema"]["properties"]["saveProfile"].is_object());
    assert!(tool("take_screenshot")["inputSchema"]["properties"]["profile"].is_object());

    let r = call("inbox_messages", json!({"limit": 1})).await;
    let inbox = &r["structuredContent"]["inbox"];
    let site = capture_testkit::members_site::MembersSite::start().await;
    site.set_smtp(format!("{}:{}", inbox["smtp"]["host"].as_str().unwrap(), inbox["smtp"]["port"]).parse().unwrap());
    site.add_account(inbox["address"].as_str().unwrap(), inbox["password"].as_str().unwrap());

    let r = call("profile_login", json!({"url": site.url("/login"), "profile": "club"})).await;
    assert_ne!(r["isError"], true, "{r}");
    let out = &r["structuredContent"];
    assert_eq!(
        (out["profile"]["name"].as_str(), out["profile"]["status"].as_str()),
        (Some("club"), Some("ready")),
        "{r}"
    );
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!("Signed in to {} as {}", site.url("/members"), inbox["address"].as_str().unwrap())),
        "{text}"
    );

    let r =
        call("session_start", json!({"url": site.url("/members/settings"), "profile": "club", "recordVideo": false}))
            .await;
    assert_ne!(r["isError"], true, "{r}");
    let sid = r["structuredContent"]["sessionId"].as_str().unwrap_or_else(|| panic!("{r}")).to_string();
    let r = call("get_title", json!({"sessionId": sid})).await;
    assert_eq!(r["structuredContent"]["title"], "Members Club — Settings", "{r}");
    let r = call(
        "evaluate",
        json!({"sessionId": sid, "expression": "getComputedStyle(document.getElementById('pref')).backgroundColor"}),
    )
    .await;
    assert_eq!(r["structuredContent"]["value"], "rgb(20, 60, 200)", "the profile's localStorage is restored: {r}");
    let r = call("session_end", json!({"sessionId": sid, "saveProfile": "from-session"})).await;
    assert_ne!(r["isError"], true, "{r}");
    let saved = &r["structuredContent"]["savedProfile"];
    assert_eq!(
        (saved["name"].as_str(), saved["savedFrom"].as_str()),
        (Some("from-session"), Some(sid.as_str())),
        "{r}"
    );
    assert_eq!(saved["summary"]["domains"], json!(["127.0.0.1"]), "{saved}");

    let r = call("profile_list", json!({})).await;
    let names: Vec<&str> =
        r["structuredContent"]["data"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["club", "from-session"], "{r}");
    let r = tool_at(&app.http, &mcp, &other_token, "profile_list", json!({})).await;
    assert_eq!(r["structuredContent"]["data"], json!([]), "{r}");
    let r = tool_at(
        &app.http,
        &mcp,
        &other_token,
        "session_start",
        json!({"url": site.url("/members"), "profile": "club"}),
    )
    .await;
    assert_eq!(
        (r["isError"].as_bool(), r["structuredContent"]["code"].as_str()),
        (Some(true), Some("VALIDATION_ERROR")),
        "{r}"
    );
    let r = call("profile_delete", json!({"profile": "from-session"})).await;
    assert_ne!(r["isError"], true, "{r}");
    let r = call("profile_list", json!({})).await;
    assert_eq!(r["structuredContent"]["data"].as_array().unwrap().len(), 1, "{r}");
}

/// `profile_login` over MCP on a node that runs no browser: the sign-in runs on the node that
/// has one, as the API's does (one decision, `profiles::login::anywhere`), and its refusal
/// comes back as the tool's error with the same code. Before, the tool called the sign-in
/// here and answered "no browser on this node".
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mcp_profile_login_on_a_node_without_a_browser_runs_on_one_with_it() {
    let master = "43".repeat(32);
    let worker = TestApp::browser_node(&master).await;
    let app = App::spawn_with(worker.api_node_opts(&master)).await;
    assert!(app.app.state.browser.pool.is_none(), "the MCP node runs no browser");
    worker.advertise_as("node-worker-of-the-mcp-test").await;
    let mcp = app.url("/mcp");
    let (_email, _c, m) = app.tokens(Some(&mcp)).await;
    let token = m["access_token"].as_str().unwrap().to_string();
    let call = |name: &'static str, args: Value| tool_at(&app.http, &mcp, &token, name, args);

    let r = call("inbox_messages", json!({"limit": 1})).await;
    let inbox = &r["structuredContent"]["inbox"];
    let site = capture_testkit::members_site::MembersSite::start().await;
    site.set_smtp(worker.state.mail.inbound_addr.expect("the worker's inbound SMTP server"));
    site.add_account(inbox["address"].as_str().unwrap(), inbox["password"].as_str().unwrap());

    let r = call("profile_login", json!({"url": site.url("/login"), "profile": "club"})).await;
    assert_ne!(r["isError"], true, "{r}");
    let out = &r["structuredContent"];
    assert_eq!(
        (out["profile"]["name"].as_str(), out["profile"]["status"].as_str(), out["finalUrl"].as_str()),
        (Some("club"), Some("ready"), Some(site.url("/members").as_str())),
        "{r}"
    );
    let r = call("profile_list", json!({})).await;
    assert_eq!(r["structuredContent"]["data"][0]["savedFrom"], "login", "{r}");
    // The browser node's LOGIN_FAILED, as the tool's error.
    let r =
        call("profile_login", json!({"url": site.url("/login"), "profile": "x", "password": "wrong-password"})).await;
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["code"], "LOGIN_FAILED", "{r}");
}
