//! The in-process harness: each test builds the application with
//! `Application::build(Config::from_map(..))` on a fresh SQLite file or a fresh PostgreSQL
//! database, serves it on 127.0.0.1 port 0 on the test's runtime, and talks to it over
//! HTTP. Settings go through the map, never through the process environment (tests run in
//! parallel in this one process); accounts, keys and plans are made by the same library
//! functions `capture admin` calls, over their own database connection as the CLI would.
//! Tests that kill, restart or add processes live in `crates/capture-cli/tests`; what both
//! suites share is the `capture-testkit` crate (its `common` items are re-exported here).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use capture_server::crypto::MasterKey;
use capture_server::state::AppState;
use capture_server::{Application, Config, admin};
use capture_store::Store;

#[allow(unused_imports)]
pub use capture_testkit::common::*;

/// This test crate's `CARGO_TARGET_TMPDIR` (Cargo sets it only when it builds a test crate), for
/// the testkit's helpers that look for the Python virtualenvs in the target dir.
pub const TARGET_TMPDIR: &str = env!("CARGO_TARGET_TMPDIR");

/// The OAuth/MCP tests' app over this harness.
pub type App = capture_testkit::oauth::App<TestApp>;

/// A running application, stopped (and its PostgreSQL database dropped) on drop.
pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub data_dir: PathBuf,
    /// The application's state (its store, configuration, clock).
    pub state: AppState,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), capture_server::StartError>>>,
    pg_db: Option<String>,
    _tmp: tempfile::TempDir,
}

/// Log lines of the in-process apps on stderr when `CAPTURE_TEST_LOG` names a filter
/// (e.g. `warn,capture_server=info`); silent otherwise. The trace layer is always there, as in
/// a traced `capture serve`: each app's spans go to its own endpoint (`OTEL_*` in its settings),
/// and nowhere for an app without one.
fn init_logs() {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let lines = std::env::var("CAPTURE_TEST_LOG").ok().map(|filter| {
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(tracing_subscriber::EnvFilter::new(filter))
        });
        let _ = tracing_subscriber::registry().with(lines).with(capture_server::traces::layer()).try_init();
    });
}

