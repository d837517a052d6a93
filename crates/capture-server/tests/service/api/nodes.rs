//! Two API nodes on one PostgreSQL database, as behind a load balancer: each node caches key
//! lookups, and a key revoked or a plan changed anywhere (here by the admin CLI's own
//! connection) stops being trusted on every node within a second.

use std::time::{Duration, Instant};

use crate::helpers::*;

/// How long `key` takes to be refused on `node` (checked every 5 ms, at most 1 s).
async fn until_refused(node: &TestApp, key: &str, since: Instant) -> Duration {
    loop {
        let status = node.get(key, "/v1/screenshots").await.status().as_u16();
        if status == 401 {
            return since.elapsed();
        }
        assert_eq!(status, 200);
        assert!(since.elapsed() < Duration::from_secs(1), "the revoked key still works after a second");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn limit_header(r: &reqwest::Response) -> String {
    r.headers().get("x-ratelimit-limit").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_revoked_key_or_a_new_plan_reaches_every_node_within_a_second() {
    let a = TestApp::spawn(Opts::api(Db::Postgres)).await;
    let b = TestApp::spawn(Opts::api(Db::Postgres).env("CAPTURE_DATABASE_URL", &a.database_url())).await;
    let (email, key) = a.user_with_key("free").await;
    let hash = capture_server::crypto::sha256_hex(key.as_bytes());
    for node in [&a, &b] {
        assert_eq!(node.get(&key, "/v1/screenshots").await.status().as_u16(), 200);
        // The lookup is cached on each node (the listener is connected).
        let v = node.state.store.auth_version().expect("lookups are cacheable while the node listens");
        assert!(node.state.hot.key(&hash, v).is_some(), "the key is served from the node's cache");
    }

    // Revoked through another connection: refused on both nodes within a second.
    let (key_id, ..) = a.list_keys(&email).await.remove(0);
    a.revoke_key(&key_id).await;
    let t = Instant::now();
    let on_b = until_refused(&b, &key, t).await;
    let on_a = until_refused(&a, &key, t).await;
    println!("revocation seen: node B after {on_b:?}, node A after {on_a:?}");

    // A plan change reaches both nodes' cached accounts the same way.
    let (email, key) = a.user_with_key("free").await;
    let free = limit_header(&b.get(&key, "/v1/screenshots").await);
    assert_eq!(limit_header(&a.get(&key, "/v1/screenshots").await), free);
    a.set_plan(&email, "pro").await;
    let t = Instant::now();
    for node in [&b, &a] {
        loop {
            let now = limit_header(&node.get(&key, "/v1/screenshots").await);
            if now != free {
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(1), "the old plan is still used after a second");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    println!("plan change seen on both nodes after {:?}", t.elapsed());
}
