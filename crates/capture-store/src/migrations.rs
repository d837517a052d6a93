//! Schema migrations. Each step is written once with `{serial}` standing for the
//! backend's auto-increment key; applied steps are recorded in `schema_migrations`.

use sqlx::Executor;

use crate::db::{Backend, Result, Store};

/// (version, description, statements separated by `;`)
const STEPS: &[(i64, &str, &str)] = &[
    (
        1,
        "core: users, keys, screenshots, tasks, usage, idempotency, events",
        r#"
CREATE TABLE users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    password_hash TEXT,
    plan TEXT NOT NULL,
    legacy_free BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL
);
CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    key_enc TEXT NOT NULL,
    prefix TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT,
    last_used_at BIGINT
);
CREATE INDEX api_keys_user ON api_keys(user_id);
CREATE TABLE screenshots (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    key_id TEXT,
    status TEXT NOT NULL,
    url TEXT NOT NULL,
    options TEXT NOT NULL,
    format TEXT NOT NULL,
    result_key TEXT,
    thumb_key TEXT,
    page_title TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    width BIGINT,
    height BIGINT,
    error TEXT,
    actions BIGINT NOT NULL,
    usage_month TEXT NOT NULL,
    share_token TEXT UNIQUE,
    created_at BIGINT NOT NULL,
    started_at BIGINT,
    completed_at BIGINT
);
CREATE INDEX screenshots_user_created ON screenshots(user_id, created_at, id);
CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    run_at BIGINT NOT NULL,
    locked_until BIGINT,
    locked_by TEXT,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    finished_at BIGINT
);
CREATE INDEX tasks_ready ON tasks(status, run_at);
CREATE INDEX tasks_lease ON tasks(status, locked_until);
CREATE TABLE usage_counters (
    user_id TEXT NOT NULL,
    month TEXT NOT NULL,
    used BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, month)
);
CREATE TABLE usage_ledger (
    id {serial},
    user_id TEXT NOT NULL,
    key_id TEXT,
    operation TEXT NOT NULL,
    actions BIGINT NOT NULL,
    subject_id TEXT,
    month TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX usage_ledger_user_month ON usage_ledger(user_id, month);
CREATE TABLE idempotency_keys (
    user_id TEXT NOT NULL,
    route TEXT NOT NULL,
    idem_key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    state TEXT NOT NULL,
    response_status BIGINT,
    response_body TEXT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, route, idem_key)
);
CREATE TABLE events (
    id {serial},
    user_id TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    data TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX events_subject ON events(subject_id, id)
"#,
    ),
    (
        2,
        "webhooks: endpoints, deliveries (outbox), attempts, quota warnings",
        r#"
CREATE TABLE webhook_endpoints (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    description TEXT,
    secret_enc TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    deleted_at BIGINT
);
CREATE INDEX webhook_endpoints_user ON webhook_endpoints(user_id, created_at);
CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id),
    user_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    response_code BIGINT,
    error_message TEXT,
    created_at BIGINT NOT NULL,
    last_attempt_at BIGINT,
    next_attempt_at BIGINT
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, created_at);
CREATE TABLE webhook_attempts (
    id {serial},
    delivery_id TEXT NOT NULL,
    attempted_at BIGINT NOT NULL,
    status_code BIGINT,
    error TEXT,
    duration_ms BIGINT NOT NULL
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts(delivery_id, id);
CREATE TABLE quota_warnings (
    user_id TEXT NOT NULL,
    month TEXT NOT NULL,
    threshold BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, month, threshold)
)
"#,
    ),
    (
        3,
        "website sessions, sign-in throttling, OAuth 2.1 clients, codes and tokens",
        r#"
CREATE TABLE web_sessions (
    id_hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    csrf_token TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL
);
CREATE INDEX web_sessions_user ON web_sessions(user_id);
CREATE TABLE login_attempts (
    id {serial},
    attempt_key TEXT NOT NULL,
    succeeded BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX login_attempts_key ON login_attempts(attempt_key, created_at);
CREATE TABLE oauth_clients (
    client_id TEXT PRIMARY KEY,
    client_name TEXT,
    redirect_uris TEXT NOT NULL,
    token_endpoint_auth_method TEXT NOT NULL,
    client_secret_hash TEXT,
    metadata_url TEXT,
    metadata TEXT,
    created_at BIGINT NOT NULL
);
CREATE TABLE oauth_codes (
    code_hash TEXT PRIMARY KEY,
    client_id TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users(id),
    redirect_uri TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    scope TEXT NOT NULL,
    resource TEXT,
    expires_at BIGINT NOT NULL,
    used_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE TABLE oauth_tokens (
    token_hash TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    client_id TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users(id),
    scope TEXT NOT NULL,
    resource TEXT,
    family_id TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    revoked_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX oauth_tokens_family ON oauth_tokens(family_id);
CREATE INDEX oauth_tokens_user ON oauth_tokens(user_id)
"#,
    ),
    (
        4,
        "back-pressure: index of the jobs waiting for or in capture",
        // Partial, so counting an account's (or everyone's) active jobs at each create reads
        // only those, however many finished jobs there are. The predicate is written exactly
        // as the queries write it (admission.rs), which SQLite needs to use the index.
        r#"
CREATE INDEX screenshots_active ON screenshots(user_id) WHERE status IN ('pending', 'processing')
"#,
    ),
];

impl Store {
    /// Apply every migration not yet applied (idempotent; safe to call at each start).
    pub async fn migrate(&self) -> Result<()> {
        let serial = match self.backend {
            Backend::Sqlite => "INTEGER PRIMARY KEY AUTOINCREMENT",
            Backend::Postgres => "BIGSERIAL PRIMARY KEY",
        };
        let mut tx = self.begin_write().await?;
        if self.backend == Backend::Postgres {
            // Serialise concurrent migrators (several nodes starting at once).
            tx.execute("SELECT pg_advisory_xact_lock(7245019)").await?;
        }
        tx.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, \
             description TEXT NOT NULL, applied_at BIGINT NOT NULL)",
        )
        .await?;
        for (version, desc, sql) in STEPS {
            let done: Option<(i64,)> = sqlx::query_as("SELECT version FROM schema_migrations WHERE version = $1")
                .bind(*version)
                .fetch_optional(&mut *tx)
                .await?;
            if done.is_some() {
                continue;
            }
            let ddl = sql.replace("{serial}", serial);
            for stmt in ddl.split(';') {
                if !stmt.trim().is_empty() {
                    tx.execute(sqlx::AssertSqlSafe(stmt.to_string())).await?;
                }
            }
            sqlx::query("INSERT INTO schema_migrations (version, description, applied_at) VALUES ($1, $2, $3)")
                .bind(*version)
                .bind(*desc)
                .bind(capture_core::time::now_ms())
                .execute(&mut *tx)
                .await?;
            tracing::info!(version, desc, "applied migration");
        }
        tx.commit().await?;
        Ok(())
    }
}
