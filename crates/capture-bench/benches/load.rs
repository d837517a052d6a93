//! Load test of a scaled-out set-up: `cargo bench -p capture-bench --bench load`.
//!
//! On PostgreSQL (a fresh database on `CAPTURE_TEST_PG_URL`'s server, dropped at the end)
//! it starts one API node and 1, then 2, worker nodes (`--roles worker`, one browser and
//! two pages each), all on loopback against a local page. Each worker node is confined to a
//! core of its own (`taskset`), so adding a worker adds a core, as adding a machine would. For each set-up it submits
//! `BENCH_JOBS` (default 120) jobs as fast as 16 clients can, then waits for all of them,
//! and reports: accepted requests/s on the API (also with no worker at all, for the API
//! node's own rate), captures/s (overall and per worker), and
//! p50/p95 queue wait (accepted → a worker starts it) and capture time, from the jobs'
//! own timestamps in the database.
//!
//! Then two parts of a deployment that are not about capturing:
//! - **One account's creates**: an API node alone, `BENCH_CREATES` (default 2000) jobs of one
//!   account from 16 and from 64 clients at once, on PostgreSQL with the account's creates
//!   side by side (`CAPTURE_CREATE_SLOTS=16`, the default) against one at a time (`=1`, how
//!   every create of an account queued on its rows before), and on SQLite.
//! - **Live sessions over two API nodes**: `BENCH_AGENTS` (default 8) agents, each its own
//!   account signed in over OAuth, start an MCP automation session and make
//!   `BENCH_CALLS` (default 40) tool calls, on one node and then on two nodes of one
//!   PostgreSQL deployment with every request sent round robin (a balancer without
//!   stickiness): a call that lands on the node not holding its session is forwarded. It
//!   reports tool calls/s and the p50/p95 of calls answered where the session lives and of
//!   forwarded ones.
//!
//! `BENCH_LOAD_ONLY=captures|creates|sessions` runs one part. Bounded and loopback only.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::Connection;

mod support;
use capture_testkit::common::{Accounts, Api};
use capture_testkit::oauth::{App, tool_at};
use support::{Node, create_account, ms, pct, pg_exec, pg_fresh_db, submit, wait_done};

async fn site() -> String {
    let page = "<!doctype html><html><head><title>Load</title></head><body><h1>Load test</h1><p>A simple page.</p></body></html>";
    let app = axum::Router::new().route("/", axum::routing::get(move || async move { axum::response::Html(page) }));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    base
}

struct Cell {
    accepted_per_s: f64,
    captures_per_s: f64,
    wait: Vec<Duration>,
    run: Vec<Duration>,
}

async fn cell(workers: usize, jobs: usize, page: &str) -> Cell {
    let db = format!("capture_load_{}_{}", std::process::id(), workers);
    let db_url = url::Url::parse(&pg_fresh_db(&db).await).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let envs: Vec<(String, String)> = vec![
        ("CAPTURE_LISTEN".into(), "127.0.0.1:0".into()),
        // One folder for every node: local files stand in for the shared bucket here.
        ("CAPTURE_DATA_DIR".into(), dir.path().join("data").display().to_string()),
        ("CAPTURE_DATABASE_URL".into(), db_url.to_string()),
        ("CAPTURE_MASTER_KEY".into(), "11".repeat(32)),
        ("CAPTURE_EGRESS_ALLOW".into(), "127.0.0.1".into()),
        ("CAPTURE_PLAN_LIMITS".into(), "pro=100000000".into()),
        ("CAPTURE_BROWSERS".into(), "1".into()),
        ("CAPTURE_WORKER_CONCURRENCY".into(), "2".into()),
        ("CAPTURE_LOG".into(), "warn".into()),
    ];
    let key = create_account(&envs);
    let api = Node::start("api,scheduler", &envs);
    let base = api.base.clone().unwrap();
    // Worker i runs on CPU i (when the machine has it): one core per worker node, as if
    // each were a machine of its own; the API node and PostgreSQL float.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let ws: Vec<Node> =
        (0..workers).map(|i| Node::start_on("worker", &envs, (workers <= cores).then_some(i))).collect();
    let client = reqwest::Client::new();
    // Let the browsers start, and warm each worker up with a couple of jobs.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let body = json!({"url": page, "waitUntil": "load"});
    let mut warm = Vec::new();
    for _ in 0..(2 * workers) {
        warm.push(submit(&client, &base, &key, &body).await);
    }
    wait_all(&client, &base, &key, &warm).await;

    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let t0 = Instant::now();
    let mut hs = Vec::new();
    for _ in 0..16 {
        let (client, base, key, next, body) = (client.clone(), base.clone(), key.clone(), next.clone(), body.clone());
        hs.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < jobs {
                ids.push(submit(&client, &base, &key, &body).await);
            }
            ids
        }));
    }
    let mut ids = Vec::new();
    for h in hs {
        ids.extend(h.await.unwrap());
    }
    let accepted = t0.elapsed();
    if workers == 0 {
        // The API alone: nothing runs the jobs.
        drop(api);
        pg_exec(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).await;
        return Cell {
            accepted_per_s: jobs as f64 / accepted.as_secs_f64(),
            captures_per_s: 0.0,
            wait: vec![],
            run: vec![],
        };
    }
    wait_all(&client, &base, &key, &ids).await;

    // Timings from the database: accepted (created_at) → started_at → completed_at.
    sqlx::any::install_default_drivers();
    let mut c = sqlx::AnyConnection::connect(db_url.as_str()).await.unwrap();
    let rows: Vec<(i64, i64, i64)> = sqlx::query_as(
        "SELECT created_at, started_at, completed_at FROM screenshots \
         WHERE status = 'done' AND id = ANY(string_to_array($1, ','))",
    )
    .bind(ids.join(","))
    .fetch_all(&mut c)
    .await
    .unwrap();
    let _ = c.close().await;
    assert_eq!(rows.len(), jobs, "every job is done");
    let first = rows.iter().map(|r| r.0).min().unwrap();
    let last = rows.iter().map(|r| r.2).max().unwrap();
    let wait = rows.iter().map(|r| Duration::from_millis((r.1 - r.0).max(0) as u64)).collect();
    let run = rows.iter().map(|r| Duration::from_millis((r.2 - r.1).max(0) as u64)).collect();
    drop(ws);
    drop(api);
    pg_exec(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).await;
    Cell {
        accepted_per_s: jobs as f64 / accepted.as_secs_f64(),
        captures_per_s: jobs as f64 / ((last - first) as f64 / 1000.0),
        wait,
        run,
    }
}

