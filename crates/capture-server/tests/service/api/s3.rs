//! S3 storage against a real S3-compatible server: moto's `moto_server`, started here on a
//! loopback port (from the virtualenv `tests/s3/moto-venv.sh` makes, or `CAPTURE_TEST_MOTO`),
//! and stopped when the test ends. The blob store on its own, then the whole service
//! capturing into a bucket with proxied and with presigned file URLs.

use std::time::{Duration, Instant};

use capture_server::blob::{BlobStore, S3BlobStore};
use capture_server::config::{PublicUrls, S3Settings};
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::helpers::*;
use capture_testkit::moto::*;

fn settings(moto: &Moto, endpoint: Option<&str>, bucket: &str, prefix: &str) -> S3Settings {
    S3Settings {
        bucket: bucket.into(),
        prefix: prefix.into(),
        endpoint: Some(endpoint.unwrap_or(&moto.endpoint).to_string()),
        region: "eu-west-1".into(),
        access_key_id: Some("AKIDTESTING".into()),
        secret_access_key: Some("moto-secret".into()),
        session_token: None,
    }
}

/// Check a presigned GET URL's SigV4 signature the way S3 does (moto does not), so a URL
/// that a real S3 would refuse fails here. Returns the query parameters.
fn assert_sigv4_presigned(url: &str, secret: &str, region: &str, ttl_secs: u64) -> Vec<(String, String)> {
    use hmac::{Hmac, KeyInit, Mac};
    use sha2::{Digest, Sha256};
    fn hmac(key: &[u8], data: &str) -> Vec<u8> {
        let mut m = Hmac::<Sha256>::new_from_slice(key).unwrap();
        m.update(data.as_bytes());
        m.finalize().into_bytes().to_vec()
    }
    fn enc(s: &str) -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect()
    }
    let u = url::Url::parse(url).unwrap();
    let params: Vec<(String, String)> = u.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_default();
    assert_eq!(get("X-Amz-Algorithm"), "AWS4-HMAC-SHA256", "{url}");
    assert_eq!(get("X-Amz-Expires"), ttl_secs.to_string(), "{url}");
    assert_eq!(get("X-Amz-SignedHeaders"), "host", "{url}");
    let date = get("X-Amz-Date");
    let scope = format!("{}/{region}/s3/aws4_request", &date[..8]);
    assert_eq!(get("X-Amz-Credential"), format!("AKIDTESTING/{scope}"), "{url}");
    let iso =
        format!("{}-{}-{}T{}:{}:{}Z", &date[..4], &date[4..6], &date[6..8], &date[9..11], &date[11..13], &date[13..15]);
    let signed_ms = capture_core::time::parse_iso(&iso).unwrap_or_else(|| panic!("X-Amz-Date {date}"));
    assert!((capture_core::time::now_ms() - signed_ms).abs() < 120_000, "signed at {date}");

    let mut query: Vec<(String, String)> =
        params.iter().filter(|(k, _)| k != "X-Amz-Signature").map(|(k, v)| (enc(k), enc(v))).collect();
    query.sort();
    let query = query.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&");
    let host = format!("{}:{}", u.host_str().unwrap(), u.port().unwrap());
    let canonical = format!("GET\n{}\n{query}\nhost:{host}\n\nhost\nUNSIGNED-PAYLOAD", u.path());
    let to_sign = format!("AWS4-HMAC-SHA256\n{date}\n{scope}\n{}", hex::encode(Sha256::digest(canonical.as_bytes())));
    let mut key = hmac(format!("AWS4{secret}").as_bytes(), &date[..8]);
    for part in [region, "s3", "aws4_request"] {
        key = hmac(&key, part);
    }
    assert_eq!(get("X-Amz-Signature"), hex::encode(hmac(&key, &to_sign)), "the presigned URL's signature is wrong");
    params
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_blob_store_stores_reads_streams_checks_and_presigns() {
    let Some(program) = require_moto(TARGET_TMPDIR) else { return };
    let moto = Moto::start(&program).await;
    let ttl = Duration::from_secs(600);
    let store =
        S3BlobStore::new(&settings(&moto, None, "blobs", "unit/p"), PublicUrls::Presigned, ttl, "http://capture.test")
            .unwrap();

    // Readiness fails while the bucket does not exist, and passes once it does.
    let missing = store.check().await.unwrap_err().to_string();
    assert!(missing.contains("NoSuchBucket"), "a missing bucket must fail the check: {missing}");
    moto.create_bucket("blobs").await;
    store.check().await.unwrap();

    // Several chunks' worth, so the stream really streams.
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    store.put("abc123.png", bytes.clone(), "image/png").await.unwrap();
    assert_eq!(store.get("abc123.png").await.unwrap().as_deref(), Some(&bytes[..]));
    assert_eq!(store.get("missing.png").await.unwrap(), None);
    assert_eq!(store.get("../escape.png").await.unwrap(), None, "names outside ours are refused");
    assert!(store.put("../escape.png", vec![1], "image/png").await.is_err());
    assert!(store.open("missing.png").await.unwrap().is_none());
    let opened = store.open("abc123.png").await.unwrap().unwrap();
    assert_eq!(opened.len, bytes.len() as u64);
    let mut streamed = Vec::new();
    let mut body = opened.body;
    while let Some(chunk) = body.next().await {
        streamed.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(streamed, bytes);

    // The object sits under the prefix, with its content type and cache policy.
    assert_eq!(moto.keys("blobs", "").await, vec!["unit/p/abc123.png".to_string()]);
    let h = moto.head("blobs", "unit/p/abc123.png").await;
    assert_eq!(h["content-type"], "image/png");
    assert_eq!(h["cache-control"], "public, max-age=31536000, immutable");

    // Presigned: a correctly signed URL of that object, which downloads without credentials.
    let url = store.public_url("abc123.png").await;
    assert!(url.starts_with(&format!("{}/blobs/unit/p/abc123.png?", moto.endpoint)), "{url}");
    assert_sigv4_presigned(&url, "moto-secret", "eu-west-1", 600);
    let r = reqwest::get(&url).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "image/png");
    assert_eq!(r.bytes().await.unwrap().to_vec(), bytes);

    // Proxy mode hands out the service's own URL.
    let proxy =
        S3BlobStore::new(&settings(&moto, None, "blobs", "unit/p"), PublicUrls::Proxy, ttl, "http://capture.test/")
            .unwrap();
    assert_eq!(proxy.public_url("abc123.png").await, "http://capture.test/files/abc123.png");
    // A bucket without a prefix keeps names at the top.
    let bare =
        S3BlobStore::new(&settings(&moto, None, "blobs", ""), PublicUrls::Proxy, ttl, "http://capture.test").unwrap();
    bare.put("top.pdf", b"%PDF-1.4".to_vec(), "application/pdf").await.unwrap();
    assert!(moto.keys("blobs", "").await.contains(&"top.pdf".to_string()));
    assert_eq!(moto.head("blobs", "top.pdf").await["content-type"], "application/pdf");

    // Delete removes the object; deleting a missing one, or a name outside ours, is no error.
    bare.delete("top.pdf").await.unwrap();
    assert!(!moto.keys("blobs", "").await.contains(&"top.pdf".to_string()));
    assert_eq!(bare.get("top.pdf").await.unwrap(), None);
    bare.delete("top.pdf").await.unwrap();
    bare.delete("../escape.png").await.unwrap();
    assert!(moto.keys("blobs", "").await.contains(&"unit/p/abc123.png".to_string()), "others are kept");

    // An unreachable server fails the check quickly, not after minutes of retries.
    let dead_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dead_endpoint = format!("http://127.0.0.1:{dead_port}");
    let dead =
        S3BlobStore::new(&settings(&moto, Some(&dead_endpoint), "blobs", "p"), PublicUrls::Proxy, ttl, "http://x")
            .unwrap();
    let started = Instant::now();
    assert!(dead.check().await.is_err());
    assert!(started.elapsed() < Duration::from_secs(25), "took {:?}", started.elapsed());
}

