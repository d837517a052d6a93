//! `capture shot` and the other client commands retry what is safe to retry: 5xx, 429 and
//! lost connections, with backoff, `Retry-After` and one Idempotency-Key for every attempt;
//! bounded in attempts and time; a quota that resets in days is reported, not waited for.
//! Against a scripted server (to make it fail on cue) and against the real `capture serve`.

#[allow(dead_code)]
mod cli_support;

use std::time::Duration;

use cli_support::{Reply, Scripted, Serve, client};
use serde_json::{Value, json};

const KEY: &str = "sk_live_scriptedscriptedscripted";

fn png() -> Vec<u8> {
    let img = image::RgbaImage::from_pixel(4, 3, image::Rgba([0, 128, 255, 255]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn job(server: &Scripted, status: &str) -> Value {
    json!({
        "id": "scr_scripted1", "screenshotId": "scr_scripted1", "status": status, "url": "https://example.com/",
        "publicUrl": if status == "done" { json!(format!("{}/files/scr_scripted1.png", server.base)) } else { Value::Null },
    })
}

#[tokio::test]
async fn shot_retries_503_and_500_with_the_same_idempotency_key() {
    let s = Scripted::start().await;
    s.on(
        "POST /v1/screenshot",
        vec![
            Reply::error(503, "SERVICE_UNAVAILABLE").header("retry-after", "1"),
            Reply::error(500, "INTERNAL_ERROR"),
            Reply::json(202, job(&s, "pending")),
        ],
    );
    s.on(
        "GET /v1/screenshot/scr_scripted1/stream",
        vec![Reply::raw(200, "text/event-stream", b"event: done\ndata: {\"status\":\"done\"}\n\n".to_vec())],
    );
    // Reading the finished job and downloading the file are retried too.
    s.on(
        "GET /v1/screenshot/scr_scripted1",
        vec![Reply::raw(502, "text/html", b"<h1>Bad gateway</h1>".to_vec()), Reply::json(200, job(&s, "done"))],
    );
    s.on(
        "GET /files/scr_scripted1.png",
        vec![Reply::error(503, "SERVICE_UNAVAILABLE"), Reply::raw(200, "image/png", png())],
    );

    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("shot.png");
    let run = client(home.path(), &s.base, KEY, &["shot", "https://example.com/", "-o", out.to_str().unwrap()]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout.trim(), out.to_str().unwrap());
    assert_eq!(std::fs::read(&out).unwrap(), png(), "the file the server sent");

    let posts = s.seen("POST /v1/screenshot");
    assert_eq!(posts.len(), 3, "503, 500, then 202");
    let key = posts[0].idempotency_key.clone().expect("an Idempotency-Key");
    assert!(
        (8..=128).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
        "{key}"
    );
    for p in &posts {
        assert_eq!(p.idempotency_key.as_deref(), Some(key.as_str()), "every attempt carries the same key");
        assert_eq!(p.authorization.as_deref(), Some(format!("Bearer {KEY}").as_str()));
        let body: Value = serde_json::from_slice(&p.body).unwrap();
        assert_eq!(body["url"], "https://example.com/");
    }
    // Retry-After: 1 was honoured; the next wait is the backoff (≥ half of 1 s).
    assert!(posts[1].at - posts[0].at >= Duration::from_secs(1), "{:?}", posts[1].at - posts[0].at);
    assert!(posts[2].at - posts[1].at >= Duration::from_millis(450), "{:?}", posts[2].at - posts[1].at);
    assert_eq!(s.seen("GET /v1/screenshot/scr_scripted1").len(), 2);
    assert_eq!(s.seen("GET /files/scr_scripted1.png").len(), 2);

    // Each wait is shown on stderr.
    let waits: Vec<&str> = run.stderr.lines().filter(|l| l.contains("retrying in")).collect();
    assert_eq!(waits.len(), 4, "{}", run.stderr);
    assert!(waits[0].contains("HTTP 503, SERVICE_UNAVAILABLE") && waits[0].contains("attempt 2 of 5"), "{}", waits[0]);
    assert!(waits[1].contains("HTTP 500, INTERNAL_ERROR") && waits[1].contains("attempt 3 of 5"), "{}", waits[1]);

    // A second run is a new invocation: a new key. --quiet prints no waits; an explicit key is sent as given.
    s.on("POST /v1/screenshot", vec![Reply::error(500, "INTERNAL_ERROR"), Reply::json(202, job(&s, "pending"))]);
    let run = client(
        home.path(),
        &s.base,
        KEY,
        &["shot", "https://example.com/", "-o", out.to_str().unwrap(), "-q", "--idempotency-key", "my-key_0001"],
    )
    .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.is_empty(), "quiet: {}", run.stderr);
    let posts = s.seen("POST /v1/screenshot");
    assert_eq!(posts.len(), 5);
    assert!(posts[3..].iter().all(|p| p.idempotency_key.as_deref() == Some("my-key_0001")));

    let run =
        client(home.path(), &s.base, KEY, &["shot", "https://example.com/", "--idempotency-key", "bad key"]).await;
    assert_eq!(run.code, Some(6), "{}", run.stderr);
    assert!(run.stderr.contains("--idempotency-key"), "{}", run.stderr);
    assert_eq!(s.seen("POST /v1/screenshot").len(), 5, "nothing sent");
}

#[tokio::test]
async fn a_quota_that_resets_in_days_is_reported_not_waited_for() {
    let s = Scripted::start().await;
    s.on(
        "POST /v1/screenshot",
        vec![
            Reply::json(
                429,
                json!({"error": "monthly quota of 100 actions reached", "code": "PLAN_QUOTA_EXCEEDED", "requestId": "req_x",
                       "details": {"used": 100, "limit": 100, "plan": "free", "resetAt": "2026-12-01T00:00:00Z"}}),
            )
            .header("retry-after", "518400"),
        ],
    );
    let home = tempfile::tempdir().unwrap();
    let run = client(home.path(), &s.base, KEY, &["shot", "https://example.com/"]).await;
    assert_eq!(run.code, Some(4), "the quota exit code: {}", run.stderr);
    assert!(run.stderr.contains("PLAN_QUOTA_EXCEEDED"), "{}", run.stderr);
    assert!(run.stderr.contains("resets at 2026-12-01T00:00:00Z (in 6d0h)"), "{}", run.stderr);
    assert!(run.took < Duration::from_secs(10), "{:?}", run.took);
    assert_eq!(s.seen("POST /v1/screenshot").len(), 1);
}

#[tokio::test]
async fn gets_retry_unknown_codes_and_timeouts_but_not_known_client_errors() {
    let s = Scripted::start().await;
    let home = tempfile::tempdir().unwrap();
    let balance = json!({"plan": "free", "usage": {"used": 3, "limit": 100, "remaining": 97, "percentUsed": 3}, "window": {"resetAt": "2026-12-01T00:00:00Z"}});

    // Rule 1: an unknown code is transient (here on a 400, with an HTTP-date Retry-After in the past).
    s.on(
        "GET /v1/account/balance",
        vec![
            Reply::error(400, "A_CODE_FROM_THE_FUTURE").header("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT"),
            Reply::json(200, balance.clone()),
        ],
    );
    let run = client(home.path(), &s.base, KEY, &["balance", "--json"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(serde_json::from_str::<Value>(&run.stdout).unwrap()["usage"]["used"], 3);
    assert_eq!(s.seen("GET /v1/account/balance").len(), 2);
    assert!(run.stderr.contains("A_CODE_FROM_THE_FUTURE") && run.stderr.contains("retrying in"), "{}", run.stderr);

    // A server slower than --request-timeout: the attempt is abandoned and made again.
    s.on(
        "GET /v1/account/balance",
        vec![Reply::json(200, balance.clone()).delay(Duration::from_secs(6)), Reply::json(200, balance.clone())],
    );
    let run = client(home.path(), &s.base, KEY, &["balance", "--request-timeout", "2"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("3 of 100 actions"), "{}", run.stdout);
    assert!(run.stderr.contains("did not answer in time"), "{}", run.stderr);
    // At least one more attempt (more only if a loaded machine is slower than the timeout).
    assert!(s.seen("GET /v1/account/balance").len() >= 4);

    // A known client error is final: one attempt, the invalid-request exit code.
    s.on("GET /v1/webhooks", vec![Reply::error(400, "VALIDATION_ERROR")]);
    let run = client(home.path(), &s.base, KEY, &["webhooks", "list"]).await;
    assert_eq!(run.code, Some(6), "{}", run.stderr);
    assert_eq!(s.seen("GET /v1/webhooks").len(), 1);
    assert!(!run.stderr.contains("retrying"), "{}", run.stderr);

    // Bounded: a server that keeps failing gets --max-attempts tries.
    s.on("GET /v1/webhooks", vec![Reply::error(503, "SERVICE_UNAVAILABLE").header("retry-after", "0")]);
    let run = client(home.path(), &s.base, KEY, &["webhooks", "list", "--max-attempts", "3"]).await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(s.seen("GET /v1/webhooks").len(), 1 + 3);
    assert!(run.stderr.contains("gave up after 3 attempts"), "{}", run.stderr);

    // Bounded in time: a Retry-After past --max-retry-time is not waited for.
    s.on("GET /v1/webhooks", vec![Reply::error(503, "SERVICE_UNAVAILABLE").header("retry-after", "30")]);
    let run = client(home.path(), &s.base, KEY, &["webhooks", "list", "--max-retry-time", "5"]).await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("retry in 30.0s, past --max-retry-time"), "{}", run.stderr);
    assert!(run.took < Duration::from_secs(10), "{:?}", run.took);

    // Writes without an Idempotency-Key are not repeated.
    s.on("POST /v1/webhooks", vec![Reply::error(500, "INTERNAL_ERROR")]);
    let run = client(home.path(), &s.base, KEY, &["webhooks", "create", "https://example.com/hook"]).await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(s.seen("POST /v1/webhooks").len(), 1);
}

#[tokio::test]
async fn a_server_that_cannot_be_reached_is_retried_then_reported() {
    // A port that was just free: connections are refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let home = tempfile::tempdir().unwrap();
    let server = format!("http://127.0.0.1:{port}");
    let run = client(home.path(), &server, KEY, &["shot", "https://example.com/", "--max-attempts", "3"]).await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(run.stderr.matches("retrying in").count(), 2, "{}", run.stderr);
    assert!(run.stderr.contains("cannot reach the server"), "{}", run.stderr);
    assert!(run.stderr.contains("gave up after 3 attempts"), "{}", run.stderr);
}

/// The real service: a repeated `capture shot` with the same key gets the first job back
/// (`Idempotency-Replayed: true`), and is charged once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_server_replays_a_repeated_shot() {
    let site = red_site().await;
    let app = Serve::start("api,worker,scheduler", &[]).await;
    let key = app.key("free");
    let home = tempfile::tempdir().unwrap();
    let page = format!("{site}/red");
    let shot = |out: &str, extra: &[&str]| {
        let mut args: Vec<String> =
            ["shot", &page, "--width", "320", "--height", "200", "-o"].map(String::from).to_vec();
        args.push(home.path().join(out).display().to_string());
        args.extend(extra.iter().map(|s| s.to_string()));
        let (base, key, home) = (app.base.clone(), key.clone(), home.path().to_path_buf());
        async move { client(&home, &base, &key, &args.iter().map(String::as_str).collect::<Vec<_>>()).await }
    };

    let first = shot("a.png", &["--idempotency-key", "replay-test-0001"]).await;
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let id = job_id(&first.stderr);
    assert!(!first.stderr.contains("replayed"), "{}", first.stderr);

    let again = shot("b.png", &["--idempotency-key", "replay-test-0001"]).await;
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    assert_eq!(job_id(&again.stderr), id, "the same job");
    assert!(again.stderr.contains("replayed"), "{}", again.stderr);
    let (a, b) = (std::fs::read(home.path().join("a.png")).unwrap(), std::fs::read(home.path().join("b.png")).unwrap());
    assert_eq!(a, b);
    let img = image::load_from_memory(&a).unwrap().to_rgba8();
    assert_eq!((img.width(), img.height()), (320, 200));
    let px = img.get_pixel(160, 100).0;
    assert!(px[0] > 240 && px[1] < 15 && px[2] < 15, "red: {px:?}");

    // The header itself, as the CLI saw it.
    let r = reqwest::Client::new()
        .post(format!("{}/v1/screenshot", app.base))
        .bearer_auth(&key)
        .header("idempotency-key", "replay-test-0001")
        .json(&json!({"url": page, "width": 320, "height": 200}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    assert_eq!(r.headers().get("idempotency-replayed").map(|v| v.as_bytes()), Some(&b"true"[..]));

    // Without a key each run is its own job.
    let other = shot("c.png", &[]).await;
    assert_eq!(other.code, Some(0), "{}", other.stderr);
    assert_ne!(job_id(&other.stderr), id);

    let bal = client(home.path(), &app.base, &key, &["balance", "--json"]).await;
    let bal: Value = serde_json::from_str(&bal.stdout).unwrap();
    assert_eq!(bal["usage"]["used"], 2, "the replay was not charged: {bal}");
    app.stop().await;
}

/// `job scr_…: …` on stderr.
fn job_id(stderr: &str) -> String {
    let line = stderr.lines().find(|l| l.starts_with("job ")).unwrap_or_else(|| panic!("no job line in {stderr}"));
    line[4..].split(':').next().unwrap().to_string()
}

async fn red_site() -> String {
    let page = "<!doctype html><html><head><style>html,body{margin:0;background:#ff0000;height:100%}</style></head><body></body></html>";
    let app = axum::Router::new().route("/red", axum::routing::get(move || async move { axum::response::Html(page) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}
