//! The database: which one, how many connections a node keeps, and how many of one account's
//! creates run at once on PostgreSQL.

use std::path::Path;

use super::parse::{ConfigError, Reader, err};

/// Where the service keeps its state.
#[derive(Debug, Clone)]
pub struct DatabaseSettings {
    /// `CAPTURE_DATABASE_URL`: `sqlite://…` (default `<data dir>/capture.db`) or `postgres://…`.
    pub url: String,
    /// Connections this node keeps to the database at most (`CAPTURE_DATABASE_POOL`).
    pub pool: u32,
    /// How many of one account's creates run at once on PostgreSQL (`CAPTURE_CREATE_SLOTS`).
    pub create_slots: i64,
}

impl DatabaseSettings {
    /// Read them; the pool's default leaves a connection for each of `capture_slots`.
    pub(super) fn read(r: &Reader, data_dir: &Path, capture_slots: usize) -> Result<DatabaseSettings, ConfigError> {
        let url = match r.get("CAPTURE_DATABASE_URL") {
            Some(u) if u.starts_with("sqlite:") || u.starts_with("postgres://") || u.starts_with("postgresql://") => u,
            Some(u) => {
                return Err(err(
                    "CAPTURE_DATABASE_URL",
                    format!("'{}' is not sqlite://… or postgres://…", capture_store::redact_url(&u)),
                ));
            }
            None => format!("sqlite://{}", data_dir.join("capture.db").display()),
        };
        // Every capture slot may hold a connection while it records its result, and the API
        // needs its own: the slots plus 16, unless set.
        let pool = r.num("CAPTURE_DATABASE_POOL", capture_slots as u64 + 16, 2, 1000)? as u32;
        let create_slots = r.num("CAPTURE_CREATE_SLOTS", 16, 1, capture_store::MAX_GATE_SLOTS as u64)? as i64;
        Ok(DatabaseSettings { url, pool, create_slots })
    }
}
