//! The live-session relay with real clients: puppeteer-core and playwright-core from npm
//! (installed in tests/relay by `npm ci`, with the system Chromium: they never download a
//! browser), and a hostile client on the raw protocol.

mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::response::Html;
use axum::routing::get;
use capture_browser::relay::{RelayEnd, RelayOptions};
use capture_browser::session::{Session, SessionOptions};
use capture_browser::{BrowserPool, EgressAllow, EgressPolicy, WaitUntil};
use serde_json::Value;
use support::*;

const FORM: &str = r#"<!doctype html><html><head><title>Sign up</title></head><body>
<form action="/done" method="get"><input id=name name=name>
<select id=plan name=plan><option value=free>Free</option><option value=pro>Pro</option></select>
<button id=go type=submit>Go</button></form></body></html>"#;

/// Four fields, a text the page's own button copies, and what its copy/paste handlers saw.
const CLIP: &str = r#"<!doctype html><html><head><title>Clipboard</title></head><body>
<input id=f1><input id=f2><input id=f3><input id=f4>
<p id=secret>A-EXEC-3</p><button id=copy>Copy</button>
<script>
document.getElementById('copy').onclick = () => {
  const r = document.createRange(); r.selectNodeContents(document.getElementById('secret'));
  getSelection().removeAllRanges(); getSelection().addRange(r); document.execCommand('copy');
};
addEventListener('copy', () => { window.lastCopy = getSelection().toString(); });
addEventListener('paste', (e) => { window.lastPaste = e.clipboardData.getData('text/plain'); });
</script></body></html>"#;

/// Popups: `?auto=N` opens N on load (no gesture), the button 30 from a click, and eight
/// `target=_blank` links.
const POPUPS: &str = r#"<!doctype html><html><head><title>Popups</title></head><body>
<button id=open>Open</button>
<a id=l0 href=/blank target=_blank>0</a> <a id=l1 href=/blank target=_blank>1</a>
<a id=l2 href=/blank target=_blank>2</a> <a id=l3 href=/blank target=_blank>3</a>
<a id=l4 href=/blank target=_blank>4</a> <a id=l5 href=/blank target=_blank>5</a>
<a id=l6 href=/blank target=_blank>6</a> <a id=l7 href=/blank target=_blank>7</a>
<script>
window.opened = [];
const n = Number(new URLSearchParams(location.search).get('auto')) || 0;
for (let i = 0; i < n; i++) opened.push(window.open('/blank?' + i));
document.getElementById('open').onclick = () => { for (let i = 0; i < 30; i++) opened.push(window.open('/blank?c' + i)); };
</script></body></html>"#;

async fn site() -> SocketAddr {
    let app = axum::Router::new()
        .route("/form", get(|| async { Html(FORM) }))
        .route("/clip", get(|| async { Html(CLIP) }))
        .route("/popups", get(|| async { Html(POPUPS) }))
        .route("/blank", get(|| async { Html("<title>Blank</title>") }))
        .route(
            "/done",
            get(|req: Request| async move {
                Html(format!("<title>Done</title><p id=q>{}</p>", req.uri().query().unwrap_or("")))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/relay")
}

/// `npm ci` the clients once (from the committed lock file; no browser download).
fn install_clients() {
    static ONCE: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    let mut done = ONCE.lock().unwrap();
    if *done || clients_dir().join("node_modules/puppeteer-core/package.json").exists() {
        *done = true;
        return;
    }
    let status = std::process::Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(clients_dir())
        .env("PUPPETEER_SKIP_DOWNLOAD", "1")
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .status()
        .expect("npm runs (Node.js and npm are needed for the relay tests)");
    assert!(status.success(), "npm ci in {} failed", clients_dir().display());
    *done = true;
}

/// Run a client script against `endpoint`; its JSON output.
async fn client(script: &str, args: &[String]) -> Value {
    install_clients();
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(clients_dir().join(script)).args(args).current_dir(clients_dir()).kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(90), cmd.output())
        .await
        .expect("the client finished in time")
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed: {stderr}\n{stdout}");
    serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{script} printed {stdout}: {e}"))
}

/// Serve the relay for `session` on a local WebSocket; the endpoint and the relay's end.
async fn relay(session: &Session) -> (String, tokio::task::JoinHandle<RelayEnd>) {
    relay_with(session, RelayOptions::default()).await
}

async fn relay_with(session: &Session, opts: RelayOptions) -> (String, tokio::task::JoinHandle<RelayEnd>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("ws://{}/devtools/browser/session", listener.local_addr().unwrap());
    let session = session.clone();
    let task = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        capture_browser::relay::serve_websocket(&session, stream, opts).await.expect("handshake")
    });
    (endpoint, task)
}

