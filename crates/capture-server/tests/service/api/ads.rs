//! Ad generation end to end: a draft of a fixture page (its headline and theme colour come
//! back), bad render inputs answered with 400s naming the allowed values, idempotent
//! replays, the event stream to `done`, one real render checked with ffprobe and ffmpeg
//! (codecs, size, frame rate, duration, audible audio, the brand colour in the frames), and
//! failures that give the actions back.

use crate::helpers::*;
use capture_testkit::ads::*;
use capture_testkit::both_dbs;
use serde_json::{Value, json};
use std::time::Duration;

/// A page that cannot be reached fails its draft with an error and gives the action back;
/// so does a screenshot URL that is not an image. Neither is left pending, and each sends a
/// signed `adshot.failed` webhook.
async fn unreachable_pages_fail_and_refund(db: Db) {
    let site = Site::start(vec![("/page", "text/html", "<h1>not an image</h1>".to_string())]).await;
    let rx = capture_testkit::webhooks::Receiver::start(vec![(200, Duration::ZERO)]).await;
    let app = TestApp::spawn(Opts::full(db).env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true")).await;
    let (_, key) = app.user_with_key("free").await;
    let r = app.post_json(&key, "/v1/webhooks", &json!({"url": rx.url, "events": ["adshot.failed"]})).await;
    assert_eq!(r.status(), 201);
    let ep: Value = r.json().await.unwrap();
    let secret = ep["endpoint"]["secret"].as_str().unwrap().to_string();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        port
    };
    let (status, a, _) =
        post(&app, &key, "/v1/adshot/draft", &json!({"url": format!("http://127.0.0.1:{closed}/")}), None).await;
    assert_eq!(status, 202, "{a}");
    let (status, b, _) =
        post(&app, &key, "/v1/adshot/draft", &json!({"screenshotUrls": [site.url("/page")]}), None).await;
    assert_eq!(status, 202, "{b}");
    // Each was charged one action (they may fail and be refunded before a balance read).
    assert_eq!((a["actions"].as_i64(), b["actions"].as_i64()), (Some(1), Some(1)));
    let a = wait_ad(&app, &key, a["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(a["status"], "failed", "{a}");
    assert!(a["error"].as_str().unwrap().contains("could not be captured"), "{a}");
    let b_id = b["id"].as_str().unwrap().to_string();
    let events = ad_stream(&app, &key, &b_id, Duration::from_secs(120)).await;
    let (last, data) = events.last().unwrap();
    assert_eq!(last, "failed", "{events:?}");
    assert!(data["error"].as_str().unwrap().contains("not an image"), "{data}");
    assert_eq!(used(&app, &key).await, 0, "both actions given back");
    let got = rx.wait_for(2, Duration::from_secs(30)).await;
    let mut failed: Vec<String> = Vec::new();
    for r in &got {
        let v = capture_testkit::webhooks::verify(&secret, r).expect("signed");
        assert_eq!(v["type"], "adshot.failed", "{v}");
        assert_eq!(v["data"]["kind"], "draft", "{v}");
        assert!(!v["data"]["error"].as_str().unwrap().is_empty(), "{v}");
        failed.push(v["data"]["adId"].as_str().unwrap().to_string());
    }
    failed.sort();
    let mut want = vec![a["id"].as_str().unwrap().to_string(), b_id];
    want.sort();
    assert_eq!(failed, want);
}

/// A draft of screenshots only: the pictures become the scenes (a tall one pans), the brand
/// colour is the pictures' dominant one; an oversized or non-image URL fails the draft.
async fn screenshots_alone_make_a_draft(db: Db) {
    // A light page with a large orange band, and a tall page.
    let wide = png(1200, 800, |_, y| if (200..600).contains(&y) { BRAND } else { [250, 250, 250] });
    let tall = png(600, 2000, |_, y| if y % 400 < 200 { [30, 30, 30] } else { [240, 240, 240] });
    let big = vec![0u8; 11 * 1024 * 1024];
    let base = serve_files(vec![
        ("/wide.png", "image/png", wide),
        ("/tall.png", "image/png", tall),
        ("/big.png", "image/png", big),
    ])
    .await;
    let app = TestApp::spawn(Opts::full(db)).await;
    let (_, key) = app.user_with_key("free").await;
    let body = json!({"screenshotUrls": [format!("{base}/wide.png"), format!("{base}/tall.png")]});
    let (status, d, _) = post(&app, &key, "/v1/adshot/draft", &body, None).await;
    assert_eq!(status, 202, "{d}");
    let d = wait_ad(&app, &key, d["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(d["status"], "done", "{d}");
    let draft = &d["draft"];
    assert_eq!(draft["brandColorSource"], "screenshot", "{draft}");
    let c = capture_media_hex(draft["brandColor"].as_str().unwrap());
    assert!((0..3).all(|i| (c[i] as i32 - BRAND[i] as i32).abs() <= 24), "{draft}");
    let scenes = draft["scenes"].as_array().unwrap();
    assert!(scenes.iter().all(|s| s["source"] == "screenshot"), "{draft}");
    assert!(scenes.iter().any(|s| s["motion"] == "panDown"), "the tall one pans: {draft}");
    assert!(!draft["script"].as_str().unwrap().is_empty());
    assert_eq!(used(&app, &key).await, 1);

    let (_, bad, _) =
        post(&app, &key, "/v1/adshot/draft", &json!({"screenshotUrls": [format!("{base}/big.png")]}), None).await;
    let bad = wait_ad(&app, &key, bad["id"].as_str().unwrap(), Duration::from_secs(60)).await;
    assert_eq!(bad["status"], "failed");
    assert!(bad["error"].as_str().unwrap().contains("larger than 10 MB"), "{bad}");
    assert_eq!(used(&app, &key).await, 1, "the failed one was given back");
}

both_dbs!(unreachable_pages_fail_and_refund);
both_dbs!(screenshots_alone_make_a_draft);
