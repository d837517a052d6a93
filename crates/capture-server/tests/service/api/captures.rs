//! Captures through the whole service: options, formats, failures, uploads, sharing,
//! streams — against pages served on 127.0.0.1.

use crate::helpers::*;
use capture_testkit::captures::*;
use serde_json::{Value, json};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn captures_honour_every_option() {
    let site = Site::start(pages()).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("pro").await;

    // Default PNG of a red page: size, pixel, title, thumbnail, absolute URLs.
    let (job, bytes) = shot(&app, &key, json!({"url": site.url("/red"), "waitUntil": "load"})).await;
    let img = decode(&bytes);
    assert_eq!((img.width(), img.height()), (1280, 800));
    assert_px(&img, 640, 400, [255, 0, 0]);
    assert_eq!(job["width"], 1280);
    assert_eq!(job["height"], 800);
    assert_eq!(job["pageTitle"], "Solid #ff0000");
    assert_eq!(job["format"], "png");
    assert!(job["publicUrl"].as_str().unwrap().starts_with(&app.base));
    assert!(job["completedAt"].is_string());
    let (s, ct, thumb) = app.fetch(job["thumbnailUrl"].as_str().unwrap()).await;
    assert_eq!((s, ct.as_str()), (200, "image/png"));
    let t = decode(&thumb);
    assert!(t.width() <= 320 && t.width() >= 200, "thumbnail {}x{}", t.width(), t.height());
    assert_px(&t, t.width() / 2, t.height() / 2, [255, 0, 0]);

    // Formats and scale.
    let (_, bytes) =
        shot(&app, &key, json!({"url": site.url("/blue"), "format": "jpeg", "width": 400, "height": 300})).await;
    assert!(bytes.starts_with(&[0xFF, 0xD8, 0xFF]));
    let img = decode(&bytes);
    assert_eq!((img.width(), img.height()), (400, 300));
    assert_px(&img, 200, 150, [0, 0, 255]);
    let (_, bytes) =
        shot(&app, &key, json!({"url": site.url("/blue"), "format": "webp", "width": 400, "height": 300})).await;
    assert_eq!(&bytes[8..12], b"WEBP");
    let (job, bytes) =
        shot(&app, &key, json!({"url": site.url("/red"), "width": 400, "height": 300, "deviceScaleFactor": 2})).await;
    let img = decode(&bytes);
    assert_eq!((img.width(), img.height()), (800, 600));
    assert_eq!(job["width"], 800);

    // Full page, dark mode, clickBefore, waitFor, preScreenshotJs, cookie consent.
    let (job, bytes) =
        shot(&app, &key, json!({"url": site.url("/tall"), "fullPage": true, "width": 500, "height": 400})).await;
    let img = decode(&bytes);
    assert_eq!((img.width(), img.height()), (500, 6000), "{job}");
    assert_px(&img, 250, 500, [255, 0, 0]);
    assert_px(&img, 250, 5500, [255, 0, 255]);
    let (_, bytes) =
        shot(&app, &key, json!({"url": site.url("/dark"), "darkMode": true, "width": 300, "height": 200})).await;
    assert_px(&decode(&bytes), 150, 100, [0, 0, 0]);
    let (_, bytes) = shot(&app, &key, json!({"url": site.url("/dark"), "width": 300, "height": 200})).await;
    assert_px(&decode(&bytes), 150, 100, [255, 255, 255]);
    let (_, bytes) =
        shot(&app, &key, json!({"url": site.url("/click"), "clickBefore": "#go", "width": 300, "height": 200})).await;
    assert_px(&decode(&bytes), 250, 150, [0, 255, 0]);
    let (_, bytes) = shot(
        &app,
        &key,
        json!({"url": site.url("/late"), "waitFor": "#ready", "waitUntil": "load", "width": 300, "height": 200}),
    )
    .await;
    assert_px(&decode(&bytes), 150, 100, [0, 0, 255]);
    let (job, bytes) = shot(
        &app,
        &key,
        json!({"url": site.url("/red"), "waitFor": "#never", "timeoutMs": 1000, "width": 300, "height": 200}),
    )
    .await;
    assert_px(&decode(&bytes), 150, 100, [255, 0, 0]);
    assert!(job["tags"].as_array().unwrap().iter().any(|t| t == "wait-for-timeout"), "{job}");
    let (_, bytes) = shot(
        &app,
        &key,
        json!({"url": site.url("/late"), "delay": 900, "waitUntil": "load", "width": 300, "height": 200}),
    )
    .await;
    assert_px(&decode(&bytes), 150, 100, [0, 0, 255]);
    let (_, bytes) = shot(&app, &key, json!({"url": site.url("/red"), "preScreenshotJs": "document.body.style.background = '#00ff00'", "width": 300, "height": 200})).await;
    assert_px(&decode(&bytes), 150, 100, [0, 255, 0]);
    let (_, bytes) = shot(&app, &key, json!({"url": site.url("/consent"), "width": 300, "height": 200})).await;
    assert_px(&decode(&bytes), 150, 100, [255, 255, 255]);
    let (_, bytes) =
        shot(&app, &key, json!({"url": site.url("/consent"), "cookieConsent": "none", "width": 300, "height": 200}))
            .await;
    assert_px(&decode(&bytes), 150, 100, [255, 0, 255]);

    // PDF: publicUrl ends in .pdf, real PDF bytes, download with attachment disposition.
    let (job, bytes) = shot(&app, &key, json!({"url": site.url("/red"), "pdf": true})).await;
    assert!(job["publicUrl"].as_str().unwrap().ends_with(".pdf"));
    assert_eq!(job["format"], "pdf");
    assert!(job["height"].is_null());
    assert!(bytes.starts_with(b"%PDF-"));
    let id = job["id"].as_str().unwrap();
    let r = app.get(&key, &format!("/api/pdf/download/{id}")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/pdf");
    let cd = r.headers()["content-disposition"].to_str().unwrap().to_string();
    assert!(cd.starts_with("attachment; filename=\"") && cd.ends_with(".pdf\""), "{cd}");
    assert_eq!(r.bytes().await.unwrap().to_vec(), bytes);
    let png_id = app.create(&key, json!({"url": site.url("/red")})).await["id"].as_str().unwrap().to_string();
    app.wait(&key, &png_id).await;
    assert_eq!(app.get(&key, &format!("/api/pdf/download/{png_id}")).await.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failures_are_honest_and_give_the_action_back() {
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free").await;
    // A port nobody listens on.
    let port = { std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port() };
    let job = app.create(&key, json!({"url": format!("http://127.0.0.1:{port}/")})).await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "failed");
    let err = done["error"].as_str().unwrap().to_lowercase();
    assert!(err.contains("refused") || err.contains("connect"), "{err}");
    assert!(done["publicUrl"].is_null());
    let job = app.create(&key, json!({"url": "http://no-such-host.invalid/"})).await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "failed");
    assert!(
        done["error"].as_str().unwrap().to_lowercase().contains("dns")
            || done["error"].as_str().unwrap().contains("NAME_NOT_RESOLVED"),
        "{done}"
    );
    let b: Value = app.get(&key, "/v1/account/balance").await.json().await.unwrap();
    assert_eq!(b["usage"]["used"], 0, "failed jobs give their action back: {b}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_egress_guard_blocks_private_addresses_by_default() {
    let site = Site::start(pages()).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite).env("CAPTURE_EGRESS_ALLOW", "")).await;
    let (_, key) = app.user_with_key("free").await;
    // Only loopback targets: tests never send traffic to other private ranges, even ones
    // the guard is expected to block (the ranges themselves are unit-tested in capture-browser).
    let localhost = site.url("/red").replace("127.0.0.1", "localhost");
    let v6 = site.url("/red").replace("127.0.0.1", "[::1]");
    for url in [site.url("/red"), localhost, v6] {
        let job = app.create(&key, json!({"url": url, "timeoutMs": 3000})).await;
        let done = app.wait(&key, job["id"].as_str().unwrap()).await;
        assert_eq!(done["status"], "failed", "{url} must be blocked: {done}");
        let e = done["error"].as_str().unwrap().to_lowercase();
        assert!(e.contains("block") || e.contains("private") || e.contains("egress"), "{url}: {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn streams_report_each_status_then_the_result() {
    let site = Site::start(pages()).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite).env("CAPTURE_SSE_HEARTBEAT", "300ms")).await;
    let (_, key) = app.user_with_key("free").await;
    let job = app.create(&key, json!({"url": site.url("/red"), "delay": 1200, "width": 300, "height": 200})).await;
    let id = job["id"].as_str().unwrap();
    let events = job_stream(&app, &key, id, Duration::from_secs(60)).await;
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    let statuses: Vec<String> = events
        .iter()
        .filter(|(n, _)| n == "status")
        .map(|(_, d)| serde_json::from_str::<Value>(d).unwrap()["status"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(statuses, ["pending", "processing", "done"], "{events:?}");
    assert!(names.contains(&"ping"), "heartbeats every 300ms during a 1.2s capture: {names:?}");
    let (last, data) = events.last().unwrap();
    assert_eq!(last, "done");
    let d: Value = serde_json::from_str(data).unwrap();
    assert!(d["publicUrl"].as_str().unwrap().starts_with("http"));
    // Opened after the end: the final event at once.
    let t = std::time::Instant::now();
    let events = job_stream(&app, &key, id, Duration::from_secs(10)).await;
    assert_eq!(events.last().unwrap().0, "done");
    assert!(t.elapsed() < Duration::from_secs(3));
    // A failed job ends with `failed` and its error.
    let job = app.create(&key, json!({"url": "http://127.0.0.1:9/"})).await;
    let events = job_stream(&app, &key, job["id"].as_str().unwrap(), Duration::from_secs(60)).await;
    let (last, data) = events.last().unwrap();
    assert_eq!(last, "failed");
    let d: Value = serde_json::from_str(data).unwrap();
    assert_eq!(d["status"], "failed");
    assert!(d["error"].as_str().is_some_and(|e| !e.is_empty()));
    // Another account cannot open it.
    let (_, other) = app.user_with_key("free").await;
    assert_eq!(app.get(&other, &format!("/v1/screenshot/{id}/stream")).await.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stream_ends_with_timeout_after_the_maximum_duration() {
    // API only: the job stays pending, so only the time limit can end the stream.
    let app = TestApp::spawn(
        Opts::api(Db::Sqlite).env("CAPTURE_SSE_MAX_DURATION", "1s").env("CAPTURE_SSE_HEARTBEAT", "200ms"),
    )
    .await;
    let (_, key) = app.user_with_key("free").await;
    let job = app.create(&key, json!({"url": "https://example.com"})).await;
    let events = job_stream(&app, &key, job["id"].as_str().unwrap(), Duration::from_secs(10)).await;
    assert_eq!(events.first().unwrap().0, "status");
    assert_eq!(events.last().unwrap().0, "timeout");
    assert!(events.iter().any(|(n, _)| n == "ping"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uploads_become_jobs_and_html_is_rendered() {
    let app = TestApp::spawn(Opts::full(Db::Sqlite).env("CAPTURE_MAX_UPLOAD_BYTES", "200000")).await;
    let (_, key) = app.user_with_key("free").await;
    let upload = |form: reqwest::multipart::Form, idem: Option<&str>| {
        let mut r = app.client.post(app.url("/v1/screenshot/upload")).bearer_auth(&key).multipart(form);
        if let Some(k) = idem {
            r = r.header("idempotency-key", k);
        }
        r.send()
    };
    // A PNG.
    let mut png = Vec::new();
    image::RgbaImage::from_pixel(640, 480, image::Rgba([0, 128, 255, 255]))
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    let form = || {
        reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(png.clone()).file_name("shot.png").mime_str("image/png").unwrap(),
        )
    };
    let r = upload(form(), Some("upload-key-0001")).await.unwrap();
    assert_eq!(r.status(), 201);
    let job: Value = r.json().await.unwrap();
    assert_eq!(job["status"], "done");
    assert_eq!((job["width"].as_i64(), job["height"].as_i64()), (Some(640), Some(480)));
    let (_, _, bytes) = app.fetch(job["publicUrl"].as_str().unwrap()).await;
    assert_eq!(bytes, png);
    let (_, _, thumb) = app.fetch(job["thumbnailUrl"].as_str().unwrap()).await;
    let t = decode(&thumb);
    assert_eq!(t.width(), 320);
    assert_px(&t, 10, 10, [0, 128, 255]);
    let r = upload(form(), Some("upload-key-0001")).await.unwrap();
    assert_eq!(r.headers()["idempotency-replayed"], "true");
    assert_eq!(r.json::<Value>().await.unwrap()["id"], job["id"]);

    // A PDF.
    let pdf = b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj 3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n".to_vec();
    let r = upload(
        reqwest::multipart::Form::new().part("file", reqwest::multipart::Part::bytes(pdf.clone()).file_name("doc.pdf")),
        None,
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 201);
    let job: Value = r.json().await.unwrap();
    assert!(job["publicUrl"].as_str().unwrap().ends_with(".pdf"));
    assert_eq!(job["format"], "pdf");

    // HTML is rendered with the form's capture options.
    let html = solid("#00ff00");
    let form = reqwest::multipart::Form::new()
        .part("file", reqwest::multipart::Part::text(html).file_name("page.html").mime_str("text/html").unwrap())
        .text("width", "300")
        .text("height", "200");
    let r = upload(form, None).await.unwrap();
    assert_eq!(r.status(), 202);
    let job: Value = r.json().await.unwrap();
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "done", "{done}");
    let (_, _, bytes) = app.fetch(done["publicUrl"].as_str().unwrap()).await;
    let img = decode(&bytes);
    assert_eq!((img.width(), img.height()), (300, 200));
    assert_px(&img, 150, 100, [0, 255, 0]);

    // Bad and oversized files.
    let r = upload(
        reqwest::multipart::Form::new()
            .part("file", reqwest::multipart::Part::bytes(b"GIF89a....".to_vec()).file_name("x.gif")),
        None,
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["code"], "VALIDATION_ERROR");
    assert_eq!(v["details"]["field"], "file");
    let r = upload(reqwest::multipart::Form::new().text("width", "300"), None).await.unwrap();
    assert_eq!(r.status(), 400);
    let big = vec![0x89u8; 300_000];
    let r = upload(
        reqwest::multipart::Form::new().part("file", reqwest::multipart::Part::bytes(big).file_name("big.png")),
        None,
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 413);
    assert_eq!(r.json::<Value>().await.unwrap()["code"], "PAYLOAD_TOO_LARGE");
    let r = upload(
        reqwest::multipart::Form::new()
            .part("file", reqwest::multipart::Part::bytes(png.clone()).file_name("a.png"))
            .text("width", "5"),
        None,
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 201, "options are ignored for images");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shared_captures_are_public_until_the_link_is_revoked() {
    let site = Site::start(pages()).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free").await;
    let (job, _) = shot(&app, &key, json!({"url": site.url("/red"), "width": 300, "height": 200})).await;
    let id = job["id"].as_str().unwrap();
    let r = app.client.post(app.url(&format!("/api/screenshots/{id}/share"))).bearer_auth(&key).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["screenshotId"], id);
    let share = v["shareUrl"].as_str().unwrap().to_string();
    assert!(share.starts_with(&app.base));
    // No credential needed; Open Graph tags point at the image.
    let page = reqwest::get(&share).await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("og:image"), "{html}");
    assert!(html.contains(job["publicUrl"].as_str().unwrap()));
    assert!(html.contains("og:title"));
    let r = app.client.delete(app.url(&format!("/api/screenshots/{id}/share"))).bearer_auth(&key).send().await.unwrap();
    assert!(r.status().is_success());
    assert_eq!(reqwest::get(&share).await.unwrap().status(), 404);
}
