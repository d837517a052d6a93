//! The capture options of issue 26 through the REST API: from the request to the image, a
//! missing element given back, bad values refused naming their field.

use crate::helpers::*;
use capture_testkit::captures::*;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn region_and_size_options_go_from_the_request_to_the_image() {
    let site = Site::start(pages()).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("pro").await;

    // One element: the /click page's 100×40 button, at deviceScaleFactor 2.
    let (job, bytes) =
        shot(&app, &key, json!({"url": site.url("/click"), "selector": "#go", "deviceScaleFactor": 2})).await;
    assert_eq!((decode(&bytes).width(), decode(&bytes).height()), (200, 80));
    assert_eq!((job["width"].as_u64(), job["height"].as_u64()), (Some(200), Some(80)));
    // The finished job says what the page was.
    let m = &job["metadata"];
    assert_eq!((m["httpStatus"].as_u64(), m["title"].as_str()), (Some(200), Some("Click")), "{job}");
    assert_eq!(m["finalUrl"], site.url("/click"));
    assert_eq!(m["redirects"], json!([]));
    assert_eq!(m["favicon"], site.url("/favicon.ico"));
    assert_eq!(m["openGraph"]["title"], Value::Null);

    // A clip of the whole page: rows 2950-3050 of /tall are blue, then yellow.
    let body = json!({"url": site.url("/tall"), "fullPage": true, "width": 500, "height": 400,
        "clip": {"x": 0, "y": 2950, "width": 500, "height": 100}});
    let (_, bytes) = shot(&app, &key, body).await;
    let img = decode(&bytes);
    assert_eq!((img.width(), img.height()), (500, 100));
    assert_px(&img, 250, 25, [0, 0, 255]);
    assert_px(&img, 250, 75, [255, 255, 0]);

    // imageWidth: the 1280×800 view at half size; hideSelectors uncovers the page.
    let (_, bytes) = shot(&app, &key, json!({"url": site.url("/red"), "imageWidth": 640})).await;
    let img = decode(&bytes);
    assert_eq!((img.width(), img.height()), (640, 400));
    assert_px(&img, 320, 200, [255, 0, 0]);
    let body = json!({"url": site.url("/consent"), "cookieConsent": "none", "width": 300, "height": 200,
        "hideSelectors": ["#onetrust-banner-sdk"]});
    let (_, bytes) = shot(&app, &key, body).await;
    assert_px(&decode(&bytes), 150, 100, [255, 255, 255]);

    // A device preset from the catalogue GET /v1/devices lists.
    let list: Value = app.get(&key, "/v1/devices").await.json().await.unwrap();
    let se = list["data"].as_array().unwrap().iter().find(|d| d["name"] == "iphone-se").cloned().unwrap();
    assert_eq!(
        (se["width"].as_u64(), se["height"].as_u64(), se["kind"].as_str()),
        (Some(375), Some(667), Some("phone"))
    );
    assert_eq!((se["deviceScaleFactor"].as_f64(), se["touch"].as_bool()), (Some(2.0), Some(true)));
    let (_, bytes) = shot(&app, &key, json!({"url": site.url("/red"), "device": "iphone-se"})).await;
    assert_eq!((decode(&bytes).width(), decode(&bytes).height()), (750, 1334));

    // Each capture cost its one action.
    let b: Value = app.get(&key, "/v1/account/balance").await.json().await.unwrap();
    assert_eq!(b["usage"]["used"], 5, "{b}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_missing_element_fails_the_job_and_gives_the_action_back() {
    let site = Site::start(pages()).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free").await;
    let job = app.create(&key, json!({"url": site.url("/red"), "selector": "#nowhere", "timeoutMs": 1000})).await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(done["error"], "selector: no element matches '#nowhere' after 1000 ms");
    assert!(done["publicUrl"].is_null());
    let b: Value = app.get(&key, "/v1/account/balance").await.json().await.unwrap();
    assert_eq!(b["usage"]["used"], 0, "the action is given back: {b}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_page_that_fails_its_conditions_fails_the_job_and_is_charged() {
    let site = Site::start(pages()).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free").await;
    let job = app
        .create(&key, json!({"url": site.url("/click"), "failOnHttpError": true, "failIfContentContains": ["Go"]}))
        .await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(done["error"], "failIfContentContains: the page's text contains 'Go'");
    let job = app.create(&key, json!({"url": site.url("/click"), "failIfContentMissing": ["Checkout"]})).await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(done["error"], "failIfContentMissing: the page's text lacks 'Checkout'", "{done}");
    let b: Value = app.get(&key, "/v1/account/balance").await.json().await.unwrap();
    assert_eq!(b["usage"]["used"], 2, "the page ran, so both are charged: {b}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_option_values_are_refused_naming_the_field() {
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free").await;
    let u = "https://example.com/";
    for (body, field) in [
        (json!({"url": u, "selector": "#a", "clip": {"x": 0, "y": 0, "width": 10, "height": 10}}), "clip"),
        (json!({"url": u, "clip": {"x": 0, "y": 0, "width": 10, "height": 10, "depth": 1}}), "clip.depth"),
        (json!({"url": u, "clip": {"x": 0, "y": 0, "width": 10}}), "clip.height"),
        (json!({"url": u, "clip": {"x": 1300, "y": 0, "width": 10, "height": 10}}), "clip"),
        (json!({"url": u, "hideSelectors": [".a", "x".repeat(1025)]}), "hideSelectors[1]"),
        (json!({"url": u, "hideSelectors": vec![".a"; 51]}), "hideSelectors"),
        (json!({"url": u, "hideSelectors": [".a", 3]}), "hideSelectors[1]"),
        (json!({"url": u, "quality": 70}), "quality"),
        (json!({"url": u, "format": "jpeg", "quality": 101}), "quality"),
        (json!({"url": u, "format": "jpeg", "omitBackground": true}), "omitBackground"),
        (json!({"url": u, "pdf": true, "selector": "#a"}), "selector"),
        (json!({"url": u, "imageWidth": 10000}), "imageWidth"),
        (json!({"url": u, "timezone": "Europe/Atlantis"}), "timezone"),
        (json!({"url": u, "locale": "en_US"}), "locale"),
        (json!({"url": u, "geolocation": {"latitude": 100, "longitude": 0}}), "geolocation.latitude"),
        (json!({"url": u, "geolocation": {"latitude": 1}}), "geolocation.longitude"),
        (json!({"url": u, "mediaType": "tv"}), "mediaType"),
        (json!({"url": u, "reducedMotion": "yes"}), "reducedMotion"),
        (json!({"url": u, "failOnHttpError": 1}), "failOnHttpError"),
        (json!({"url": u, "failIfContentContains": vec!["x"; 11]}), "failIfContentContains"),
        (json!({"url": u, "failIfContentMissing": [""]}), "failIfContentMissing[0]"),
        (json!({"url": u, "device": "nokia-3310"}), "device"),
        (json!({"url": u, "blockResources": ["image", "gif"]}), "blockResources[1]"),
        (json!({"url": u, "blockRequests": ["*/ads/*", ""]}), "blockRequests[1]"),
        (json!({"url": u, "userAgent": "x".repeat(513)}), "userAgent"),
    ] {
        let r = app.post_json(&key, "/v1/screenshot", &body).await;
        let status = r.status().as_u16();
        let v: Value = r.json().await.unwrap();
        assert_eq!((status, v["code"].as_str()), (400, Some("VALIDATION_ERROR")), "{body}: {v}");
        assert_eq!(v["details"]["field"], field, "{body}: {v}");
    }
    let b: Value = app.get(&key, "/v1/account/balance").await.json().await.unwrap();
    assert_eq!(b["usage"]["used"], 0, "{b}");
}
