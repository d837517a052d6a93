-- core: users, keys, screenshots, tasks, usage, idempotency, events
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
    id BIGSERIAL PRIMARY KEY,
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
    id BIGSERIAL PRIMARY KEY,
    user_id TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    data TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE INDEX events_subject ON events(subject_id, id);
