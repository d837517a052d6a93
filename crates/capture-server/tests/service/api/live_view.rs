//! Live views of a running session, as a person's page would use them: a signed link, its
//! page (CSP frame-ancestors from the account's setting), its WebSocket with the tab's frames
//! (decoded and checked by their pixels), input in control mode (a click that turns the page
//! green), none in view mode, altered and expired links refused with a JSON error and a plain
//! page, another account's run not found, and the WebSocket relayed by a node without the
//! session. Prints the latency from a DOM change to the frame that shows it.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::*;

/// White until the button is clicked (green then, white again at the next click); the button
/// fills the top left.
fn live_page() -> Vec<(&'static str, &'static str, String)> {
    vec![(
        "/live",
        "text/html",
        "<!doctype html><html><head><title>Live</title><style>html,body{margin:0;height:100%;background:#ffffff}\
         #go{position:absolute;left:0;top:0;width:400px;height:300px;font-size:30px}</style></head>\
         <body><button id=go onclick=\"const b=document.body.style;b.background=b.background.includes('255, 0')?'#ffffff':'#00ff00'\">Go</button></body></html>"
            .to_string(),
    )]
}

async fn call(app: &TestApp, key: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = app.client.request(method, app.url(path)).bearer_auth(key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// A scripted run that loads the page and then waits, holding its session open.
async fn running_run(app: &TestApp, key: &str, url: &str) -> String {
    let (status, run) = call(
        app,
        key,
        reqwest::Method::POST,
        "/v1/runs",
        Some(json!({"startUrl": url, "recordVideo": true, "steps": [{"action": "wait", "ms": 40000}]})),
    )
    .await;
    assert_eq!(status, 202, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    eventually("the run is running", Duration::from_secs(30), || async {
        let v: Value = app.get(key, &format!("/v1/runs/{id}")).await.json().await.unwrap();
        if v["status"] == "running" { Ok(()) } else { Err(v) }
    })
    .await;
    id
}

pub(crate) type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The page's WebSocket for a link (retried while the session is being opened).
pub(crate) async fn connect(page_url: &str) -> (Ws, Value) {
    let ws_url = page_url.replace("http://", "ws://").replace("?t=", "/ws?t=");
    eventually("the live view connects", Duration::from_secs(20), || {
        let ws_url = ws_url.clone();
        async move {
            match tokio_tungstenite::connect_async(ws_url.as_str()).await {
                Ok((mut ws, _)) => match next_json(&mut ws).await {
                    Some(hello) if hello["t"] == "hello" => Ok((ws, hello)),
                    other => Err(format!("{other:?}")),
                },
                Err(e) => Err(e.to_string()),
            }
        }
    })
    .await
}

async fn next_json(ws: &mut Ws) -> Option<Value> {
    loop {
        match tokio::time::timeout(Duration::from_secs(10), ws.next()).await.ok()?? {
            Ok(Message::Text(t)) => return serde_json::from_str(&t).ok(),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => continue,
        }
    }
}

/// The next frame's image and its CSS size.
async fn next_frame(ws: &mut Ws) -> (image::RgbaImage, f64, f64) {
    loop {
        let m = next_json(ws).await.expect("a frame");
        if m["t"] == "frame" {
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD.decode(m["data"].as_str().unwrap()).unwrap();
            return (decode(&bytes), m["w"].as_f64().unwrap(), m["h"].as_f64().unwrap());
        }
    }
}

fn green(img: &image::RgbaImage, x: u32, y: u32) -> bool {
    let p = img.get_pixel(x, y);
    p[0] < 60 && p[1] > 200 && p[2] < 60
}

fn white(img: &image::RgbaImage, x: u32, y: u32) -> bool {
    let p = img.get_pixel(x, y);
    p[0] > 230 && p[1] > 230 && p[2] > 230
}

async fn send(ws: &mut Ws, v: Value) {
    ws.send(Message::Text(v.to_string().into())).await.unwrap();
}

/// Click at (x, y) and wait for a frame where (px, py) of the image is green (or white, with
/// `to_green` false): the time from the click to that frame.
async fn click_until(ws: &mut Ws, x: f64, y: f64, px: u32, py: u32, to_green: bool) -> Duration {
    let t = Instant::now();
    send(ws, json!({"t": "mouse", "kind": "down", "x": x, "y": y, "button": "left", "clicks": 1})).await;
    send(ws, json!({"t": "mouse", "kind": "up", "x": x, "y": y, "button": "left", "clicks": 1})).await;
    loop {
        let (img, _, _) = next_frame(ws).await;
        let (px, py) = (px.min(img.width() - 1), py.min(img.height() - 1));
        if (to_green && green(&img, px, py)) || (!to_green && white(&img, px, py)) {
            return t.elapsed();
        }
        assert!(t.elapsed() < Duration::from_secs(10), "the click never showed");
    }
}

/// Click `n` times, the page green now (`green_now`) or white: the median time from a click
/// to the first frame that shows its colour.
async fn median_latency(ws: &mut Ws, scale: f64, n: usize, green_now: bool) -> Duration {
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        // Give the page a moment between clicks (no double click), then drop the frames
        // already sent, so only a frame made after the click can count.
        tokio::time::sleep(Duration::from_millis(350)).await;
        while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(5), ws.next()).await {}
        let to_green = (i % 2 == 0) != green_now;
        times.push(click_until(ws, 200.0, 150.0, (900.0 * scale) as u32, (600.0 * scale) as u32, to_green).await);
    }
    times.sort();
    times[n / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_live_view_shows_the_tab_takes_a_persons_input_in_control_mode_only_and_refuses_bad_links() {
    let site = Site::start(live_page()).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("pro").await;
    let (_, bob) = app.user_with_key("pro").await;
    let run = running_run(&app, &key, &site.url("/live")).await;

    // Bad input, another account's run.
    let path = format!("/v1/runs/{run}/live-view");
    let (status, e) = call(&app, &key, reqwest::Method::POST, &path, Some(json!({"ttl": 0}))).await;
    assert_eq!((status, &e["details"]), (400, &json!({"field": "ttl", "reason": "must be 1 to 86400 seconds"})));
    let (status, e) = call(&app, &key, reqwest::Method::POST, &path, Some(json!({"mode": "admin"}))).await;
    assert_eq!((status, &e["code"]), (400, &json!("VALIDATION_ERROR")), "{e}");
    let (status, e) = call(&app, &bob, reqwest::Method::POST, &path, Some(json!({}))).await;
    assert_eq!((status, &e["code"]), (404, &json!("NOT_FOUND")));

    // The account lets its app embed the view.
    let (status, s) = call(
        &app,
        &key,
        reqwest::Method::PUT,
        "/v1/account/live-view",
        Some(json!({"frameAncestors": ["https://app.example.com/"]})),
    )
    .await;
    assert_eq!((status, s), (200, json!({"frameAncestors": ["https://app.example.com"]})));

    // A view link: the page, then the tab as it is, white; input refused.
    let (status, view) =
        call(&app, &key, reqwest::Method::POST, &path, Some(json!({"mode": "view", "ttl": 600}))).await;
    assert_eq!(status, 201, "{view}");
    assert_eq!(view["mode"], "view");
    let page_url = view["url"].as_str().unwrap().to_string();
    let r = app.client.get(&page_url).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let csp = r.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(csp.ends_with("frame-ancestors 'self' https://app.example.com"), "{csp}");
    assert!(r.headers().get("x-frame-options").is_none());
    let html = r.text().await.unwrap();
    assert!(html.contains("<title>Capture live view</title>"));
    let (mut ws, hello) = connect(&page_url).await;
    assert_eq!((&hello["mode"], &hello["reason"]), (&json!("view"), &Value::Null), "{hello}");
    let (img, w, h) = next_frame(&mut ws).await;
    assert_eq!((w, h), (1280.0, 800.0));
    assert!(
        white(&img, img.width() - 10, img.height() - 10),
        "{:?}",
        img.get_pixel(img.width() - 10, img.height() - 10)
    );
    send(&mut ws, json!({"t": "mouse", "kind": "down", "x": 100.0, "y": 100.0, "button": "left", "clicks": 1})).await;
    let refused = loop {
        let m = next_json(&mut ws).await.expect("an answer");
        if m["t"] == "error" {
            break m;
        }
    };
    assert_eq!(
        refused,
        json!({"t": "error", "code": "FORBIDDEN", "error": "this link only watches: ask for a control link to drive the session"})
    );
    // Nothing was clicked.
    let v = app.get(&key, &format!("/v1/runs/{run}")).await.json::<Value>().await.unwrap();
    assert_eq!(v["status"], "running");

    // A control link: the click turns the page green, seen on the view.
    let (_, control) = call(&app, &key, reqwest::Method::POST, &path, Some(json!({"mode": "control"}))).await;
    let (mut cws, hello) = connect(control["url"].as_str().unwrap()).await;
    assert_eq!(hello["mode"], "control");
    let (img, w, _) = next_frame(&mut cws).await;
    let scale = f64::from(img.width()) / w;
    let took = click_until(&mut cws, 200.0, 150.0, (900.0 * scale) as u32, (600.0 * scale) as u32, true).await;
    eprintln!("live view, one node: a click to the frame that shows it: {took:?}");
    // The watcher sees it too.
    loop {
        let (img, _, _) = next_frame(&mut ws).await;
        if green(&img, img.width() - 10, img.height() - 10) {
            break;
        }
    }
    drop(ws);
    // The latency a person sees: from a click (a DOM change) to the frame that shows it.
    let p50 = median_latency(&mut cws, scale, 10, true).await;
    eprintln!("live view, one node: click to frame, p50 of 10: {p50:?}");
    drop(cws);

    // Altered and expired links: a plain page for a person, JSON for the socket.
    let altered = page_url.replace("?t=", "?t=x");
    let r = app.client.get(&altered).send().await.unwrap();
    assert_eq!(r.status(), 403);
    assert!(r.text().await.unwrap().contains("the live view link is not valid (altered, or not for this session)"));
    let ws_altered = altered.replace("http://", "ws://").replace("?t=", "/ws?t=");
    match tokio_tungstenite::connect_async(ws_altered.as_str()).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => {
            assert_eq!(r.status().as_u16(), 401);
            let body: Value = serde_json::from_slice(r.body().as_deref().unwrap()).unwrap();
            assert_eq!(body["code"], "UNAUTHORIZED");
        }
        other => panic!("an altered link connected: {:?}", other.map(|_| ())),
    }
    let (_, short) = call(&app, &key, reqwest::Method::POST, &path, Some(json!({"ttl": 1}))).await;
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let r = app.client.get(short["url"].as_str().unwrap()).send().await.unwrap();
    assert_eq!(r.status(), 403);
    assert!(r.text().await.unwrap().contains("the live view link has expired: ask for a new one"));
    // Another run's link does not open this one.
    let other = page_url.replace(&run, "run_AAAAAAAAAAAAAAAAAAAAAAAA");
    assert_eq!(app.client.get(&other).send().await.unwrap().status(), 403);

    // Stopped: nothing left to watch.
    call(&app, &key, reqwest::Method::POST, &format!("/v1/runs/{run}/stop"), None).await;
    let ended = eventually("the run ends", Duration::from_secs(60), || async {
        let v: Value = app.get(&key, &format!("/v1/runs/{run}")).await.json().await.unwrap();
        if v["endedAt"].is_string() { Ok(v) } else { Err(v) }
    })
    .await;
    assert_eq!(ended["status"], "stopped", "{ended}");
    let (status, e) = call(&app, &key, reqwest::Method::POST, &path, Some(json!({}))).await;
    assert_eq!((status, &e["code"]), (422, &json!("SESSION_EXPIRED")), "{e}");
}

/// Through a node that has no browser: the WebSocket is relayed to the node holding the
/// session.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_live_view_opened_on_another_node_is_relayed_to_the_session() {
    let site = Site::start(live_page()).await;
    let master = "43".repeat(32);
    let worker = TestApp::browser_node(&master).await;
    let api = TestApp::spawn(worker.api_node_opts(&master)).await;
    worker.advertise_as(worker.state.cluster.node_id()).await;
    let (_, key) = api.user_with_key("pro").await;
    let run = running_run(&api, &key, &site.url("/live")).await;
    let (status, control) =
        call(&api, &key, reqwest::Method::POST, &format!("/v1/runs/{run}/live-view"), Some(json!({"mode": "control"})))
            .await;
    assert_eq!(status, 201, "{control}");
    // The link names this node's address: the socket reaches the API node, which relays it.
    let url = control["url"].as_str().unwrap().to_string();
    assert!(url.starts_with(&api.base), "{url}");
    let (mut ws, hello) = connect(&url).await;
    assert_eq!(hello["mode"], "control");
    let (img, w, _) = next_frame(&mut ws).await;
    assert!(white(&img, img.width() - 10, img.height() - 10));
    let scale = f64::from(img.width()) / w;
    let p50 = median_latency(&mut ws, scale, 10, false).await;
    eprintln!("live view through a second node: click to frame, p50 of 10: {p50:?}");
    call(&api, &key, reqwest::Method::POST, &format!("/v1/runs/{run}/stop"), None).await;
}
