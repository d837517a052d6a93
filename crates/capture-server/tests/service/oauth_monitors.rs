//! Monitors over MCP (issue 42): an agent makes a monitor, checks it now, reads its history and
//! lists its monitors — with the same service as REST, as two accounts.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{App, Db, Opts, Site, eventually};
use capture_testkit::oauth::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_agent_monitors_a_page_and_reads_what_changed() {
    let site =
        Site::start(vec![("/news", "text/html", "<title>News</title><h1>Today</h1><p>Nothing new.</p>".into())]).await;
    let app = App::spawn_with(Opts::full(Db::Sqlite)).await;
    let mcp = app.url("/mcp");
    let (_email, _c, m) = app.tokens(Some(&mcp)).await;
    let token = m["access_token"].as_str().unwrap().to_string();
    let (_, _c, m2) = app.tokens(Some(&mcp)).await;
    let other = m2["access_token"].as_str().unwrap().to_string();
    let call = |name: &'static str, args: Value| tool_at(&app.http, &mcp, &token, name, args);

    let r = mcp_call(&app, &token, "tools/list", json!({})).await;
    let tools = r["tools"].as_array().unwrap();
    for t in ["monitor_create", "monitor_list", "monitor_checks", "monitor_check_now"] {
        assert!(tools.iter().any(|x| x["name"] == t), "{t} is listed");
    }
    let create = tools.iter().find(|t| t["name"] == "monitor_create").unwrap();
    assert!(create["inputSchema"]["properties"]["ignoreSelectors"].is_object(), "{create}");

    // A bad schedule is refused naming the field.
    let r = call("monitor_create", json!({"url": site.url("/news"), "schedule": {"every": "10s"}})).await;
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["details"]["field"], "schedule.every", "{r}");

    let r = call(
        "monitor_create",
        json!({"name": "News", "url": site.url("/news"), "schedule": {"every": "6h"}, "compare": "text",
               "capture": {"waitUntil": "load"}}),
    )
    .await;
    assert_ne!(r["isError"], true, "{r}");
    let id = r["structuredContent"]["id"].as_str().unwrap().to_string();
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with(&format!("Monitoring {} as 'News' ({id}), every 6h;", site.url("/news"))), "{text}");

    // The scheduler takes the first check (the baseline); the agent reads it.
    let checks = eventually("the baseline check ends", Duration::from_secs(90), || async {
        let r = call("monitor_checks", json!({"id": id})).await;
        let data = r["structuredContent"]["data"].as_array().cloned().unwrap_or_default();
        if data.len() == 1 && data[0]["status"] != "pending" { Ok(r) } else { Err(r) }
    })
    .await;
    assert_eq!(checks["structuredContent"]["data"][0]["status"], "baseline", "{checks}");
    // Check now: the same page, unchanged.
    let r = call("monitor_check_now", json!({"id": id})).await;
    assert_ne!(r["isError"], true, "{r}");
    let check = r["structuredContent"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        r["content"][0]["text"],
        json!(format!("Checking now ({check}): monitor_checks shows the result in a few seconds."))
    );
    let after = eventually("the check ends", Duration::from_secs(90), || async {
        let r = call("monitor_checks", json!({"id": id, "limit": 1})).await;
        let c = r["structuredContent"]["data"][0].clone();
        if c["id"] == json!(check) && c["status"] != "pending" { Ok(c) } else { Err(c) }
    })
    .await;
    assert_eq!((&after["status"], &after["textDiff"]), (&json!("unchanged"), &json!("")), "{after}");

    let r = call("monitor_list", json!({})).await;
    let list = r["structuredContent"]["data"].as_array().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!((&list[0]["id"], &list[0]["lastCheck"]["status"]), (&json!(id), &json!("unchanged")));
    let line = r["content"][0]["text"].as_str().unwrap();
    assert!(
        line.starts_with(&format!("News ({id}) {}: active, last check unchanged, next ", site.url("/news"))),
        "{line}"
    );

    // Another account's agent sees nothing of it.
    let theirs = tool_at(&app.http, &mcp, &other, "monitor_list", json!({})).await;
    assert_eq!(theirs["structuredContent"]["data"], json!([]));
    let r = tool_at(&app.http, &mcp, &other, "monitor_checks", json!({"id": id})).await;
    assert_eq!((&r["isError"], &r["structuredContent"]["code"]), (&json!(true), &json!("NOT_FOUND")), "{r}");
    let r = tool_at(&app.http, &mcp, &other, "monitor_check_now", json!({"id": id})).await;
    assert_eq!(r["structuredContent"]["code"], "NOT_FOUND", "{r}");
}
