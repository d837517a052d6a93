//! What the benchmarks share: starting the release `capture serve` with a fresh data
//! folder and a pro account with one API key.

#![allow(dead_code)]

use std::io::BufRead;
use std::time::Duration;

/// A running `capture serve`; stopped with SIGTERM on drop.
pub struct Server {
    pub child: std::process::Child,
    pub base: String,
    pub key: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Start `capture serve --roles <roles>` with `extra` settings over the bench defaults
    /// (SQLite in a temporary folder, private networks allowed, quiet logs).
    pub fn start(roles: &str, extra: &[(&str, String)]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let mut envs: Vec<(String, String)> = vec![
            ("CAPTURE_LISTEN".into(), "127.0.0.1:0".into()),
            ("CAPTURE_DATA_DIR".into(), dir.path().join("data").display().to_string()),
            ("CAPTURE_ALLOW_PRIVATE_NETWORKS".into(), "true".into()),
            ("CAPTURE_PLAN_LIMITS".into(), "pro=100000000".into()),
            ("CAPTURE_LOG".into(), "warn".into()),
        ];
        envs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
        let bin = env!("CARGO_BIN_EXE_capture");
        let run = |args: &[&str]| {
            let out = std::process::Command::new(bin).args(args).envs(envs.iter().cloned()).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap()
        };
        run(&["admin", "user", "create", "--email", "bench@example.com", "--plan", "pro"]);
        let key = run(&["admin", "key", "create", "--email", "bench@example.com"]).lines().last().unwrap().to_string();
        let mut child = std::process::Command::new(bin)
            .args(["serve", "--roles", roles])
            .envs(envs.iter().cloned())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let base = line.trim().strip_prefix("listening on ").unwrap().to_string();
        Server { child, base, key, _dir: dir }
    }

    /// Resident memory of the server process, in MB.
    pub fn rss_mb(&self) -> f64 {
        rss_mb(self.child.id())
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
                t.args(["-c", &c.to_string(), env!("CARGO_BIN_EXE_capture")]);
                t
            }
            None => std::process::Command::new(env!("CARGO_BIN_EXE_capture")),
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
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_capture"))
            .args(args)
            .envs(envs.iter().cloned())
            .output()
            .unwrap();
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
