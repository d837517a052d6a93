//! A scaled-out deployment under load, losing a node: PostgreSQL, a bucket on a local S3
//! server (moto), two API nodes and two worker nodes on loopback. A few hundred jobs go in
//! through both API nodes; a worker is killed with SIGKILL in the middle. Every accepted
//! job must end done exactly once, the monthly cap must hold to the unit, every completion
//! must reach the webhook receiver (deduplicated by Webhook-Id, as receivers are told to),
//! and event streams on either API node must see the ends.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::*;
use capture_testkit::moto::{Moto, require_moto};
use capture_testkit::sse::read_sse;
use capture_testkit::webhooks::{Receiver, verify};

/// GET `url` (on any node) with `key`, as JSON.
async fn get_json(client: &reqwest::Client, url: &str, key: &str) -> Value {
    client.get(url).bearer_auth(key).send().await.unwrap().json().await.unwrap()
}

const JOBS: usize = 200;
const CAP: usize = 180;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_api_nodes_and_two_workers_lose_one_and_finish_every_job_exactly_once() {
    let Some(moto) = require_moto(TARGET_TMPDIR) else { return };
    let moto = Moto::start(&moto).await;
    moto.create_bucket("cluster").await;
    let site = Site::start(vec![("/p", "text/html", solid("#3366cc"))]).await;
    let hooks = Receiver::start(vec![(200, Duration::ZERO)]).await;

    let s3 = |o: Opts| {
        o.env("CAPTURE_STORAGE_URL", "s3://cluster/files")
            .env("CAPTURE_S3_ENDPOINT", &moto.endpoint)
            .env("CAPTURE_S3_REGION", "eu-west-1")
            .env("CAPTURE_S3_ACCESS_KEY_ID", "AKIDTESTING")
            .env("CAPTURE_S3_SECRET_ACCESS_KEY", "moto-secret")
    };
    let api1 = TestApp::spawn(
        s3(Opts::api(Db::Postgres).roles("api,scheduler"))
            .env("CAPTURE_MASTER_KEY", &"42".repeat(32))
            .env("CAPTURE_PLAN_LIMITS", &format!("free={CAP}"))
            .env("CAPTURE_WEBHOOK_ALLOW_HTTP", "true")
            // A dead worker's jobs come back after this (the default is a minute).
            .env("CAPTURE_QUEUE_LEASE", "3s")
            .env("CAPTURE_BROWSERS", "1")
            .env("CAPTURE_WORKER_CONCURRENCY", "2"),
    )
    .await;
    let api2 = api1.node("api", &[]).await;
    let mut w1 = api1.node("worker", &[]).await;
    let _w2 = api1.node("worker", &[]).await;
    let (_, key) = api1.user_with_key("free").await;
    let r = api1.post_json(&key, "/v1/webhooks", &json!({"url": hooks.url, "events": ["screenshot.completed"]})).await;
    assert_eq!(r.status(), 201);
    let secret = r.json::<Value>().await.unwrap()["endpoint"]["secret"].as_str().unwrap().to_string();
    let bases = [api1.base.clone(), api2.base.clone().unwrap()];

    // Submit through both API nodes, eight clients at a time.
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut clients = Vec::new();
    for c in 0..8 {
        let (http, key, next, bases) = (api1.client.clone(), key.clone(), next.clone(), bases.clone());
        let url = site.url("/p");
        clients.push(tokio::spawn(async move {
            let mut out = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= JOBS {
                    return out;
                }
                let node = (i + c) % 2;
                let r = http
                    .post(format!("{}/v1/screenshot", bases[node]))
                    .bearer_auth(&key)
                    .json(&json!({"url": url, "width": 320, "height": 200, "waitUntil": "load"}))
                    .send()
                    .await
                    .unwrap();
                let status = r.status().as_u16();
                let v: Value = r.json().await.unwrap();
                out.push((node, status, v));
            }
        }));
    }
    let mut accepted: Vec<(usize, String)> = Vec::new();
    let mut refused = 0;
    for c in clients {
        for (node, status, v) in c.await.unwrap() {
            match status {
                202 => accepted.push((node, v["id"].as_str().unwrap().to_string())),
                429 => {
                    assert_eq!(v["code"], "PLAN_QUOTA_EXCEEDED", "{v}");
                    refused += 1;
                }
                other => panic!("unexpected {other}: {v}"),
            }
        }
    }
    assert_eq!(accepted.len(), CAP, "exactly the monthly cap is accepted across both nodes");
    assert_eq!(refused, JOBS - CAP);

    // Streams on both API nodes for a few jobs near the end of the queue.
    let mut streams = Vec::new();
    for (i, (_, id)) in accepted.iter().rev().take(6).enumerate() {
        let (client, base, key, id) = (api1.client.clone(), bases[i % 2].clone(), key.clone(), id.clone());
        streams.push(tokio::spawn(async move {
            let url = format!("{base}/v1/screenshot/{id}/stream");
            let events = read_sse(&client, &url, &key, Duration::from_secs(240)).await;
            (base, id, events)
        }));
    }

    // Kill a worker once the work is well under way.
    let db = api1.database_url();
    // One connection, shared by the checks below.
    let pg = sqlx::postgres::PgPoolOptions::new().max_connections(1).connect(&db).await.unwrap();
    eventually("the workers get going", Duration::from_secs(120), || async {
        let (done,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM screenshots WHERE status = 'done'").fetch_one(&pg).await.unwrap();
        if done as usize >= CAP / 3 { Ok(()) } else { Err(format!("{done} done")) }
    })
    .await;
    let (in_flight,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM screenshots WHERE status = 'processing'").fetch_one(&pg).await.unwrap();
    w1.kill9();
    eprintln!("killed a worker with {in_flight} job(s) in flight on the two workers");

    // Every accepted job ends done.
    eventually("every accepted job is done", Duration::from_secs(240), || async {
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT status, COUNT(*) FROM screenshots GROUP BY status").fetch_all(&pg).await.unwrap();
        let by: HashMap<String, i64> = rows.into_iter().collect();
        assert!(!by.contains_key("failed"), "no job fails: {by:?}");
        if by.get("done").copied().unwrap_or(0) as usize == CAP { Ok(()) } else { Err(by) }
    })
    .await;
    // Exactly once: one `done` event per job, none twice, and the ledger charged each once.
    let dup: Vec<(String, i64)> = sqlx::query_as(
        "SELECT subject_id, COUNT(*) FROM events WHERE event_type = 'screenshot.status' AND data LIKE '%\"done\"%' \
         GROUP BY subject_id HAVING COUNT(*) <> 1",
    )
    .fetch_all(&pg)
    .await
    .unwrap();
    assert!(dup.is_empty(), "jobs with other than one done event: {dup:?}");
    let (done_events,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM events WHERE event_type = 'screenshot.status' AND data LIKE '%\"done\"%'")
            .fetch_one(&pg)
            .await
            .unwrap();
    assert_eq!(done_events as usize, CAP);
    let (reclaimed,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM tasks WHERE kind = 'screenshot' AND attempts > 1")
        .fetch_one(&pg)
        .await
        .unwrap();
    eprintln!("{reclaimed} job(s) were claimed again after the kill");
    pg.close().await;

    // The cap held: the balance says exactly CAP, on either node.
    for base in &bases {
        let b = get_json(&api1.client, &format!("{base}/v1/account/balance"), &key).await;
        assert_eq!(b["usage"]["used"], CAP, "{b}");
    }

    // Files are in the bucket and served by either node.
    let keys = moto.keys("cluster", "files/").await;
    assert!(keys.len() >= 2 * CAP, "a file and a thumbnail per job: {} objects", keys.len());
    for (i, (_, id)) in accepted.iter().step_by(45).enumerate() {
        let v = get_json(&api1.client, &format!("{}/v1/screenshot/{id}", bases[i % 2]), &key).await;
        let (status, _, bytes) = api1.fetch(v["publicUrl"].as_str().unwrap()).await;
        assert_eq!(status, 200);
        let img = decode(&bytes);
        assert_eq!(img.dimensions(), (320, 200));
        assert_px(&img, 160, 100, [0x33, 0x66, 0xcc]);
    }

    // Every completion reached the receiver, signed; deduplicated by Webhook-Id, once per job.
    let per_job = eventually("every completion is delivered", Duration::from_secs(120), || async {
        let mut per_job: HashMap<String, HashSet<String>> = HashMap::new();
        for r in hooks.all() {
            let body = verify(&secret, &r).expect("a valid signature");
            let id = r.headers["webhook-id"].to_str().unwrap().to_string();
            let job = body["data"]["screenshotId"].as_str().unwrap_or_default().to_string();
            per_job.entry(job).or_default().insert(id);
        }
        if per_job.len() >= CAP {
            Ok(per_job)
        } else {
            Err(format!("{} of {CAP} completions delivered", per_job.len()))
        }
    })
    .await;
    let ids: HashSet<&String> = accepted.iter().map(|(_, id)| id).collect();
    assert_eq!(per_job.len(), CAP);
    for (job, webhook_ids) in &per_job {
        assert!(ids.contains(job), "a delivery for an unknown job {job}");
        assert_eq!(webhook_ids.len(), 1, "job {job} completed more than once: {webhook_ids:?}");
    }

    // The streams, opened on both nodes, all ended with done.
    for s in streams {
        let (base, id, events) = s.await.unwrap();
        let (last, data) = events.iter().rfind(|(name, _)| name != "ping").expect("events");
        assert_eq!(last, "done", "stream of {id} on {base}: {events:?}");
        let data: Value = serde_json::from_str(data).unwrap();
        assert!(data["publicUrl"].as_str().is_some_and(|u| u.ends_with(".png")), "{data}");
    }
}
