//! Several `capture serve` processes on one PostgreSQL database, as a scaled-out
//! deployment runs them: notifications wake another node at once (the fallback polls are
//! set far longer than the test allows), and one scheduler leads at a time with failover.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::*;
use capture_testkit::captures::job_stream;

/// Longer than any wait below: only LISTEN/NOTIFY can make these tests pass in time.
const SLOW_POLL: &str = "60s";
/// What one capture may take here, Chromium and a busy machine included.
const CAPTURE_LIMIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_submitted_on_an_api_node_runs_on_an_idle_worker_node_and_its_stream_ends_at_once() {
    let site = Site::start(vec![("/red", "text/html", solid("#ff0000"))]).await;
    let api = TestApp::spawn(Opts::api(Db::Postgres).roles("api").env("CAPTURE_QUEUE_POLL", SLOW_POLL)).await;
    let _worker = api.node("worker", &[]).await;
    let (_, key) = api.user_with_key("free").await;

    // The first job may meet a worker that has not finished its first claim yet; by the
    // second, both of its loops are idle and only a notification can wake them in time.
    for round in 1..=2 {
        let started = Instant::now();
        let job =
            api.create(&key, json!({"url": site.url("/red"), "width": 320, "height": 200, "waitUntil": "load"})).await;
        let id = job["id"].as_str().unwrap();
        let events = job_stream(&api, &key, id, CAPTURE_LIMIT).await;
        let took = started.elapsed();
        let (last, data) = events.iter().rfind(|(name, _)| name != "ping").expect("events");
        assert_eq!(last, "done", "round {round}: the stream on the api node ends with done: {events:?}");
        assert!(took < CAPTURE_LIMIT, "round {round}: took {took:?}");

        let data: Value = serde_json::from_str(data).unwrap();
        let v: Value = api.get(&key, &format!("/v1/screenshot/{id}")).await.json().await.unwrap();
        assert_eq!(v["status"], "done", "{v}");
        assert_eq!(data["publicUrl"], v["publicUrl"]);
        let (status, ct, bytes) = api.fetch(v["publicUrl"].as_str().unwrap()).await;
        assert_eq!((status, ct.as_str()), (200, "image/png"));
        let img = decode(&bytes);
        assert_eq!(img.dimensions(), (320, 200));
        assert_px(&img, 160, 100, [255, 0, 0]);
    }
}

/// `capture_scheduler_leader` from a process's `/metrics` URL.
async fn leader_gauge(client: &reqwest::Client, metrics: &str) -> u8 {
    let text = client.get(metrics).send().await.unwrap().text().await.unwrap();
    let line = text.lines().find(|l| l.starts_with("capture_scheduler_leader ")).expect("the leader gauge");
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_scheduler_leads_at_a_time_and_another_takes_over_when_it_is_killed() {
    let mut first = TestApp::spawn(Opts::api(Db::Postgres).env("CAPTURE_LEADER_RETRY", "300ms")).await;
    let mut second = first.node("api,scheduler", &[]).await;
    let (first_metrics, second_metrics) = (first.url("/metrics"), second.url("/metrics"));
    let client = first.client.clone();

    let gauges = async || (leader_gauge(&client, &first_metrics).await, leader_gauge(&client, &second_metrics).await);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut now = gauges().await;
    while now != (1, 0) && now != (0, 1) {
        assert!(Instant::now() < deadline, "no single leader: {now:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
        now = gauges().await;
    }
    // It stays that way while the follower keeps trying (several retry periods).
    nothing_within("a change of leader without a reason", Duration::from_millis(1200), || async {
        let seen = gauges().await;
        (seen != now).then_some(seen)
    })
    .await;

    // kill -9 the leader: its connection closes, the lock with it, and the other leads.
    let killed = Instant::now();
    let survivor = if now == (1, 0) {
        first.kill9();
        &second_metrics
    } else {
        second.kill9();
        &first_metrics
    };
    while leader_gauge(&client, survivor).await != 1 {
        assert!(killed.elapsed() < Duration::from_secs(10), "nobody took over within 10 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A live run's DevTools connection reaching a node without a browser is passed on to a node
/// with one, which spends the token and holds the run: the client drives it through the first
/// node as if it were the second. A wrong token is refused the same way through either.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_live_connection_to_a_node_without_a_browser_is_passed_on_to_one_with_a_browser() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let site = Site::start(vec![("/", "text/html", solid("#00ff00"))]).await;
    let api = TestApp::spawn(Opts::api(Db::Postgres).roles("api,scheduler")).await;
    let worker = api.node("api,worker", &[]).await;
    let (_, key) = api.user_with_key("pro").await;
    let run: Value = api
        .post_json(&key, "/v1/runs", &json!({"startUrl": site.url("/"), "live": true, "recordVideo": false}))
        .await
        .json()
        .await
        .unwrap();
    let id = run["id"].as_str().unwrap().to_string();
    let endpoint = run["connectUrl"].as_str().unwrap().to_string();
    assert!(endpoint.starts_with(&format!("ws://{}/", api.base.trim_start_matches("http://"))), "{endpoint}");

    // A wrong token: the browser node's refusal, through the API node.
    let forged = endpoint.split("token=").next().unwrap().to_string() + "token=nope";
    match tokio_tungstenite::connect_async(forged.as_str()).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => assert_eq!(r.status().as_u16(), 401),
        other => panic!("a wrong token was not refused: {:?}", other.map(|_| ())),
    }
    // The real one, to the API node (no browser there).
    let (mut ws, _) = tokio_tungstenite::connect_async(endpoint.as_str()).await.expect("the connection is passed on");
    ws.send(Message::text(r#"{"id":1,"method":"Target.getTargets"}"#)).await.unwrap();
    let reply = loop {
        let m = tokio::time::timeout(Duration::from_secs(20), ws.next()).await.expect("an answer").unwrap().unwrap();
        let v: Value = serde_json::from_str(m.to_text().unwrap_or("{}")).unwrap_or_default();
        if v["id"] == 1 {
            break v;
        }
    };
    let urls: Vec<&str> = reply["result"]["targetInfos"]
        .as_array()
        .map(|a| a.iter().filter(|t| t["type"] == "page").filter_map(|t| t["url"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(urls, [site.url("/").as_str()], "the session's page, on the node with a browser: {reply}");
    let held: Value = api.get(&key, &format!("/v1/runs/{id}")).await.json().await.unwrap();
    assert_eq!(held["status"], "running", "{held}");
    // The client leaves: the run ends on the node that held it.
    ws.close(None).await.unwrap();
    drop(ws);
    let started = Instant::now();
    let ended = loop {
        let r: Value = api.get(&key, &format!("/v1/runs/{id}")).await.json().await.unwrap();
        if r["status"] != "running" {
            break r;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "still running: {r}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(
        (ended["status"].as_str(), ended["endReason"].as_str()),
        (Some("completed"), Some("disconnected")),
        "{ended}"
    );
    drop(worker);
}
