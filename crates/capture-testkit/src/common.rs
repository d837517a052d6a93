//! What both test harnesses share (`crates/capture-server/tests/service/helpers.rs`, which
//! starts the app in-process, and `crates/capture-cli/tests/api/helpers.rs`, which spawns the
//! `capture` binary): the database choice, fresh PostgreSQL databases, the HTTP calls on a
//! running app ([`Api`]) and what the scenarios ask of a harness ([`Harness`]), a fixture site,
//! image checks, and waiting on an event with a deadline instead of sleeping.

use std::future::Future;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Which database a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Db {
    Sqlite,
    Postgres,
}

/// Options for `TestApp::spawn`.
#[derive(Debug, Clone)]
pub struct Opts {
    pub db: Db,
    /// Start the worker role (Chromium) too.
    pub workers: bool,
    /// Exact roles to start with (overrides `workers`); must include `api`.
    pub roles: Option<String>,
    /// Settings (`CAPTURE_…`), as the environment of `capture serve` would carry them.
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
    /// Only the multi-process tests pick roles (a node of a deployment).
    pub fn roles(mut self, roles: &str) -> Self {
        self.roles = Some(roles.into());
        self
    }
}

pub fn pg_admin_url() -> String {
    std::env::var("CAPTURE_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres:postgres@127.0.0.1:5432/postgres".into())
}

pub fn pg_url_for(db: &str) -> String {
    let mut u = url::Url::parse(&pg_admin_url()).unwrap();
    u.set_path(&format!("/{db}"));
    u.to_string()
}

pub async fn pg_exec(sql: &str) {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let mut c = sqlx::AnyConnection::connect(&pg_admin_url())
        .await
        .expect("PostgreSQL must be reachable (CAPTURE_TEST_PG_URL)");
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string())).execute(&mut c).await.unwrap();
    let _ = c.close().await;
}

/// A fresh database for one test: its URL and, on PostgreSQL, its name (to drop).
pub async fn fresh_database(db: Db, dir: &std::path::Path) -> (String, Option<String>) {
    match db {
        Db::Sqlite => (format!("sqlite://{}", dir.join("capture.db").display()), None),
        Db::Postgres => {
            let name = format!("capture_it_{}", rand_suffix());
            pg_exec(&format!("CREATE DATABASE {name}")).await;
            (pg_url_for(&name), Some(name))
        }
    }
}

/// Drop a test's PostgreSQL database (best effort, from any context: a leftover test
/// database is harmless).
pub fn drop_database(name: String) {
    let _ = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(pg_exec(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")));
    })
    .join();
}

pub fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{}{}_{}", std::process::id(), t % 1_000_000_000, N.fetch_add(1, Ordering::Relaxed))
}

/// The first look of [`eventually`] and [`nothing_within`] comes at once, the next ones after
/// this pause, growing by half each time up to [`POLL_MAX`]: quick for what happens at once,
/// light on the service for what takes a while.
const POLL_MIN: Duration = Duration::from_millis(20);
const POLL_MAX: Duration = Duration::from_millis(250);

/// Wait for an event instead of sleeping: call `check` until it returns `Ok(value)` (returned)
/// and fail, naming `what` and showing the last `Err` (what was seen instead), if that has
/// not happened within `limit`.
pub async fn eventually<T, E, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    E: std::fmt::Debug,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let deadline = Instant::now() + limit;
    let mut pause = POLL_MIN;
    loop {
        match check().await {
            Ok(v) => return v,
            Err(seen) => assert!(Instant::now() < deadline, "{what}: not within {limit:?}; last seen: {seen:?}"),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 3 / 2).min(POLL_MAX);
    }
}

/// Prove that nothing (more) arrives: watch with `arrived` for `window` and fail, naming
/// `what`, as soon as it returns `Some(what arrived)`.
pub async fn nothing_within<T, F, Fut>(what: &str, window: Duration, mut arrived: F)
where
    T: std::fmt::Debug,
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + window;
    let mut pause = POLL_MIN;
    loop {
        if let Some(v) = arrived().await {
            panic!("{what}: {v:?} arrived within {window:?}");
        }
        if Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep(pause.min(deadline.saturating_duration_since(Instant::now()))).await;
        pause = (pause * 3 / 2).min(POLL_MAX);
    }
}