async fn wait_all(client: &reqwest::Client, base: &str, key: &str, ids: &[String]) {
    for id in ids {
        wait_done(client, base, key, id, Duration::from_millis(20)).await;
    }
}

#[tokio::main]
async fn main() {
    let only = std::env::var("BENCH_LOAD_ONLY").unwrap_or_default();
    let page = site().await;
    if only.is_empty() || only == "captures" {
        captures(&page).await;
    }
    if only.is_empty() || only == "creates" {
        creates().await;
    }
    if only.is_empty() || only == "sessions" {
        sessions(&page).await;
    }
}

async fn captures(page: &str) {
    let jobs: usize = std::env::var("BENCH_JOBS").ok().and_then(|v| v.parse().ok()).unwrap_or(120);
    println!(
        "load test: PostgreSQL, 1 API node, N worker nodes (1 browser, 2 pages, 1 core each), {jobs} jobs per cell, {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "{:<8} {:>12} {:>11} {:>12} {:>10} {:>10} {:>10} {:>10}",
        "workers", "accepted/s", "captures/s", "per worker", "wait p50", "wait p95", "run p50", "run p95"
    );
    // The API node alone (no workers: jobs stay queued), for its own acceptance rate.
    let c = cell(0, 4 * jobs, page).await;
    println!("{:<8} {:>12.0} {:>11} (API node and PostgreSQL alone, {} jobs)", 0, c.accepted_per_s, "-", 4 * jobs);
    let mut rates = Vec::new();
    for workers in [1usize, 2] {
        let mut c = cell(workers, jobs, page).await;
        rates.push(c.captures_per_s);
        println!(
            "{:<8} {:>12.0} {:>11.2} {:>12.2} {:>8.0}ms {:>8.0}ms {:>8.0}ms {:>8.0}ms",
            workers,
            c.accepted_per_s,
            c.captures_per_s,
            c.captures_per_s / workers as f64,
            ms(pct(&mut c.wait, 0.5)),
            ms(pct(&mut c.wait, 0.95)),
            ms(pct(&mut c.run, 0.5)),
            ms(pct(&mut c.run, 0.95)),
        );
    }
    println!("scaling 1 -> 2 workers: x{:.2}", rates[1] / rates[0]);
}

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Jobs of one account accepted per second by an API node alone (no worker), from `clients`
/// clients at once, on `db` (a PostgreSQL URL, or None for SQLite) with `slots` create slots.
async fn creates_per_s(db: Option<&str>, slots: usize, clients: usize, jobs: usize) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let mut envs: Vec<(String, String)> = vec![
        ("CAPTURE_LISTEN".into(), "127.0.0.1:0".into()),
        ("CAPTURE_DATA_DIR".into(), dir.path().join("data").display().to_string()),
        ("CAPTURE_MASTER_KEY".into(), "11".repeat(32)),
        ("CAPTURE_EGRESS_ALLOW".into(), "127.0.0.1".into()),
        ("CAPTURE_PLAN_LIMITS".into(), "pro=100000000".into()),
        // The account's queue bound is checked on every create, as by default, well above
        // what this run queues.
        ("CAPTURE_QUEUE_MAX_PENDING_PER_ACCOUNT".into(), (jobs * 8).to_string()),
        ("CAPTURE_QUEUE_MAX_PENDING".into(), (jobs * 16).to_string()),
        ("CAPTURE_CREATE_SLOTS".into(), slots.to_string()),
        ("CAPTURE_LOG".into(), "warn".into()),
    ];
    if let Some(url) = db {
        envs.push(("CAPTURE_DATABASE_URL".into(), url.to_string()));
    }
    let key = create_account(&envs);
    let api = Node::start("api", &envs);
    let base = api.base.clone().unwrap();
    let client = reqwest::Client::new();
    let body = json!({"url": "http://127.0.0.1:9/", "waitUntil": "load"});
    // Warm the node's caches and connections.
    for _ in 0..20 {
        submit(&client, &base, &key, &body).await;
    }
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let t0 = Instant::now();
    let mut hs = Vec::new();
    for _ in 0..clients {
        let (client, base, key, next, body) = (client.clone(), base.clone(), key.clone(), next.clone(), body.clone());
        hs.push(tokio::spawn(async move {
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < jobs {
                submit(&client, &base, &key, &body).await;
            }
        }));
    }
    for h in hs {
        h.await.unwrap();
    }
    let rate = jobs as f64 / t0.elapsed().as_secs_f64();
    drop(api);
    rate
}

