//! Signed render links (`GET /v1/render`) and the capture cache (`cacheTtl`), as a client
//! uses them: a link made with a key's secret answers the image itself, from cache after the
//! first view; a changed, expired or revoked link is refused and costs nothing.

use std::time::{Duration, Instant};

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::helpers::*;
use capture_testkit::captures::*;

fn sign(secret: &str, query: &str) -> String {
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).unwrap();
    m.update(query.as_bytes());
    hex::encode(m.finalize().into_bytes())
}

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The signed link for `query` (which names the key).
fn link(app: &TestApp, secret: &str, query: &str) -> String {
    app.url(&format!("/v1/render?{query}&signature={}", sign(secret, query)))
}

async fn new_key(app: &TestApp, key: &str, name: &str) -> (String, String) {
    let r = app.post_json(key, "/v1/render-keys", &json!({"name": name})).await;
    assert_eq!(r.status().as_u16(), 201);
    let v: Value = r.json().await.unwrap();
    let (id, secret) = (v["id"].as_str().unwrap().to_string(), v["secret"].as_str().unwrap().to_string());
    assert!(id.starts_with("rlk_") && secret.starts_with("rks_"), "{v}");
    (id, secret)
}

fn header(r: &reqwest::Response, name: &str) -> String {
    r.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_string()
}

