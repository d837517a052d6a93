//! The dashboard: keys and the REST API, usage, screenshots, webhooks, isolation, escaping.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::helpers::{Api, Db, TestApp, eventually};
use crate::web::{PASSWORD, email, pdf, png, spawn, upload};
use capture_testkit::both_dbs;
use capture_testkit::visitor::{Page, Visitor, value_after};

/// The `<tr>…</tr>` of `page` that contains `needle`.
fn row<'a>(page: &'a Page, needle: &str) -> &'a str {
    page.body
        .split("<tr>")
        .skip(1)
        .find(|r| r.contains(needle))
        .map(|r| r.split("</tr>").next().unwrap())
        .unwrap_or_else(|| panic!("no row with {needle:?} in:\n{}", page.body))
}

async fn balance(app: &TestApp, key: &str) -> (u16, Value) {
    let r = app.get(key, "/v1/account/balance").await;
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn keys_work_until_revoked_and_reveal_shows_the_same_key(db: Db) {
    let app = spawn(db).await;
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    let (prod_id, prod) = v.create_key("production").await;
    let (staging_id, staging) = v.create_key("staging").await;
    assert!(prod.starts_with("sk_live_") && staging.starts_with("sk_live_") && prod != staging);

    let (status, b) = balance(&app, &prod).await;
    assert_eq!(status, 200, "{b}");
    assert_eq!(b["plan"], "free");
    assert_eq!(balance(&app, &staging).await.1["userId"], b["userId"], "one account, several keys");

    // Reveal shows the stored key in full, to its owner, never cached.
    let (_, csrf) = v.dashboard().await;
    let revealed = v.submit(&format!("/dashboard/keys/{prod_id}/reveal"), &csrf, &[]).await.expect(200);
    assert_eq!(revealed.api_key(), prod);
    assert_eq!(revealed.header("cache-control"), "no-store");
    assert!(revealed.body.contains("<label for=\"api-key\">API key</label>"));

    // Usage is counted per key, and the dashboard shows the same numbers as the balance.
    upload(&app, &prod, "a.png", png(64, 48, [200, 30, 30])).await;
    let (status, b) = balance(&app, &prod).await;
    assert_eq!((status, b["usage"]["used"].as_i64()), (200, Some(1)));
    let (dash, csrf) = v.dashboard().await;
    assert!(row(&dash, "production").contains("<td class=\"num\">1</td>"), "{}", row(&dash, "production"));
    assert!(row(&dash, "staging").contains("<td class=\"num\">0</td>"));
    assert!(dash.body.contains("<strong>1</strong> of <strong>100</strong> actions used"));
    let reset = b["window"]["resetAt"].as_str().unwrap();
    assert!(dash.body.contains(&format!("datetime=\"{reset}\">{}</time>", &reset[..10])), "reset date shown");
    assert!(row(&dash, "production").contains(&prod[..12]), "the prefix is listed");
    assert!(!dash.body.contains(&prod), "the full key is not on the dashboard");

    // Revoking is immediate: the very next REST call is refused; the other key still works.
    let r = v.submit(&format!("/dashboard/keys/{prod_id}/revoke"), &csrf, &[]).await.expect(303);
    assert_eq!(r.location(), "/dashboard#keys");
    assert_eq!(balance(&app, &prod).await.0, 401);
    assert_eq!(balance(&app, &staging).await.0, 200);
    let (dash, csrf) = v.dashboard().await;
    assert!(row(&dash, "production").contains("Revoked"));
    assert!(!row(&dash, "production").contains("Reveal"));
    v.submit(&format!("/dashboard/keys/{prod_id}/reveal"), &csrf, &[]).await.expect(409);
    // Revoking twice is harmless.
    v.submit(&format!("/dashboard/keys/{prod_id}/revoke"), &csrf, &[]).await.expect(303);
    assert!(row(&dash, "staging").contains(&format!("/dashboard/keys/{staging_id}/revoke")));
}
both_dbs!(keys_work_until_revoked_and_reveal_shows_the_same_key);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn another_accounts_keys_screenshots_and_endpoints_are_not_found() {
    let app = spawn(Db::Sqlite).await;
    let owner = Visitor::new(&app);
    owner.sign_up(&email(), PASSWORD).await;
    let (key_id, key) = owner.create_key("owner").await;
    let shot = upload(&app, &key, "doc.pdf", pdf()).await;
    let shot_id = shot["id"].as_str().unwrap().to_string();
    let (_, csrf) = owner.dashboard().await;
    owner.submit(&format!("/dashboard/screenshots/{shot_id}/share"), &csrf, &[]).await.expect(303);
    owner
        .submit("/dashboard/webhooks", &csrf, &[("url", "http://127.0.0.1:9/hook"), ("events", "*")])
        .await
        .expect(200);
    let hooks = owner.get("/dashboard/webhooks").await.expect(200);
    let hook_id = hooks.ids_after("/dashboard/webhooks/whe_").pop().map(|i| format!("whe_{i}")).unwrap();

    let intruder = Visitor::new(&app);
    intruder.sign_up(&email(), PASSWORD).await;
    let (_, csrf) = intruder.dashboard().await;
    for path in [
        format!("/dashboard/keys/{key_id}/reveal"),
        format!("/dashboard/keys/{key_id}/revoke"),
        format!("/dashboard/screenshots/{shot_id}/share"),
        format!("/dashboard/screenshots/{shot_id}/unshare"),
        format!("/dashboard/webhooks/{hook_id}/rotate"),
        format!("/dashboard/webhooks/{hook_id}/test"),
        format!("/dashboard/webhooks/{hook_id}/delete"),
        "/dashboard/keys/key_doesnotexist/reveal".to_string(),
        "/dashboard/keys/not-an-id/revoke".to_string(),
    ] {
        let p = intruder.submit(&path, &csrf, &[]).await;
        assert_eq!(p.status, 404, "POST {path}: {}", p.body);
        assert!(p.header("content-type").starts_with("text/html"), "website errors are pages");
        assert!(!p.body.contains(&key) && !p.body.contains(&shot_id[4..]));
    }
    for path in [format!("/dashboard/screenshots/{shot_id}/pdf"), format!("/dashboard/webhooks/{hook_id}")] {
        assert_eq!(intruder.get(&path).await.status, 404, "GET {path}");
    }
    let (dash, _) = intruder.dashboard().await;
    assert!(!dash.body.contains(&shot_id) && !dash.body.contains("owner"));

    // Nothing of the owner's changed.
    assert_eq!(balance(&app, &key).await.0, 200);
    let (dash, _) = owner.dashboard().await;
    assert!(row(&dash, &shot_id).contains("/s/"), "still shared");
    owner.get(&format!("/dashboard/webhooks/{hook_id}")).await.expect(200);
    owner.get(&format!("/dashboard/screenshots/{shot_id}/pdf")).await.expect(200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn screenshots_are_listed_shared_unshared_and_downloaded() {
    let app = spawn(Db::Sqlite).await;
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    let (_, key) = v.create_key("default").await;
    let image = upload(&app, &key, "red.png", png(320, 200, [220, 20, 20])).await;
    let doc = upload(&app, &key, "report.pdf", pdf()).await;
    let (image_id, doc_id) = (image["id"].as_str().unwrap(), doc["id"].as_str().unwrap());

    let (dash, csrf) = v.dashboard().await;
    let thumb = image["thumbnailUrl"].as_str().unwrap();
    assert!(row(&dash, image_id).contains(&format!("<img src=\"{thumb}\"")), "thumbnail shown");
    let (status, ct, bytes) = app.fetch(thumb).await;
    assert_eq!((status, ct.as_str()), (200, "image/png"));
    assert!(crate::helpers::decode(&bytes).width() > 0);
    assert!(
        row(&dash, doc_id).contains(&format!("href=\"/dashboard/screenshots/{doc_id}/pdf\" download>Download PDF</a>"))
    );
    assert!(!row(&dash, image_id).contains("Download PDF"));

    // Share: the link works for anyone, without a session.
    v.submit(&format!("/dashboard/screenshots/{image_id}/share"), &csrf, &[]).await.expect(303);
    let (dash, csrf) = v.dashboard().await;
    let link = value_after(row(&dash, image_id), "class=\"share-link\" href=\"").expect("a share link");
    assert!(link.starts_with(&format!("{}/s/", app.base)));
    let public = app.client.get(&link).send().await.unwrap();
    assert_eq!(public.status().as_u16(), 200);
    assert!(public.text().await.unwrap().contains(image["publicUrl"].as_str().unwrap()));
    // Sharing again keeps the same link; unsharing kills it.
    v.submit(&format!("/dashboard/screenshots/{image_id}/share"), &csrf, &[]).await.expect(303);
    let (dash, csrf) = v.dashboard().await;
    assert!(row(&dash, image_id).contains(&link));
    v.submit(&format!("/dashboard/screenshots/{image_id}/unshare"), &csrf, &[]).await.expect(303);
    assert_eq!(app.client.get(&link).send().await.unwrap().status().as_u16(), 404);
    let (dash, _) = v.dashboard().await;
    assert!(!row(&dash, image_id).contains("/s/"));

    // The PDF downloads as an attachment with the session alone.
    let r = v.get(&format!("/dashboard/screenshots/{doc_id}/pdf")).await.expect(200);
    assert_eq!(r.header("content-type"), "application/pdf");
    assert!(
        r.header("content-disposition").starts_with("attachment; filename="),
        "{}",
        r.header("content-disposition")
    );
    assert!(r.body.starts_with("%PDF-"));
    v.get(&format!("/dashboard/screenshots/{image_id}/pdf")).await.expect(404);
    Visitor::new(&app).get(&format!("/dashboard/screenshots/{doc_id}/pdf")).await.expect(303);
}

/// A local webhook receiver that answers 200 and keeps what it got.
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<(axum::http::HeaderMap, String)>>>,
}

impl Receiver {
    async fn start() -> Receiver {
        let got = Arc::new(Mutex::new(Vec::new()));
        let g = got.clone();
        let router = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: axum::http::HeaderMap, body: String| {
                let g = g.clone();
                async move {
                    g.lock().unwrap().push((headers, body));
                    "{\"ok\":true}"
                }
            }),
        );
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", l.local_addr().unwrap());
        tokio::spawn(async move {
            let _ = axum::serve(l, router).await;
        });
        Receiver { url, got }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn webhook_endpoints_are_created_rotated_tested_and_deleted() {
    let app = spawn(Db::Sqlite).await;
    let receiver = Receiver::start().await;
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    let hooks = v.get("/dashboard/webhooks").await.expect(200);
    let csrf = hooks.csrf();

    let bad =
        v.submit("/dashboard/webhooks", &csrf, &[("url", "ftp://example.com/x"), ("description", "keep me")]).await;
    let bad = bad.expect(400);
    assert!(bad.body.contains("must be an http(s) URL") && bad.body.contains("value=\"keep me\""), "{}", bad.body);

    let created = v
        .submit(
            "/dashboard/webhooks",
            &csrf,
            &[
                ("url", &receiver.url),
                ("events", "test.ping"),
                ("events", "screenshot.completed"),
                ("description", "CI"),
            ],
        )
        .await
        .expect(200);
    let first =
        value_after(&created.body, "value=\"whsec_").map(|s| format!("whsec_{s}")).expect("the secret is shown once");
    let list = v.get("/dashboard/webhooks").await.expect(200);
    assert!(list.body.contains(&receiver.url) && list.body.contains("test.ping, screenshot.completed"));
    assert!(!list.body.contains(&first), "the secret is not listed");
    let id = format!("whe_{}", list.ids_after("/dashboard/webhooks/whe_")[0]);

    let rotated = v.submit(&format!("/dashboard/webhooks/{id}/rotate"), &csrf, &[]).await.expect(200);
    let second = value_after(&rotated.body, "value=\"whsec_").map(|s| format!("whsec_{s}")).unwrap();
    assert_ne!(first, second);

    let sent = v.submit(&format!("/dashboard/webhooks/{id}/test"), &csrf, &[]).await.expect(303);
    assert_eq!(sent.location(), format!("/dashboard/webhooks/{id}?sent=1"));
    assert!(v.get(sent.location()).await.expect(200).body.contains("A test.ping delivery is queued"));
    let page = eventually("the test delivery succeeds", Duration::from_secs(30), || async {
        let p = v.get(&format!("/dashboard/webhooks/{id}")).await.expect(200);
        if p.body.contains("<td>succeeded</td>") { Ok(p) } else { Err(p.body) }
    })
    .await;
    assert!(row(&page, "test.ping").contains("<td class=\"num\">200</td>"));
    // The receiver got a ping signed with the rotated secret.
    let (headers, body) = receiver.got.lock().unwrap()[0].clone();
    let sig = headers["webhook-signature"].to_str().unwrap().to_string();
    let ts = headers["webhook-timestamp"].to_str().unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(second.as_bytes()).unwrap();
    mac.update(format!("{ts}.{body}").as_bytes());
    assert_eq!(sig, format!("t={ts},v1={}", hex::encode(mac.finalize().into_bytes())));
    assert!(body.contains("\"test.ping\""));

    v.submit(&format!("/dashboard/webhooks/{id}/delete"), &csrf, &[]).await.expect(303);
    assert!(v.get("/dashboard/webhooks").await.expect(200).body.contains("No endpoints yet"));
    v.get(&format!("/dashboard/webhooks/{id}")).await.expect(404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn user_data_is_escaped_and_pages_carry_their_headers() {
    let app = spawn(Db::Sqlite).await;
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    let evil = "<script>alert(\"x\")</script>&";
    let (_, key) = v.create_key(evil).await;
    let (dash, csrf) = v.dashboard().await;
    assert!(!dash.body.contains("<script>alert"));
    assert!(dash.body.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;"));
    v.submit("/dashboard/webhooks", &csrf, &[("url", "http://127.0.0.1:9/x"), ("description", evil)]).await.expect(200);
    let hooks = v.get("/dashboard/webhooks").await.expect(200);
    assert!(!hooks.body.contains("<script>alert") && hooks.body.contains("&lt;script&gt;"));
    upload(&app, &key, "<b>odd name</b>.png", png(10, 10, [0, 0, 0])).await;
    let (dash, _) = v.dashboard().await;
    assert!(!dash.body.contains("<b>odd"));

    for path in ["/dashboard", "/settings", "/dashboard/webhooks"] {
        let p = v.get(path).await.expect(200);
        assert_eq!(p.header("cache-control"), "no-store", "{path}");
        assert_eq!(p.header("x-frame-options"), "DENY", "{path}");
        assert!(p.header("content-security-policy").contains("frame-ancestors 'none'"), "{path}");
        // Scripts and styles come from this server only.
        assert_eq!(p.body.matches("<script").count(), 1, "{path}");
        assert!(p.body.contains("<script src=\"/assets/web.js\" defer>"), "{path}");
        assert_eq!(
            p.body.matches("<link").count(),
            p.body.matches("<link rel=\"stylesheet\" href=\"/assets/web.css\">").count()
        );
        assert!(p.body.contains("<button type=\"submit\" class=\"link\">Sign out</button>"), "{path}");
    }
    let css = app.client.get(app.url("/assets/web.css")).send().await.unwrap();
    assert_eq!(css.status().as_u16(), 200);
    assert!(css.headers()["content-type"].to_str().unwrap().starts_with("text/css"));
    let js = app.client.get(app.url("/assets/web.js")).send().await.unwrap();
    assert!(js.text().await.unwrap().contains("navigator.clipboard"));
    // The home page sends a signed-in visitor to the dashboard.
    assert_eq!(v.get("/").await.expect(303).location(), "/dashboard");
    assert!(Visitor::new(&app).get("/").await.expect(200).body.contains("Create account"));
}

/// What cannot work on this server is said once, up front: with no SMTP server and a
/// `CAPTURE_AXE_PATH` that is not axe-core, `/readyz` names both features (and stays ready:
/// they are reported, not required), the dashboard shows both with what fixes them, and the
/// campaigns page — which needs both — shows them too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_and_readiness_say_which_features_cannot_work_here() {
    let dir = tempfile::tempdir().unwrap();
    let not_axe = dir.path().join("axe.min.js");
    std::fs::write(&not_axe, "console.log('not the accessibility engine');").unwrap();
    let app = TestApp::spawn(
        crate::helpers::Opts::api(Db::Sqlite)
            .env("CAPTURE_AXE_PATH", not_axe.to_str().unwrap())
            .env("CAPTURE_SMTP_URL", ""),
    )
    .await;
    let r = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(r.status(), 200, "features are reported, not required");
    let ready: Value = r.json().await.unwrap();
    let down: Vec<&str> =
        ready["unavailableFeatures"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(down.contains(&"mail") && down.contains(&"auditAccessibility"), "{ready}");
    let acc = &ready["features"]["auditAccessibility"];
    assert_eq!(acc["status"], "unavailable");
    assert!(acc["detail"].as_str().unwrap().contains("does not look like axe-core"), "{acc}");
    assert!(acc["detail"].as_str().unwrap().contains("quality_gate:report_has_scores"), "{acc}");
    assert!(acc["fix"].as_str().unwrap().contains("CAPTURE_AXE_PATH"), "{acc}");
    assert_eq!(ready["features"]["mail"]["status"], "unavailable");
    assert!(ready["features"]["mail"]["fix"].as_str().unwrap().contains("CAPTURE_SMTP_URL"));
    // This node has no worker role: it cannot speak for the workers' tools.
    assert_eq!(ready["features"]["runVideos"]["status"], "not-on-this-node");
    assert_eq!(ready["features"]["videoAds"]["status"], "not-on-this-node");

    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    let (page, _) = v.dashboard().await;
    let section =
        page.body.split("<section id=\"unavailable\"").nth(1).expect("the notice").split("</section>").next().unwrap();
    assert!(section.contains("Not working on this server"), "{section}");
    let mail = section.split("id=\"feature-mail\"").nth(1).unwrap().split("</li>").next().unwrap();
    assert!(mail.contains("No SMTP server is configured") && mail.contains("Set CAPTURE_SMTP_URL"), "{mail}");
    let axe = section.split("id=\"feature-auditAccessibility\"").nth(1).unwrap().split("</li>").next().unwrap();
    assert!(axe.contains("Accessibility scores of audits") && axe.contains("does not look like axe-core"), "{axe}");
    assert!(!section.contains("feature-runVideos"), "not this node's to say: {section}");
    let campaigns = v.get("/dashboard/campaigns").await.expect(200);
    let notice = campaigns.body.split("<section id=\"unavailable\"").nth(1).expect("the campaigns page says it too");
    assert!(notice.contains("feature-mail") && notice.contains("feature-auditAccessibility"), "{notice}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_page_names_its_credentials_and_never_shows_their_values() {
    let app = spawn(Db::Sqlite).await;
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    let (_, key) = v.create_key("ci").await;
    let body = serde_json::json!({"url": "https://example.com/members",
        "headers": {"X-Api-Key": "key-7d41b0"},
        "cookies": [{"name": "sid", "value": "sess-9f2c1e"}],
        "httpAuth": {"username": "ann-user-31", "password": "pw-5521-s3cret"}});
    let job = app.create(&key, body).await;
    let page = v.get(&format!("/dashboard/screenshots/{}", job["id"].as_str().unwrap())).await.expect(200);
    for secret in ["key-7d41b0", "sess-9f2c1e", "ann-user-31", "pw-5521-s3cret"] {
        assert!(!page.body.contains(secret), "{secret} is on the job's page");
    }
    // The options table and the snippets name them, with a placeholder for each value.
    assert!(page.body.contains("X-Api-Key") && page.body.contains("sid"), "{}", page.body);
    assert!(page.body.contains("(hidden)"));
    assert!(!page.body.contains("credentialsSet"), "only request fields are shown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn render_link_keys_are_made_shown_once_and_revoked_on_the_dashboard() {
    let app = spawn(Db::Sqlite).await;
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    let (dash, csrf) = v.dashboard().await;
    assert!(dash.body.contains("href=\"/dashboard/render-links\""));
    let created = v.submit("/dashboard/render-links", &csrf, &[("name", "blog images")]).await.expect(200);
    let secret = value_after(&created.body, "value=\"rks_").map(|s| format!("rks_{s}")).expect("the secret, once");
    let list = v.get("/dashboard/render-links").await.expect(200);
    assert!(!list.body.contains(&secret), "the list never shows the secret");
    let id =
        value_after(&list.body, "<td><code>rlk_").map(|s| format!("rlk_{}", s.split('<').next().unwrap())).unwrap();
    assert!(row(&list, "blog images").contains(&id));
    // A link signed with it is refused once the key is revoked there (an unknown page, so
    // the refusal is the signature's, not the capture's).
    let query = format!("url=https%3A%2F%2Fexample.com%2F&key={id}");
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(query.as_bytes());
    let url = app.url(&format!("/v1/render?{query}&signature={}", hex::encode(mac.finalize().into_bytes())));
    v.submit(&format!("/dashboard/render-links/{id}/revoke"), &csrf, &[]).await.expect(303);
    let r = app.client.get(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 403);
    assert!(!v.get("/dashboard/render-links").await.expect(200).body.contains(&id));
    // An empty name is refused on the page, naming what is wrong.
    let bad = v.submit("/dashboard/render-links", &csrf, &[("name", " ")]).await.expect(400);
    assert!(bad.body.contains("Name: must be 1 to 100 characters."), "{}", bad.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_destinations_are_checked_added_and_deleted_on_the_dashboard() {
    let Some(program) = capture_testkit::moto::require_moto(crate::helpers::TARGET_TMPDIR) else { return };
    let moto = capture_testkit::moto::Moto::start(&program).await;
    moto.create_bucket("dash-shots").await;
    let (key_id, secret) = moto.iam_user_with_s3_access("dash-writer").await;
    moto.enforce_auth(true).await;
    let app = spawn(Db::Sqlite).await;
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    let (dash, csrf) = v.dashboard().await;
    assert!(dash.body.contains("href=\"/dashboard/storage\""));
    let form = |url: &'static str, id: &str, s: &str| {
        vec![
            ("name", "site images".to_string()),
            ("url", url.to_string()),
            ("endpoint", moto.endpoint.clone()),
            ("region", "eu-west-1".to_string()),
            ("access_key_id", id.to_string()),
            ("secret_access_key", s.to_string()),
        ]
    };
    // Wrong keys: the page says why, nothing is added.
    let wrong = form("s3://dash-shots", "AKIAWRONG", "nope");
    let wrong: Vec<(&str, &str)> = wrong.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let bad = v.submit("/dashboard/storage", &csrf, &wrong).await.expect(422);
    assert!(bad.body.contains("the bucket refused the key pair (InvalidAccessKeyId)"), "{}", bad.body);
    assert!(bad.body.contains("No storage destinations yet."));
    // The right keys: listed, with neither key shown.
    let good = form("s3://dash-shots/site", &key_id, &secret);
    let good: Vec<(&str, &str)> = good.iter().map(|(k, v)| (*k, v.as_str())).collect();
    v.submit("/dashboard/storage", &csrf, &good).await.expect(303);
    let list = v.get("/dashboard/storage").await.expect(200);
    let line = row(&list, "site images");
    assert!(line.contains("<code>s3://dash-shots/site</code>"), "{line}");
    assert!(!list.body.contains(&secret) && !list.body.contains(&key_id));
    let id = value_after(line, "<td><code>sd_").map(|s| format!("sd_{}", s.split('<').next().unwrap())).unwrap();
    v.submit(&format!("/dashboard/storage/{id}/delete"), &csrf, &[]).await.expect(303);
    assert!(!v.get("/dashboard/storage").await.expect(200).body.contains(&id));
}