impl TestApp {
    /// Build and serve the application on a random port.
    pub async fn spawn(opts: Opts) -> TestApp {
        init_logs();
        let tmp = tempfile::tempdir().unwrap();
        let data_dir = tmp.path().join("data");
        let (db_url, pg_db) = fresh_database(opts.db, tmp.path()).await;
        let roles = match &opts.roles {
            Some(r) => r.clone(),
            None if opts.workers => "api,worker,scheduler".into(),
            None => "api,scheduler".into(),
        };
        // What `Config::load` reads for `capture serve`: the operator's CAPTURE_* variables
        // (Chromium's path, say), then this test's settings over them.
        let mut env: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k.starts_with("CAPTURE_")).collect();
        env.extend([
            ("CAPTURE_LISTEN".to_string(), "127.0.0.1:0".to_string()),
            ("CAPTURE_DATA_DIR".into(), data_dir.display().to_string()),
            ("CAPTURE_DATABASE_URL".into(), db_url),
            ("CAPTURE_EGRESS_ALLOW".into(), "127.0.0.1,::1".into()),
            ("CAPTURE_BROWSERS".into(), "1".into()),
            ("CAPTURE_WORKER_CONCURRENCY".into(), "2".into()),
            // PostgreSQL's 100 connections are shared by every test running at once (four at a
            // time, a cluster test with four nodes): a node's own default (its capture slots
            // plus 16) let them reach 92 here and run out on CI.
            ("CAPTURE_DATABASE_POOL".into(), "6".into()),
            ("CAPTURE_ROLES".into(), roles),
        ]);
        env.extend(opts.env.iter().cloned());
        let map: BTreeMap<String, String> = env.iter().cloned().collect();
        let cfg = Config::from_map(&map).unwrap_or_else(|e| panic!("test settings: {e}"));
        let app = Application::build(cfg).await.expect("the application builds");
        let addr = app.local_addr().expect("the api role binds a port");
        let state = app.state().clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(app.run(async move {
            let _ = rx.await;
        }));
        TestApp {
            base: format!("http://{addr}"),
            client: reqwest::Client::builder().timeout(Duration::from_secs(120)).build().unwrap(),
            data_dir,
            state,
            stop: Some(tx),
            task: Some(task),
            pg_db,
            _tmp: tmp,
        }
    }

    /// The store of a separate connection, as `capture admin` opens one.
    async fn admin_store(&self) -> Store {
        Store::connect(&self.database_url(), 2).await.expect("the admin connection")
    }

    /// `capture admin user create --email E --plan P [--password W] [--legacy-free]`.
    pub async fn create_user(&self, email: &str, plan: &str, password: Option<&str>, legacy_free: bool) {
        let store = self.admin_store().await;
        admin::create_user(&store, email, plan, password, legacy_free, capture_core::time::now_ms())
            .await
            .expect("admin user create");
        store.close().await;
    }

    /// `capture admin user set-plan --email E --plan P`.
    pub async fn set_plan(&self, email: &str, plan: &str) {
        let store = self.admin_store().await;
        admin::set_plan(&store, email, plan).await.expect("admin user set-plan");
        store.close().await;
    }

    /// A new account on `plan` and a key for it.
    pub async fn user_with_key(&self, plan: &str) -> (String, String) {
        let email = format!("u{}@example.com", rand_suffix());
        self.create_user(&email, plan, None, false).await;
        let key = self.new_key(&email).await;
        (email, key)
    }

    /// `capture admin key create --email E --name test`: a new key of an existing account.
    pub async fn new_key(&self, email: &str) -> String {
        let store = self.admin_store().await;
        let master = MasterKey::load_or_create(self.state.cfg.master_key.as_deref(), &self.data_dir).unwrap();
        let u = admin::user(&store, email).await.expect("admin user");
        let (_, key) = admin::create_key(&store, &master, &u.id, "test", capture_core::time::now_ms())
            .await
            .expect("admin key create");
        store.close().await;
        key
    }

    /// `capture admin key list --email E`: (key id, prefix, actions used this month, revoked).
    pub async fn list_keys(&self, email: &str) -> Vec<(String, String, i64, bool)> {
        let store = self.admin_store().await;
        let u = admin::user(&store, email).await.expect("admin user");
        let month = capture_core::time::MonthWindow::containing(capture_core::time::now_ms()).label;
        let usage = store.usage_by_key(&u.id, &month).await.unwrap();
        let keys = store.list_keys(&u.id).await.unwrap();
        store.close().await;
        keys.into_iter()
            .map(|k| {
                let used = usage.iter().find(|(id, _)| *id == k.id).map_or(0, |(_, n)| *n);
                (k.id, k.prefix, used, k.revoked_at.is_some())
            })
            .collect()
    }

    /// `capture admin key revoke ID`.
    pub async fn revoke_key(&self, key_id: &str) {
        let store = self.admin_store().await;
        assert!(store.revoke_key(key_id, None, capture_core::time::now_ms()).await.unwrap(), "no live key {key_id}");
        store.close().await;
    }

    /// The database of this deployment.
    pub fn database_url(&self) -> String {
        self.state.cfg.database.url.clone()
    }

    /// The browser node of a two-node deployment on PostgreSQL: every role, the test inboxes'
    /// SMTP server on a free port at `inbox.test`, `master` as the deployment's master key.
    pub async fn browser_node(master: &str) -> TestApp {
        TestApp::spawn(
            Opts::api(Db::Postgres)
                .roles("api,worker,scheduler,inbound")
                .env("CAPTURE_MASTER_KEY", master)
                .env("CAPTURE_INBOUND_LISTEN", "127.0.0.1:0")
                .env("CAPTURE_INBOX_DOMAIN", "inbox.test"),
        )
        .await
    }

    /// The options of an API-only node (no browser) of this browser node's deployment: its
    /// database, master key and inbox domain.
    pub fn api_node_opts(&self, master: &str) -> Opts {
        Opts::api(Db::Postgres)
            .roles("api")
            .env("CAPTURE_MASTER_KEY", master)
            .env("CAPTURE_INBOX_DOMAIN", "inbox.test")
            .env("CAPTURE_DATABASE_URL", &self.database_url())
    }

    /// Record this node's internal address in the shared database under `name` at once, rather
    /// than waiting for its own first refresh.
    pub async fn advertise_as(&self, name: &str) {
        let now = capture_core::time::now_ms();
        self.state.store.advertise_node(name, &self.base, true, now).await.unwrap();
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

impl Drop for TestApp {
    fn drop(&mut self) {
        // Ask the app to stop, and give it a moment to close Chromium and the database on a
        // multi-threaded runtime; whatever is left ends with the test's runtime (Chromium is
        // killed when its handle is dropped).
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let multi = tokio::runtime::Handle::try_current()
                .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
            if multi {
                tokio::task::block_in_place(|| {
                    let _ =
                        tokio::runtime::Handle::current().block_on(tokio::time::timeout(Duration::from_secs(5), task));
                });
            } else {
                task.abort();
            }
        }
        if let Some(db) = self.pg_db.take() {
            drop_database(db);
        }
    }
}
