//! Two tenants' MCP automation sessions on one browser (the pool forced to one): neither
//! reaches the other's clipboard through the clipboard tools, the page's
//! `navigator.clipboard` or a paste shortcut — also once the other's session ended — and a
//! session's popups stay within its page limit.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{App, Db, Opts, Site, eventually, nothing_within};
use capture_testkit::oauth::*;

const PAGE: &str = "<!doctype html><title>Clip</title><input id=f><input id=g><p id=code>A-PAGE-CODE</p>\
    <button id=open>Open</button><script>window.opened = [];\
    document.getElementById('open').onclick = () => { for (let i = 0; i < 30; i++) opened.push(window.open('/blank?' + i)); };\
    </script>";

/// A tenant's tool calls: the result's structured content (panics on a tool error).
struct Tenant<'a> {
    app: &'a App,
    mcp: String,
    token: String,
}

impl Tenant<'_> {
    async fn raw(&self, name: &str, args: Value) -> Value {
        tool_at(&self.app.http, &self.mcp, &self.token, name, args).await
    }

    async fn ok(&self, name: &str, args: Value) -> Value {
        let r = self.raw(name, args).await;
        assert_ne!(r["isError"], true, "{name}: {r}");
        r["structuredContent"].clone()
    }

    async fn js(&self, sid: &str, expression: &str) -> Value {
        self.ok("evaluate", json!({"sessionId": sid, "expression": expression})).await["value"].clone()
    }

    /// Focus a field, clear it, press a chord in it; the field's value once the page has
    /// handled it. A paste lands asynchronously: an expected value is waited for, and an
    /// empty field must stay empty for a window.
    async fn paste_into(&self, sid: &str, field: &str, chord: &str, want: &str) -> Value {
        self.js(
            sid,
            &format!("(() => {{ const e = document.getElementById('{field}'); e.value = ''; e.focus(); }})()"),
        )
        .await;
        self.ok("press_key", json!({"sessionId": sid, "key": chord})).await;
        let expr = format!("document.getElementById('{field}').value");
        let what = format!("{chord} into #{field}");
        if want.is_empty() {
            nothing_within(&what, Duration::from_millis(500), || async {
                let v = self.js(sid, &expr).await;
                (v != "").then_some(v)
            })
            .await;
            return self.js(sid, &expr).await;
        }
        eventually(&what, Duration::from_secs(5), || async {
            let v = self.js(sid, &expr).await;
            if v == want { Ok(v) } else { Err(v) }
        })
        .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mcp_sessions_on_one_browser_never_share_a_clipboard() {
    let site =
        Site::start(vec![("/", "text/html", PAGE.to_string()), ("/blank", "text/html", "<title>b</title>".into())])
            .await;
    let app = App::spawn_with(Opts::full(Db::Sqlite).env("CAPTURE_BROWSERS", "1")).await;
    let mcp = app.url("/mcp");
    let mut tenants = Vec::new();
    for _ in 0..2 {
        let (_email, _c, m) = app.tokens(Some(&mcp)).await;
        tenants.push(Tenant { app: &app, mcp: mcp.clone(), token: m["access_token"].as_str().unwrap().to_string() });
    }
    let (a, b) = (&tenants[0], &tenants[1]);
    let start = json!({"url": site.url("/"), "device": "desktop-1280", "recordVideo": false});
    let sa = a.ok("session_start", start.clone()).await["sessionId"].as_str().unwrap().to_string();
    let sb = b.ok("session_start", start.clone()).await["sessionId"].as_str().unwrap().to_string();

    // A writes a one-time code with the tool, and its page copies another with Ctrl+C.
    a.ok("clipboard_write", json!({"sessionId": sa, "text": "A-TOOL-CODE"})).await;
    assert_eq!(b.ok("clipboard_read", json!({"sessionId": sb})).await["text"], "");
    assert_eq!(b.js(&sb, "navigator.clipboard.readText()").await, "");
    assert_eq!(b.paste_into(&sb, "f", "Control+v", "").await, "");
    assert_eq!(a.js(&sa, "navigator.clipboard.readText()").await, "A-TOOL-CODE");
    assert_eq!(a.paste_into(&sa, "f", "Control+v", "A-TOOL-CODE").await, "A-TOOL-CODE");
    // Granting the clipboard permissions changes nothing for either.
    a.ok(
        "grant_permissions",
        json!({"sessionId": sa, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]}),
    )
    .await;
    a.js(&sa, "(() => { const e = document.getElementById('g'); e.value = 'A-KBD-CODE'; e.focus(); e.select(); })()")
        .await;
    a.ok("press_key", json!({"sessionId": sa, "key": "Control+c"})).await;
    assert_eq!(a.ok("clipboard_read", json!({"sessionId": sa})).await["text"], "A-KBD-CODE");
    assert_eq!(b.ok("clipboard_read", json!({"sessionId": sb})).await["text"], "");
    assert_eq!(b.js(&sb, "navigator.clipboard.readText()").await, "");
    assert_eq!(b.paste_into(&sb, "f", "Shift+Insert", "").await, "");

    // B plants a value for A's agent to paste: A still pastes its own.
    b.js(&sb, "navigator.clipboard.writeText('B-PLANTED')").await;
    assert_eq!(b.ok("clipboard_read", json!({"sessionId": sb})).await["text"], "B-PLANTED");
    assert_eq!(a.paste_into(&sa, "f", "Control+v", "A-KBD-CODE").await, "A-KBD-CODE");
    assert_eq!(a.ok("clipboard_read", json!({"sessionId": sa})).await["text"], "A-KBD-CODE");

    // A's session ends: nothing of its clipboard is left for B or for A's next session.
    a.ok("session_end", json!({"sessionId": sa})).await;
    assert_eq!(b.ok("clipboard_read", json!({"sessionId": sb})).await["text"], "B-PLANTED");
    assert_eq!(b.paste_into(&sb, "f", "Control+v", "B-PLANTED").await, "B-PLANTED");
    let sa2 = a.ok("session_start", start.clone()).await["sessionId"].as_str().unwrap().to_string();
    assert_eq!(a.ok("clipboard_read", json!({"sessionId": sa2})).await["text"], "");
    assert_eq!(a.js(&sa2, "navigator.clipboard.readText()").await, "");
    assert_eq!(a.paste_into(&sa2, "f", "Control+v", "").await, "");

    // Popups from a tap: the session keeps at most five pages (its own and four popups).
    a.ok("tap", json!({"sessionId": sa2, "selector": "#open"})).await;
    let open = || async {
        let v = a.js(&sa2, "[window.opened.length, window.opened.filter(w => w && !w.closed).length]").await;
        if v == json!([30, 4]) { Ok(v) } else { Err(v) }
    };
    eventually("30 popups opened, 26 of them closed", Duration::from_secs(10), open).await;
    a.ok("session_end", json!({"sessionId": sa2})).await;
    b.ok("session_end", json!({"sessionId": sb})).await;
}
