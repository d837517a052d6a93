//! The dashboard's audits page: the account's audits with their status, scores and report
//! links, and nobody else's.

use serde_json::{Value, json};

use crate::helpers::{Api, Db};
use crate::web::{PASSWORD, email, spawn};
use capture_testkit::visitor::Visitor;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audits_page_lists_the_accounts_audits_only() {
    let app = spawn(Db::Sqlite).await;
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    let (_, key) = v.create_key("default").await;
    let r =
        app.post_json(&key, "/v1/audits", &json!({"url": "https://audited.example/", "reportType": "full_site"})).await;
    assert_eq!(r.status(), 202);
    let audit: Value = r.json().await.unwrap();

    let page = v.get("/dashboard/audits").await.expect(200);
    assert!(page.body.contains("https://audited.example/"), "{}", page.body);
    let row = page.body.split("<tr>").find(|r| r.contains("https://audited.example/")).unwrap();
    assert!(row.contains("full_site") && row.contains("pending"), "{row}");
    assert!(!row.contains(audit["reportUrl"].as_str().unwrap()), "no report link before it is done: {row}");
    assert!(page.body.contains("href=\"/dashboard/audits\" aria-current=\"page\""), "the navigation marks the page");

    // Another account sees none of it; a visitor without a session is sent to sign in.
    let other = Visitor::new(&app);
    other.sign_up(&email(), PASSWORD).await;
    let page = other.get("/dashboard/audits").await.expect(200);
    assert!(!page.body.contains("audited.example") && page.body.contains("No audits yet"), "{}", page.body);
    Visitor::new(&app).get("/dashboard/audits").await.expect(303);
}
