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

async fn site() -> SocketAddr {
    let app = axum::Router::new().route("/form", get(|| async { Html(FORM) })).route(
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
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("ws://{}/devtools/browser/session", listener.local_addr().unwrap());
    let session = session.clone();
    let task = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        capture_browser::relay::serve_websocket(&session, stream, RelayOptions::default()).await.expect("handshake")
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
