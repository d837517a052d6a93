//! Sessions against fixture pages served on 127.0.0.1 (axum): a real Chromium pool,
//! driven the way audits, runs and the MCP tools drive it.

mod support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect};
use axum::routing::get;
use capture_browser::session::{
    ColorScheme, Cookie, Device, DialogPolicy, FileUpload, Geolocation, NetworkConditions, PdfSpec, ScreencastOptions,
    ScreenshotSpec, Session, SessionOptions, ShotArea, Target, WaitFor,
};
use capture_browser::{BrowserPool, CaptureError, ElementFault, ImageFormat, WaitUntil};
use serde_json::{Value, json};
use support::*;

const T: Duration = Duration::from_secs(10);

/// Requests seen by the fixture site, by path.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(String, HeaderMap)>>>);

impl Seen {
    fn headers(&self, path: &str) -> Option<HeaderMap> {
        self.0.lock().unwrap().iter().rev().find(|(p, _)| p == path).map(|(_, h)| h.clone())
    }
}

const TOUCH: &str = r#"<!doctype html><html><head><meta name=viewport content="width=device-width"><title>Touch</title></head>
<body style="margin:0">
<div id=pad style="width:300px;height:120px;background:rgb(200,200,200)">pad</div>
<div id=state>untouched</div><div id=clicks>0</div>
<div id=taps>0</div>
<div id=hold style="width:300px;height:80px;background:rgb(100,100,100)">hold</div>
<div id=pinch style="width:300px;height:200px;background:rgb(50,50,150)">pinch</div>
<div id=pinchout>none</div><div id=holdout>none</div>
<script>
const pad = document.getElementById('pad');
pad.addEventListener('touchend', (e) => { document.getElementById('state').textContent = 'touched'; document.getElementById('taps').textContent = String(+document.getElementById('taps').textContent + 1); });
pad.addEventListener('mousedown', () => { document.getElementById('clicks').textContent = String(+document.getElementById('clicks').textContent + 1); });
const hold = document.getElementById('hold'); let t0 = 0;
hold.addEventListener('touchstart', () => { t0 = performance.now(); });
hold.addEventListener('touchend', () => { document.getElementById('holdout').textContent = (performance.now() - t0) > 500 ? 'long' : 'short'; });
const pz = document.getElementById('pinch'); let d0 = 0, d1 = 0;
const dist = (ts) => Math.hypot(ts[0].clientX - ts[1].clientX, ts[0].clientY - ts[1].clientY);
pz.addEventListener('touchstart', (e) => { if (e.touches.length === 2) d0 = dist(e.touches); });
pz.addEventListener('touchmove', (e) => { if (e.touches.length === 2) { d1 = dist(e.touches); e.preventDefault(); } }, { passive: false });
pz.addEventListener('touchend', () => { if (d0 > 0) document.getElementById('pinchout').textContent = (d1 / d0).toFixed(2); });
</script></body></html>"#;

const CAROUSEL: &str = r#"<!doctype html><html><head><meta name=viewport content="width=device-width"><title>Carousel</title>
<style>body{margin:0} #c{width:300px;height:200px;overflow:hidden;position:relative} #track{display:flex;transition:none}
.slide{flex:0 0 300px;height:200px} </style></head><body>
<div id=c><div id=track><div class=slide style="background:rgb(255,0,0)"></div><div class=slide style="background:rgb(0,255,0)"></div><div class=slide style="background:rgb(0,0,255)"></div></div></div>
<div id=index>0</div>
<script>
let i = 0, x0 = null, x = null; const c = document.getElementById('c');
c.addEventListener('touchstart', (e) => { x0 = x = e.touches[0].clientX; });
c.addEventListener('touchmove', (e) => { x = e.touches[0].clientX; e.preventDefault(); }, { passive: false });
c.addEventListener('touchend', () => { const dx = x - x0; if (dx < -50 && i < 2) i++; if (dx > 50 && i > 0) i--; document.getElementById('track').style.transform = 'translateX(' + (-300 * i) + 'px)'; document.getElementById('index').textContent = String(i); });
</script></body></html>"#;

const ROTATE: &str = r#"<!doctype html><html><head><meta name=viewport content="width=device-width"><title>Rotate</title>
<style>body{margin:0} #box{width:100%;height:100vh;background:rgb(255,0,0)} @media (orientation: landscape) { #box{background:rgb(0,0,255)} }</style>
</head><body><div id=box></div></body></html>"#;

const DIALOGS: &str = r#"<!doctype html><html><head><title>Dialogs</title></head><body>
<button id=alert onclick="alert('hello there'); document.getElementById('out').textContent='after alert'" style="width:200px;height:40px">alert</button>
<button id=confirm onclick="document.getElementById('out').textContent='confirm:' + confirm('sure?')" style="width:200px;height:40px">confirm</button>
<button id=prompt onclick="document.getElementById('out').textContent='prompt:' + prompt('name?', 'nobody')" style="width:200px;height:40px">prompt</button>
<div id=out>none</div></body></html>"#;

const FORM: &str = r#"<!doctype html><html><head><title>Sign up</title></head><body>
<form action="/done" method="get">
<input id=name name=name><input id=email name=email type=email>
<select id=plan name=plan><option value=free>Free</option><option value=pro>Professional</option></select>
<label><input id=terms name=terms type=checkbox value=yes> terms</label>
<input id=file type=file><div id=fileout>none</div>
<textarea id=bio name=bio>old text</textarea>
<button id=go type=submit>Go</button></form>
<div id=keys>0</div><div id=hovered>no</div><div id=hov style="width:100px;height:30px;background:rgb(9,9,9)" onmouseover="document.getElementById('hovered').textContent='yes'"></div>
<div style="height:3000px"></div><div id=bottom>bottom</div>
<script>
document.addEventListener('keydown', () => { document.getElementById('keys').textContent = String(+document.getElementById('keys').textContent + 1); });
document.getElementById('file').addEventListener('change', async (e) => { const f = e.target.files[0]; document.getElementById('fileout').textContent = f.name + '|' + f.type + '|' + f.size + '|' + (await f.text()); });
</script></body></html>"#;

