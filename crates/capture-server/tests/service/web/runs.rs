//! The dashboard lists the account's browser runs with their video.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{Api, Db, Opts, Site, TestApp, eventually};
use crate::web::{PASSWORD, email};
use capture_testkit::both_dbs;
use capture_testkit::visitor::Visitor;

async fn the_dashboard_lists_runs_with_their_video(db: Db) {
    let site = Site::start(vec![("/page", "text/html", "<title>Run page</title><h1>Hello</h1>".to_string())]).await;
    let app = TestApp::spawn(Opts::full(db)).await;
    let v = Visitor::new(&app);
    v.sign_up(&email(), PASSWORD).await;
    let (dash, _) = v.dashboard().await;
    assert!(dash.body.contains("No browser runs yet"), "an empty list says how to start one");
    let (_, key) = v.create_key("runs").await;
    let body = json!({"startUrl": site.url("/page"), "steps": [{"action": "assertText", "text": "Hello"}]});
    let run: Value = app.post_json(&key, "/v1/runs", &body).await.json().await.unwrap();
    let id = run["id"].as_str().unwrap().to_string();
    let run = eventually("the run ends", Duration::from_secs(90), || async {
        let r: Value = app.get(&key, &format!("/v1/runs/{id}")).await.json().await.unwrap();
        if r["status"] == "completed" || r["status"] == "failed" { Ok(r) } else { Err(r) }
    })
    .await;
    assert_eq!(run["status"], "completed", "{run}");
    let video = run["videoUrl"].as_str().unwrap();
    let (dash, _) = v.dashboard().await;
    let row =
        dash.body.split("<tr>").find(|r| r.contains(&id)).unwrap_or_else(|| panic!("{id} listed:\n{}", dash.body));
    assert!(row.contains("Run page") && row.contains("completed"), "{row}");
    assert!(row.contains(&format!("<a href=\"{video}\">Video (MP4)</a>")), "{row}");
    // Another account sees none of it.
    let other = Visitor::new(&app);
    other.sign_up(&email(), PASSWORD).await;
    let (dash, _) = other.dashboard().await;
    assert!(!dash.body.contains(&id));
}

both_dbs!(the_dashboard_lists_runs_with_their_video);
