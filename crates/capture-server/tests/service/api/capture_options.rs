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
        (json!({"url": u, "blockAds": "yes"}), "blockAds"),
        (json!({"url": u, "headers": {"Host": "evil.example"}}), "headers.Host"),
        (json!({"url": u, "headers": {"X-Split": "a\r\nInjected: 1"}}), "headers.X-Split"),
        (json!({"url": u, "headers": {"X-Count": 5}}), "headers.X-Count"),
        (json!({"url": u, "cookies": [{"name": "sid"}]}), "cookies[0].value"),
        (json!({"url": u, "cookies": [{"name": "sid", "value": "v", "sameSite": "None"}]}), "cookies[0].sameSite"),
        (json!({"url": u, "cookies": [{"name": "sid", "value": "v", "domain": "a b"}]}), "cookies[0].domain"),
        (json!({"url": u, "httpAuth": {"username": "ann:x", "password": "p"}}), "httpAuth.username"),
        (json!({"url": u, "httpAuth": {"username": "ann"}}), "httpAuth.password"),
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

/// `/members` needs HTTP Basic `ann:pw-5521-s3cret`, the `sid` cookie and the `X-Api-Key`
/// header: a green page with them, a red 401 page without.
async fn members_site() -> String {
    use axum::http::{HeaderMap, StatusCode, header};
    use axum::response::IntoResponse;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(|h: HeaderMap| async move {
        let get = |n: &str| h.get(n).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
        // base64("ann:pw-5521-s3cret")
        let authed = get("authorization") == "Basic YW5uOnB3LTU1MjEtczNjcmV0";
        if authed && get("cookie") == "sid=sess-9f2c1e" && get("x-api-key") == "key-7d41b0" {
            let page =
                "<html><head><title>members</title></head><body style='margin:0;background:#00ff00'></body></html>";
            return ([(header::CONTENT_TYPE, "text/html")], page).into_response();
        }
        let page = "<html><head><title>sign in</title></head><body style='margin:0;background:#ff0000'></body></html>";
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Basic realm=\"m\""), (header::CONTENT_TYPE, "text/html")],
            page,
        )
            .into_response()
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}/members")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn credentials_reach_the_site_and_are_never_shown_nor_kept() {
    let url = members_site().await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("pro").await;
    let (_, other) = app.user_with_key("pro").await;
    let secrets = ["key-7d41b0", "sess-9f2c1e", "pw-5521-s3cret"];
    let body = json!({"url": url, "delay": 1500,
        "headers": {"X-Api-Key": "key-7d41b0"},
        "cookies": [{"name": "sid", "value": "sess-9f2c1e", "httpOnly": true}],
        "httpAuth": {"username": "ann", "password": "pw-5521-s3cret"}});
    let created = app.create(&key, body).await;
    let id = created["id"].as_str().unwrap().to_string();
    let set = json!({"headers": ["X-Api-Key"], "cookies": ["sid"], "httpAuth": true});
    assert_eq!(created["credentials"], set, "{created}");

    // At rest while the job waits or runs: sealed, and not in the options.
    let row = app.state.store.screenshot(&id).await.unwrap().unwrap();
    let sealed = row.credentials.clone().expect("the credentials are kept until the job ends");
    for s in secrets {
        assert!(!sealed.contains(s) && !row.options.contains(s), "{s} in the row at rest");
    }

    let done = app.wait(&key, &id).await;
    assert_eq!((done["status"].as_str(), done["pageTitle"].as_str()), (Some("done"), Some("members")), "{done}");
    assert_eq!(done["credentials"], set);
    let (status, _, bytes) = app.fetch(done["publicUrl"].as_str().unwrap()).await;
    assert_eq!(status, 200);
    assert_px(&decode(&bytes), 640, 400, [0, 255, 0]);

    // Every way the job is shown names them and never gives their values.
    let list: Value = app.get(&key, "/v1/screenshots").await.json().await.unwrap();
    let stream = job_stream(&app, &key, &id, std::time::Duration::from_secs(5)).await;
    let shown = format!("{done} {list} {stream:?}");
    for s in secrets {
        assert!(!shown.contains(s), "{s} shown: {shown}");
    }
    // Once the job has run they are gone from the database.
    assert_eq!(app.state.store.screenshot(&id).await.unwrap().unwrap().credentials, None);
    // Another account does not see the job at all.
    assert_eq!(app.get(&other, &format!("/v1/screenshot/{id}")).await.status().as_u16(), 404);

    // Without them, the same page is the sign-in page.
    let (job, bytes) = shot(&app, &key, json!({"url": url})).await;
    assert_eq!(job["pageTitle"], "sign in");
    assert!(job.get("credentials").is_none(), "{job}");
    assert_px(&decode(&bytes), 640, 400, [255, 0, 0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn block_options_refuse_what_the_lists_name() {
    let site = Site::start(vec![
        ("/shop", "text/html", "<html><head><title>shop</title></head><body style='margin:0;background:#00ff00'><img src='/img/banner-ad.png' width='300' height='300' style='position:absolute;left:0;top:0'><script src='/js/beacon.js'></script></body></html>".into()),
        ("/js/beacon.js", "text/javascript", "document.title += '+beacon';".into()),
    ])
    .await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("pro").await;
    let (job, bytes) =
        shot(&app, &key, json!({"url": site.url("/shop"), "blockAds": true, "blockTrackers": true})).await;
    assert_eq!(job["pageTitle"], "shop", "{job}");
    let tags: Vec<&str> = job["tags"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(tags.contains(&"ads-blocked") && tags.contains(&"trackers-blocked"), "{tags:?}");
    assert_px(&decode(&bytes), 150, 150, [0, 255, 0]);
    let (job, _) = shot(&app, &key, json!({"url": site.url("/shop")})).await;
    assert_eq!(job["pageTitle"], "shop+beacon", "{job}");
}