async fn error_code(r: reqwest::Response) -> (u16, String) {
    let status = r.status().as_u16();
    let v: Value = r.json().await.unwrap_or(Value::Null);
    (status, v["code"].as_str().unwrap_or("").to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_signed_link_answers_the_image_then_serves_it_from_cache() {
    let site = Site::start(pages()).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("pro").await;
    let (_, bob) = app.user_with_key("pro").await;
    let (id, secret) = new_key(&app, &key, "blog images").await;

    // Listed without its secret; another account has none.
    let list: Value = app.get(&key, "/v1/render-keys").await.json().await.unwrap();
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    assert_eq!(
        (list["data"][0]["id"].as_str(), list["data"][0]["name"].as_str()),
        (Some(id.as_str()), Some("blog images"))
    );
    assert!(list["data"][0].get("secret").is_none() && !list.to_string().contains(&secret));
    let other: Value = app.get(&bob, "/v1/render-keys").await.json().await.unwrap();
    assert_eq!(other["data"], json!([]));

    let query = format!("url={}&width=400&height=300&key={id}", enc(&site.url("/red")));
    let url = link(&app, &secret, &query);
    let client = &app.client;

    // First view: captured (one action), the image itself with its headers.
    let r = client.get(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!((header(&r, "content-type"), header(&r, "x-cache")), ("image/png".into(), "MISS".into()));
    let etag = header(&r, "etag");
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
    let max_age: i64 = header(&r, "cache-control").strip_prefix("public, max-age=").unwrap().parse().unwrap();
    assert!((86_300..=86_400).contains(&max_age), "{max_age}");
    let length: usize = header(&r, "content-length").parse().unwrap();
    let bytes = r.bytes().await.unwrap();
    assert_eq!(bytes.len(), length);
    let img = decode(&bytes);
    assert_eq!((img.width(), img.height()), (400, 300));
    assert_px(&img, 200, 150, [255, 0, 0]);
    assert_eq!(used(&app, &key).await, 1);

    // Later views: the same file from cache, free, with its age.
    let mut hits = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let r = client.get(&url).send().await.unwrap();
        assert_eq!((r.status().as_u16(), header(&r, "x-cache"), header(&r, "etag")), (200, "HIT".into(), etag.clone()));
        assert!(header(&r, "age").parse::<i64>().is_ok());
        assert_eq!(r.bytes().await.unwrap(), bytes);
        hits.push(t.elapsed());
    }
    assert_eq!(used(&app, &key).await, 1, "views from cache are free");
    // A browser revalidating gets 304; HEAD gets the headers only.
    let r = client.get(&url).header("if-none-match", &etag).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 304);
    let r = client.head(&url).send().await.unwrap();
    assert_eq!((r.status().as_u16(), header(&r, "content-type")), (200, "image/png".into()));
    assert_eq!(header(&r, "content-length"), length.to_string());
    assert!(r.bytes().await.unwrap().is_empty());

    // A fresh capture of the same page (another cacheKey each time), for comparison.
    let mut fresh = Vec::new();
    for i in 0..5 {
        let q = format!("url={}&width=400&height=300&cacheKey=fresh-{i}&key={id}", enc(&site.url("/red")));
        let t = Instant::now();
        let r = client.get(link(&app, &secret, &q)).send().await.unwrap();
        assert_eq!((r.status().as_u16(), header(&r, "x-cache")), (200, "MISS".into()));
        fresh.push(t.elapsed());
    }
    hits.sort();
    fresh.sort();
    eprintln!("render link p50: cache hit {:?} (of 20), fresh capture {:?} (of 5; debug build)", hits[10], fresh[2]);
    assert_eq!(used(&app, &key).await, 6);

    // Changed, unsigned, expired: refused, nothing charged.
    let tampered = url.replace("width=400", "width=401");
    assert_eq!(error_code(client.get(&tampered).send().await.unwrap()).await, (401, "UNAUTHORIZED".into()));
    let unsigned = app.url(&format!("/v1/render?{query}"));
    assert_eq!(error_code(client.get(&unsigned).send().await.unwrap()).await, (401, "UNAUTHORIZED".into()));
    let wrong = link(&app, "rks_not-the-secret", &query);
    assert_eq!(error_code(client.get(&wrong).send().await.unwrap()).await, (401, "UNAUTHORIZED".into()));
    let past = capture_core::time::now_ms() / 1000 - 10;
    let expired = link(&app, &secret, &format!("{query}&expires={past}"));
    assert_eq!(error_code(client.get(&expired).send().await.unwrap()).await, (403, "FORBIDDEN".into()));
    let future = capture_core::time::now_ms() / 1000 + 3600;
    let r = client.get(link(&app, &secret, &format!("{query}&expires={future}"))).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // A bad option is named, after the signature holds.
    let bad = link(&app, &secret, &format!("url={}&width=99999&key={id}", enc(&site.url("/red"))));
    let r = client.get(&bad).send().await.unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!((v["code"].as_str(), v["details"]["field"].as_str()), (Some("VALIDATION_ERROR"), Some("width")));
    let before = used(&app, &key).await;

    // Revoked: every link of the key stops at once.
    let delete = |k: &str| client.delete(app.url(&format!("/v1/render-keys/{id}"))).bearer_auth(k.to_string()).send();
    assert_eq!(delete(&bob).await.unwrap().status().as_u16(), 404);
    assert_eq!(delete(&key).await.unwrap().status().as_u16(), 204);
    assert_eq!(error_code(client.get(&url).send().await.unwrap()).await, (403, "FORBIDDEN".into()));
    assert_eq!(used(&app, &key).await, before);

    // Another account's link to the same page is its own capture (no hit across accounts).
    let (bid, bsecret) = new_key(&app, &bob, "bob").await;
    let r = client
        .get(link(&app, &bsecret, &format!("url={}&width=400&height=300&key={bid}", enc(&site.url("/red")))))
        .send()
        .await
        .unwrap();
    assert_eq!((r.status().as_u16(), header(&r, "x-cache")), (200, "MISS".into()));
    assert_eq!(used(&app, &bob).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cache_ttl_answers_an_identical_request_from_a_done_capture_for_free() {
    let site = Site::start(pages()).await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("pro").await;
    let (_, bob) = app.user_with_key("pro").await;
    let body = json!({"url": site.url("/blue"), "width": 320, "height": 200, "cacheTtl": 3600});
    let (first, bytes) = shot(&app, &key, body.clone()).await;
    assert_eq!(first["cached"], false);
    assert_eq!(used(&app, &key).await, 1);

    // The same request, keys in another order: done at once, cached, free, the same file.
    let again = json!({"cacheTtl": 3600, "height": 200, "width": 320, "url": site.url("/blue")});
    let r = app.post_json(&key, "/v1/screenshot", &again).await;
    assert_eq!(r.status().as_u16(), 202);
    let hit: Value = r.json().await.unwrap();
    assert_eq!((hit["status"].as_str(), hit["cached"].as_bool()), (Some("done"), Some(true)), "{hit}");
    assert_ne!(hit["id"], first["id"]);
    let (status, _, hit_bytes) = app.fetch(hit["publicUrl"].as_str().unwrap()).await;
    assert_eq!((status, hit_bytes == bytes), (200, true));
    assert_eq!(used(&app, &key).await, 1, "a hit costs nothing");

    // Another cacheKey, another option, no cacheTtl, or another account: a capture of its own.
    for (k, b) in [
        (&key, json!({"url": site.url("/blue"), "width": 320, "height": 200, "cacheTtl": 3600, "cacheKey": "v2"})),
        (&key, json!({"url": site.url("/blue"), "width": 321, "height": 200, "cacheTtl": 3600})),
        (&key, json!({"url": site.url("/blue"), "width": 320, "height": 200})),
        (&bob, json!({"url": site.url("/blue"), "width": 320, "height": 200, "cacheTtl": 3600})),
    ] {
        let (job, _) = shot(&app, k, b.clone()).await;
        assert_eq!(job["cached"], false, "{b}");
    }
    assert_eq!((used(&app, &key).await, used(&app, &bob).await), (4, 1));
    // A request wanting a fresher capture than the one kept does not get it.
    std::thread::sleep(Duration::from_millis(1100));
    let strict = json!({"url": site.url("/blue"), "width": 320, "height": 200, "cacheTtl": 1});
    let (job, _) = shot(&app, &key, strict).await;
    assert_eq!(job["cached"], false);
    // Bad values are named.
    for (b, field) in [
        (json!({"url": site.url("/blue"), "cacheTtl": 0}), "cacheTtl"),
        (json!({"url": site.url("/blue"), "cacheTtl": 2_592_001}), "cacheTtl"),
        (json!({"url": site.url("/blue"), "cacheKey": ""}), "cacheKey"),
    ] {
        let v: Value = app.post_json(&key, "/v1/screenshot", &b).await.json().await.unwrap();
        assert_eq!(
            (v["code"].as_str(), v["details"]["field"].as_str()),
            (Some("VALIDATION_ERROR"), Some(field)),
            "{v}"
        );
    }
}

/// A link can answer the page as text: Markdown with its own type, in the sandbox every text
/// file of ours gets, captured once and then served from the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_link_answers_the_page_as_markdown_and_caches_it() {
    let site = capture_testkit::corpus::serve().await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("pro").await;
    let (id, secret) = new_key(&app, &key, "agents").await;
    let query =
        format!("url={}&format=markdown&mainContent=true&waitUntil=load&key={id}", enc(&site.url("/plain.html")));
    let url = link(&app, &secret, &query);
    let r = app.client.get(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        (header(&r, "content-type"), header(&r, "x-cache"), header(&r, "content-security-policy")),
        ("text/markdown; charset=utf-8".into(), "MISS".into(), "sandbox; default-src 'none'".into())
    );
    let md = r.text().await.unwrap();
    assert!(md.starts_with("---\ntitle: \"How cookies and CAPTCHAs work\"\n"), "{md}");
    assert!(md.contains("a challenge page asks a visitor to wait a moment."), "{md}");
    let r = app.client.get(&url).send().await.unwrap();
    assert_eq!((header(&r, "x-cache"), r.text().await.unwrap()), ("HIT".into(), md));
    assert_eq!(used(&app, &key).await, 1);
}
