//! The page as text over MCP (issue 41): `read_page` (Markdown within a character budget, paged
//! with from/nextFrom), `extract` (fields by rules, validated by a schema) and `get_markdown` in an
//! automation session — each as an agent calls it, as two accounts.

use serde_json::{Value, json};

use crate::helpers::{App, Db, Opts, used};
use capture_testkit::corpus;
use capture_testkit::oauth::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn read_page_extract_and_get_markdown_as_an_agent_calls_them() {
    let site = corpus::serve().await;
    let app = App::spawn_with(Opts::full(Db::Sqlite)).await;
    let mcp = app.url("/mcp");
    let (email, _c, m) = app.tokens(Some(&mcp)).await;
    let token = m["access_token"].as_str().unwrap().to_string();
    let key = app.app.new_key(&email).await;
    let (_, _c, m2) = app.tokens(Some(&mcp)).await;
    let other = m2["access_token"].as_str().unwrap().to_string();
    let call = |name: &'static str, args: Value| tool_at(&app.http, &mcp, &token, name, args);

    // Listed, with their inputs.
    let r = mcp_call(&app, &token, "tools/list", json!({})).await;
    let names: Vec<&str> = r["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    for t in ["read_page", "extract", "get_markdown"] {
        assert!(names.contains(&t), "{t} not listed: {names:?}");
    }

    // read_page: the article as Markdown under front matter, within maxChars, with how to read on.
    let url = site.url("/plain.html");
    let r = call("read_page", json!({"url": url, "maxChars": 200, "options": {"waitUntil": "load"}})).await;
    assert_ne!(r["isError"], true, "{r}");
    let s = &r["structuredContent"];
    let md = s["markdown"].as_str().unwrap();
    assert!(md.starts_with("---\ntitle: \"How cookies and CAPTCHAs work\"\n"), "{md}");
    let body = md.split_once("\n---\n\n").unwrap().1;
    assert!(body.chars().count() <= 201, "{body:?}");
    let next = s["nextFrom"].as_u64().expect("more to read");
    let total = s["totalChars"].as_u64().unwrap();
    assert!(next < total, "{s}");
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.ends_with(&format!("[characters 0–{next} of {total}; read on with from={next}]")), "{text}");
    let r =
        call("read_page", json!({"url": url, "from": next, "maxChars": 20000, "options": {"waitUntil": "load"}})).await;
    let s = &r["structuredContent"];
    assert_eq!((s["from"].as_u64(), s["nextFrom"].as_u64()), (Some(next), None), "{r}");
    assert!(s["markdown"].as_str().unwrap().contains("a challenge page asks a visitor to wait a moment."), "{s}");
    // A tool argument cannot be set again through options; a bad option is named.
    let r = call("read_page", json!({"url": url, "options": {"format": "png"}})).await;
    assert_eq!(r["isError"], true, "{r}");
    assert!(r["content"][0]["text"].as_str().unwrap().contains("options.format"), "{r}");
    let r = call("read_page", json!({"url": url, "options": {"cookieConsent": "sometimes"}})).await;
    assert_eq!(r["isError"], true, "{r}");
    assert!(r["content"][0]["text"].as_str().unwrap().contains("cookieConsent"), "{r}");
    assert_eq!(used(&app.app, &key).await, 2);

    // take_screenshot of a text format gives the text, not a picture of the page.
    let r = call("take_screenshot", json!({"url": url, "format": "text", "waitUntil": "load"})).await;
    assert_ne!(r["isError"], true, "{r}");
    assert_eq!(r["content"][0]["type"], "text", "{r}");
    let first = r["content"][0]["text"].as_str().unwrap();
    assert!(first.starts_with("How cookies and CAPTCHAs work\n"), "{first}");
    assert!(r["content"][1]["text"].as_str().unwrap().starts_with("The page "), "{r}");
    assert_eq!(used(&app.app, &key).await, 3);

    // extract: the fields by rule, and where each came from.
    let r = call(
        "extract",
        json!({"url": url, "options": {"waitUntil": "load"},
            "rules": {"title": {"selector": "h1"}, "first": {"selector": "#content p"}, "price": {"selector": ".price", "type": "number"}},
            "schema": {"type": "object", "properties": {"title": {"type": "string"}}}}),
    )
    .await;
    assert_ne!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["data"]["title"], "How cookies and CAPTCHAs work", "{r}");
    assert_eq!(r["structuredContent"]["data"]["price"], Value::Null, "{r}");
    assert_eq!(r["structuredContent"]["sources"], json!({"title": "h1", "first": "#content p", "price": null}));
    let r = call("extract", json!({"url": url, "rules": {"title": {"selector": ""}}})).await;
    assert_eq!(r["isError"], true, "{r}");
    assert!(r["content"][0]["text"].as_str().unwrap().contains("extract.rules.title.selector"), "{r}");

    // get_markdown in a session: the page as Markdown, and only to the session's account.
    let r = call("session_start", json!({"url": url, "recordVideo": false})).await;
    assert_ne!(r["isError"], true, "{r}");
    let sid = r["structuredContent"]["sessionId"].as_str().unwrap().to_string();
    let r = call("get_markdown", json!({"sessionId": sid})).await;
    assert_ne!(r["isError"], true, "{r}");
    let md = r["structuredContent"]["markdown"].as_str().unwrap();
    assert!(md.lines().any(|l| l == "# How cookies and CAPTCHAs work"), "{md}");
    assert_eq!(r["structuredContent"]["nextFrom"], Value::Null, "{r}");
    let r = call("get_markdown", json!({"sessionId": sid, "maxChars": 200})).await;
    let s = &r["structuredContent"];
    assert_eq!(s["truncated"], true, "{r}");
    assert!(s["fileUrl"].as_str().unwrap().ends_with(".md"), "{r}");
    let r = tool_at(&app.http, &mcp, &other, "get_markdown", json!({"sessionId": sid})).await;
    assert_eq!(r["isError"], true, "another account read the session: {r}");
    let r = call("session_end", json!({"sessionId": sid})).await;
    assert_ne!(r["isError"], true, "{r}");
}
