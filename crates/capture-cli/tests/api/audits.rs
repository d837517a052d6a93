//! An audit's PDF served by a second node without a browser (two processes on one
//! deployment). The rest: `crates/capture-server/tests/service/api/audits.rs`.

use crate::helpers::*;
use capture_audit::fixtures::FixtureSite;
use capture_testkit::audits::*;
use serde_json::{Value, json};
use std::time::Duration;

/// One page: 1 action, replayed under its Idempotency-Key without a second charge; the
/// public report page (phone-readable, no scripts, strict CSP) and its PDF, parsed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_single_page_audit_costs_one_action_replays_and_has_a_report_page_and_pdf() {
    let site = FixtureSite::start().await.unwrap();
    let app = TestApp::spawn(opts(Db::Sqlite)).await;
    let (_, key) = app.user_with_key("free").await;
    let body = json!({"url": site.url("/images"), "reportType": "single_page"});
    let r = post_audit(&app, &key, &body, Some("audit-key-0001")).await;
    assert_eq!(r.status(), 202);
    let first: Value = r.json().await.unwrap();
    let id = first["id"].as_str().unwrap().to_string();
    assert_eq!(first["maxPages"], 1);
    let r = post_audit(&app, &key, &body, Some("audit-key-0001")).await;
    assert_eq!(r.status(), 202);
    assert_eq!(r.headers()["idempotency-replayed"], "true");
    let again: Value = r.json().await.unwrap();
    assert_eq!(again["id"], id.as_str());
    let r = post_audit(&app, &key, &json!({"url": site.url("/clean")}), Some("audit-key-0001")).await;
    assert_eq!(r.status(), 422, "the same key with another body");
    assert_eq!(used(&app, &key).await, 1, "one audit, one action");

    let audit = wait_audit(&app, &key, &id, Duration::from_secs(180)).await;
    assert_eq!(audit["status"], "done", "{audit}");
    assert_eq!((audit["pagesAudited"].as_i64(), audit["actions"].as_i64()), (Some(1), Some(1)));
    assert_eq!(used(&app, &key).await, 1);
    let page = &audit["report"]["pages"][0];
    let ids = finding_ids(page);
    assert!(ids.iter().any(|i| i == "image-alt-missing") && ids.iter().any(|i| i == "axe-image-alt"), "{ids:?}");
    assert_eq!(audit["report"]["pages"].as_array().unwrap().len(), 1);
    assert_eq!(audit["report"]["crawl"]["discovered"], 1, "a single page audit does not crawl");

    // The public report page: no credential, the findings, phone viewport, no scripts.
    let report_url = audit["reportUrl"].as_str().unwrap();
    assert!(report_url.starts_with(&app.url("/r/")), "{report_url}");
    let r = app.client.get(report_url).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let csp = r.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(csp.contains("default-src 'none'") && !csp.contains("script-src"), "{csp}");
    assert_eq!(r.headers()["x-frame-options"], "DENY");
    let html = r.text().await.unwrap();
    assert!(html.contains("name=\"viewport\""), "readable on a phone");
    assert!(!html.contains("<script"), "no scripts");
    for f in page["findings"].as_array().unwrap() {
        let title = f["title"].as_str().unwrap();
        assert!(html.contains(&title.replace('&', "&amp;").replace('<', "&lt;")) || html.contains(title), "{title}");
    }
    assert!(html.contains(audit["pdfUrl"].as_str().unwrap()), "the page links its PDF");
    // An unknown token is a plain 404 page.
    assert_eq!(app.client.get(app.url("/r/AAAAAAAAAAAAAAAAAAAAAAAA")).send().await.unwrap().status(), 404);

    // The PDF, rendered by the service's Chromium: a real PDF with the report's text.
    let (status, ct, pdf) = app.fetch(audit["pdfUrl"].as_str().unwrap()).await;
    assert_eq!((status, ct.as_str()), (200, "application/pdf"));
    assert!(pdf.starts_with(b"%PDF-"), "a PDF");
    let file = app.data_dir.join("report.pdf");
    std::fs::write(&file, &pdf).unwrap();
    let text = std::process::Command::new("pdftotext").arg(&file).arg("-").output().expect("pdftotext (poppler-utils)");
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&site.url("/images")) || text.contains("/images"), "{text}");
    let alt_title =
        page["findings"].as_array().unwrap().iter().find(|f| f["id"] == "image-alt-missing").unwrap()["title"]
            .as_str()
            .unwrap();
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(squash(&text).contains(&squash(alt_title)), "the PDF shows the finding {alt_title:?}:\n{text}");
    // The second request serves the same file.
    let (_, _, again) = app.fetch(audit["pdfUrl"].as_str().unwrap()).await;
    assert_eq!(again, pdf);
    // The worker made it when the audit finished: a node without a browser serves it too.
    let api_node = app.node("api", &[]).await;
    let path = audit["pdfUrl"].as_str().unwrap().strip_prefix(app.base.as_str()).unwrap().to_string();
    let (status, _, from_node) = app.fetch(&api_node.url(&path)).await;
    assert_eq!((status, from_node == pdf), (200, true));
}
