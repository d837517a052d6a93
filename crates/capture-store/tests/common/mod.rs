//! The harness every store test shares: each scenario is written once and runs on both
//! backends — `<scenario>_sqlite` on a fresh SQLite file in a temporary directory and
//! `<scenario>_postgres` on a fresh PostgreSQL database (`capture_test_<random>`, dropped
//! afterwards, best-effort).
//!
//! PostgreSQL is reached through `CAPTURE_TEST_POSTGRES_URL`, else `CAPTURE_TEST_PG_URL`, else
//! `postgres://postgres@127.0.0.1:5432/postgres` (the maintenance database used to create and
//! drop the per-test databases). When it cannot be reached the `_postgres` tests FAIL; set
//! `CAPTURE_SKIP_POSTGRES=1` to skip them instead.
//!
//! `on_both_backends! { scenario => scenario_sqlite, scenario_postgres; }` makes the two tests
//! of scenarios taking a [`Ctx`]; `on_both_backends! { store: … }` of scenarios taking only
//! the [`Store`].

// Each test crate uses a part of the harness.
#![allow(dead_code, unused_macros)]

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capture_core::ids::random_string;
use capture_store::Store;
use sqlx::{AssertSqlSafe, Connection, Executor, PgConnection};
use tempfile::TempDir;

const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
/// Pool size of the store under test (enough for the concurrency scenarios).
pub const POOL: u32 = 8;

#[derive(Debug, Clone, Copy)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// What a scenario gets: the store under test, the URL it was opened with, and a way to
/// get further empty databases of the same backend.
#[derive(Clone)]
pub struct Ctx {
    pub store: Store,
    pub url: String,
    pub dbs: Arc<Databases>,
}

/// The databases of one test: SQLite files in a temporary directory, or PostgreSQL
/// databases created through the maintenance database. All removed by `teardown`.
pub struct Databases {
    pub backend: Backend,
    dir: TempDir,
    pub admin_url: String,
    created: Mutex<Vec<String>>,
}

pub fn postgres_admin_url() -> String {
    std::env::var("CAPTURE_TEST_POSTGRES_URL")
        .or_else(|_| std::env::var("CAPTURE_TEST_PG_URL"))
        .unwrap_or_else(|_| DEFAULT_POSTGRES_URL.into())
}

fn skip_postgres() -> bool {
    std::env::var("CAPTURE_SKIP_POSTGRES").is_ok_and(|v| v == "1")
}

/// A connection to the maintenance database, or a panic saying how to get one.
pub async fn admin_connection(admin_url: &str) -> PgConnection {
    match tokio::time::timeout(Duration::from_secs(10), PgConnection::connect(admin_url)).await {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => panic!(
            "PostgreSQL is unreachable at {admin_url}: {e}\n\
             start it, point CAPTURE_TEST_POSTGRES_URL at one, or set CAPTURE_SKIP_POSTGRES=1"
        ),
        Err(_) => panic!(
            "PostgreSQL at {admin_url} did not answer within 10 s\n\
             start it, point CAPTURE_TEST_POSTGRES_URL at one, or set CAPTURE_SKIP_POSTGRES=1"
        ),
    }
}

impl Databases {
    /// None when the backend is skipped.
    pub fn new(backend: Backend) -> Option<Databases> {
        if matches!(backend, Backend::Postgres) && skip_postgres() {
            eprintln!("CAPTURE_SKIP_POSTGRES=1: skipping a PostgreSQL test");
            return None;
        }
        Some(Databases {
            backend,
            dir: tempfile::tempdir().expect("temporary directory"),
            admin_url: postgres_admin_url(),
            created: Mutex::new(Vec::new()),
        })
    }