struct Fixture {
    pool: Arc<BrowserPool>,
    _dir: tempfile::TempDir,
    site: SocketAddr,
    /// Stands in for one of the service's own listeners.
    service: Server,
}

async fn fixture() -> Fixture {
    // RUST_LOG=capture_browser::relay=debug shows the relayed traffic.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let site = site().await;
    let service =
        Server::start(Arc::new(|_: &str, _: &str| html("<body style='background:rgb(255,0,0)'>secret</body>"))).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path().to_path_buf(), true);
    cfg.browsers = 1;
    cfg.pages_per_browser = 2;
    cfg.egress = EgressPolicy::new(EgressAllow::parse("127.0.0.1").unwrap(), vec![service.addr]);
    let pool = BrowserPool::start(cfg).await.expect("pool starts");
    Fixture { pool, _dir: dir, site, service }
}

async fn after_relay(f: &Fixture, session: &Session, end: tokio::task::JoinHandle<RelayEnd>) {
    let end = tokio::time::timeout(Duration::from_secs(10), end).await.expect("the relay ended").unwrap();
    assert_eq!(end, RelayEnd::ClientClosed);
    // The session outlives its client, and the pool serves captures.
    assert!(!session.is_closed(), "{:?}", session.end_reason());
    session.close().await;
    let out = f.pool.capture(url_req(format!("http://{}/form", f.site))).await.expect("a capture after the relay");
    assert_eq!(out.page_title, "Sign up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn puppeteer_drives_a_live_session() {
    let f = fixture().await;
    let session = f.pool.open_session(SessionOptions::default()).await.unwrap();
    let (endpoint, end) = relay(&session).await;
    let out = client("puppeteer.mjs", &[endpoint, format!("http://{}", f.site)]).await;
    eprintln!("puppeteer: {out}");
    assert_eq!(out["pages"], 1, "the session's page, and nothing else");
    assert_eq!(out["url"], format!("http://{}/done?name=Ada+Lovelace&plan=pro", f.site));
    assert_eq!(out["text"], "name=Ada+Lovelace&plan=pro");
    assert_eq!((out["eval"].as_i64(), out["title"].as_str()), (Some(42), Some("Done")));
    assert_eq!((out["pagesWithSecond"].as_i64(), out["secondTitle"].as_str()), (Some(2), Some("Sign up")));
    // The client drove the session's own page.
    let (title, url) = session.title_url(Duration::from_secs(5)).await.unwrap();
    assert_eq!((title.as_str(), url), ("Done", format!("http://{}/done?name=Ada+Lovelace&plan=pro", f.site)));
    after_relay(&f, &session, end).await;
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn playwright_drives_a_live_session() {
    let f = fixture().await;
    let session = f.pool.open_session(SessionOptions::default()).await.unwrap();
    let (endpoint, end) = relay(&session).await;
    let out = client("playwright.mjs", &[endpoint, format!("http://{}", f.site)]).await;
    eprintln!("playwright: {out}");
    assert_eq!((out["contexts"].as_i64(), out["pages"].as_i64()), (Some(1), Some(1)));
    assert_eq!(out["text"], "name=Grace+Hopper&plan=pro");
    assert_eq!(out["eval"], 42);
    assert_eq!(out["pagesWithSecond"], 2);
    assert!(out["newContext"].as_str().unwrap().contains("not allowed"), "{out}");
    let (title, _) = session.title_url(Duration::from_secs(5)).await.unwrap();
    assert_eq!(title, "Done");
    after_relay(&f, &session, end).await;
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_client_is_refused_and_the_pool_unharmed() {
    let f = fixture().await;
    // Another tenant's session in the same browser, which the client must not see.
    let other = f.pool.open_session(SessionOptions::default()).await.unwrap();
    other.goto(&format!("http://{}/form", f.site), WaitUntil::Load, Duration::from_secs(10)).await.unwrap();
    let session = f.pool.open_session(SessionOptions::default()).await.unwrap();
    let (endpoint, end) = relay(&session).await;
    let service = f.service.url("");
    let out = client("hostile.mjs", &[endpoint, format!("http://{}", f.site), service]).await;
    eprintln!("hostile: {out}");
    let refused = |k: &str, why: &str| {
        let v = out[k].as_str().unwrap_or_else(|| panic!("{k}: {}", out[k]));
        assert!(v.starts_with("error: ") && v.contains(why), "{k}: {v}");
    };
    refused("createContext", "not allowed");
    refused("close", "not allowed");
    refused("crash", "not allowed");
    refused("commandLine", "not available");
    refused("systemInfo", "not available");
    refused("tracing", "not available");
    refused("fileTarget", "file: URLs are refused");
    refused("foreignContextTarget", "one browser context");
    refused("foreignAttach", "No target");
    refused("browserTarget", "not available");
    refused("fileNavigate", "file: URLs are refused");
    refused("fileInput", "not allowed");
    refused("loadResource", "not allowed");
    refused("sessionTarget", "not available on a page session");
    refused("unknownSession", "not found");
    assert_eq!(out["contexts"]["browserContextIds"], serde_json::json!([]));
    assert_eq!(out["download"], serde_json::json!({}), "answered, not applied");
    assert_eq!(out["targetContexts"], 1, "only the session's own targets are listed");
    assert_eq!(out["attached"], true);
    // The service's listener was never reached.
    assert!(out["privateBody"].as_str().unwrap_or("").contains("blocked by egress policy"), "{out}");
    assert_eq!(f.service.hits("/red"), 0);
    assert_eq!(out["pageGoesOn"], 42);
    // The other tenant's page is untouched.
    let (title, _) = other.title_url(Duration::from_secs(5)).await.unwrap();
    assert_eq!(title, "Sign up");
    other.close().await;
    after_relay(&f, &session, end).await;
    f.pool.shutdown().await;
}

/// Two tenants on one browser (the pool has one): A's clipboard never reaches B and B's
/// never reaches A, whatever path either takes — also once A's session has ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tenants_on_one_browser_never_share_a_clipboard() {
    let f = fixture().await;
    let site = format!("http://{}", f.site);
    let a = f.pool.open_session(SessionOptions::default()).await.unwrap();
    let b = f.pool.open_session(SessionOptions::default()).await.unwrap();
    let (ep_a, end_a) = relay(&a).await;
    let (ep_b, end_b) = relay(&b).await;
    let out = client("clipboard.mjs", &[ep_a, ep_b, site.clone()]).await;
    eprintln!("clipboard: {out}");
    let refused = |k: &str| {
        let v = out[k].as_str().unwrap_or_default();
        assert!(v.starts_with("error: ") && v.contains("clipboard permissions are not granted"), "{k}: {v}");
    };
    refused("grantA");
    refused("setPermissionA");
    // A's own clipboard works without any permission.
    assert_eq!(out["writeA"], "written");
    assert_eq!(out["readA1"], "A-NAV-1");
    assert_eq!(out["readA2"], "A-KBD-2");
    let nothing_pasted = |k: &str, own: &str| {
        let got = &out[k];
        for path in ["ctrlV", "shiftInsert", "commandsPaste"] {
            assert_eq!(got[path], own, "{k}.{path}: {got}");
        }
        assert_eq!(got["execPaste"], "false:", "{k}: {got}");
        assert_eq!(got["navigator"], own, "{k}: {got}");
    };
    // B sees its own (empty) clipboard after A wrote with navigator.clipboard and Ctrl+C.
    nothing_pasted("bAfterNav", "");
    nothing_pasted("bAfterKbd", "");
    let middle = out["middleB"].as_str().unwrap_or_default();
    assert!(middle.starts_with("error: ") && middle.contains("middle button"), "{middle}");
    // B cut its own text: the field lost it, B pastes it, A still pastes its own.
    assert_eq!(out["bFieldAfterCut"], "");
    nothing_pasted("aAfterB", "A-KBD-2");
    assert_eq!(out["aAfterB"]["pasteEvent"], "A-KBD-2", "the page's paste handler got A's own clipboard");
    nothing_pasted("bOwn", "B-OWN");
    assert_eq!(out["bOwn"]["pasteEvent"], "B-OWN");
    // The page's own copy button (execCommand in a click handler) copies to A's clipboard.
    assert_eq!(out["readA3"], "A-EXEC-3");
    assert_eq!(out["copyEventA"], "A-EXEC-3", "the page's copy handler ran");
    assert_eq!(out["readB3"], "B-OWN");
    assert_eq!((a.clipboard(), b.clipboard()), ("A-EXEC-3".to_owned(), "B-OWN".to_owned()));
    for end in [end_a, end_b] {
        let end = tokio::time::timeout(Duration::from_secs(10), end).await.expect("the relay ended").unwrap();
        assert_eq!(end, RelayEnd::ClientClosed);
    }
    // A's session ends: its clipboard is gone with it. A new tenant on the same browser, and
    // B, see only their own.
    a.close().await;
    let c = f.pool.open_session(SessionOptions::default()).await.unwrap();
    c.goto(&format!("{site}/clip"), WaitUntil::Load, Duration::from_secs(10)).await.unwrap();
    assert_eq!(c.clipboard(), "");
    let t = Duration::from_secs(5);
    assert_eq!(c.evaluate("navigator.clipboard.readText()", true, t).await.unwrap(), "");
    c.evaluate("document.getElementById('f1').focus()", false, t).await.unwrap();
    c.press("Control+v", t).await.unwrap();
    c.press("Shift+Insert", t).await.unwrap();
    stays_empty(&c, "document.getElementById('f1').value").await;
    assert_eq!(b.evaluate("navigator.clipboard.readText()", true, t).await.unwrap(), "B-OWN");
    // The tools' side: B's clipboard set directly reaches B's page, and only it.
    b.set_clipboard("B-TOOL").unwrap();
    b.evaluate("document.getElementById('f2').value = ''; document.getElementById('f2').focus()", false, t)
        .await
        .unwrap();
    b.press("Control+v", t).await.unwrap();
    let pasted = eventually_value(&b, "document.getElementById('f2').value", "B-TOOL").await;
    assert_eq!(pasted, "B-TOOL");
    c.press("Control+v", t).await.unwrap();
    stays_empty(&c, "document.getElementById('f1').value").await;
    b.close().await;
    c.close().await;
    f.pool.shutdown().await;
}

/// A page expression stays "" for half a second (a paste lands asynchronously).
async fn stays_empty(s: &Session, expr: &str) {
    let until = tokio::time::Instant::now() + Duration::from_millis(500);
    while tokio::time::Instant::now() < until {
        let v = s.evaluate(expr, false, Duration::from_secs(5)).await.unwrap();
        assert_eq!(v, "", "{expr}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Polls a page expression until it equals `want` (at most 5 s); its last value.
async fn eventually_value(s: &Session, expr: &str, want: &str) -> String {
    let mut last = String::new();
    for _ in 0..100 {
        last = s.evaluate(expr, false, Duration::from_secs(5)).await.unwrap().as_str().unwrap_or_default().to_owned();
        if last == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    last
}

/// 30 popups without a gesture, 30 from a click, eight `target=_blank` links and six
/// `newPage` calls: the session never holds more than its five pages, and the client is
/// told of every page closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn popups_past_the_page_limit_are_closed() {
    let f = fixture().await;
    let session = f.pool.open_session(SessionOptions::default()).await.unwrap();
    let (endpoint, end) = relay(&session).await;
    let out = client("popups.mjs", &[endpoint, format!("http://{}", f.site)]).await;
    eprintln!("popups: {out}");
    for (k, opened) in [("onLoad", 30), ("onClick", 30), ("links", 8)] {
        let n = |f: &str| out[k][f].as_i64().unwrap();
        assert_eq!(n("pages"), 5, "{k}: the page and four popups: {}", out[k]);
        assert!(n("created") - n("destroyed") <= 4, "{k}: {}", out[k]);
        // The client was told of every popup, and of every one closed.
        assert_eq!((n("rawCreated"), n("rawDestroyed")), (opened, opened - 4), "{k}: {}", out[k]);
    }
    assert_eq!(out["openedOnLoad"], 4, "four popups beside the page stay open");
    assert_eq!(out["links"]["pages"], 5);
    let new_pages: Vec<&str> = out["newPages"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(new_pages.iter().filter(|r| **r == "ok").count(), 4, "{new_pages:?}");
    assert!(new_pages[4..].iter().all(|r| r.contains("a session may have 5 pages open")), "{new_pages:?}");
    assert_eq!(out["afterNewPages"], 5);
    after_relay(&f, &session, end).await;
    f.pool.shutdown().await;
}

/// A client that makes its page log megabytes and stops reading its socket is closed with
/// 1008 and a reason once its queue passes the bound; the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_closed_with_a_reason() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let f = fixture().await;
    let session = f.pool.open_session(SessionOptions::default()).await.unwrap();
    let limit = 2 << 20;
    let (endpoint, end) =
        relay_with(&session, RelayOptions { max_queued_bytes: limit, ..RelayOptions::default() }).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(endpoint.as_str()).await.unwrap();
    let mut next_id = 0;
    let mut call =
        async |ws: &mut tokio_tungstenite::WebSocketStream<_>, method: &str, params: Value, sid: Option<&str>| {
            next_id += 1;
            let mut m = serde_json::json!({ "id": next_id, "method": method, "params": params });
            if let Some(s) = sid {
                m["sessionId"] = s.into();
            }
            ws.send(Message::Text(m.to_string().into())).await.unwrap();
            loop {
                let msg = ws.next().await.unwrap().unwrap();
                let v: Value = serde_json::from_str(msg.to_text().unwrap()).unwrap();
                if v["id"] == next_id {
                    return v;
                }
            }
        };
    let targets = call(&mut ws, "Target.getTargets", serde_json::json!({}), None).await;
    let page = targets["result"]["targetInfos"][0]["targetId"].as_str().unwrap().to_owned();
    let attached =
        call(&mut ws, "Target.attachToTarget", serde_json::json!({ "targetId": page, "flatten": true }), None).await;
    let sid = attached["result"]["sessionId"].as_str().unwrap().to_owned();
    call(&mut ws, "Runtime.enable", serde_json::json!({}), Some(&sid)).await;
    let flood = "setInterval(() => console.log('x'.repeat(200000)), 10); 1";
    call(&mut ws, "Runtime.evaluate", serde_json::json!({ "expression": flood }), Some(&sid)).await;
    // From here on the client reads nothing.
    let end = tokio::time::timeout(Duration::from_secs(60), end).await.expect("the relay closed the client").unwrap();
    let RelayEnd::ClientTooSlow { queued, limit: l } = end else { panic!("{end:?}") };
    assert_eq!(l, limit);
    assert!(queued <= limit, "the queue stayed within its bound: {queued}");
    // Reading again, the client finds the close frame after what the socket still held.
    let frame = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(msg) = ws.next().await {
            match msg {
                Ok(Message::Close(frame)) => return frame,
                Ok(_) => {}
                Err(e) => panic!("the socket failed before its close frame: {e}"),
            }
        }
        None
    })
    .await
    .expect("a close frame")
    .expect("a close frame with a code");
    assert_eq!(u16::from(frame.code), capture_browser::relay::CLOSE_TOO_SLOW);
    assert_eq!(frame.reason.as_str(), "client too slow: more than 2 MB of DevTools messages waited unread");
    assert!(!session.is_closed(), "the session outlives its client");
    session.close().await;
    f.pool.shutdown().await;
}
