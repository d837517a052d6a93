//! What the benchmarks share: building and starting the release `capture serve` (with a
//! fresh data folder and a pro account with one API key, or as one more node of a
//! deployment), submitting jobs and waiting for them, PostgreSQL databases, and statistics.

#![allow(dead_code)]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// The release `capture` binary: `CAPTURE_BENCH_BIN` when set, else built once, on first use
/// (`cargo build --release -p capture --bin capture`), into the target folder this bench
/// runs from, and found beside it. Only the binary's own package gets
/// `CARGO_BIN_EXE_capture`, so the benches, a package of their own, build it themselves.
pub fn capture_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("CAPTURE_BENCH_BIN").filter(|p| !p.is_empty()) {
            return PathBuf::from(p);
        }
        // This bench is `<target>/release/deps/<bench>-<hash>`; the binary goes to
        // `<target>/release/capture`.
        let exe = std::env::current_exe().expect("the bench's own path");
        let release = exe.parent().and_then(Path::parent).expect("the bench runs from <target>/release/deps");
        let target = release.parent().expect("the target folder");
        let workspace = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml");
        let status = std::process::Command::new(option_env!("CARGO").unwrap_or("cargo"))
            .args(["build", "--release", "-p", "capture", "--bin", "capture", "--manifest-path", workspace])
            .env("CARGO_TARGET_DIR", target)
            .status()
            .expect("running cargo to build the release capture binary");
        assert!(status.success(), "building the release capture binary failed");
        release.join("capture")
    })
}

/// A running `capture serve` with a fresh data folder and a pro account; stopped with
/// SIGTERM on drop.
pub struct Server {
    pub node: Node,
    pub base: String,
    pub key: String,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Start `capture serve --roles <roles>` (with the api role) with `extra` settings over
    /// the bench defaults (SQLite in a temporary folder, private networks allowed, quiet logs).
    pub fn start(roles: &str, extra: &[(&str, String)]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let mut envs: Vec<(String, String)> = vec![
            ("CAPTURE_LISTEN".into(), "127.0.0.1:0".into()),
            ("CAPTURE_DATA_DIR".into(), dir.path().join("data").display().to_string()),
            ("CAPTURE_EGRESS_ALLOW".into(), "127.0.0.1".into()),
            ("CAPTURE_PLAN_LIMITS".into(), "pro=100000000".into()),
            ("CAPTURE_LOG".into(), "warn".into()),
        ];
        envs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
        let key = create_account(&envs);
        let node = Node::start(roles, &envs);
        let base = node.base.clone().expect("the api role");
        Server { node, base, key, _dir: dir }
    }

    /// Resident memory of the server process, in MB.
    pub fn rss_mb(&self) -> f64 {
        rss_mb(self.node.child.id())
    }

    /// The server's data folder (its SQLite database is `capture.db` there).
    pub fn data_dir(&self) -> PathBuf {
        self._dir.path().join("data")
    }
}

/// Create the pro account `bench@example.com` in the configuration `envs` and return a new
/// API key for it.
pub fn create_account(envs: &[(String, String)]) -> String {
    Node::cli(&["admin", "user", "create", "--email", "bench@example.com", "--plan", "pro"], envs);
    Node::cli(&["admin", "key", "create", "--email", "bench@example.com"], envs).lines().last().unwrap().to_string()
}

/// Submit a capture job; returns its id (asserting 202).
pub async fn submit(client: &reqwest::Client, base: &str, key: &str, body: &serde_json::Value) -> String {
    let r = client.post(format!("{base}/v1/screenshot")).bearer_auth(key).json(body).send().await.unwrap();
    let status = r.status().as_u16();
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(status, 202, "{v}");
    v["id"].as_str().expect("job id").to_string()
}

/// Poll job `id` every `every` until it is done (panics if it fails or takes 10 minutes).
pub async fn wait_done(client: &reqwest::Client, base: &str, key: &str, id: &str, every: Duration) {
    let deadline = std::time::Instant::now() + Duration::from_secs(600);
    loop {
        let v: serde_json::Value = client
            .get(format!("{base}/v1/screenshot/{id}"))
            .bearer_auth(key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        match v["status"].as_str() {
            Some("done") => return,
            Some("failed") => panic!("capture failed: {v}"),
            _ => {
                assert!(std::time::Instant::now() < deadline, "job {id} did not finish in time");
                tokio::time::sleep(every).await;
            }
        }
    }
}

/// One more `capture serve` process (no account set-up); SIGTERM on drop.
pub struct Node {
    pub child: std::process::Child,
    pub base: Option<String>,
}

impl Node {
    /// Start `capture serve --roles <roles>` with exactly `envs`; waits for the address
    /// line when the node serves HTTP (the api role).
    pub fn start(roles: &str, envs: &[(String, String)]) -> Node {
        Node::start_on(roles, envs, None)
    }

    /// [`Node::start`], confined to CPU `cpu` (with `taskset`; Chromium inherits it), so
    /// that on one machine each such node stands for a machine of its own.
    pub fn start_on(roles: &str, envs: &[(String, String)], cpu: Option<usize>) -> Node {
        let mut cmd = match cpu {
            Some(c) => {
                let mut t = std::process::Command::new("taskset");
                t.arg("-c").arg(c.to_string()).arg(capture_bin());
                t
            }
            None => std::process::Command::new(capture_bin()),
        };
        let mut child = cmd
            .args(["serve", "--roles", roles])
            .envs(envs.iter().cloned())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let base = roles.split(',').any(|r| r == "api").then(|| {
            let mut line = String::new();
            std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
            line.trim().strip_prefix("listening on ").unwrap().to_string()
        });
        Node { child, base }
    }

    /// Run `capture <args>` with `envs`; returns stdout.
    pub fn cli(args: &[&str], envs: &[(String, String)]) -> String {
        let out = std::process::Command::new(capture_bin()).args(args).envs(envs.iter().cloned()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

/// The PostgreSQL server the benchmarks may use (`CAPTURE_TEST_PG_URL`, as the tests).
pub fn pg_admin() -> String {
    std::env::var("CAPTURE_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres:postgres@127.0.0.1:5432/postgres".into())
}

/// Run SQL on the PostgreSQL server's admin database.
pub async fn pg_exec(sql: &str) {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let mut c = sqlx::AnyConnection::connect(&pg_admin()).await.expect("PostgreSQL (CAPTURE_TEST_PG_URL)");
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string())).execute(&mut c).await.unwrap();
    let _ = c.close().await;
}

/// A fresh database `name` on that server (dropped first if it exists); returns its URL.
pub async fn pg_fresh_db(name: &str) -> String {
    pg_exec(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
    pg_exec(&format!("CREATE DATABASE {name}")).await;
    let mut u = url::Url::parse(&pg_admin()).unwrap();
    u.set_path(&format!("/{name}"));
    u.to_string()
}

/// Resident memory of process `pid`, in MB (0 when unknown).
pub fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The `q` quantile of `v` (sorts it).
pub fn pct(v: &mut [Duration], q: f64) -> Duration {
    v.sort();
    if v.is_empty() {
        return Duration::ZERO;
    }
    v[((v.len() as f64 - 1.0) * q).round() as usize]
}

/// Milliseconds as a float.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The median of `v`.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() { 0.0 } else { v[v.len() / 2] }
}
