//! The inbox across processes: an inbound-only node feeding the API node's long-poll. The
//! rest of the inbox tests run in-process: `crates/capture-server/tests/service/api/inbox.rs`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::helpers::*;
use capture_testkit::inbox_fixture::{smtp_send, verification_mail, wait_for_inbox_poll};

/// The inbox of `key` and the SMTP address to reach it.
async fn inbox_of(app: &TestApp, key: &str) -> (Value, SocketAddr) {
    let r = app.get(key, "/v1/inbox").await;
    assert_eq!(r.status().as_u16(), 200);
    let inbox: Value = r.json().await.unwrap();
    let smtp = format!("{}:{}", inbox["smtp"]["host"].as_str().unwrap(), inbox["smtp"]["port"]);
    (inbox, smtp.parse().unwrap())
}

/// Two nodes of one deployment on PostgreSQL: the API node has no inbound role, another
/// node runs only the inbound SMTP server. Mail stored by the one wakes a long-poll on the
/// other (through the database), and the API node still knows where mail goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_inbound_only_node_feeds_the_api_nodes_long_poll() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let listen = format!("127.0.0.1:{port}");
    let app = TestApp::spawn(
        Opts::api(Db::Postgres)
            .roles("api,scheduler")
            .env("CAPTURE_INBOUND_LISTEN", &listen)
            .env("CAPTURE_INBOX_DOMAIN", "inbox.test"),
    )
    .await;
    let _inbound = app.node("inbound", &[]).await;
    let (_, key) = app.user_with_key("free").await;
    let (inbox, smtp) = inbox_of(&app, &key).await;
    assert_eq!(smtp.to_string(), listen, "the configured listener: {inbox}");
    let address = inbox["address"].as_str().unwrap().to_string();
    let (k, base) = (key.clone(), app.base.clone());
    let waiter = tokio::spawn(async move {
        let r = reqwest::Client::new()
            .get(format!("{base}/v1/inbox/messages/wait?timeoutMs=8000"))
            .bearer_auth(&k)
            .send()
            .await
            .unwrap();
        (Instant::now(), r.json::<Value>().await.unwrap())
    });
    wait_for_inbox_poll(&app.client, &app.url("/metrics")).await;
    // The inbound node may still be binding: retry the connection for a few seconds.
    let deadline = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(smtp).await.is_err() {
        assert!(Instant::now() < deadline, "the inbound node listens on {smtp}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let sent_at = Instant::now();
    let mail =
        verification_mail(&address, "http://127.0.0.1:9/verify?token=abcdefghijklmnopqrstuvwxyz012345", "604218");
    assert_eq!(smtp_send(smtp, "bounces@fixture.test", &address, &mail).await.code, 250);
    let (woke_at, w) = waiter.await.unwrap();
    assert_eq!(w["message"]["code"], "604218", "{w}");
    assert!(woke_at.duration_since(sent_at) < Duration::from_secs(2), "{:?}", woke_at - sent_at);
}