/// The calls tests make on a running app, one set for both harnesses: each harness's
/// `TestApp` says where it listens and with which client.
#[allow(async_fn_in_trait)]
pub trait Api {
    /// `http://127.0.0.1:PORT`.
    fn base(&self) -> &str;
    fn client(&self) -> &reqwest::Client;

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base())
    }

    async fn get(&self, key: &str, path: &str) -> reqwest::Response {
        self.client().get(self.url(path)).bearer_auth(key).send().await.unwrap()
    }

    async fn post_json(&self, key: &str, path: &str, body: &Value) -> reqwest::Response {
        self.post_idem(key, path, body, None).await
    }

    /// POST `body` as JSON, with an `Idempotency-Key` when `idem` is given.
    async fn post_idem(&self, key: &str, path: &str, body: &Value, idem: Option<&str>) -> reqwest::Response {
        let mut req = self.client().post(self.url(path)).bearer_auth(key).json(body);
        if let Some(k) = idem {
            req = req.header("Idempotency-Key", k);
        }
        req.send().await.unwrap()
    }

    /// Create a job and return its JSON (asserting 202).
    async fn create(&self, key: &str, body: Value) -> Value {
        let r = self.post_json(key, "/v1/screenshot", &body).await;
        let status = r.status().as_u16();
        let v: Value = r.json().await.unwrap();
        assert_eq!(status, 202, "create failed: {v}");
        v
    }

    /// Poll a job until it is done or failed.
    async fn wait(&self, key: &str, id: &str) -> Value {
        eventually(&format!("job {id} finishes"), Duration::from_secs(90), || async {
            let v: Value = self.get(key, &format!("/v1/screenshot/{id}")).await.json().await.unwrap();
            if v["status"] == "done" || v["status"] == "failed" { Ok(v) } else { Err(v) }
        })
        .await
    }

    /// Fetch a file URL's bytes: `(status, content type, body)`.
    async fn fetch(&self, url: &str) -> (u16, String, Vec<u8>) {
        let r = self.client().get(url).send().await.unwrap();
        let status = r.status().as_u16();
        let ct = r.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
        (status, ct, r.bytes().await.unwrap().to_vec())
    }
}

/// Making accounts on a running deployment, beyond [`Api`]. Each suite's `TestApp` does it its
/// own way (the library functions `capture admin` calls, in-process; the `capture admin`
/// command, multi-process; the benchmarks' nodes).
#[allow(async_fn_in_trait)]
pub trait Accounts: Api {
    /// `capture admin user create --email E --plan P [--password W] [--legacy-free]`.
    async fn create_user(&self, email: &str, plan: &str, password: Option<&str>, legacy_free: bool);
}

/// What the shared scenarios need of a harness: starting a deployment with `opts`, and
/// [`Accounts`] on it.
#[allow(async_fn_in_trait)]
pub trait Harness: Accounts + Sized {
    /// Start a deployment with `opts`.
    async fn spawn(opts: Opts) -> Self;
}

/// The actions the account of `key` has used this month (its live balance).
pub async fn used(app: &impl Api, key: &str) -> i64 {
    let b: Value = app.get(key, "/v1/account/balance").await.json().await.unwrap();
    b["usage"]["used"].as_i64().unwrap()
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

    /// A site the test serves itself (its own router on its own listener).
    pub fn from_parts(base: String, handle: tokio::task::JoinHandle<()>) -> Site {
        Site { base, _handle: handle }
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

/// Run a scenario on both databases as `<name>_sqlite` and `<name>_postgres` (the test crate
/// needs `tokio`, for `#[tokio::test]`).
#[macro_export]
macro_rules! both_dbs {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() {
                super::$name($crate::common::Db::Sqlite).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() {
                super::$name($crate::common::Db::Postgres).await
            }
        }
    };
}
