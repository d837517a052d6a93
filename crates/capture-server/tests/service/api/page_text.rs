//! The page as text through the whole service (issue 41): `format: markdown | text | html` is a
//! capture job like any other (charged once, its file stored and served), read after the
//! consent step; the file comes back with its own content type and never runs on our origin; a
//! page that is not HTML fails uncharged; options that need text or pixels are named.

use crate::helpers::*;
use capture_testkit::corpus;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_page_as_markdown_text_and_html_from_one_job_each() {
    let site = corpus::serve().await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free").await;

    // Markdown of a page with a OneTrust banner: the consent step ran first, so the banner's
    // text is not there; the article's is, under front matter.
    let url = site.url("/onetrust.html");
    let job = app.create(&key, json!({"url": url, "format": "markdown", "waitUntil": "load"})).await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!((done["status"].as_str(), done["format"].as_str()), (Some("done"), Some("markdown")), "{done}");
    let public = done["publicUrl"].as_str().unwrap();
    assert!(public.ends_with(".md"), "{public}");
    let r = app.client().get(public).send().await.unwrap();
    let h = r.headers().clone();
    let md = r.text().await.unwrap();
    assert_eq!(h["content-type"], "text/markdown; charset=utf-8");
    assert_eq!(h["content-security-policy"], "sandbox; default-src 'none'");
    assert_eq!(h["x-content-type-options"], "nosniff");
    let lines: Vec<&str> = md.lines().collect();
    assert_eq!(lines[0], "---", "{md}");
    let title = done["metadata"]["title"].as_str().unwrap();
    assert_eq!(lines[1], format!("title: {}", serde_json::to_string(title).unwrap()), "{md}");
    let end = lines.iter().skip(1).position(|l| *l == "---").expect("front matter ends") + 1;
    let front = &lines[..end];
    assert!(front.contains(&format!("source: \"{url}\"").as_str()), "{md}");
    assert!(front.iter().any(|l| l.starts_with("captured_at: \"20")), "{md}");
    assert!(md.contains("An article with a OneTrust banner"), "{md}");
    assert!(!md.contains("We and our partners use cookies"), "the banner was read:\n{md}");
    // How long it is: the file's characters, and a quarter of that in tokens, rounded up.
    let chars = md.chars().count() as u64;
    assert_eq!(done["metadata"]["content"], json!({"chars": chars, "tokens": chars.div_ceil(4)}), "{done}");
    assert!(done["thumbnailUrl"].is_string(), "{done}");
    assert_eq!(used(&app, &key).await, 1);

    // Text: the visible text, a line per block.
    let job = app.create(&key, json!({"url": url, "format": "text", "waitUntil": "load"})).await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    let (status, ct, body) = app.fetch(done["publicUrl"].as_str().unwrap()).await;
    assert_eq!((status, ct.as_str()), (200, "text/plain; charset=utf-8"));
    let text = String::from_utf8(body).unwrap();
    assert!(text.lines().any(|l| l.starts_with("An article with a OneTrust banner")), "{text}");
    assert!(!text.contains("We and our partners use cookies"), "{text}");

    // HTML: a download in plain text, never a page of ours.
    let job = app.create(&key, json!({"url": url, "format": "html", "waitUntil": "load"})).await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    let public = done["publicUrl"].as_str().unwrap();
    assert!(public.ends_with(".page.html"), "{public}");
    let r = app.client().get(public).send().await.unwrap();
    let h = r.headers().clone();
    let html = r.text().await.unwrap();
    assert_eq!(h["content-type"], "text/plain; charset=utf-8");
    assert_eq!(h["content-disposition"], "attachment; filename=\"page.html\"");
    assert_eq!(h["content-security-policy"], "sandbox; default-src 'none'");
    assert!(html.starts_with("<!doctype html>"), "{html}");
    assert!(!html.contains("<script"), "{html}");
    assert_eq!(used(&app, &key).await, 3);

    // An uploaded document is still never served, whatever its name.
    let (status, _, _) = app.fetch(&public.replace(".page.html", ".html")).await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_main_content_and_bad_requests() {
    let site = corpus::serve().await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free").await;

    // A response that is not HTML (JSON data) has no page to read: failed, not charged.
    let data = site.url("/data.json");
    let job = app.create(&key, json!({"url": data, "format": "markdown", "waitUntil": "load"})).await;
    let failed = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(
        (failed["status"].as_str(), failed["error"].as_str()),
        (Some("failed"), Some("the page is application/json, not HTML: it has no text to read")),
        "{failed}"
    );
    assert_eq!(used(&app, &key).await, 0);

    // Excluding by selector; a bad selector names its field.
    let job = app
        .create(
            &key,
            json!({"url": site.url("/onetrust.html"), "format": "text", "waitUntil": "load", "excludeSelectors": ["p"]}),
        )
        .await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    let (_, _, body) = app.fetch(done["publicUrl"].as_str().unwrap()).await;
    assert!(!String::from_utf8(body).unwrap().contains("An article with a OneTrust banner"));
    let job = app
        .create(
            &key,
            json!({"url": site.url("/onetrust.html"), "format": "text", "waitUntil": "load", "includeSelectors": ["[["]}),
        )
        .await;
    let failed = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(failed["error"].as_str(), Some("includeSelectors[0]: '[[' is not a valid CSS selector"), "{failed}");

    // Options that need text, or pixels, are named.
    for (body, field) in [
        (json!({"url": data, "mainContent": true}), "mainContent"),
        (json!({"url": data, "format": "png", "excludeSelectors": ["nav"]}), "excludeSelectors"),
        (json!({"url": data, "format": "markdown", "quality": 50}), "quality"),
        (json!({"url": data, "format": "markdown", "pdf": true}), "pdf"),
        (json!({"url": data, "format": "text", "clip": {"x": 0, "y": 0, "width": 10, "height": 10}}), "clip"),
        (json!({"url": data, "format": "html", "includeSelectors": [""]}), "includeSelectors[0]"),
        (json!({"url": data, "format": "md"}), "format"),
    ] {
        let r = app.post_json(&key, "/v1/screenshot", &body).await;
        let status = r.status().as_u16();
        let v: Value = r.json().await.unwrap();
        assert_eq!(
            (status, v["code"].as_str(), v["details"]["field"].as_str()),
            (400, Some("VALIDATION_ERROR"), Some(field)),
            "{body}: {v}"
        );
    }
}