async fn creates() {
    let jobs = env_num("BENCH_CREATES", 2000);
    println!();
    println!("one account's creates: an API node alone, {jobs} jobs of one account (accepted/s)");
    println!("{:<34} {:>12} {:>12}", "database", "16 clients", "64 clients");
    for (name, slots) in [("PostgreSQL, one at a time (slots=1)", 1), ("PostgreSQL, side by side (slots=16)", 16)] {
        let mut rates = Vec::new();
        for clients in [16, 64] {
            let db = format!("capture_creates_{}_{slots}_{clients}", std::process::id());
            let url = pg_fresh_db(&db).await;
            rates.push(creates_per_s(Some(&url), slots, clients, jobs).await);
            pg_exec(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).await;
        }
        println!("{name:<34} {:>12.0} {:>12.0}", rates[0], rates[1]);
    }
    let sqlite = [creates_per_s(None, 16, 16, jobs).await, creates_per_s(None, 16, 64, jobs).await];
    println!("{:<34} {:>12.0} {:>12.0}", "SQLite", sqlite[0], sqlite[1]);
}

/// A node of the sessions bench, for the OAuth helpers: accounts made with `capture admin`.
struct BenchNode {
    base: String,
    client: reqwest::Client,
    envs: Vec<(String, String)>,
}

impl Api for BenchNode {
    fn base(&self) -> &str {
        &self.base
    }

    fn client(&self) -> &reqwest::Client {
        &self.client
    }
}

impl Accounts for BenchNode {
    async fn create_user(&self, email: &str, plan: &str, password: Option<&str>, _legacy_free: bool) {
        let mut args = vec!["admin", "user", "create", "--email", email, "--plan", plan];
        if let Some(p) = password {
            args.extend(["--password", p]);
        }
        Node::cli(&args, &self.envs);
    }
}

/// A free port on loopback, for a node whose address the others must know before it starts.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct SessionCell {
    calls_per_s: f64,
    direct: Vec<Duration>,
    forwarded: Vec<Duration>,
}

