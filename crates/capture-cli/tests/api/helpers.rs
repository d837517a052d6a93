//! Test harness of the multi-process tests: start the real `capture` binary on a random
//! port against a fresh SQLite file or a fresh PostgreSQL database, restart it, kill it,
//! add nodes. (The in-process harness of the service's other tests is
//! `crates/capture-server/tests/service/helpers.rs`; what both share is the `capture-testkit`
//! crate, whose `common` items are re-exported here.)

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[allow(unused_imports)]
pub use capture_testkit::common::*;

/// This test crate's `CARGO_TARGET_TMPDIR` (Cargo sets it only when it builds a test crate), for
/// the testkit's helpers that look for the Python virtualenvs in the target dir.
pub const TARGET_TMPDIR: &str = env!("CARGO_TARGET_TMPDIR");

/// A running service.
pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub data_dir: PathBuf,
    pub env: Vec<(String, String)>,
    pub child: Option<Child>,
    pg_db: Option<String>,
    _tmp: tempfile::TempDir,
}

impl TestApp {
    /// Start `capture serve` and wait for its address.
    pub async fn spawn(opts: Opts) -> TestApp {
        let tmp = tempfile::tempdir().unwrap();
        let data_dir = tmp.path().join("data");
        let (db_url, pg_db) = fresh_database(opts.db, tmp.path()).await;
        let mut env: Vec<(String, String)> = vec![
            ("CAPTURE_LISTEN".into(), "127.0.0.1:0".into()),
            ("CAPTURE_DATA_DIR".into(), data_dir.display().to_string()),
            ("CAPTURE_DATABASE_URL".into(), db_url.clone()),
            ("CAPTURE_EGRESS_ALLOW".into(), "127.0.0.1,::1".into()),
            ("CAPTURE_BROWSERS".into(), "1".into()),
            ("CAPTURE_WORKER_CONCURRENCY".into(), "2".into()),
            // PostgreSQL's 100 connections are shared by every test running at once (four at a
            // time, a cluster test with four nodes): a node's own default (its capture slots
            // plus 16) let them reach 92 here and run out on CI.
            ("CAPTURE_DATABASE_POOL".into(), "6".into()),
            ("CAPTURE_LOG".into(), "warn,capture_server=info".into()),
        ];
        env.extend(opts.env.iter().cloned());
        let mut app = TestApp {
            base: String::new(),
            client: reqwest::Client::builder().timeout(Duration::from_secs(120)).build().unwrap(),
            data_dir,
            env,
            child: None,
            pg_db,
            _tmp: tmp,
        };
        let roles = match &opts.roles {
            Some(r) => r.as_str(),
            None if opts.workers => "api,worker,scheduler",
            None => "api,scheduler",
        };
        app.start(roles).await;
        app
    }

    /// (Re)start the server process with `roles`.
    pub async fn start(&mut self, roles: &str) {
        let (child, base) = launch(&self.env, roles).await;
        self.base = base.expect("the api role prints its address");
        self.child = Some(child);
    }

    /// Start another node of the same deployment: `capture serve --roles ROLES` on the same
    /// database, data folder (master key, files) and settings, plus `env`.
    pub async fn node(&self, roles: &str, env: &[(&str, &str)]) -> Node {
        let mut all = self.env.clone();
        all.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let (child, base) = launch(&all, roles).await;
        Node { base, child: Some(child) }
    }

    /// Run `capture <args>` against the same configuration; returns stdout (panics on failure).
    pub fn cli(&self, args: &[&str]) -> String {
        let out = self.cli_raw(args);
        assert!(out.status.success(), "capture {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    /// Run `capture <args>`, returning the whole output.
    pub fn cli_raw(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_capture"));
        cmd.args(args);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    /// `capture admin user create --email E --plan P [--password W] [--legacy-free]` (the same
    /// call as the in-process harness's, through the binary here).
    pub async fn create_user(&self, email: &str, plan: &str, password: Option<&str>, legacy_free: bool) {
        let mut args = vec!["admin", "user", "create", "--email", email, "--plan", plan];
        if let Some(p) = password {
            args.extend(["--password", p]);
        }
        if legacy_free {
            args.push("--legacy-free");
        }
        self.cli(&args);
    }

    /// A new account on `plan` and a key for it.
    pub async fn user_with_key(&self, plan: &str) -> (String, String) {
        let email = format!("u{}@example.com", rand_suffix());
        self.create_user(&email, plan, None, false).await;
        let key = self.new_key(&email).await;
        (email, key)
    }

    /// A new key of an existing account (the last stdout line of `admin key create`).
    pub async fn new_key(&self, email: &str) -> String {
        let out = self.cli(&["admin", "key", "create", "--email", email, "--name", "test"]);
        out.lines().last().unwrap().trim().to_string()
    }

    /// The database every node of this deployment uses.
    pub fn database_url(&self) -> String {
        self.env.iter().find(|(k, _)| k == "CAPTURE_DATABASE_URL").map(|(_, v)| v.clone()).unwrap()
    }

    /// Send SIGTERM and wait for exit (up to `secs`).
    pub fn terminate(&mut self, secs: u64) -> Option<std::process::ExitStatus> {
        terminate(&mut self.child, secs)
    }

    /// `kill -9` the server.
    pub fn kill9(&mut self) {
        kill9(&mut self.child);
    }
}

impl Api for TestApp {
    fn base(&self) -> &str {
        &self.base
    }

    fn client(&self) -> &reqwest::Client {
        &self.client
    }
}

impl Harness for TestApp {
    async fn spawn(opts: Opts) -> Self {
        TestApp::spawn(opts).await
    }
}

impl Accounts for TestApp {
    async fn create_user(&self, email: &str, plan: &str, password: Option<&str>, legacy_free: bool) {
        TestApp::create_user(self, email, plan, password, legacy_free).await
    }
}

/// Start `capture serve --roles ROLES` with `env` and wait for its first line: the
/// address (returned) or, without the api role, that it runs.
async fn launch(env: &[(String, String)], roles: &str) -> (Child, Option<String>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_capture"));
    cmd.args(["serve", "--roles", roles]).stdout(Stdio::piped()).stderr(Stdio::inherit());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("start capture");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(l)) = lines.next() {
            let _ = tx.send(l);
        }
        for _ in lines {}
    });
    let line = tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(90)))
        .await
        .unwrap()
        .expect("the service did not print its first line in time");
    let base = line.strip_prefix("listening on ").map(|b| b.trim().to_string());
    assert!(base.is_some() || !roles.contains("api"), "unexpected first line: {line}");
    (child, base)
}

/// SIGTERM `child` and wait for it to exit (up to `secs`).
fn terminate(child: &mut Option<Child>, secs: u64) -> Option<std::process::ExitStatus> {
    let c = child.as_mut()?;
    let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Ok(Some(s)) = c.try_wait() {
            *child = None;
            return Some(s);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn kill9(child: &mut Option<Child>) {
    if let Some(mut c) = child.take() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// Another process of a [`TestApp`]'s deployment (see [`TestApp::node`]); stopped on drop.
pub struct Node {
    /// Its address, when it has the api role.
    pub base: Option<String>,
    child: Option<Child>,
}

impl Node {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base.as_deref().expect("a node with the api role"))
    }

    /// `kill -9` the node.
    pub fn kill9(&mut self) {
        kill9(&mut self.child);
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = terminate(&mut self.child, 20);
        kill9(&mut self.child);
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if self.child.is_some() {
            let _ = self.terminate(20);
        }
        self.kill9();
        if let Some(db) = self.pg_db.take() {
            drop_database(db);
        }
    }
}
