//! `POST /v1/screenshots/bulk` as a client uses it: many captures in one call, all accepted
//! or none, the jobs in the request's order, one batch to list, one `batch.completed` webhook.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::*;
use capture_testkit::captures::*;
use capture_testkit::webhooks::{Receiver, create_endpoint, verify};

async fn bulk(app: &TestApp, key: &str, body: &Value, idem: Option<&str>) -> (u16, Value) {
    let mut r = app.client.post(app.url("/v1/screenshots/bulk")).bearer_auth(key).json(body);
    if let Some(k) = idem {
        r = r.header("idempotency-key", k);
    }
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bulk_request_creates_every_job_in_order_and_says_when_the_batch_is_done() {
    let site = Site::start(pages()).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite).env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true")).await;
    let (_, key) = app.user_with_key("free").await;
    let (_, bob) = app.user_with_key("free").await;
    let hooks = Receiver::start(vec![(200, Duration::ZERO)]).await;
    let ep = create_endpoint(&app, &key, json!({"url": hooks.url, "events": ["batch.completed"]})).await;
    let secret = ep["secret"].as_str().map(str::to_string).unwrap_or_default();

    let body = json!({
        "defaults": {"width": 320, "height": 200, "format": "png"},
        "requests": [
            {"url": site.url("/red")},
            {"url": site.url("/blue"), "width": 160},
            {"url": site.url("/red"), "format": "jpeg"},
        ]
    });
    let (status, created) = bulk(&app, &key, &body, Some("bulk-key-0001")).await;
    assert_eq!(status, 202, "{created}");
    let batch = created["batchId"].as_str().unwrap().to_string();
    assert!(batch.starts_with("bat_"));
    let jobs = created["data"].as_array().unwrap();
    assert_eq!(
        jobs.iter().map(|j| j["url"].as_str().unwrap()).collect::<Vec<_>>(),
        [site.url("/red"), site.url("/blue"), site.url("/red")]
    );
    assert_eq!(used(&app, &key).await, 3, "one action each, reserved at once");
    // The same Idempotency-Key replays the batch; another body with it is refused.
    let (status, again) = bulk(&app, &key, &body, Some("bulk-key-0001")).await;
    assert_eq!((status, &again["batchId"]), (202, &created["batchId"]));
    let (status, _) = bulk(&app, &key, &json!({"requests": [{"url": site.url("/red")}]}), Some("bulk-key-0001")).await;
    assert_eq!(status, 422);
    assert_eq!(used(&app, &key).await, 3);

    // Each job is a capture like any other, with the defaults and its own options.
    let mut sizes = Vec::new();
    for j in jobs {
        let done = app.wait(&key, j["id"].as_str().unwrap()).await;
        assert_eq!(done["status"], "done", "{done}");
        let (_, ct, bytes) = app.fetch(done["publicUrl"].as_str().unwrap()).await;
        sizes.push((ct, decode(&bytes).dimensions()));
    }
    assert_eq!(
        sizes,
        [
            ("image/png".to_string(), (320, 200)),
            ("image/png".to_string(), (160, 200)),
            ("image/jpeg".to_string(), (320, 200))
        ]
    );
    // Listed by batch, in order; not to another account.
    let listed: Value = app.get(&key, &format!("/v1/screenshots?batch={batch}")).await.json().await.unwrap();
    let ids = |v: &Value| v.as_array().unwrap().iter().map(|j| j["id"].clone()).collect::<Vec<_>>();
    assert_eq!(ids(&listed["data"]), ids(&created["data"]));
    let theirs: Value = app.get(&bob, &format!("/v1/screenshots?batch={batch}")).await.json().await.unwrap();
    assert_eq!(theirs["data"], json!([]));
    // One signed batch.completed when the last job ended.
    let got = hooks.wait_for(1, Duration::from_secs(20)).await;
    let event = verify(&secret, &got[0]).expect("a valid signature");
    assert_eq!(event["type"], "batch.completed");
    assert_eq!(event["data"], json!({"batchId": batch, "total": 3, "done": 3, "failed": 0}));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(hooks.all().len(), 1, "exactly once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bad_item_or_a_batch_past_the_quota_refuses_the_whole_batch() {
    let app = TestApp::spawn(Opts::api(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free").await;
    let u = "https://example.com/";
    for (body, field) in [
        (json!({"requests": [{"url": u}, {"url": u, "width": 99999}]}), "requests[1].width"),
        (json!({"defaults": {"format": "tiff"}, "requests": [{"url": u}]}), "defaults.format"),
        (
            json!({"defaults": {"format": "tiff"}, "requests": [{"url": u, "format": "png"}, {"url": u}]}),
            "defaults.format",
        ),
        (json!({"requests": [{"url": u}, {"width": 300}]}), "requests[1].url"),
        (json!({"defaults": {"url": u}, "requests": [{}]}), "defaults.url"),
        (json!({"requests": []}), "requests"),
        (json!({"requests": vec![json!({"url": u}); 501]}), "requests"),
    ] {
        let (status, v) = bulk(&app, &key, &body, None).await;
        assert_eq!((status, v["code"].as_str()), (400, Some("VALIDATION_ERROR")), "{v}");
        assert_eq!(v["details"]["field"], field, "{v}");
    }
    assert_eq!(used(&app, &key).await, 0);
    // The free plan's 100 actions: 2 used, a batch of 99 does not fit; 98 of them would.
    app.create(&key, json!({"url": u})).await;
    app.create(&key, json!({"url": u})).await;
    let (status, v) = bulk(&app, &key, &json!({"requests": vec![json!({"url": u}); 99]}), None).await;
    assert_eq!((status, v["code"].as_str()), (429, Some("PLAN_QUOTA_EXCEEDED")), "{v}");
    assert_eq!((v["details"]["fits"].as_i64(), v["details"]["used"].as_i64()), (Some(98), Some(2)), "{v}");
    assert_eq!(used(&app, &key).await, 2, "nothing of the batch was created");
    let (status, v) = bulk(&app, &key, &json!({"requests": vec![json!({"url": u}); 98]}), None).await;
    assert_eq!((status, v["data"].as_array().map(Vec::len)), (202, Some(98)));
    assert_eq!(used(&app, &key).await, 100);
}
