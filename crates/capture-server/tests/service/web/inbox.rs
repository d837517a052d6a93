//! The settings page's auth-test inbox: the address and counts shown, the password revealed
//! only through a POSTed form with the CSRF token, rotation only with a ticked confirmation,
//! and the same inbox as the REST API sees.

use serde_json::Value;

use crate::helpers::{Api, Db};
use crate::web::{PASSWORD, email, spawn};
use capture_testkit::visitor::{Visitor, value_after};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn settings_show_the_inbox_and_reveal_and_rotate_it_with_care() {
    let app = spawn(Db::Sqlite).await;
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    let (_, key) = v.create_key("agent").await;
    let api: Value = app.get(&key, "/v1/inbox").await.json().await.unwrap();
    let address = api["address"].as_str().unwrap();

    let settings = v.get("/settings").await.expect(200);
    assert!(settings.body.contains(&format!("<code id=\"inbox-address\">{address}</code>")), "{}", settings.body);
    assert!(settings.body.contains("0 (0 unseen)"), "{}", settings.body);
    assert!(!settings.body.contains(api["password"].as_str().unwrap()), "the password is not on the page");
    let csrf = settings.csrf();

    // Reveal: a POST with the CSRF token shows the same password as the API, never cached.
    v.post("/settings/inbox/reveal", &[("csrf", "forged")]).await.expect(403);
    let shown = v.submit("/settings/inbox/reveal", &csrf, &[]).await.expect(200);
    assert_eq!(shown.header("cache-control"), "no-store");
    let password = value_after(
        &shown.body,
        "id=\"inbox-password\" type=\"text\" readonly spellcheck=\"false\" autocomplete=\"off\" value=\"",
    )
    .unwrap();
    assert_eq!(password, api["password"].as_str().unwrap());

    // Rotate: refused without the ticked confirmation, and without the token.
    v.submit("/settings/inbox/rotate", &csrf, &[("rotate", "password")]).await.expect(400);
    v.post("/settings/inbox/rotate", &[("rotate", "password"), ("confirm", "yes")]).await.expect(403);
    let rotated =
        v.submit("/settings/inbox/rotate", &csrf, &[("rotate", "password"), ("confirm", "yes")]).await.expect(200);
    let new_password = value_after(
        &rotated.body,
        "id=\"inbox-password\" type=\"text\" readonly spellcheck=\"false\" autocomplete=\"off\" value=\"",
    )
    .unwrap();
    assert_ne!(new_password, password);
    let after: Value = app.get(&key, "/v1/inbox").await.json().await.unwrap();
    assert_eq!((after["address"].as_str(), after["password"].as_str()), (Some(address), Some(new_password.as_str())));
    let rotated =
        v.submit("/settings/inbox/rotate", &csrf, &[("rotate", "address"), ("confirm", "yes")]).await.expect(200);
    let after: Value = app.get(&key, "/v1/inbox").await.json().await.unwrap();
    assert_ne!(after["address"].as_str(), Some(address));
    assert!(rotated.body.contains(after["address"].as_str().unwrap()), "{}", rotated.body);

    // Recorded attempts show up on the page.
    let r = app
        .post_json(&key, "/v1/auth-test/record", &serde_json::json!({"url": "https://www.Shop.example/login", "action": "sign_in", "outcome": "success", "note": "<b>ok</b>"}))
        .await;
    assert_eq!(r.status(), 201);
    let settings = v.get("/settings").await.expect(200);
    assert!(
        settings.body.contains("<td>https://shop.example</td><td>sign_in</td><td>success</td>"),
        "{}",
        settings.body
    );
    assert!(settings.body.contains("&lt;b&gt;ok&lt;/b&gt;"), "notes are escaped");
}
