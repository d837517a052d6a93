//! A minimal DevTools driver for these tests: it runs the crate's collection scripts in a
//! real headless Chromium the way the browser crate will (observers before page scripts,
//! collection after load, the vendored axe-core injected) and gathers the DevTools
//! events the checks need (document status, headers and redirects, console errors, failed
//! requests). The production driver lives in `capture-browser`; this one is deliberately
//! small and single-page.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capture_audit::checks::PageFacts;
use capture_audit::collect::{
    AXE_RUN_JS, AxeResults, COLLECT_JS, ConsoleMessage, FailedRequest, OBSERVERS_JS, PageCollection, Settled, clip,
    settle_js,
};
use capture_audit::fetch::Hop;
use capture_audit::report::Screenshots;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The Chromium binary: `CAPTURE_CHROMIUM_PATH`, else the headless shell, else chromium.
pub fn chromium_path() -> PathBuf {
    if let Some(p) = std::env::var_os("CAPTURE_CHROMIUM_PATH") {
        return PathBuf::from(p);
    }
    for p in ["/usr/bin/chromium-headless-shell", "/usr/bin/chromium"] {
        if std::path::Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!("no Chromium found: install chromium-headless-shell (scripts/setup.sh) or set CAPTURE_CHROMIUM_PATH");
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;

/// One Chromium and its DevTools connection.
pub struct Chrome {
    _child: tokio::process::Child,
    _profile: tempfile::TempDir,
    out: mpsc::UnboundedSender<Message>,
    pending: Pending,
    next_id: AtomicU64,
    events: tokio::sync::Mutex<mpsc::UnboundedReceiver<Value>>,
    axe: String,
}

impl Chrome {
    /// Start Chromium (in its own PID namespace when possible, so nothing outlives the test).
    pub async fn launch() -> Chrome {
        let profile = tempfile::tempdir().unwrap();
        let bin = chromium_path();
        let namespaces = std::process::Command::new("unshare")
            .args(["--pid", "--fork", "--kill-child", "true"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        let mut cmd = if namespaces {
            let mut c = tokio::process::Command::new("unshare");
            c.args(["--pid", "--fork", "--kill-child"]).arg(&bin);
            c
        } else {
            tokio::process::Command::new(&bin)
        };
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-breakpad",
            "--disable-crash-reporter",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-features=HttpsUpgrades,Translate,OptimizationHints",
            "--remote-debugging-port=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
        let mut child = cmd.spawn().expect("Chromium starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let ws_url = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(u) = line.trim().strip_prefix("DevTools listening on ") {
                    return Some(u.to_owned());
                }
            }
            None
        })
        .await
        .ok()
        .flatten()
        .expect("Chromium prints its DevTools address");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

        let (ws, _) = tokio_tungstenite::connect_async(ws_url.as_str()).await.expect("DevTools connects");
        let (mut sink, mut stream) = ws.split();
        let (out, mut out_rx) = mpsc::unbounded_channel::<Message>();
        tokio::spawn(async move {
            while let Some(m) = out_rx.recv().await {
                if sink.send(m).await.is_err() {
                    break;
                }
            }
        });
        let pending: Pending = Arc::default();
        let (ev_tx, ev_rx) = mpsc::unbounded_channel();
        let p2 = pending.clone();
        tokio::spawn(async move {
            while let Some(Ok(msg)) = stream.next().await {
                let Message::Text(t) = msg else { continue };
                let Ok(v) = serde_json::from_str::<Value>(t.as_str()) else { continue };
                if let Some(id) = v.get("id").and_then(Value::as_u64) {
                    if let Some(tx) = p2.lock().unwrap().remove(&id) {
                        let r = match v.get("error") {
                            Some(e) => Err(e.to_string()),
                            None => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
                        };
                        let _ = tx.send(r);
                    }
                } else {
                    let _ = ev_tx.send(v);
                }
            }
        });
        Chrome {
            _child: child,
            _profile: profile,
            out,
            pending,
            next_id: AtomicU64::new(1),
            events: tokio::sync::Mutex::new(ev_rx),
            axe: capture_audit::axe::AXE_JS.to_owned(),
        }
    }

    /// One DevTools command.
    pub async fn call(&self, method: &str, params: Value, session: Option<&str>) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        self.out.send(Message::Text(msg.to_string().into())).map_err(|_| "DevTools connection closed".to_owned())?;
        match tokio::time::timeout(CALL_TIMEOUT, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err("DevTools connection closed".into()),
            Err(_) => Err(format!("{method} timed out")),
        }
    }

    async fn eval(&self, sid: &str, expression: &str, await_promise: bool) -> Result<Value, String> {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": await_promise}),
                Some(sid),
            )
            .await?;
        if let Some(ex) = r.get("exceptionDetails") {
            return Err(format!("script failed: {ex}"));
        }
        Ok(r["result"]["value"].clone())
    }

    /// Load `url` in a fresh window, run the collection scripts and axe, and return the
    /// page's facts (without link checks) and desktop and phone screenshots as data: URLs.
    pub async fn audit_page(&self, url: &str) -> (PageFacts, Screenshots) {
        let mut events = self.events.lock().await;
        while events.try_recv().is_ok() {}
        let ctx = self.call("Target.createBrowserContext", json!({}), None).await.unwrap();
        let ctx_id = ctx["browserContextId"].as_str().unwrap().to_owned();
        let t = self
            .call(
                "Target.createTarget",
                json!({"url": "about:blank", "newWindow": true, "browserContextId": ctx_id}),
                None,
            )
            .await
            .unwrap();
        let target = t["targetId"].as_str().unwrap().to_owned();
        let a = self.call("Target.attachToTarget", json!({"targetId": target, "flatten": true}), None).await.unwrap();
        let sid = a["sessionId"].as_str().unwrap().to_owned();
        let s = Some(sid.as_str());
        for m in ["Page.enable", "Runtime.enable", "Log.enable", "Network.enable"] {
            self.call(m, json!({}), s).await.unwrap();
        }
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": false}),
            s,
        )
        .await
        .unwrap();
        self.call("Page.addScriptToEvaluateOnNewDocument", json!({"source": OBSERVERS_JS}), s).await.unwrap();

        let mut facts = PageFacts { url: url.to_owned(), final_url: url.to_owned(), ..PageFacts::default() };
        let nav = self.call("Page.navigate", json!({"url": url}), s).await.unwrap();
        let frame = nav["frameId"].as_str().unwrap_or_default().to_owned();
        if let Some(e) = nav["errorText"].as_str().filter(|e| !e.is_empty()) {
            facts.error = Some(e.to_owned());
        }
        let mut doc_request: Option<String> = None;
        let mut urls: HashMap<String, String> = HashMap::new();
        let mut loaded = facts.error.is_some();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let mut handle = |ev: &Value, facts: &mut PageFacts, loaded: &mut bool| {
            if ev.get("sessionId").and_then(Value::as_str) != Some(sid.as_str()) {
                return;
            }
            let p = &ev["params"];
            if ev["method"] == "Network.requestWillBeSent"
                && let (Some(id), Some(u)) = (p["requestId"].as_str(), p["request"]["url"].as_str())
            {
                urls.insert(id.to_owned(), u.to_owned());
            }
            match ev["method"].as_str().unwrap_or_default() {
                "Page.loadEventFired" => *loaded = true,
                "Network.requestWillBeSent" if p["type"] == "Document" && p["frameId"] == frame.as_str() => {
                    doc_request.get_or_insert_with(|| p["requestId"].as_str().unwrap_or_default().to_owned());
                    if let Some(r) = p.get("redirectResponse") {
                        facts.redirects.push(Hop {
                            url: r["url"].as_str().unwrap_or_default().to_owned(),
                            status: r["status"].as_u64().unwrap_or(0) as u16,
                        });
                    }
                }
                "Network.responseReceived" => {
                    let r = &p["response"];
                    let status = r["status"].as_u64().unwrap_or(0) as u16;
                    if doc_request.as_deref() == p["requestId"].as_str() {
                        facts.status = Some(status);
                        facts.final_url = r["url"].as_str().unwrap_or_default().to_owned();
                        if let Some(h) = r["headers"].as_object() {
                            for (k, v) in h {
                                // DevTools joins repeated headers with newlines.
                                for line in v.as_str().unwrap_or_default().split('\n') {
                                    facts.headers.push((k.clone(), line.to_owned()));
                                }
                            }
                        }
                    } else if status >= 400 {
                        facts.failed_requests.push(FailedRequest {
                            url: clip(r["url"].as_str().unwrap_or_default(), 500),
                            resource_type: p["type"].as_str().map(str::to_owned),
                            status: Some(status),
                            error: None,
                        });
                    }
                }
                "Network.loadingFailed"
                    if p["canceled"] != true && doc_request.as_deref() != p["requestId"].as_str() =>
                {
                    facts.failed_requests.push(FailedRequest {
                        url: clip(
                            p["requestId"].as_str().and_then(|id| urls.get(id)).map(String::as_str).unwrap_or_default(),
                            500,
                        ),
                        resource_type: p["type"].as_str().map(str::to_owned),
                        status: None,
                        error: p["errorText"].as_str().map(str::to_owned),
                    });
                }
                "Runtime.exceptionThrown" => {
                    let d = &p["exceptionDetails"];
                    let text = d["exception"]["description"].as_str().or(d["text"].as_str()).unwrap_or("exception");
                    facts.console_errors.push(ConsoleMessage {
                        source: "exception".into(),
                        text: clip(text.lines().next().unwrap_or(text), 500),
                        url: d["url"].as_str().map(str::to_owned),
                        line: d["lineNumber"].as_u64().map(|l| l as u32 + 1),
                    });
                }
                "Runtime.consoleAPICalled" if p["type"] == "error" => {
                    let text: Vec<String> = p["args"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|a| {
                            a["value"]
                                .as_str()
                                .map(str::to_owned)
                                .or_else(|| a["description"].as_str().map(str::to_owned))
                                .unwrap_or_default()
                        })
                        .collect();
                    let top = &p["stackTrace"]["callFrames"][0];
                    facts.console_errors.push(ConsoleMessage {
                        source: "console".into(),
                        text: clip(&text.join(" "), 500),
                        url: top["url"].as_str().map(str::to_owned),
                        line: top["lineNumber"].as_u64().map(|l| l as u32 + 1),
                    });
                }
                "Log.entryAdded" if p["entry"]["level"] == "error" => {
                    let e = &p["entry"];
                    facts.console_errors.push(ConsoleMessage {
                        source: e["source"].as_str().unwrap_or("other").to_owned(),
                        text: clip(e["text"].as_str().unwrap_or_default(), 500),
                        url: e["url"].as_str().map(str::to_owned),
                        line: e["lineNumber"].as_u64().map(|l| l as u32 + 1),
                    });
                }
                _ => {}
            }
        };
        while !loaded {
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Ok(Some(ev)) => handle(&ev, &mut facts, &mut loaded),
                _ => {
                    facts.error.get_or_insert_with(|| "the page did not finish loading within 20 s".into());
                    break;
                }
            }
        }
        if facts.error.is_none() {
            // The fixture's late effects first (a test condition), then the product's settle step.
            let pending = "new Promise((resolve) => { const t0 = performance.now(); const tick = () => { if (!document.documentElement.hasAttribute('data-fixture-pending') || performance.now() - t0 > 5000) resolve(); else setTimeout(tick, 20); }; tick(); })";
            self.eval(&sid, pending, true).await.unwrap();
            let settled = self.eval(&sid, &settle_js(3000, 250), true).await.unwrap();
            let settled: Settled = serde_json::from_value(settled).unwrap();
            assert!(settled.painted, "{url} painted within the settle cap: {settled:?}");
            let c = self.eval(&sid, COLLECT_JS, false).await.unwrap();
            facts.collection = Some(
                serde_json::from_value::<PageCollection>(c.clone())
                    .unwrap_or_else(|e| panic!("collection parses: {e}\n{c}")),
            );
            self.eval(&sid, &self.axe, false).await.unwrap();
            let a = self.eval(&sid, AXE_RUN_JS, true).await.unwrap();
            facts.axe = Some(
                serde_json::from_value::<AxeResults>(a.clone())
                    .unwrap_or_else(|e| panic!("axe results parse: {e}\n{a}")),
            );
        }
        while let Ok(ev) = events.try_recv() {
            handle(&ev, &mut facts, &mut loaded);
        }
        let mut shots = Screenshots::default();
        if facts.error.is_none() {
            shots.desktop_url = self.screenshot(&sid).await;
            self.call(
                "Emulation.setDeviceMetricsOverride",
                json!({"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": true}),
                s,
            )
            .await
            .unwrap();
            shots.mobile_url = self.screenshot(&sid).await;
        }
        let _ = self.call("Target.closeTarget", json!({"targetId": target}), None).await;
        let _ = self.call("Target.disposeBrowserContext", json!({"browserContextId": ctx_id}), None).await;
        (facts, shots)
    }

    async fn screenshot(&self, sid: &str) -> Option<String> {
        let r = self.call("Page.captureScreenshot", json!({"format": "jpeg", "quality": 40}), Some(sid)).await.ok()?;
        r["data"].as_str().map(|d| format!("data:image/jpeg;base64,{d}"))
    }

    /// Load `url` and evaluate `expression` once it has loaded.
    pub async fn eval_at(&self, url: &str, expression: &str) -> Value {
        let t = self.call("Target.createTarget", json!({"url": url, "newWindow": true}), None).await.unwrap();
        let target = t["targetId"].as_str().unwrap().to_owned();
        let a = self.call("Target.attachToTarget", json!({"targetId": target, "flatten": true}), None).await.unwrap();
        let sid = a["sessionId"].as_str().unwrap().to_owned();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let state = self.eval(&sid, "location.href + ' ' + document.readyState", false).await.unwrap_or_default();
            if state.as_str() == Some(&format!("{url} complete")) {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "{url} did not load: {state}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let v = self.eval(&sid, expression, true).await.unwrap();
        let _ = self.call("Target.closeTarget", json!({"targetId": target}), None).await;
        v
    }

    /// Load an HTML string and evaluate `expression` in it (for checking the report page).
    pub async fn eval_in_html(&self, html: &str, expression: &str) -> Value {
        let t = self.call("Target.createTarget", json!({"url": "about:blank", "newWindow": true}), None).await.unwrap();
        let target = t["targetId"].as_str().unwrap().to_owned();
        let a = self.call("Target.attachToTarget", json!({"targetId": target, "flatten": true}), None).await.unwrap();
        let sid = a["sessionId"].as_str().unwrap().to_owned();
        self.call("Page.enable", json!({}), Some(&sid)).await.unwrap();
        let tree = self.call("Page.getFrameTree", json!({}), Some(&sid)).await.unwrap();
        let frame = tree["frameTree"]["frame"]["id"].as_str().unwrap().to_owned();
        self.call("Page.setDocumentContent", json!({"frameId": frame, "html": html}), Some(&sid)).await.unwrap();
        let v = self.eval(&sid, expression, true).await.unwrap();
        let _ = self.call("Target.closeTarget", json!({"targetId": target}), None).await;
        v
    }
}
