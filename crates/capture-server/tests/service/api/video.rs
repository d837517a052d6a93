//! Scrolling videos as a client gets them: `format: mp4 | webm | gif` with `scroll` records
//! the page moving from its top to its end (or to an element) at the viewport's size, checked
//! with ffprobe and by the colours of its first and last frames; charged per started 10 s.

use serde_json::{Value, json};

use crate::helpers::*;
use capture_testkit::captures::*;

fn near(px: &image::Rgb<u8>, want: [u8; 3]) -> bool {
    px.0.iter().zip(want).all(|(a, b)| (i16::from(*a) - i16::from(b)).abs() <= 40)
}

/// The finished job's file, probed, with its first and last frames.
async fn video_of(
    app: &TestApp,
    key: &str,
    body: &Value,
) -> (Value, String, capture_media::MediaInfo, image::RgbImage, image::RgbImage) {
    let r = app.post_json(key, "/v1/screenshot", body).await;
    assert_eq!(r.status().as_u16(), 202);
    let job: Value = r.json().await.unwrap();
    let done = app.wait(key, job["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "done", "{done}");
    let (status, ct, bytes) = app.fetch(done["publicUrl"].as_str().unwrap()).await;
    assert_eq!(status, 200);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("v.{}", done["format"].as_str().unwrap()));
    std::fs::write(&path, &bytes).unwrap();
    let info = capture_media::probe(&path).await.unwrap();
    let first = capture_media::frame_at(&path, 0.0).await.unwrap();
    let last = capture_media::frame_at(&path, (info.duration - 0.05).max(0.0)).await.unwrap();
    (done, ct, info, first, last)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_scrolling_video_shows_the_top_first_and_the_end_last() {
    let site = Site::start(pages()).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("pro").await;
    // /tall: six 1000 px bands, red at the top … magenta at the end.
    let (red, blue, magenta) = ([255, 0, 0], [0, 0, 255], [255, 0, 255]);

    let (done, ct, info, first, last) = video_of(
        &app,
        &key,
        &json!({"url": site.url("/tall"), "width": 320, "height": 200, "format": "mp4", "scroll": {"durationMs": 2000}}),
    )
    .await;
    assert_eq!(ct, "video/mp4");
    let v = info.video().unwrap();
    assert_eq!((v.codec.as_str(), v.width, v.height), ("h264", Some(320), Some(200)), "{info:?}");
    assert!((info.duration - 2.0).abs() < 0.1, "{info:?}");
    assert_eq!(v.frame_rate, Some(25.0));
    assert_eq!((done["width"].as_i64(), done["height"].as_i64()), (Some(320), Some(200)));
    assert!(near(first.get_pixel(160, 100), red), "first frame {:?}", first.get_pixel(160, 100));
    assert!(near(last.get_pixel(160, 100), magenta), "last frame {:?}", last.get_pixel(160, 100));
    // The poster is the top of the page.
    let (_, thumb_ct, thumb) = app.fetch(done["thumbnailUrl"].as_str().unwrap()).await;
    assert_eq!(thumb_ct, "image/png");
    let thumb = decode(&thumb);
    let p = thumb.get_pixel(10, 10).0;
    assert!(near(&image::Rgb([p[0], p[1], p[2]]), red), "poster {p:?}");

    // WebM (VP9) stopping at an element; a GIF scrolling back to the top.
    let (_, ct, info, first, last) = video_of(
        &app,
        &key,
        &json!({"url": site.url("/tall"), "width": 320, "height": 200, "format": "webm",
            "scroll": {"durationMs": 1500, "easing": "linear", "untilSelector": "div:nth-child(3)"}}),
    )
    .await;
    assert_eq!((ct.as_str(), info.video().unwrap().codec.as_str()), ("video/webm", "vp9"), "{info:?}");
    assert!((info.duration - 1.5).abs() < 0.1, "{info:?}");
    assert!(
        near(first.get_pixel(160, 100), red) && near(last.get_pixel(160, 100), blue),
        "{:?}",
        last.get_pixel(160, 100)
    );
    let (_, ct, info, first, last) = video_of(
        &app,
        &key,
        &json!({"url": site.url("/tall"), "width": 800, "height": 200, "format": "gif",
            "scroll": {"durationMs": 1000, "scrollBack": true}}),
    )
    .await;
    let v = info.video().unwrap();
    // A GIF is at most 640 px wide.
    assert_eq!(
        (ct.as_str(), v.codec.as_str(), v.width, v.height),
        ("image/gif", "gif", Some(640), Some(160)),
        "{info:?}"
    );
    assert!(near(first.get_pixel(320, 80), red) && near(last.get_pixel(320, 80), red), "{:?}", last.get_pixel(320, 80));

    // Charged per started 10 s: 3 videos of up to 2 s, then one of 10.001 s.
    assert_eq!(used(&app, &key).await, 3);
    let r = app
        .post_json(
            &key,
            "/v1/screenshot",
            &json!({"url": site.url("/red"), "width": 160, "height": 100, "format": "mp4",
            "scroll": {"durationMs": 10001}}),
        )
        .await;
    assert_eq!(r.status().as_u16(), 202);
    assert_eq!(used(&app, &key).await, 5);

    // An element that is not there fails the job, uncharged; options for images are refused.
    let r = app
        .post_json(
            &key,
            "/v1/screenshot",
            &json!({"url": site.url("/tall"), "format": "mp4",
            "scroll": {"durationMs": 1000, "untilSelector": "#nowhere"}}),
        )
        .await;
    let job: Value = r.json().await.unwrap();
    let failed = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"], "scroll.untilSelector '#nowhere' matched nothing on the page");
    let r = app
        .post_json(&key, "/v1/screenshot", &json!({"url": site.url("/tall"), "format": "gif", "fullPage": true}))
        .await;
    let v: Value = r.json().await.unwrap();
    assert_eq!((v["code"].as_str(), v["details"]["field"].as_str()), (Some("VALIDATION_ERROR"), Some("fullPage")));
}
