//! Storage destinations against a real S3-compatible server (moto, with its IAM checks on):
//! a destination is only kept after a probe object was written and deleted with its keys;
//! wrong keys, a missing bucket and forbidden endpoints are refused with clear answers; a
//! capture naming one lands in the customer's bucket under its key template, and a failed
//! copy is reported on the job while the service's own copy still serves.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::*;
use capture_testkit::captures::*;
use capture_testkit::moto::*;

async fn create(app: &TestApp, key: &str, body: &Value) -> (u16, Value) {
    let r = app.post_json(key, "/v1/storage-destinations", body).await;
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// The job once its copy to the customer's bucket ended (it is `done` before: the copy runs
/// on its own queue).
async fn copied(app: &TestApp, key: &str, id: &str) -> Value {
    let done = app.wait(key, id).await;
    assert_eq!(done["status"], "done", "{done}");
    eventually("the copy ends", Duration::from_secs(60), || async {
        let v: Value = app.get(key, &format!("/v1/screenshot/{id}")).await.json().await.unwrap();
        if v["storageStatus"] == "pending" { Err(v) } else { Ok(v) }
    })
    .await
}

async fn capture(app: &TestApp, key: &str, body: &Value) -> (u16, Value) {
    let r = app.post_json(key, "/v1/screenshot", body).await;
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn captures_land_in_the_customers_own_bucket_and_failures_are_reported() {
    let Some(program) = require_moto(TARGET_TMPDIR) else { return };
    let mut moto = Moto::start(&program).await;
    moto.create_bucket("customer-shots").await;
    moto.create_bucket("soon-gone").await;
    let (key_id, secret) = moto.iam_user_with_s3_access("capture-writer").await;
    moto.enforce_auth(true).await;

    let site = Site::start(pages()).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (alice_email, alice) = app.user_with_key("pro").await;
    let (_, bob) = app.user_with_key("pro").await;
    let dest = |url: &str, id: &str, secret: &str| {
        json!({"name": "marketing", "url": url, "endpoint": moto.endpoint, "region": "eu-west-1",
            "accessKeyId": id, "secretAccessKey": secret})
    };

    // Wrong keys, a missing bucket: refused with the reason and the server's code, nothing kept.
    let (status, wrong) = create(&app, &alice, &dest("s3://customer-shots/captures", "AKIAWRONGWRONG", "nope")).await;
    assert_eq!(status, 422, "{wrong}");
    assert_eq!(
        (&wrong["code"], &wrong["details"]),
        (&json!("STORAGE_CHECK_FAILED"), &json!({"reason": "access_denied", "s3Code": "InvalidAccessKeyId"}))
    );
    assert_eq!(
        wrong["error"],
        "the destination failed its check: the bucket refused the key pair (InvalidAccessKeyId)"
    );
    let (status, missing) = create(&app, &alice, &dest("s3://no-such-bucket", &key_id, &secret)).await;
    assert_eq!(status, 422, "{missing}");
    assert_eq!(missing["details"], json!({"reason": "bucket_not_found", "s3Code": "NoSuchBucket"}));
    assert_eq!(missing["error"], "the destination failed its check: the bucket does not exist");
    // Endpoints the service may not reach, and malformed fields, name their field.
    for (body, field) in [
        (
            json!({"name": "x", "url": "s3://customer-shots", "endpoint": "http://169.254.169.254",
            "accessKeyId": key_id, "secretAccessKey": secret}),
            "endpoint",
        ),
        (
            json!({"name": "x", "url": "s3://customer-shots", "endpoint": app.base.clone(),
            "accessKeyId": key_id, "secretAccessKey": secret}),
            "endpoint",
        ),
        (
            json!({"name": "x", "url": "https://customer-shots", "accessKeyId": key_id, "secretAccessKey": secret}),
            "url",
        ),
        (
            json!({"name": "x", "url": "s3://customer-shots/../up", "accessKeyId": key_id, "secretAccessKey": secret}),
            "url",
        ),
        (
            json!({"name": "x", "url": "s3://customer-shots", "region": "EU WEST", "accessKeyId": key_id,
            "secretAccessKey": secret}),
            "region",
        ),
        (json!({"name": "", "url": "s3://customer-shots", "accessKeyId": key_id, "secretAccessKey": secret}), "name"),
    ] {
        let (status, v) = create(&app, &alice, &body).await;
        assert_eq!(
            (status, v["code"].as_str(), v["details"]["field"].as_str()),
            (400, Some("VALIDATION_ERROR"), Some(field)),
            "{v}"
        );
    }
    assert_eq!(app.get(&alice, "/v1/storage-destinations").await.json::<Value>().await.unwrap(), json!({"data": []}));

    // The good one: kept, its probe object gone, its keys never shown.
    let (status, good) = create(&app, &alice, &dest("s3://customer-shots/captures", &key_id, &secret)).await;
    assert_eq!(status, 201, "{good}");
    let sd = good["id"].as_str().unwrap().to_string();
    assert!(sd.starts_with("sd_"), "{good}");
    assert_eq!(
        (&good["url"], &good["endpoint"], &good["region"], &good["name"]),
        (&json!("s3://customer-shots/captures"), &json!(moto.endpoint), &json!("eu-west-1"), &json!("marketing"))
    );
    let listed = app.get(&alice, "/v1/storage-destinations").await.text().await.unwrap();
    assert!(listed.contains(&sd) && !listed.contains(&secret) && !listed.contains(&key_id), "{listed}");
    assert!(!good.to_string().contains(&secret) && !good.to_string().contains(&key_id));
    // At rest the key pair is sealed.
    let owner = app.state.store.user_by_email(&alice_email).await.unwrap().unwrap();
    let rows = app.state.store.list_storage_destinations(&owner.id).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert!(rows[0].access_key_id_enc != key_id && !rows[0].secret_access_key_enc.contains(&secret));
    assert_eq!(app.state.master.decrypt(&rows[0].secret_access_key_enc).as_deref(), Some(secret.as_str()));
    // Another account neither sees nor uses it.
    assert_eq!(app.get(&bob, &format!("/v1/storage-destinations/{sd}")).await.status().as_u16(), 404);
    assert_eq!(app.get(&bob, "/v1/storage-destinations").await.json::<Value>().await.unwrap(), json!({"data": []}));
    let (status, v) = capture(&app, &bob, &json!({"url": site.url("/red"), "storage": {"destination": sd}})).await;
    assert_eq!((status, v["details"]["field"].as_str()), (400, Some("storage.destination")), "{v}");
    assert_eq!(
        app.client
            .delete(app.url(&format!("/v1/storage-destinations/{sd}")))
            .bearer_auth(&bob)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        404
    );
    // A key template outside the bucket's prefix is refused.
    let (status, v) =
        capture(&app, &alice, &json!({"url": site.url("/red"), "storage": {"destination": sd, "key": "../{id}.png"}}))
            .await;
    assert_eq!((status, v["details"]["field"].as_str()), (400, Some("storage.key")), "{v}");
    let (status, v) = capture(
        &app,
        &alice,
        &json!({"url": site.url("/red"), "storage": {"destination": sd, "key": "{id}-{secret}"}}),
    )
    .await;
    assert_eq!((status, v["details"]["field"].as_str()), (400, Some("storage.key")), "{v}");

    // A capture lands there under its template; the service's copy is the same file.
    let (status, job) = capture(
        &app,
        &alice,
        &json!({"url": site.url("/red"), "width": 320, "height": 200,
            "storage": {"destination": sd, "key": "{date}/{host}-{id}.{ext}"}}),
    )
    .await;
    assert_eq!(status, 202, "{job}");
    let id = job["id"].as_str().unwrap().to_string();
    let done = copied(&app, &alice, &id).await;
    assert_eq!(done["storageStatus"], "stored", "{done}");
    let date = &done["completedAt"].as_str().unwrap()[..10];
    let object_key = format!("captures/{date}/127.0.0.1-{id}.png");
    assert_eq!(done["storageUrl"], json!(format!("s3://customer-shots/{object_key}")), "{done}");
    assert_eq!(done.get("storageError"), None);
    let (_, ct, ours) = app.fetch(done["publicUrl"].as_str().unwrap()).await;
    assert_eq!((ct.as_str(), decode(&ours).dimensions()), ("image/png", (320, 200)));
    moto.enforce_auth(false).await;
    assert_eq!(moto.object("customer-shots", &object_key).await.as_deref(), Some(ours.as_slice()));
    assert_eq!(moto.head("customer-shots", &object_key).await["content-type"], "image/png");
    // Nothing else was left there: the probe objects were deleted.
    assert_eq!(moto.keys("customer-shots", "").await, vec![object_key.clone()]);

    // A bucket that went away after the destination was made: the job is done, its copy
    // reported as failed, and the service's own copy still serves.
    moto.enforce_auth(true).await;
    let (status, gone) = create(&app, &alice, &dest("s3://soon-gone", &key_id, &secret)).await;
    assert_eq!(status, 201, "{gone}");
    let gone_id = gone["id"].as_str().unwrap().to_string();
    moto.enforce_auth(false).await;
    let r = app
        .client
        .delete(format!("{}/soon-gone", moto.endpoint))
        .header("authorization", PLACEHOLDER_AUTH)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "deleting the bucket: {}", r.status());
    moto.enforce_auth(true).await;
    let (_, job) = capture(
        &app,
        &alice,
        &json!({"url": site.url("/blue"), "format": "jpeg", "storage": {"destination": gone_id}}),
    )
    .await;
    let id = job["id"].as_str().unwrap().to_string();
    let done = copied(&app, &alice, &id).await;
    assert_eq!((done["status"].as_str(), done["storageStatus"].as_str()), (Some("done"), Some("failed")), "{done}");
    assert_eq!(done.get("storageUrl"), None);
    assert_eq!(
        done["storageError"],
        json!(format!("writing s3://soon-gone/{id}.jpeg failed: the bucket does not exist (bucket_not_found)"))
    );
    let (status, ct, bytes) = app.fetch(done["publicUrl"].as_str().unwrap()).await;
    assert_eq!((status, ct.as_str()), (200, "image/jpeg"));
    assert!(!bytes.is_empty());

    // A deleted destination: captures naming it are refused.
    let r = app
        .client
        .delete(app.url(&format!("/v1/storage-destinations/{gone_id}")))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204);
    let (status, v) =
        capture(&app, &alice, &json!({"url": site.url("/red"), "storage": {"destination": gone_id}})).await;
    assert_eq!((status, v["details"]["field"].as_str()), (400, Some("storage.destination")), "{v}");

    // The server gone: tried three times, then reported; the job is still done.
    moto.stop();
    let (_, job) =
        capture(&app, &alice, &json!({"url": site.url("/red"), "storage": {"destination": sd, "key": "x/{id}.{ext}"}}))
            .await;
    let id = job["id"].as_str().unwrap().to_string();
    let done = copied(&app, &alice, &id).await;
    assert_eq!(done["storageStatus"], "failed", "{done}");
    let err = done["storageError"].as_str().unwrap_or_default();
    let head = format!(
        "writing s3://customer-shots/captures/x/{id}.png failed after 3 attempts: the server could not be reached: "
    );
    assert!(err.starts_with(&head) && err.ends_with(" (unreachable)"), "{done}");
}
