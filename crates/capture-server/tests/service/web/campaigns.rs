//! The dashboard's campaigns page: the account's campaigns with their rows and why each waits,
//! today's sending capacity, nobody else's campaigns, and no control that sends.

use serde_json::{Value, json};

use crate::helpers::{Api, Db};
use crate::web::{PASSWORD, email, spawn};
use capture_testkit::visitor::Visitor;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_campaigns_page_lists_the_accounts_campaigns_and_rows_only() {
    let app = spawn(Db::Sqlite).await;
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    let (_, key) = v.create_key("default").await;
    let send_at = capture_core::time::iso(capture_core::time::now_ms() + 30 * 86_400_000);
    let body = json!({"name": "Autumn <outreach>", "sendAt": send_at, "timezone": "Europe/Paris",
        "sendHours": "office", "recipients": [{"websiteUrl": "https://site.example/", "recipientEmail": "boss@site.example"}]});
    let r = app.post_json(&key, "/v1/campaigns", &body).await;
    assert_eq!(r.status(), 201);
    let c: Value = r.json().await.unwrap();

    let page = v.get("/dashboard/campaigns").await.expect(200);
    assert!(
        page.body.contains("Autumn &lt;outreach&gt;") && !page.body.contains("Autumn <outreach>"),
        "escaped: {}",
        page.body
    );
    let row = page.body.split("<tr>").find(|r| r.contains("https://site.example/")).unwrap();
    assert!(row.contains("boss@site.example") && row.contains("pending") && row.contains("waiting: launch"), "{row}");
    assert!(page.body.contains("Status <strong>draft</strong>") && page.body.contains("Europe/Paris"), "{}", page.body);
    assert!(
        page.body.contains("Sending capacity today") && page.body.contains("no-reply@capture.localhost"),
        "{}",
        page.body
    );
    let main = page.body.split("<main>").nth(1).unwrap().split("</main>").next().unwrap();
    assert!(!main.to_lowercase().contains("send now") && !main.contains("<form"), "nothing here sends: {main}");
    assert!(c["id"].as_str().is_some_and(|id| page.body.contains(id)));

    // Another account sees none of it; a visitor without a session is sent to sign in.
    let other = Visitor::new(&app);
    other.sign_up(&email(), PASSWORD).await;
    let page = other.get("/dashboard/campaigns").await.expect(200);
    assert!(!page.body.contains("site.example") && page.body.contains("No campaigns yet"), "{}", page.body);
    Visitor::new(&app).get("/dashboard/campaigns").await.expect(303);
}
