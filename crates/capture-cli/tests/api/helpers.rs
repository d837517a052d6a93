//! Test harness: start the real `capture` binary on a random port against a fresh SQLite
//! file or a fresh PostgreSQL database, a fixture site on 127.0.0.1, and a typed client.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Which database a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Db {
    Sqlite,
    Postgres,
}

/// Options for [`TestApp::spawn`].
#[derive(Debug, Clone)]
pub struct Opts {
    pub db: Db,
    /// Start the worker role (Chromium) too.
    pub workers: bool,
    /// Exact roles to start with (overrides `workers`); must include `api`.
    pub roles: Option<String>,
    pub env: Vec<(String, String)>,
}

impl Opts {
    pub fn api(db: Db) -> Self {
        Opts { db, workers: false, roles: None, env: vec![] }
    }
    pub fn full(db: Db) -> Self {
        Opts { db, workers: true, roles: None, env: vec![] }
    }
    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }
    pub fn roles(mut self, roles: &str) -> Self {
        self.roles = Some(roles.into());
        self
    }
}

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

pub fn pg_admin_url() -> String {
    std::env::var("CAPTURE_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres:postgres@127.0.0.1:5432/postgres".into())
}

fn pg_url_for(db: &str) -> String {
    let mut u = url::Url::parse(&pg_admin_url()).unwrap();
    u.set_path(&format!("/{db}"));
    u.to_string()
}

async fn pg_exec(sql: &str) {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let mut c = sqlx::AnyConnection::connect(&pg_admin_url())
        .await
        .expect("PostgreSQL must be reachable (CAPTURE_TEST_PG_URL)");
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string())).execute(&mut c).await.unwrap();
    let _ = c.close().await;
}

impl TestApp {
    /// Start `capture serve` and wait for its address.
    pub async fn spawn(opts: Opts) -> TestApp {
        let tmp = tempfile::tempdir().unwrap();
        let data_dir = tmp.path().join("data");
        let (db_url, pg_db) = match opts.db {
            Db::Sqlite => (format!("sqlite://{}", tmp.path().join("capture.db").display()), None),
            Db::Postgres => {
                let name = format!("capture_it_{}", rand_suffix());
                pg_exec(&format!("CREATE DATABASE {name}")).await;
                (pg_url_for(&name), Some(name))
            }
        };
        let mut env: Vec<(String, String)> = vec![
            ("CAPTURE_LISTEN".into(), "127.0.0.1:0".into()),
            ("CAPTURE_DATA_DIR".into(), data_dir.display().to_string()),
            ("CAPTURE_DATABASE_URL".into(), db_url.clone()),
            ("CAPTURE_EGRESS_ALLOW".into(), "127.0.0.1,::1".into()),
            ("CAPTURE_BROWSERS".into(), "1".into()),
            ("CAPTURE_WORKER_CONCURRENCY".into(), "2".into()),
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

    /// A new account on `plan` and a key for it.
    pub fn user_with_key(&self, plan: &str) -> (String, String) {
        let email = format!("u{}@example.com", rand_suffix());
        self.cli(&["admin", "user", "create", "--email", &email, "--plan", plan]);
        let key = self.new_key(&email);
        (email, key)
    }

    /// A new key of an existing account (the last stdout line of `admin key create`).
    pub fn new_key(&self, email: &str) -> String {
        let out = self.cli(&["admin", "key", "create", "--email", email, "--name", "test"]);
        out.lines().last().unwrap().trim().to_string()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The database every node of this deployment uses.
    pub fn database_url(&self) -> String {
        self.env.iter().find(|(k, _)| k == "CAPTURE_DATABASE_URL").map(|(_, v)| v.clone()).unwrap()
    }

    pub async fn get(&self, key: &str, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).bearer_auth(key).send().await.unwrap()
    }

    pub async fn post_json(&self, key: &str, path: &str, body: &Value) -> reqwest::Response {
        self.client.post(self.url(path)).bearer_auth(key).json(body).send().await.unwrap()
    }

    /// Create a job and return its JSON (asserting 202).
    pub async fn create(&self, key: &str, body: Value) -> Value {
        let r = self.post_json(key, "/v1/screenshot", &body).await;
        let status = r.status().as_u16();
        let v: Value = r.json().await.unwrap();
        assert_eq!(status, 202, "create failed: {v}");
        v
    }

    /// Poll a job until it is done or failed.
    pub async fn wait(&self, key: &str, id: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let v: Value = self.get(key, &format!("/v1/screenshot/{id}")).await.json().await.unwrap();
            if v["status"] == "done" || v["status"] == "failed" {
                return v;
            }
            assert!(Instant::now() < deadline, "job {id} did not finish: {v}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Fetch a file URL's bytes.
    pub async fn fetch(&self, url: &str) -> (u16, String, Vec<u8>) {
        let r = self.client.get(url).send().await.unwrap();
        let status = r.status().as_u16();
        let ct = r.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
        (status, ct, r.bytes().await.unwrap().to_vec())
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
            // Best effort; a leftover test database is harmless.
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                rt.block_on(pg_exec(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")));
            })
            .join();
        }
    }
}

pub fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{}{}_{}", std::process::id(), t % 1_000_000_000, N.fetch_add(1, Ordering::Relaxed))
}

/// A fixture web site on 127.0.0.1 serving the given (path, content-type, body) pages.
pub struct Site {
    pub base: String,
    _handle: tokio::task::JoinHandle<()>,
}

impl Site {
    pub async fn start(pages: Vec<(&'static str, &'static str, String)>) -> Site {
        use axum::routing::get;
        let mut router = axum::Router::new();
        for (path, ct, body) in pages {
            router = router.route(
                path,
                get(move || {
                    let body = body.clone();
                    async move { ([(axum::http::header::CONTENT_TYPE, ct)], body) }
                }),
            );
        }
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        let h = tokio::spawn(async move {
            let _ = axum::serve(l, router).await;
        });
        Site { base, _handle: h }
    }

    pub fn url(&self, p: &str) -> String {
        format!("{}{p}", self.base)
    }
}

/// A page with one background colour.
pub fn solid(color: &str) -> String {
    format!(
        "<!doctype html><html><head><title>Solid {color}</title><style>html,body{{margin:0;background:{color};height:100%}}</style></head><body></body></html>"
    )
}

/// Decode an image and return it as RGBA.
pub fn decode(bytes: &[u8]) -> image::RgbaImage {
    image::load_from_memory(bytes).expect("decodable image").to_rgba8()
}

/// Assert a pixel is close to `rgb`.
pub fn assert_px(img: &image::RgbaImage, x: u32, y: u32, rgb: [u8; 3]) {
    let p = img.get_pixel(x, y);
    let close = (0..3).all(|i| (p[i] as i32 - rgb[i] as i32).abs() <= 12);
    assert!(close, "pixel ({x},{y}) is {:?}, expected about {rgb:?}", p);
}

/// Run a scenario on both databases as `<name>_sqlite` and `<name>_postgres`.
#[macro_export]
macro_rules! both_dbs {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() {
                super::$name($crate::helpers::Db::Sqlite).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() {
                super::$name($crate::helpers::Db::Postgres).await
            }
        }
    };
}
