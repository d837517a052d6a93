//! Owed webhook deliveries survive a hard kill of the process. The rest:
//! `crates/capture-server/tests/service/api/webhooks.rs`.

use crate::helpers::*;
use capture_testkit::both_dbs;
use capture_testkit::webhooks::*;
use serde_json::json;
use std::time::Duration;

async fn owed_deliveries_survive_a_hard_kill(db: Db) {
    let rx = Receiver::start(vec![(200, Duration::ZERO)]).await;
    let mut opts = hook_opts(db);
    opts.workers = false;
    let mut app = TestApp::spawn(opts).await;
    // Restart as API only: nothing sends, so the delivery stays owed.
    app.kill9();
    app.start("api").await;
    let (_, key) = app.user_with_key("free").await;
    let ep = create_endpoint(&app, &key, json!({"url": rx.url})).await;
    let id = ep["id"].as_str().unwrap();
    app.client.post(app.url(&format!("/v1/webhooks/{id}/test"))).bearer_auth(&key).send().await.unwrap();
    let before = deliveries(&app, &key, id).await;
    assert_eq!(before[0]["status"], "pending");
    app.kill9();
    app.start("api,scheduler").await;
    let got = rx.wait_for(1, Duration::from_secs(20)).await;
    assert_eq!(
        got[0].headers["webhook-id"].to_str().unwrap(),
        before[0]["id"].as_str().unwrap(),
        "same Webhook-Id after restart"
    );
    verify(ep["secret"].as_str().unwrap(), &got[0]).unwrap();
}

both_dbs!(owed_deliveries_survive_a_hard_kill);