const CONSOLE: &str = r#"<!doctype html><html><head><title>Console</title></head><body>
<img src="/missing.png"><script>
console.log('just a log'); console.error('first error'); console.warn('a warning'); console.error('second', { n: 2 });
setTimeout(() => { throw new Error('boom later'); }, 0);
fetch('http://10.255.255.1/blocked').catch(() => {});
fetch('/slow-ok').then((r) => r.text()).then((t) => { document.title = 'Console ' + t; });
</script></body></html>"#;

const A11Y: &str = r#"<!doctype html><html lang=en><head><title>Shop</title></head><body>
<h1>Shop</h1><nav><a href="/form">Sign up</a></nav>
<button id=buy onclick="document.getElementById('out').textContent='bought'">Buy now</button>
<input aria-label="Search" id=q><div id=out>nothing</div></body></html>"#;

const ANIM: &str = r#"<!doctype html><html><body style="margin:0"><div id=b style="width:200px;height:200px"></div>
<script>let n = 0; const tick = () => { n++; document.getElementById('b').style.background = 'rgb(' + (n * 7 % 255) + ',0,0)'; requestAnimationFrame(tick); }; tick();</script></body></html>"#;

const SHOTS: &str = r#"<!doctype html><html><head><title>Shots</title></head><body style="margin:0;background:rgb(255,255,255)">
<div id=box style="position:absolute;left:20px;top:30px;width:100px;height:50px;background:rgb(0,128,0)"></div>
<div style="position:absolute;top:2900px;left:0;width:100%;height:100px;background:rgb(0,0,255)"></div>
<div style="height:3000px"></div></body></html>"#;

/// Fields above and below the fold, one under a veil, one read-only; content wider than a
/// phone, so the page is zoomed out and the visual viewport is not the layout viewport.
const ACTING: &str = r#"<!doctype html><html><head><meta name=viewport content="width=device-width"><title>Acting</title>
<style>body{margin:0;font:16px sans-serif} #wide{width:1200px;height:10px;background:rgb(230,230,230)}</style></head><body>
<div id=wide></div>
<input id=top aria-label=Top>
<div style="position:relative;width:300px;height:40px"><input id=covered aria-label=Covered style="width:280px">
<div id=veil style="position:absolute;left:0;top:0;width:300px;height:40px;background:rgba(0,0,0,0.1)"></div></div>
<input id=fixed readonly value=fixed aria-label=Fixed>
<div style="height:2500px"></div>
<input id=far aria-label=Far>
<button id=btn onclick="document.getElementById('clicked').textContent='clicked'">Press</button><div id=clicked>no</div>
</body></html>"#;

/// A sign-up form as a phone shows it: a control that answers touch, a carousel that
/// swipes, and the fields lower in the page, below the fold in either orientation.
const PHONE_FORM: &str = r#"<!doctype html><html lang=en><head><meta name=viewport content="width=device-width, initial-scale=1"><title>Phone form</title>
<style>body{font-family:sans-serif;margin:0;padding:8px} #pad{width:160px;height:60px;background:rgb(50,160,110)}
#carousel{width:300px;height:80px;overflow:hidden;background:rgb(220,220,220);touch-action:pan-y}
#layout{display:flex;flex-direction:column;gap:8px} @media (orientation: landscape) { #layout{flex-direction:row} }</style></head><body>
<h1>Create your account</h1>
<div id=pad role=button aria-label="Touch me">Touch me</div><p id=touched>untouched</p>
<div id=carousel role=region aria-label=Carousel><p id=slide>Slide 1 of 3</p></div>
<div style="height:1200px"></div>
<div id=layout><form method=post action="/signup">
<label for=email>Email</label> <input id=email name=email type=email>
<label for=password>Password</label> <input id=password name=password type=password>
<button type=submit>Sign up</button></form></div>
<div style="height:600px"></div>
<script>
document.getElementById('pad').addEventListener('touchstart', (e) => { document.getElementById('touched').textContent = 'touched by ' + e.touches.length + ' finger'; });
let slide = 0, x0 = null, x = null; const car = document.getElementById('carousel');
car.addEventListener('touchstart', (e) => { x0 = x = e.touches[0].clientX; });
car.addEventListener('touchmove', (e) => { x = e.touches[0].clientX; });
car.addEventListener('touchend', () => { const dx = x - x0; if (dx < -40 && slide < 2) slide++; if (dx > 40 && slide > 0) slide--; document.getElementById('slide').textContent = 'Slide ' + (slide + 1) + ' of 3'; });
</script></body></html>"#;

const INIT: &str = r#"<!doctype html><html><head><script>document.title = window.__early || 'missing';</script></head><body></body></html>"#;

async fn site() -> (SocketAddr, Seen) {
    let seen = Seen::default();
    let app = axum::Router::new()
        .route("/touch", get(|| async { Html(TOUCH) }))
        .route("/carousel", get(|| async { Html(CAROUSEL) }))
        .route("/rotate", get(|| async { Html(ROTATE) }))
        .route("/dialogs", get(|| async { Html(DIALOGS) }))
        .route("/form", get(|| async { Html(FORM) }))
        .route(
            "/done",
            get(|req: Request| async move {
                Html(format!("<title>Done</title><p id=q>{}</p>", req.uri().query().unwrap_or("")))
            }),
        )
        .route("/console", get(|| async { Html(CONSOLE) }))
        .route("/slow-ok", get(|| async { "ok" }))
        .route("/a11y", get(|| async { Html(A11Y) }))
        .route("/anim", get(|| async { Html(ANIM) }))
        .route("/shots", get(|| async { Html(SHOTS) }))
        .route("/init", get(|| async { Html(INIT) }))
        .route("/acting", get(|| async { Html(ACTING) }))
        .route("/phone-form", get(|| async { Html(PHONE_FORM) }))
        .route("/r1", get(|| async { Redirect::temporary("/r2") }))
        .route("/r2", get(|| async { Redirect::permanent("/final") }))
        .route("/final", get(|| async { ([("x-fixture", "final")], Html("<title>Final</title>final")) }))
        .route("/gone", get(|| async { (StatusCode::NOT_FOUND, Html("<title>Gone</title>")) }))
        .route(
            "/echo",
            get(|State(seen): State<Seen>, headers: HeaderMap| async move {
                seen.0.lock().unwrap().push(("/echo".into(), headers.clone()));
                let h: BTreeMap<String, String> =
                    headers.iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned())).collect();
                Html(format!("<title>Echo</title><pre id=h>{}</pre>", serde_json::to_string(&h).unwrap()))
            }),
        )
        .fallback(|| async { (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "text/plain")], "no").into_response() })
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, seen)
}

