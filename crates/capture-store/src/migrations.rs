//! Schema migrations: one folder of numbered SQL files per backend
//! (`migrations/sqlite`, `migrations/postgres`, vaultwarden's layout), embedded at compile
//! time (`build.rs` lists the files, `include_str!` takes them in; what `sqlx::migrate!` does,
//! without building sqlx a second time for its proc macro) and applied by sqlx's migrator,
//! which records each step with its checksum in `_sqlx_migrations` (a changed, already applied
//! file stops start-up) and, on PostgreSQL, serialises concurrent migrators with an advisory
//! lock.
//!
//! Two things sqlx does not do, done here:
//! - **SQLite has no migration lock** in sqlx, so several processes starting at once on one
//!   file could both apply a step. A file lock beside the database (`<db>-migrate.lock`)
//!   serialises them (and tasks of one process, since `flock` locks belong to each open).
//! - **Databases made before this layout** recorded their steps in `schema_migrations`
//!   (versions 1–4, the same DDL as the first four files here). They are adopted in place:
//!   each recorded version is entered in `_sqlx_migrations` with the checksum of its file,
//!   then the old table is dropped, so nothing is applied twice and no data moves.

use sqlx::Executor;
use std::sync::LazyLock;

use sqlx::SqlSafeStr;
use sqlx::migrate::{Migrate, Migration, MigrationType, Migrator};

use crate::db::{Backend, Result, Store, StoreError};

mod files {
    include!(concat!(env!("OUT_DIR"), "/migration_files.rs"));
}

static SQLITE: LazyLock<Migrator> = LazyLock::new(|| embedded(files::SQLITE));
static POSTGRES: LazyLock<Migrator> = LazyLock::new(|| embedded(files::POSTGRES));

/// sqlx's migrator over embedded files, each read as `sqlx::migrate!` reads it: the version
/// before the first `_`, the rest (without `.sql`, `_` as spaces) the description, the
/// checksum (SHA-384) of the text, no transaction when it starts with `-- no-transaction`.
fn embedded(files: &'static [(&'static str, &'static str)]) -> Migrator {
    let migrations = files
        .iter()
        .map(|&(name, sql)| {
            let (version, rest) = name.split_once('_').expect("migration files are named <version>_<name>.sql");
            let version: i64 = version.parse().expect("a migration file's name starts with its version");
            let kind = MigrationType::from_filename(rest);
            let description = rest.trim_end_matches(kind.suffix()).replace('_', " ");
            Migration::new(version, description.into(), kind, sql.into_sql_str(), sql.starts_with("-- no-transaction"))
        })
        .collect();
    Migrator::with_migrations(migrations)
}

/// The advisory lock id that serialised migrators before sqlx's migrator (and still guards
/// the adoption of the old bookkeeping).
const LEGACY_LOCK: i64 = 7245019;
/// The last version the old bookkeeping (`schema_migrations`) could have recorded.
const LEGACY_LAST: i64 = 4;