/// The file name at the end of a file URL (before any query).
fn file_name(url: &str) -> String {
    url::Url::parse(url).unwrap().path_segments().unwrap().next_back().unwrap().to_string()
}

/// Run the service on the bucket with `mode` file URLs, capture a red page, and check the
/// files: downloaded from the URLs the job gives, present in the bucket, served by `/files`.
async fn capture_into_s3(moto: &Moto, site: &Site, mode: &str) -> TestApp {
    let prefix = format!("e2e/{mode}");
    let app = TestApp::spawn(
        Opts::full(Db::Sqlite)
            .env("CAPTURE_STORAGE_URL", &format!("s3://captures/{prefix}"))
            .env("CAPTURE_S3_ENDPOINT", &moto.endpoint)
            .env("CAPTURE_S3_REGION", "eu-west-1")
            .env("CAPTURE_S3_ACCESS_KEY_ID", "AKIDTESTING")
            .env("CAPTURE_S3_SECRET_ACCESS_KEY", "moto-secret")
            .env("CAPTURE_STORAGE_PUBLIC_URLS", mode)
            .env("CAPTURE_STORAGE_PRESIGN_TTL", "20m")
            .env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true"),
    )
    .await;
    let ready: Value = app.client.get(app.url("/readyz")).send().await.unwrap().json().await.unwrap();
    assert_eq!(ready["checks"]["storage"], "ok", "{ready}");
    let (_, key) = app.user_with_key("pro").await;
    let hooks = capture_testkit::webhooks::Receiver::start(vec![(200, Duration::ZERO)]).await;
    let r = app.post_json(&key, "/v1/webhooks", &json!({"url": hooks.url, "events": ["screenshot.completed"]})).await;
    assert_eq!(r.status(), 201);

    let job =
        app.create(&key, json!({"url": site.url("/red"), "waitUntil": "load", "width": 400, "height": 300})).await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "done", "{done}");
    let public = done["publicUrl"].as_str().unwrap();
    let thumb = done["thumbnailUrl"].as_str().unwrap();
    for u in [public, thumb] {
        if mode == "presigned" {
            assert!(u.starts_with(&format!("{}/captures/{prefix}/", moto.endpoint)), "{u}");
            assert_sigv4_presigned(u, "moto-secret", "eu-west-1", 1200);
        } else {
            assert!(u.starts_with(&format!("{}/files/", app.base)), "{u}");
        }
    }
    // Lists show the same kind of URL.
    let list: Value = app.get(&key, "/v1/screenshots").await.json().await.unwrap();
    let listed = list["data"][0]["publicUrl"].as_str().unwrap();
    assert_eq!(file_name(listed), file_name(public));
    assert_eq!(listed.contains("X-Amz-Signature="), mode == "presigned", "{listed}");

    // What a user downloads: the capture and its thumbnail, red.
    let (status, ct, bytes) = app.fetch(public).await;
    assert_eq!((status, ct.as_str()), (200, "image/png"), "{public}");
    let img = decode(&bytes);
    assert_eq!((img.width(), img.height()), (400, 300));
    assert_px(&img, 200, 150, [255, 0, 0]);
    let (status, ct, thumb_bytes) = app.fetch(thumb).await;
    assert_eq!((status, ct.as_str()), (200, "image/png"), "{thumb}");
    let t = decode(&thumb_bytes);
    assert!(t.width() <= 320 && t.width() >= 100, "thumbnail {}x{}", t.width(), t.height());
    assert_px(&t, t.width() / 2, t.height() / 2, [255, 0, 0]);

    // The objects really are in the bucket, under the prefix, and nothing went to local disk.
    let (name, thumb_name) = (file_name(public), file_name(thumb));
    let mut keys = moto.keys("captures", &format!("{prefix}/")).await;
    keys.sort();
    let mut want = vec![format!("{prefix}/{name}"), format!("{prefix}/{thumb_name}")];
    want.sort();
    assert_eq!(keys, want);
    assert_eq!(moto.head("captures", &format!("{prefix}/{name}")).await["content-type"], "image/png");
    assert!(!app.data_dir.join("files").exists(), "files went to the local folder");

    // The service serves the file itself in either mode, with the local path's headers.
    let r = app.client.get(app.url(&format!("/files/{name}"))).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "image/png");
    assert_eq!(r.headers()["cache-control"], "public, max-age=31536000, immutable");
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    assert_eq!(r.bytes().await.unwrap().to_vec(), bytes);
    let r = app.client.get(app.url("/files/nothere123.png")).send().await.unwrap();
    assert_eq!(r.status(), 404);

    // The webhook event, stored and possibly retried for hours, carries the service's own
    // URL in either mode, never a presigned one that could expire first.
    let got = hooks.wait_for(1, Duration::from_secs(30)).await;
    let event: Value = serde_json::from_str(&got[0].body).unwrap();
    let hooked = event["data"]["publicUrl"].as_str().unwrap();
    assert_eq!(hooked, app.url(&format!("/files/{name}")), "{event}");
    assert_eq!(app.fetch(hooked).await.2, bytes);
    app
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn captures_are_stored_in_s3_and_served_by_proxy_or_presigned_urls() {
    let Some(program) = require_moto(TARGET_TMPDIR) else { return };
    let mut moto = Moto::start(&program).await;
    moto.create_bucket("captures").await;
    let site = Site::start(vec![("/red", "text/html", solid("#ff0000"))]).await;

    drop(capture_into_s3(&moto, &site, "proxy").await);
    let app = capture_into_s3(&moto, &site, "presigned").await;

    // Storage gone: readiness says so (and names it) instead of claiming the node is ready.
    moto.stop();
    let r = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(r.status(), 503);
    let ready: Value = r.json().await.unwrap();
    assert_ne!(ready["checks"]["storage"], "ok", "{ready}");
}