    /// The URL of a new, empty database (nothing migrated yet).
    pub async fn fresh_url(&self) -> String {
        let name = format!("capture_test_{}", random_string(16).to_lowercase());
        match self.backend {
            Backend::Sqlite => format!("sqlite://{}", self.dir.path().join(name + ".db").display()),
            Backend::Postgres => {
                let mut admin = admin_connection(&self.admin_url).await;
                admin.execute(AssertSqlSafe(format!("CREATE DATABASE {name}"))).await.expect("CREATE DATABASE");
                let _ = admin.close().await;
                let mut url = url::Url::parse(&self.admin_url).expect("CAPTURE_TEST_POSTGRES_URL");
                url.set_path(&name);
                self.created.lock().unwrap().push(name);
                url.to_string()
            }
        }
    }

    /// Drop the PostgreSQL databases (best-effort: never fails the test); the SQLite
    /// files go with the temporary directory.
    pub async fn teardown(&self) {
        let names = std::mem::take(&mut *self.created.lock().unwrap());
        if names.is_empty() {
            return;
        }
        let connect = PgConnection::connect(&self.admin_url);
        let Ok(Ok(mut admin)) = tokio::time::timeout(Duration::from_secs(10), connect).await else {
            eprintln!("could not connect to drop the test databases {names:?}");
            return;
        };
        for name in names {
            let drop_db = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
            if let Err(e) = admin.execute(AssertSqlSafe(drop_db)).await {
                eprintln!("could not drop test database {name}: {e}");
            }
        }
        let _ = admin.close().await;
    }
}

/// Run one scenario on one backend: set up a fresh store, run the scenario (panics
/// captured), tear everything down, then re-raise the scenario's panic.
pub async fn run<F, Fut>(backend: Backend, scenario: F)
where
    F: FnOnce(Ctx) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(dbs) = Databases::new(backend) else {
        return;
    };
    let dbs = Arc::new(dbs);
    let url = dbs.fresh_url().await;
    let outcome = match Store::connect(&url, POOL).await {
        Ok(store) => {
            let ctx = Ctx { store: store.clone(), url, dbs: dbs.clone() };
            let outcome = tokio::spawn(scenario(ctx)).await;
            store.close().await;
            outcome.map_err(|e| match e.try_into_panic() {
                Ok(panic) => panic,
                Err(e) => Box::new(format!("scenario task failed: {e}")),
            })
        }
        Err(e) => Err(Box::new(format!("open the {backend:?} store at {url}: {e}")) as _),
    };
    dbs.teardown().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// [`run`] for a scenario that needs only the store.
pub async fn run_store<F, Fut>(backend: Backend, scenario: F)
where
    F: FnOnce(Store) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    run(backend, |ctx: Ctx| scenario(ctx.store)).await;
}

/// `const` string equality, to check the generated test names at compile time.
pub const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// `scenario => scenario_sqlite, scenario_postgres;` makes the two tests of a scenario taking
/// a [`Ctx`]; with a leading `store:`, of scenarios taking the [`Store`].
macro_rules! on_both_backends {
    (store: $($scenario:ident => $sqlite:ident, $postgres:ident;)*) => {
        on_both_backends!(@tests $crate::common::run_store; $($scenario => $sqlite, $postgres;)*);
    };
    (@tests $runner:path; $($scenario:ident => $sqlite:ident, $postgres:ident;)*) => {$(
        const _: () = assert!(
            $crate::common::same(stringify!($sqlite), concat!(stringify!($scenario), "_sqlite"))
                && $crate::common::same(stringify!($postgres), concat!(stringify!($scenario), "_postgres")),
            "test names must be <scenario>_sqlite and <scenario>_postgres"
        );

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $sqlite() {
            $runner($crate::common::Backend::Sqlite, $scenario).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $postgres() {
            $runner($crate::common::Backend::Postgres, $scenario).await;
        }
    )*};
    ($($scenario:ident => $sqlite:ident, $postgres:ident;)*) => {
        on_both_backends!(@tests $crate::common::run; $($scenario => $sqlite, $postgres;)*);
    };
}