impl Store {
    fn migrator(&self) -> &'static Migrator {
        match self.backend {
            Backend::Sqlite => &SQLITE,
            Backend::Postgres => &POSTGRES,
        }
    }

    /// Apply every migration not yet applied (idempotent; safe to call at each start, from
    /// several processes at once).
    pub async fn migrate(&self) -> Result<()> {
        let _lock = match self.auth.db_file() {
            Some(db) => Some(MigrationLock::acquire(db).await?),
            None => None,
        };
        self.adopt_legacy_bookkeeping().await?;
        let migrator = self.migrator();
        migrator.run(&self.pool).await.map_err(|e| StoreError::Conflict(format!("migrating the database: {e}")))?;
        Ok(())
    }

    /// Versions recorded by sqlx's migrator (tests, `capture migrate`).
    pub async fn applied_migrations(&self) -> Result<Vec<i64>> {
        let rows: Vec<(i64,)> = sqlx::query_as("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.into_iter().map(|(v,)| v).collect())
    }

    /// Every migration version this build knows, in order (versions may leave gaps: a
    /// number reserved for a change merged later).
    pub fn known_migrations(&self) -> Vec<i64> {
        self.migrator().iter().map(|m| m.version).collect()
    }

    /// The newest migration this build knows.
    pub fn latest_migration(&self) -> i64 {
        self.migrator().iter().map(|m| m.version).max().unwrap_or(0)
    }

    /// Move the old `schema_migrations` records into `_sqlx_migrations` (see the module docs).
    async fn adopt_legacy_bookkeeping(&self) -> Result<()> {
        let mut tx = self.begin_write().await?;
        if self.backend == Backend::Postgres {
            tx.execute(sqlx::AssertSqlSafe(format!("SELECT pg_advisory_xact_lock({LEGACY_LOCK})"))).await?;
        }
        let exists_sql = match self.backend {
            Backend::Sqlite => "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
            Backend::Postgres => {
                "SELECT COUNT(*) FROM information_schema.tables \
                 WHERE table_schema = current_schema() AND table_name = 'schema_migrations'"
            }
        };
        let (n,): (i64,) = sqlx::query_as(exists_sql).fetch_one(&mut *tx).await?;
        if n == 0 {
            tx.rollback().await?;
            return Ok(());
        }
        let old: Vec<(i64,)> =
            sqlx::query_as("SELECT version FROM schema_migrations ORDER BY version").fetch_all(&mut *tx).await?;
        (*tx).ensure_migrations_table("_sqlx_migrations").await.map_err(|e| StoreError::Conflict(e.to_string()))?;
        for (version,) in old {
            if version > LEGACY_LAST {
                return Err(StoreError::Corrupt(format!(
                    "schema_migrations records version {version}, which this build does not know"
                )));
            }
            let m = self
                .migrator()
                .iter()
                .find(|m| m.version == version)
                .ok_or_else(|| StoreError::Corrupt(format!("no migration file for recorded version {version}")))?;
            sqlx::query(
                "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
                 VALUES ($1, $2, TRUE, $3, 0)",
            )
            .bind(m.version)
            .bind(m.description.to_string())
            .bind(m.checksum.to_vec())
            .execute(&mut *tx)
            .await?;
        }
        tx.execute("DROP TABLE schema_migrations").await?;
        tx.commit().await?;
        tracing::info!("adopted the old migration records into _sqlx_migrations");
        Ok(())
    }
}

/// An exclusive lock on `<db>-migrate.lock`, held while migrating a SQLite file.
struct MigrationLock(#[allow(dead_code)] std::fs::File);

impl MigrationLock {
    async fn acquire(db: std::path::PathBuf) -> Result<MigrationLock> {
        tokio::task::spawn_blocking(move || {
            let mut path = db.into_os_string();
            path.push("-migrate.lock");
            let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path)?;
            file.lock()?;
            Ok(MigrationLock(file))
        })
        .await
        .map_err(|e| StoreError::Conflict(format!("migration lock task failed: {e}")))?
        .map_err(|e: std::io::Error| StoreError::Conflict(format!("migration lock: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use sqlx::migrate::Migrator;

    /// The embedded migrations are the ones sqlx's own reader makes of the folders (the reader
    /// `sqlx::migrate!` used): same versions, descriptions, kinds, checksums and transaction
    /// choice, so databases migrated by earlier builds start without a checksum mismatch.
    #[tokio::test]
    async fn the_embedded_migrations_are_what_sqlx_reads_from_the_folders() {
        for (backend, embedded) in [("sqlite", &*super::SQLITE), ("postgres", &*super::POSTGRES)] {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations").join(backend);
            let read = Migrator::new(dir.as_path()).await.expect("sqlx reads the folder");
            let shape = |m: &Migrator| {
                m.iter()
                    .map(|x| (x.version, x.description.to_string(), x.migration_type, x.checksum.to_vec(), x.no_tx))
                    .collect::<Vec<_>>()
            };
            assert_eq!(shape(embedded), shape(&read), "{backend}");
            assert_eq!(embedded.iter().count(), std::fs::read_dir(&dir).unwrap().count(), "{backend}: every file");
            assert_eq!(embedded.iter().next().map(|m| m.description.to_string()), Some("core".to_string()));
        }
    }
}