/// `agents` agents with a session each over `nodes` nodes of one PostgreSQL deployment,
/// every request round robin; `calls` tool calls each.
async fn session_cell(nodes: usize, agents: usize, calls: usize, page: &str) -> SessionCell {
    let db = format!("capture_sessions_{}_{nodes}", std::process::id());
    let db_url = pg_fresh_db(&db).await;
    let dir = tempfile::tempdir().unwrap();
    let ports: Vec<u16> = (0..nodes).map(|_| free_port()).collect();
    // One public address for the deployment (tokens name it as their audience), as behind
    // a balancer; the nodes reach each other at their own addresses.
    let public = format!("http://127.0.0.1:{}", ports[0]);
    let common: Vec<(String, String)> = vec![
        ("CAPTURE_DATA_DIR".into(), dir.path().join("data").display().to_string()),
        ("CAPTURE_DATABASE_URL".into(), db_url.clone()),
        ("CAPTURE_MASTER_KEY".into(), "11".repeat(32)),
        ("CAPTURE_CLUSTER_SECRET".into(), "load-bench-cluster-secret-0123456789abcdef".into()),
        ("CAPTURE_BASE_URL".into(), public.clone()),
        ("CAPTURE_EGRESS_ALLOW".into(), "127.0.0.1".into()),
        ("CAPTURE_BROWSERS".into(), "1".into()),
        ("CAPTURE_AUTOMATION_MAX_SESSIONS".into(), "4".into()),
        ("CAPTURE_LOG".into(), "warn".into()),
    ];
    let started: Vec<Node> = ports
        .iter()
        .enumerate()
        .map(|(i, port)| {
            let mut envs = common.clone();
            envs.push(("CAPTURE_LISTEN".into(), format!("127.0.0.1:{port}")));
            Node::start(if i == 0 { "api,worker,scheduler" } else { "api,worker" }, &envs)
        })
        .collect();
    let mcps: Vec<String> = started.iter().map(|n| format!("{}/mcp", n.base.as_ref().unwrap())).collect();
    // Every node advertises itself before the first session starts.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let app = App::over(BenchNode { base: public.clone(), client: reqwest::Client::new(), envs: common.clone() });
    let mut tokens = Vec::new();
    for _ in 0..agents {
        let (_, _, t) = app.tokens(Some(&format!("{public}/mcp"))).await;
        tokens.push(t["access_token"].as_str().unwrap().to_string());
    }
    let http = reqwest::Client::new();
    let t0 = Instant::now();
    let mut hs = Vec::new();
    for (i, token) in tokens.into_iter().enumerate() {
        let (http, mcps, page) = (http.clone(), mcps.clone(), page.to_string());
        hs.push(tokio::spawn(async move {
            // Round robin from where this agent's turn starts.
            let at = |k: usize| (i + k) % mcps.len();
            let r = tool_at(&http, &mcps[at(0)], &token, "session_start", json!({"url": page})).await;
            let sid = r["structuredContent"]["sessionId"].as_str().unwrap_or_else(|| panic!("{r}")).to_string();
            let holder = at(0);
            let (mut direct, mut forwarded) = (Vec::new(), Vec::new());
            for k in 1..=calls {
                let node = at(k);
                let (tool, args) = if k % 2 == 0 {
                    ("get_text", json!({"sessionId": sid, "selector": "h1"}))
                } else {
                    ("get_url", json!({"sessionId": sid}))
                };
                let t = Instant::now();
                let r = tool_at(&http, &mcps[node], &token, tool, args).await;
                assert_ne!(r["isError"], true, "{tool}: {r}");
                if node == holder { direct.push(t.elapsed()) } else { forwarded.push(t.elapsed()) }
            }
            let r = tool_at(&http, &mcps[at(calls + 1)], &token, "session_end", json!({"sessionId": sid})).await;
            assert_eq!(r["structuredContent"]["status"], "completed", "{r}");
            (direct, forwarded)
        }));
    }
    let (mut direct, mut forwarded) = (Vec::new(), Vec::new());
    for h in hs {
        let (d, f) = h.await.unwrap();
        direct.extend(d);
        forwarded.extend(f);
    }
    let elapsed = t0.elapsed();
    drop(started);
    pg_exec(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).await;
    SessionCell { calls_per_s: (agents * calls) as f64 / elapsed.as_secs_f64(), direct, forwarded }
}

async fn sessions(page: &str) {
    let (agents, calls) = (env_num("BENCH_AGENTS", 8), env_num("BENCH_CALLS", 40));
    println!();
    println!(
        "live sessions: {agents} agents with an MCP automation session each, {calls} tool calls each \
         (get_url, get_text), PostgreSQL, every request round robin over the nodes"
    );
    println!(
        "{:<8} {:>10} {:>14} {:>14} {:>16} {:>16}",
        "nodes", "calls/s", "held p50", "held p95", "forwarded p50", "forwarded p95"
    );
    for nodes in [1usize, 2] {
        let mut c = session_cell(nodes, agents, calls, page).await;
        let fwd =
            |v: &mut Vec<Duration>, q| if v.is_empty() { "-".to_string() } else { format!("{:.1}ms", ms(pct(v, q))) };
        println!(
            "{:<8} {:>10.0} {:>12.1}ms {:>12.1}ms {:>16} {:>16}",
            nodes,
            c.calls_per_s,
            ms(pct(&mut c.direct, 0.5)),
            ms(pct(&mut c.direct, 0.95)),
            fwd(&mut c.forwarded, 0.5),
            fwd(&mut c.forwarded, 0.95),
        );
    }
}
