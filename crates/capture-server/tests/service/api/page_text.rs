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
    let body = md.split_once("\n---\n\n").unwrap().1;
    let total = body.chars().count() as u64 - 1;
    assert_eq!(
        done["metadata"]["content"],
        json!({"chars": chars, "tokens": chars.div_ceil(4), "totalChars": total, "from": 0, "nextFrom": null}),
        "{done}"
    );
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
        (json!({"url": data, "content": []}), "content"),
        (json!({"url": data, "content": ["pdf"]}), "content[0]"),
        (json!({"url": data, "format": "mp4", "content": ["text"]}), "content"),
        (json!({"url": data, "maxChars": 100}), "maxChars"),
        (json!({"url": data, "format": "text", "maxChars": 0}), "maxChars"),
        (json!({"url": data, "format": "text", "from": -1}), "from"),
        (json!({"url": data, "extract": {}}), "extract"),
        (json!({"url": data, "extract": {"rules": {"a": {"selector": ""}}}}), "extract.rules.a.selector"),
        (
            json!({"url": data, "extract": {"rules": {"a": {"selector": "h1"}}, "schema": {"type": 5}}}),
            "extract.schema",
        ),
        (
            json!({"url": data, "extract": {"rules": {"a": {"selector": "h1"}}, "schema": {"$ref": "file:///etc/passwd"}}}),
            "extract.schema",
        ),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn text_and_fields_beside_an_image_from_one_load_charged_once() {
    let site = corpus::serve().await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free").await;
    let (_, other) = app.user_with_key("free").await;
    let url = site.url("/plain.html");
    let job = app
        .create(
            &key,
            json!({"url": url, "waitUntil": "load", "content": ["markdown", "text", "html"],
                "extract": {"rules": {"title": {"selector": "h1"}, "paragraphs": {"selector": "#content p", "all": true},
                    "missing": {"selector": ".price", "type": "number"}},
                    "schema": {"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}}}}),
        )
        .await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!((done["status"].as_str(), done["format"].as_str()), (Some("done"), Some("png")), "{done}");
    // The image is the job's file.
    let (status, ct, png) = app.fetch(done["publicUrl"].as_str().unwrap()).await;
    assert_eq!((status, ct.as_str()), (200, "image/png"));
    let img = image::load_from_memory(&png).unwrap();
    assert_eq!((img.width(), img.height()), (1280, 800));
    // Each form beside it, with its own type, never as a page of ours.
    let urls = done["contentUrls"].as_object().expect("contentUrls");
    assert_eq!(urls.keys().collect::<Vec<_>>(), vec!["html", "markdown", "text"], "{done}");
    let (status, ct, md) = app.fetch(urls["markdown"].as_str().unwrap()).await;
    let md = String::from_utf8(md).unwrap();
    assert_eq!((status, ct.as_str()), (200, "text/markdown; charset=utf-8"));
    assert!(md.starts_with("---\ntitle: \"How cookies and CAPTCHAs work\"\n"), "{md}");
    assert!(md.lines().any(|l| l == "# How cookies and CAPTCHAs work"), "{md}");
    let (status, ct, text) = app.fetch(urls["text"].as_str().unwrap()).await;
    assert_eq!((status, ct.as_str()), (200, "text/plain; charset=utf-8"));
    assert_eq!(String::from_utf8(text).unwrap().lines().next(), Some("How cookies and CAPTCHAs work"));
    let html = urls["html"].as_str().unwrap();
    assert!(html.ends_with(".content.page.html"), "{html}");
    let r = app.client().get(html).send().await.unwrap();
    assert_eq!(r.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(r.headers()["content-disposition"], "attachment; filename=\"page.html\"");
    // The fields, where each came from, and null for what matched nothing.
    assert_eq!(
        done["data"],
        json!({
            "title": "How cookies and CAPTCHAs work",
            "paragraphs": [
                "An ordinary article about browser cookies, consent banners, bot protection and CAPTCHAs. It mentions \"verify you are human\", Cloudflare and reCAPTCHA in its text, and has no pop-up of any kind.",
                "Cookie consent platforms such as OneTrust show a banner; a challenge page asks a visitor to wait a moment."
            ],
            "missing": null
        }),
        "{done}"
    );
    assert_eq!(done["sources"], json!({"title": "h1", "paragraphs": "#content p", "missing": null}));
    assert!(done["metadata"].get("extract").is_none(), "{done}");
    // The report is the first form's: the Markdown file.
    assert_eq!(done["metadata"]["content"]["chars"], json!(md.chars().count()));
    assert_eq!(used(&app, &key).await, 1);
    // Another account sees nothing of it.
    let r = app.get(&other, &format!("/v1/screenshot/{}", done["id"].as_str().unwrap())).await;
    assert_eq!(r.status().as_u16(), 404);
    assert_eq!(used(&app, &other).await, 0);

    // Data that does not match the schema fails the job naming the JSON path.
    let job = app
        .create(
            &key,
            json!({"url": url, "waitUntil": "load", "format": "text",
                "extract": {"rules": {"title": {"selector": "h1", "type": "number"}},
                    "schema": {"type": "object", "properties": {"title": {"type": "string"}}}}}),
        )
        .await;
    let failed = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(failed["status"].as_str(), Some("failed"));
    let error = failed["error"].as_str().unwrap();
    assert!(error.starts_with("extract: the data does not match the schema at /title: "), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn max_chars_pages_the_text_and_bulk_reads_many_pages() {
    let site = corpus::serve().await;
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free").await;
    let url = site.url("/plain.html");
    // The whole text, then the same in pages of at most 60 characters, each ending after a
    // whole line (or inside one longer than a page).
    let whole_job = app.create(&key, json!({"url": url, "waitUntil": "load", "format": "text"})).await;
    let whole = app.wait(&key, whole_job["id"].as_str().unwrap()).await;
    let (_, _, body) = app.fetch(whole["publicUrl"].as_str().unwrap()).await;
    let whole_text = String::from_utf8(body).unwrap();
    let total = whole["metadata"]["content"]["totalChars"].as_u64().unwrap();
    assert_eq!(total, whole_text.chars().count() as u64 - 1);
    let (mut from, mut joined, mut pages) = (Some(0u64), String::new(), 0);
    while let Some(f) = from {
        let job = app
            .create(&key, json!({"url": url, "waitUntil": "load", "format": "text", "maxChars": 60, "from": f}))
            .await;
        let done = app.wait(&key, job["id"].as_str().unwrap()).await;
        let c = &done["metadata"]["content"];
        assert_eq!((c["from"].as_u64(), c["totalChars"].as_u64()), (Some(f), Some(total)), "{done}");
        let (_, _, body) = app.fetch(done["publicUrl"].as_str().unwrap()).await;
        let part = String::from_utf8(body).unwrap();
        let part = part.strip_suffix('\n').unwrap();
        assert!(part.chars().count() <= 60, "{part:?}");
        joined.push_str(part);
        from = c["nextFrom"].as_u64();
        if from.is_some() {
            joined.push('\n');
        }
        pages += 1;
        assert!(pages < 20);
    }
    assert!(pages >= 3, "{pages}");
    // Lines cut inside (longer than a page) come back whole once joined.
    assert_eq!(joined.replace('\n', ""), whole_text.trim_end().replace('\n', ""));

    // Bulk: Markdown of several pages in one request, each its own job.
    let r = app
        .post_json(
            &key,
            "/v1/screenshots/bulk",
            &json!({"defaults": {"format": "markdown", "mainContent": true, "waitUntil": "load"},
                "requests": [{"url": site.url("/plain.html")}, {"url": site.url("/onetrust.html")}]}),
        )
        .await;
    assert_eq!(r.status().as_u16(), 202);
    let batch: Value = r.json().await.unwrap();
    for job in batch["data"].as_array().unwrap() {
        let done = app.wait(&key, job["id"].as_str().unwrap()).await;
        assert_eq!((done["status"].as_str(), done["format"].as_str()), (Some("done"), Some("markdown")), "{done}");
        let (_, ct, _) = app.fetch(done["publicUrl"].as_str().unwrap()).await;
        assert_eq!(ct, "text/markdown; charset=utf-8");
    }
}

/// A stand-in for an OpenAI-compatible model server (Ollama, vLLM) on 127.0.0.1: it reads the
/// page's Markdown it is sent and answers from it — the heading as `title` — the first time
/// with a number where the schema wants text (so the service must retry with the error), or
/// always with prose (`/garbage`). Every request body is kept for the test to read.
async fn model_server() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use axum::{Json, Router, extract::State, routing::post};
    type Seen = std::sync::Arc<std::sync::Mutex<Vec<Value>>>;
    async fn answer(State(seen): State<Seen>, uri: axum::http::Uri, Json(body): Json<Value>) -> Json<Value> {
        let n = {
            let mut s = seen.lock().unwrap();
            s.push(body.clone());
            s.len()
        };
        let page = body["messages"][1]["content"].as_str().unwrap_or_default().to_string();
        let heading = page.lines().find_map(|l| l.strip_prefix("# ")).unwrap_or("none").to_string();
        let content = if uri.path().starts_with("/garbage") {
            "The title is probably something about cookies.".to_string()
        } else if n == 1 {
            json!({"title": 42}).to_string()
        } else {
            format!("```json\n{}\n```", json!({"title": heading, "price": null}))
        };
        Json(json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}))
    }
    let seen: Seen = Default::default();
    let app = Router::new()
        .route("/v1/chat/completions", post(answer))
        .route("/garbage/v1/chat/completions", post(answer))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn extraction_by_a_language_model_is_refused_without_one_and_validated_with_one() {
    let site = corpus::serve().await;
    let url = site.url("/plain.html");
    let body = json!({"url": url, "waitUntil": "load", "format": "text", "extract": {
        "prompt": "The page's title", "schema": {"type": "object", "required": ["title"],
            "properties": {"title": {"type": "string"}, "price": {"type": ["number", "null"]}}}}});

    // No model here: refused up front, not charged, and /readyz says why.
    let app = TestApp::spawn(Opts::full(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free").await;
    let r = app.post_json(&key, "/v1/screenshot", &body).await;
    assert_eq!(r.status().as_u16(), 501);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["code"], "FEATURE_UNAVAILABLE", "{v}");
    assert!(v["error"].as_str().unwrap().contains("CAPTURE_LLM_URL"), "{v}");
    assert_eq!(used(&app, &key).await, 0);
    let ready: Value = app.client().get(app.url("/readyz")).send().await.unwrap().json().await.unwrap();
    assert_eq!(ready["features"]["llmExtraction"]["status"], "unavailable", "{ready}");
    assert!(ready["unavailableFeatures"].as_array().unwrap().contains(&json!("llmExtraction")));

    // With a model: its first answer does not match the schema, so it is asked again with why;
    // the second is the job's data. The capture and the extraction are charged: two actions.
    let (model, seen) = model_server().await;
    let app = TestApp::spawn(
        Opts::full(Db::Sqlite).env("CAPTURE_LLM_URL", &format!("{model}/v1")).env("CAPTURE_LLM_MODEL", "test-model"),
    )
    .await;
    let (_, key) = app.user_with_key("free").await;
    let job = app.create(&key, body.clone()).await;
    let done = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(done["status"].as_str(), Some("done"), "{done}");
    assert_eq!(done["data"], json!({"title": "How cookies and CAPTCHAs work", "price": null}), "{done}");
    assert_eq!(done["sources"], json!({"title": "model:test-model", "price": null}));
    assert_eq!(used(&app, &key).await, 2);
    let asked = seen.lock().unwrap().clone();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0]["model"], "test-model");
    let page = asked[0]["messages"][1]["content"].as_str().unwrap();
    assert!(page.starts_with("Task: The page's title\n"), "{page}");
    assert!(page.contains("\n# How cookies and CAPTCHAs work\n"), "{page}");
    let retry = asked[1]["messages"][3]["content"].as_str().unwrap();
    assert!(retry.starts_with("That answer is not valid: it does not match the schema at /title: "), "{retry}");
    let ready: Value = app.client().get(app.url("/readyz")).send().await.unwrap().json().await.unwrap();
    assert_eq!(ready["features"]["llmExtraction"]["status"], "ok", "{ready}");

    // A model that never answers in JSON: the job fails saying so; the capture stays charged,
    // the extraction is given back.
    let app = TestApp::spawn(
        Opts::full(Db::Sqlite)
            .env("CAPTURE_LLM_URL", &format!("{model}/garbage/v1"))
            .env("CAPTURE_LLM_MODEL", "test-model"),
    )
    .await;
    let (_, key) = app.user_with_key("free").await;
    let job = app.create(&key, body).await;
    let failed = app.wait(&key, job["id"].as_str().unwrap()).await;
    assert_eq!(failed["status"].as_str(), Some("failed"), "{failed}");
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.starts_with("extract: the language model's answer is not valid after a retry: the answer is not JSON"),
        "{error}"
    );
    assert_eq!(used(&app, &key).await, 1);
}