struct Fixture {
    pool: Arc<BrowserPool>,
    _dir: tempfile::TempDir,
    addr: SocketAddr,
    seen: Seen,
}

impl Fixture {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    async fn open(&self, opts: SessionOptions) -> Session {
        match self.pool.open_session(opts).await {
            Ok(s) => s,
            Err(e) => panic!("open_session: {e}"),
        }
    }
}

async fn fixture(pages: usize) -> Fixture {
    let (addr, seen) = site().await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path().to_path_buf(), true);
    cfg.browsers = 1;
    cfg.pages_per_browser = pages;
    let pool = BrowserPool::start(cfg).await.expect("pool starts");
    Fixture { pool, _dir: dir, addr, seen }
}

fn phone() -> SessionOptions {
    SessionOptions { device: Device::phone(390, 844, 2.0), ..Default::default() }
}

fn sel(s: &str) -> Target {
    Target::Selector(s.into())
}

async fn text(s: &Session, css: &str) -> String {
    s.text(Some(sel(css)), T).await.unwrap_or_else(|e| panic!("text {css}: {e}"))
}

async fn eval(s: &Session, js: &str) -> Value {
    s.evaluate(js, true, T).await.unwrap_or_else(|e| panic!("{js}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_session_taps_swipes_pinches_and_rotates() {
    let f = fixture(1).await;
    let s = f.open(phone()).await;
    s.goto(&f.url("/touch"), WaitUntil::Load, T).await.unwrap();
    assert_eq!(
        eval(&s, "[innerWidth, innerHeight, devicePixelRatio, navigator.maxTouchPoints > 0, 'ontouchstart' in window]")
            .await,
        json!([390, 844, 2, true, true])
    );
    let ua = eval(&s, "navigator.userAgent").await;
    assert!(!ua.as_str().unwrap().contains("HeadlessChrome"), "{ua}");
    // The control answers touch only: a mouse click leaves it untouched.
    s.click(sel("#pad"), T).await.unwrap();
    assert_eq!(text(&s, "#clicks").await, "1");
    assert_eq!(text(&s, "#state").await, "untouched");
    s.tap(sel("#pad"), T).await.unwrap();
    assert_eq!(text(&s, "#state").await, "touched");
    s.double_tap(sel("#pad"), T).await.unwrap();
    assert_eq!(text(&s, "#taps").await, "3");
    s.long_press(sel("#hold"), Duration::from_millis(700), T).await.unwrap();
    assert_eq!(text(&s, "#holdout").await, "long");
    s.tap(sel("#hold"), T).await.unwrap();
    assert_eq!(text(&s, "#holdout").await, "short");
    s.pinch(sel("#pinch"), 2.0, T).await.unwrap();
    let ratio: f64 = text(&s, "#pinchout").await.parse().unwrap();
    assert!((1.9..=2.1).contains(&ratio), "pinch ratio {ratio}");

    // A carousel that moves on swipe, and only on a real one.
    s.goto(&f.url("/carousel"), WaitUntil::Load, T).await.unwrap();
    s.swipe(sel("#c"), -150.0, 0.0, Duration::from_millis(300), T).await.unwrap();
    assert_eq!(text(&s, "#index").await, "1");
    s.swipe(sel("#c"), -150.0, 0.0, Duration::from_millis(200), T).await.unwrap();
    assert_eq!(text(&s, "#index").await, "2");
    let shot = s.screenshot(ScreenshotSpec::default(), T).await.unwrap();
    assert_eq!((shot.width, shot.height), (780, 1688));
    assert_px(&decode(&shot.bytes), 100, 100, [0, 0, 255], 2);
    s.swipe(Target::Point { x: 100.0, y: 100.0 }, 150.0, 0.0, Duration::from_millis(200), T).await.unwrap();
    assert_eq!(text(&s, "#index").await, "1");

    // Rotation: the landscape layout, a landscape screen.
    s.goto(&f.url("/rotate"), WaitUntil::Load, T).await.unwrap();
    let before = s.screenshot(ScreenshotSpec::default(), T).await.unwrap();
    assert_px(&decode(&before.bytes), 50, 50, [255, 0, 0], 2);
    let turned = s.rotate(T).await.unwrap();
    assert_eq!((turned.width, turned.height, turned.landscape), (844, 390, true));
    let after = s.screenshot(ScreenshotSpec::default(), T).await.unwrap();
    assert_eq!((after.width, after.height), (1688, 780));
    assert_px(&decode(&after.bytes), 50, 50, [0, 0, 255], 2);
    assert_eq!(eval(&s, "[innerWidth, screen.orientation.type]").await, json!([844, "landscape-primary"]));
    s.set_viewport(600, 400, T).await.unwrap();
    assert_eq!(eval(&s, "[innerWidth, innerHeight]").await, json!([600, 400]));
    s.close().await;
    assert!(s.is_closed());
    match s.goto(&f.url("/touch"), WaitUntil::Load, T).await {
        Err(CaptureError::Closed(m)) => assert_eq!(m, "the session was closed"),
        other => panic!("expected a closed session, got {other:?}"),
    }
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acting_on_an_element_checks_it_was_reached_after_a_rotation_and_below_the_fold() {
    let f = fixture(1).await;
    let s = f.open(phone()).await;
    s.goto(&f.url("/acting"), WaitUntil::Load, T).await.unwrap();
    let turned = s.rotate(T).await.unwrap();
    assert!(turned.landscape);
    // The content is wider than the phone: the visual viewport is zoomed out.
    let scale = eval(&s, "visualViewport.scale").await.as_f64().unwrap();
    assert!(scale < 0.9, "visual viewport scale {scale}");
    // And zoomed in, as a pinch does: the visual viewport is a moving window of the layout
    // viewport, so an element's client rectangle is not where a finger lands.
    s.cdp("Emulation.setPageScaleFactor", json!({"pageScaleFactor": 2.5}), T).await.unwrap();
    let active = "document.activeElement && document.activeElement.id";

    // Below the fold, after the rotation: the tap lands on the field and the text is in it.
    assert_eq!(s.type_into(sel("#far"), "hello", true, T).await.unwrap(), "hello");
    assert_eq!(eval(&s, active).await, json!("far"));
    assert_eq!(eval(&s, "document.getElementById('far').value").await, json!("hello"));
    // Appends, with the mouse too.
    assert_eq!(s.type_into(sel("#far"), " you", false, T).await.unwrap(), "hello you");
    assert_eq!(s.type_into(sel("#top"), "abc", true, T).await.unwrap(), "abc");
    assert_eq!(eval(&s, active).await, json!("top"));
    s.tap(sel("#btn"), T).await.unwrap();
    assert_eq!(text(&s, "#clicked").await, "clicked");
    let offset = eval(&s, "visualViewport.offsetTop").await.as_f64().unwrap();
    assert!(offset > 50.0, "the visual viewport is offset: {offset}");
    // By ref (the DOM's quads), also below the fold.
    let tree = s.accessibility_snapshot(T).await.unwrap();
    let far = tree.iter().find(|n| n.name == "Far").and_then(|n| n.backend_node_id).expect("the far field");
    assert_eq!(s.fill(Target::Ref(far), "by ref", T).await.unwrap(), "by ref");
    assert_eq!(s.type_into(Target::Ref(far), "!", true, T).await.unwrap(), "by ref!");

    // A field under a veil: nothing is typed and the tool says why.
    match s.type_into(sel("#covered"), "x", true, T).await {
        Err(CaptureError::Element(ElementFault::Covered, m)) => {
            assert_eq!(
                m,
                "type into '#covered': '#covered' is covered by <div#veil>: an input there would not reach it"
            )
        }
        other => panic!("expected the veil to be named, got {other:?}"),
    }
    match s.click(sel("#covered"), T).await {
        Err(CaptureError::Element(ElementFault::Covered, m)) => {
            assert_eq!(m, "click '#covered': '#covered' is covered by <div#veil>: an input there would not reach it")
        }
        other => panic!("expected the veil to be named, got {other:?}"),
    }
    assert_eq!(eval(&s, "document.getElementById('covered').value").await, json!(""));
    // A read-only field takes the focus but not the keys.
    match s.type_into(sel("#fixed"), "zzz", true, T).await {
        Err(CaptureError::Script(m)) => assert_eq!(
            m,
            "type into '#fixed': '#fixed' still holds \"fixed\": the field did not accept the keys (read-only, or the page refused them)"
        ),
        other => panic!("expected a refusal, got {other:?}"),
    }
    s.close().await;
    f.pool.shutdown().await;
}

/// Issue 43 item 6, as an agent does it: a phone taps and swipes, turns, and types into a
/// field by selector and by ref; turns back and types again; and again zoomed in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_phone_types_into_a_field_by_selector_and_by_ref_at_any_zoom() {
    let iphone = capture_core::devices::preset("iphone-15").expect("the iphone-15 preset").device.clone();
    let f = fixture(1).await;
    let s = f.open(SessionOptions { device: iphone, ..Default::default() }).await;
    s.goto(&f.url("/phone-form"), WaitUntil::Load, T).await.unwrap();
    assert_eq!(eval(&s, "[innerWidth, devicePixelRatio]").await, json!([393, 3]));
    s.tap(sel("#pad"), T).await.unwrap();
    assert_eq!(text(&s, "#touched").await, "touched by 1 finger");
    s.swipe(sel("#carousel"), -150.0, 0.0, Duration::from_millis(300), T).await.unwrap();
    assert_eq!(text(&s, "#slide").await, "Slide 2 of 3");
    let turned = s.rotate(T).await.unwrap();
    assert_eq!((turned.width, turned.height, turned.landscape), (852, 393, true));

    let value = "document.getElementById('email').value";
    let active = "document.activeElement && document.activeElement.id";
    // Empty the field and leave it, so the next type has to focus it again.
    let reset = "(() => { const e = document.getElementById('email'); e.value = ''; e.blur(); return document.activeElement.tagName; })()";
    let email_ref = |tree: &[capture_browser::session::AxNode]| {
        tree.iter()
            .find(|n| n.role == "textbox" && n.name == "Email")
            .and_then(|n| n.backend_node_id)
            .expect("the email field in the snapshot")
    };

    // Landscape: by selector (the first touch after the swipe only stops its fling)...
    assert_eq!(s.type_into(sel("#email"), "ada", true, T).await.unwrap(), "ada");
    assert_eq!(eval(&s, active).await, json!("email"));
    // ...and after another swipe, the text goes on at the end of what the field holds.
    assert_eq!(eval(&s, "document.activeElement.blur(), document.activeElement.tagName").await, json!("BODY"));
    s.swipe(sel("#carousel"), -150.0, 0.0, Duration::from_millis(300), T).await.unwrap();
    assert_eq!(text(&s, "#slide").await, "Slide 3 of 3");
    assert_eq!(s.type_into(sel("#email"), "@example.com", true, T).await.unwrap(), "ada@example.com");
    assert_eq!(eval(&s, value).await, json!("ada@example.com"));
    assert_eq!(eval(&s, active).await, json!("email"));
    // By ref, from a snapshot.
    assert_eq!(eval(&s, reset).await, json!("BODY"));
    let email = email_ref(&s.accessibility_snapshot(T).await.unwrap());
    assert_eq!(s.type_into(Target::Ref(email), "bob@example.com", true, T).await.unwrap(), "bob@example.com");
    assert_eq!(eval(&s, value).await, json!("bob@example.com"));

    // Back to portrait: by selector and by ref again.
    let back = s.rotate(T).await.unwrap();
    assert!(!back.landscape);
    assert_eq!(eval(&s, reset).await, json!("BODY"));
    assert_eq!(s.type_into(sel("#email"), "cy@example.com", true, T).await.unwrap(), "cy@example.com");
    assert_eq!(eval(&s, value).await, json!("cy@example.com"));
    assert_eq!(eval(&s, reset).await, json!("BODY"));
    let email = email_ref(&s.accessibility_snapshot(T).await.unwrap());
    assert_eq!(s.type_into(Target::Ref(email), "di@example.com", true, T).await.unwrap(), "di@example.com");
    assert_eq!(eval(&s, value).await, json!("di@example.com"));

    // Zoomed in, as a pinch leaves a page, in landscape: the visual viewport is a small
    // window somewhere in the layout viewport.
    s.rotate(T).await.unwrap();
    s.cdp("Emulation.setPageScaleFactor", json!({"pageScaleFactor": 2.5}), T).await.unwrap();
    assert!(eval(&s, "visualViewport.scale").await.as_f64().unwrap() > 2.0);
    assert_eq!(eval(&s, reset).await, json!("BODY"));
    assert_eq!(s.type_into(sel("#email"), "eve@example.com", true, T).await.unwrap(), "eve@example.com");
    assert_eq!(eval(&s, value).await, json!("eve@example.com"));
    assert_eq!(eval(&s, reset).await, json!("BODY"));
    let email = email_ref(&s.accessibility_snapshot(T).await.unwrap());
    assert_eq!(s.type_into(Target::Ref(email), "fay@example.com", true, T).await.unwrap(), "fay@example.com");
    assert_eq!(eval(&s, value).await, json!("fay@example.com"));

    // A disabled field cannot take the focus: nothing is typed and the tool says so.
    eval(&s, "document.getElementById('email').disabled = true").await;
    assert_eq!(eval(&s, reset).await, json!("BODY"));
    match s.type_into(sel("#email"), "x", true, T).await {
        Err(CaptureError::Script(m)) => {
            assert_eq!(m, "type into '#email': '#email' did not take the focus (it is on <body>): nothing was typed")
        }
        other => panic!("expected the disabled field to refuse the focus, got {other:?}"),
    }
    assert_eq!(eval(&s, value).await, json!(""));
    s.close().await;
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emulated_media_features_and_type_are_one_state() {
    let f = fixture(1).await;
    let s = f.open(SessionOptions { color_scheme: Some(ColorScheme::Dark), ..Default::default() }).await;
    s.goto(&f.url("/rotate"), WaitUntil::Load, T).await.unwrap();
    let all = "[matchMedia('(prefers-color-scheme: dark)').matches, matchMedia('(prefers-reduced-motion: reduce)').matches, matchMedia('print').matches]";
    assert_eq!(eval(&s, all).await, json!([true, false, false]));
    s.set_media_feature("prefers-reduced-motion", "reduce", T).await.unwrap();
    assert_eq!(eval(&s, all).await, json!([true, true, false]));
    s.set_media_type("print", T).await.unwrap();
    assert_eq!(eval(&s, all).await, json!([true, true, true]));
    s.set_media_feature("prefers-color-scheme", "light", T).await.unwrap();
    assert_eq!(eval(&s, all).await, json!([false, true, true]));
    s.set_media_type("screen", T).await.unwrap();
    assert_eq!(eval(&s, all).await, json!([false, true, false]));
    // A raw call replaces everything, as DevTools does; the next change builds on it.
    s.cdp("Emulation.setEmulatedMedia", json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}), T)
        .await
        .unwrap();
    assert_eq!(eval(&s, all).await, json!([true, false, false]));
    s.set_media_type("print", T).await.unwrap();
    assert_eq!(eval(&s, all).await, json!([true, false, true]));
    s.close().await;
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forms_keys_selects_files_dialogs_and_history() {
    let f = fixture(1).await;
    let s = f.open(SessionOptions { dialogs: DialogPolicy::Manual, ..Default::default() }).await;
    s.goto(&f.url("/form"), WaitUntil::Load, T).await.unwrap();
    s.click(sel("#name"), T).await.unwrap();
    s.type_text("Ada Lovelace", T).await.unwrap();
    assert_eq!(text(&s, "#keys").await, "12", "one keydown per character");
    s.fill(sel("#email"), "ada@example.com", T).await.unwrap();
    s.fill(sel("#bio"), "new text", T).await.unwrap();
    assert_eq!(eval(&s, "document.getElementById('bio').value").await, json!("new text"));
    assert_eq!(s.select_option(sel("#plan"), vec!["Professional".into()], T).await.unwrap(), vec!["pro".to_owned()]);
    match s.select_option(sel("#plan"), vec!["gold".into()], T).await {
        Err(CaptureError::Script(m)) => assert!(m.contains("no option \"gold\""), "{m}"),
        other => panic!("{other:?}"),
    }
    s.set_checked(sel("#terms"), true, T).await.unwrap();
    s.set_checked(sel("#terms"), true, T).await.unwrap();
    assert_eq!(eval(&s, "document.getElementById('terms').checked").await, json!(true));
    let file = FileUpload { name: "hello.txt".into(), mime_type: "text/plain".into(), bytes: b"hi there".to_vec() };
    s.set_input_files(sel("#file"), vec![file.clone()], T).await.unwrap();
    s.wait_for(WaitFor::Text("hello.txt|text/plain|8|hi there".into()), T).await.unwrap();
    match s.set_input_files(sel("#name"), vec![file], T).await {
        Err(CaptureError::Script(m)) => assert!(m.contains("not a file input"), "{m}"),
        other => panic!("{other:?}"),
    }
    s.hover(sel("#hov"), T).await.unwrap();
    assert_eq!(text(&s, "#hovered").await, "yes");
    s.scroll(None, 0.0, 600.0, T).await.unwrap();
    assert!(eval(&s, "scrollY").await.as_f64().unwrap() > 100.0);
    s.scroll(Some(sel("#bottom")), 0.0, 0.0, T).await.unwrap();
    assert!(eval(&s, "scrollY").await.as_f64().unwrap() > 2000.0);
    // Enter in a field submits the form: the press waits for the new page.
    s.click(sel("#name"), T).await.unwrap();
    s.press("Enter", T).await.unwrap();
    s.wait_for(WaitFor::Url("/done?".into()), T).await.unwrap();
    let q = text(&s, "#q").await;
    assert_eq!(q, "name=Ada+Lovelace&email=ada%40example.com&plan=pro&terms=yes&bio=new+text");
    let back = s.back(T).await.unwrap();
    assert_eq!(back.final_url, f.url("/form"));
    let fwd = s.forward(T).await.unwrap();
    assert!(fwd.final_url.starts_with(&f.url("/done?")), "{}", fwd.final_url);
    let again = s.reload(T).await.unwrap();
    assert_eq!(again.title, "Done");
    match s.press("Hyper+x", T).await {
        Err(CaptureError::Script(m)) => assert!(m.starts_with("press Hyper+x: 'hyper' is not a modifier"), "{m}"),
        other => panic!("{other:?}"),
    }

    // Dialogs left open until handled.
    s.goto(&f.url("/dialogs"), WaitUntil::Load, T).await.unwrap();
    s.click(sel("#alert"), T).await.unwrap();
    let open = s.open_dialog().await.unwrap().expect("an open dialog");
    assert_eq!((open.kind.as_str(), open.message.as_str()), ("alert", "hello there"));
    match s.evaluate("1 + 1", true, T).await {
        Err(CaptureError::DialogOpen(m)) => assert!(m.contains("dialog is open"), "{m}"),
        other => panic!("{other:?}"),
    }
    s.handle_dialog(true, None, T).await.unwrap();
    s.wait_for(WaitFor::Text("after alert".into()), T).await.unwrap();
    s.click(sel("#confirm"), T).await.unwrap();
    s.handle_dialog(false, None, T).await.unwrap();
    s.wait_for(WaitFor::Text("confirm:false".into()), T).await.unwrap();
    s.click(sel("#prompt"), T).await.unwrap();
    assert_eq!(s.open_dialog().await.unwrap().unwrap().default_prompt.as_deref(), Some("nobody"));
    s.handle_dialog(true, Some("Grace".into()), T).await.unwrap();
    s.wait_for(WaitFor::Text("prompt:Grace".into()), T).await.unwrap();
    match s.handle_dialog(true, None, T).await {
        Err(CaptureError::Script(m)) => assert_eq!(m, "handle_dialog: no dialog is open"),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.dialogs().await.unwrap().len(), 3);
    s.close().await;

    // The default policy accepts at once.
    let s = f.open(SessionOptions::default()).await;
    s.goto(&f.url("/dialogs"), WaitUntil::Load, T).await.unwrap();
    s.click(sel("#confirm"), T).await.unwrap();
    s.wait_for(WaitFor::Text("confirm:true".into()), T).await.unwrap();
    // Waits that time out say what they waited for.
    match s.wait_for(WaitFor::Selector("#never".into()), Duration::from_millis(500)).await {
        Err(CaptureError::Element(ElementFault::NotFound, m)) => {
            assert!(m.starts_with("wait_for selector '#never': no element matches"), "{m}")
        }
        other => panic!("{other:?}"),
    }
    match s.click(sel("#never"), Duration::from_millis(400)).await {
        Err(CaptureError::Element(ElementFault::NotFound, m)) => {
            assert!(m.starts_with("click '#never': no element matches '#never'"), "{m}")
        }
        other => panic!("{other:?}"),
    }
    match s.click(sel("#never["), T).await {
        Err(CaptureError::Element(ElementFault::BadSelector, m)) => {
            assert!(m.contains("not a valid CSS selector"), "{m}")
        }
        other => panic!("{other:?}"),
    }
    s.close().await;
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_logs_counts_and_the_accessibility_tree() {
    let f = fixture(1).await;
    let init = "window.__early = 'early ' + (typeof document.body);".to_owned();
    let mut headers = BTreeMap::new();
    headers.insert("X-Audit".to_owned(), "yes".to_owned());
    let opts = SessionOptions {
        locale: Some("de-DE".into()),
        timezone: Some("Asia/Tokyo".into()),
        geolocation: Some(Geolocation { latitude: 52.52, longitude: 13.405, accuracy: 10.0 }),
        color_scheme: Some(ColorScheme::Dark),
        extra_headers: headers,
        init_scripts: vec![init],
        ..Default::default()
    };
    let s = f.open(opts).await;
    let nav = s.goto(&f.url("/r1"), WaitUntil::Load, T).await.unwrap();
    assert_eq!(nav.status, Some(200));
    assert_eq!(nav.final_url, f.url("/final"));
    assert_eq!(nav.title, "Final");
    let hops: Vec<(String, u16)> = nav.redirects.iter().map(|r| (r.url.clone(), r.status)).collect();
    assert_eq!(hops, vec![(f.url("/r1"), 307), (f.url("/r2"), 308)]);
    assert!(nav.headers.contains(&("x-fixture".into(), "final".into())), "{:?}", nav.headers);
    let t = &nav.timing;
    assert!(t.response_ms.unwrap() <= t.dom_content_loaded_ms.unwrap());
    assert!(t.dom_content_loaded_ms.unwrap() <= t.load_ms.unwrap() && t.load_ms.unwrap() <= t.total_ms, "{t:?}");
    let gone = s.goto(&f.url("/gone"), WaitUntil::Load, T).await.unwrap();
    assert_eq!((gone.status, gone.tags.clone()), (Some(404), vec!["http-404".to_owned()]));

    // Init script before the page's own, headers, locale, zone, position, colours.
    let nav = s.goto(&f.url("/init"), WaitUntil::Load, T).await.unwrap();
    assert_eq!(nav.title, "early object");
    s.goto(&f.url("/echo"), WaitUntil::Load, T).await.unwrap();
    let h = f.seen.headers("/echo").unwrap();
    assert_eq!(h.get("x-audit").unwrap(), "yes");
    assert!(h.get("accept-language").unwrap().to_str().unwrap().starts_with("de-DE"), "{h:?}");
    assert_eq!(
        eval(&s, "[navigator.language, Intl.DateTimeFormat().resolvedOptions().timeZone, matchMedia('(prefers-color-scheme: dark)').matches]").await,
        json!(["de-DE", "Asia/Tokyo", true])
    );
    let pos = eval(&s, "new Promise((ok, no) => navigator.geolocation.getCurrentPosition((p) => ok([p.coords.latitude, p.coords.longitude]), (e) => no(e.message)))").await;
    assert_eq!(pos, json!([52.52, 13.405]));
    s.set_geolocation(Some(Geolocation { latitude: -33.86, longitude: 151.21, accuracy: 5.0 }), T).await.unwrap();
    let pos =
        eval(&s, "new Promise((ok) => navigator.geolocation.getCurrentPosition((p) => ok(p.coords.latitude)))").await;
    assert_eq!(pos, json!(-33.86));

    // Console and network logs, with exact counts.
    s.goto(&f.url("/console"), WaitUntil::Networkidle, T).await.unwrap();
    let counts = s.counts().await.unwrap();
    assert_eq!(counts.console_errors, 3, "{:?}", s.console().await.unwrap());
    assert_eq!(
        counts.failed_requests,
        3,
        "404 /gone, 404 /missing.png, the blocked fetch: {:?}",
        s.network().await.unwrap()
    );
    let console = s.console().await.unwrap();
    let texts: Vec<(&str, &str)> = console.iter().map(|c| (c.level.as_str(), c.text.as_str())).collect();
    assert!(texts.contains(&("log", "just a log")), "{texts:?}");
    assert!(texts.contains(&("error", "first error")), "{texts:?}");
    assert!(texts.contains(&("warning", "a warning")), "{texts:?}");
    assert!(texts.iter().any(|(l, t)| *l == "exception" && t.contains("boom later")), "{texts:?}");
    let net = s.network().await.unwrap();
    let missing = net.iter().find(|r| r.url.ends_with("/missing.png")).unwrap();
    assert_eq!((missing.status, missing.resource_type.as_str()), (Some(404), "Image"));
    let blocked = net.iter().find(|r| r.url.contains("10.255.255.1") && !r.preflight).unwrap();
    assert!(blocked.failure.as_deref().unwrap().contains("blocked by egress policy"), "{blocked:?}");
    let doc = net.iter().find(|r| r.url == f.url("/console")).unwrap();
    assert!(doc.transfer_bytes > 400, "{doc:?}");
    assert_eq!(s.title_url(T).await.unwrap().0, "Console ok");

    // The accessibility tree, with refs other operations take.
    s.goto(&f.url("/a11y"), WaitUntil::Load, T).await.unwrap();
    let tree = s.accessibility_snapshot(T).await.unwrap();
    let buy = tree.iter().find(|n| n.role == "button" && n.name == "Buy now").expect("the button");
    assert!(tree.iter().any(|n| n.role == "heading" && n.name == "Shop"));
    assert!(tree.iter().any(|n| n.role == "textbox" && n.name == "Search"));
    s.click(Target::Ref(buy.backend_node_id.unwrap()), T).await.unwrap();
    assert_eq!(text(&s, "#out").await, "bought");
    let search = tree.iter().find(|n| n.name == "Search").unwrap().backend_node_id.unwrap();
    s.fill(Target::Ref(search), "shoes", T).await.unwrap();
    assert_eq!(eval(&s, "document.getElementById('q').value").await, json!("shoes"));
    s.goto(&f.url("/form"), WaitUntil::Load, T).await.unwrap();
    match s.click(Target::Ref(buy.backend_node_id.unwrap()), T).await {
        Err(CaptureError::Element(ElementFault::NoSuchRef, m)) => assert!(m.contains("no such element ref"), "{m}"),
        other => panic!("a ref of the previous page: {other:?}"),
    }
    s.close().await;
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenshots_pdf_screencast_storage_and_network_conditions() {
    let f = fixture(1).await;
    let s = f.open(SessionOptions { device: Device::desktop(800, 600), ..Default::default() }).await;
    s.goto(&f.url("/shots"), WaitUntil::Load, T).await.unwrap();
    let view = s.screenshot(ScreenshotSpec::default(), T).await.unwrap();
    assert_eq!((view.width, view.height, view.content_type), (800, 600, "image/png"));
    let full = s.screenshot(ScreenshotSpec { area: ShotArea::FullPage, ..Default::default() }, T).await.unwrap();
    assert_eq!((full.width, full.height), (800, 3000));
    assert_px(&decode(&full.bytes), 400, 2950, [0, 0, 255], 2);
    let el = ScreenshotSpec { area: ShotArea::Element(sel("#box")), format: ImageFormat::Jpeg, quality: Some(90) };
    let el = s.screenshot(el, T).await.unwrap();
    assert_eq!((el.width, el.height, el.content_type), (100, 50, "image/jpeg"));
    assert_px(&decode(&el.bytes), 50, 25, [0, 128, 0], 12);
    let clip =
        ScreenshotSpec { area: ShotArea::Clip { x: 0.0, y: 2850.0, width: 40.0, height: 100.0 }, ..Default::default() };
    let clip = s.screenshot(clip, T).await.unwrap();
    assert_eq!((clip.width, clip.height), (40, 100));
    assert_px(&decode(&clip.bytes), 20, 10, [255, 255, 255], 2);
    assert_px(&decode(&clip.bytes), 20, 90, [0, 0, 255], 2);
    let pdf = s.pdf(PdfSpec::default(), T).await.unwrap();
    assert!(pdf.starts_with(b"%PDF-"));

    // Frames as Chromium paints them, with their time.
    s.goto(&f.url("/anim"), WaitUntil::Load, T).await.unwrap();
    let mut cast = s
        .start_screencast(ScreencastOptions { max_width: 400, max_height: 300, ..Default::default() }, T)
        .await
        .unwrap();
    let mut stamps = Vec::new();
    while stamps.len() < 5 {
        let frame = tokio::time::timeout(T, cast.next()).await.expect("a frame in time").expect("a frame");
        let img = decode(&frame.data);
        assert!(img.width() <= 400 && img.height() <= 300, "{:?}", img.dimensions());
        stamps.push(frame.timestamp);
    }
    assert!(stamps.windows(2).all(|w| w[1] >= w[0]), "{stamps:?}");
    s.stop_screencast(T).await.unwrap();
    while tokio::time::timeout(T, cast.next()).await.expect("the stream ends").is_some() {}

    // Cookies and storage of the session's own context.
    s.goto(&f.url("/echo"), WaitUntil::Load, T).await.unwrap();
    let c = Cookie { name: "sid".into(), value: "42".into(), url: Some(f.url("/")), ..Default::default() };
    s.set_cookies(vec![c], T).await.unwrap();
    assert_eq!(eval(&s, "document.cookie").await, json!("sid=42"));
    s.goto(&f.url("/echo"), WaitUntil::Load, T).await.unwrap();
    assert_eq!(f.seen.headers("/echo").unwrap().get("cookie").unwrap(), "sid=42");
    assert_eq!(s.cookies(T).await.unwrap().iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), vec!["sid"]);
    s.clear_cookies(T).await.unwrap();
    assert!(s.cookies(T).await.unwrap().is_empty());
    s.set_local_storage("k", "v", T).await.unwrap();
    assert_eq!(s.local_storage(T).await.unwrap().get("k").map(String::as_str), Some("v"));
    s.clear_local_storage(T).await.unwrap();
    assert!(s.local_storage(T).await.unwrap().is_empty());
    let state = "navigator.permissions.query({ name: 'geolocation' }).then((p) => p.state)";
    assert_eq!(eval(&s, state).await, json!("prompt"));
    s.grant_permissions(vec!["geolocation".into()], None, T).await.unwrap();
    assert_eq!(eval(&s, state).await, json!("granted"));
    s.reset_permissions(T).await.unwrap();
    assert_eq!(eval(&s, state).await, json!("prompt"));

    // Offline, then back.
    s.set_network(NetworkConditions::offline(), T).await.unwrap();
    match s.goto(&f.url("/shots"), WaitUntil::Load, T).await {
        Err(CaptureError::Navigation(m)) => assert!(m.contains("INTERNET_DISCONNECTED"), "{m}"),
        other => panic!("offline: {other:?}"),
    }
    s.set_network(NetworkConditions::default(), T).await.unwrap();
    s.goto(&f.url("/shots"), WaitUntil::Load, T).await.unwrap();
    s.close().await;
    f.pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_keep_to_their_context_their_slot_and_their_deadline() {
    let f = fixture(1).await;
    let s = f.open(SessionOptions::default()).await;
    // The egress guard and the scheme rule hold in sessions.
    for url in ["file:///etc/passwd", "chrome://version"] {
        match s.goto(url, WaitUntil::Load, T).await {
            Err(CaptureError::Navigation(m)) => assert!(m.contains("only http and https"), "{m}"),
            other => panic!("{url}: {other:?}"),
        }
    }
    match s.goto(&format!("http://127.0.0.1:{}/", f.pool.egress_addr().port()), WaitUntil::Load, T).await {
        Err(CaptureError::Navigation(m)) => assert!(m.contains("own listener"), "{m}"),
        other => panic!("{other:?}"),
    }
    // Raw commands: the page's are passed, the browser's refused.
    s.goto(&f.url("/shots"), WaitUntil::Load, T).await.unwrap();
    let r = s.cdp("Runtime.evaluate", json!({ "expression": "6 * 7", "returnByValue": true }), T).await.unwrap();
    assert_eq!(r["result"]["value"], json!(42));
    for (m, p) in [
        ("Browser.close", json!({})),
        ("Target.createBrowserContext", json!({})),
        ("Page.navigate", json!({ "url": "file:///etc/passwd" })),
        ("DOM.setFileInputFiles", json!({ "files": ["/etc/passwd"], "backendNodeId": 1 })),
        ("Storage.getCookies", json!({})),
    ] {
        match s.cdp(m, p, T).await {
            Err(CaptureError::Refused(msg)) => assert!(msg.starts_with(&format!("cdp {m}: ")), "{msg}"),
            other => panic!("{m}: {other:?}"),
        }
    }
    // The session holds the pool's only slot: a capture waits for it.
    let pool = f.pool.clone();
    let url = f.url("/shots");
    let mut capture = tokio::spawn(async move { pool.capture(url_req(url)).await });
    assert!(tokio::time::timeout(Duration::from_secs(1), &mut capture).await.is_err(), "ran beside the session");
    // A renderer crash ends the session, not the pool.
    match s.cdp("Page.crash", json!({}), T).await {
        Err(e) => eprintln!("Page.crash: {e}"),
        Ok(v) => eprintln!("Page.crash answered {v}"),
    }
    let t = std::time::Instant::now();
    while !s.is_closed() {
        assert!(t.elapsed() < T, "the session did not end after its page crashed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    match s.evaluate("1", true, T).await {
        Err(CaptureError::Closed(m)) => assert!(m.contains("crashed"), "{m}"),
        other => panic!("{other:?}"),
    }
    let out = tokio::time::timeout(Duration::from_secs(30), capture).await.unwrap().unwrap().expect("the capture runs");
    assert_eq!(out.page_title, "Shots");

    // A session ends at its deadline and gives its slot back.
    let s = f.open(SessionOptions { deadline: Duration::from_secs(2), ..Default::default() }).await;
    s.goto(&f.url("/shots"), WaitUntil::Load, T).await.unwrap();
    let t = std::time::Instant::now();
    match s.wait_for(WaitFor::Selector("#never".into()), Duration::from_secs(20)).await {
        Err(CaptureError::Element(ElementFault::NotFound, m)) => {
            assert!(m.contains("the session's 2 s deadline passed"), "{m}")
        }
        other => panic!("{other:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    let t = std::time::Instant::now();
    while !s.is_closed() {
        assert!(t.elapsed() < T, "the session outlived its deadline");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(s.end_reason().as_deref(), Some("the session's 2 s deadline passed"));
    ok_capture(&f).await;
    // Dropping every handle ends it too.
    let s = f.open(SessionOptions::default()).await;
    drop(s);
    ok_capture(&f).await;
    f.pool.shutdown().await;
}

async fn ok_capture(f: &Fixture) {
    let out = tokio::time::timeout(Duration::from_secs(30), f.pool.capture(url_req(f.url("/shots"))))
        .await
        .expect("a free slot")
        .expect("a capture");
    assert_eq!(out.page_title, "Shots");
}
