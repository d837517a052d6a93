-- browser session runs: scripted (steps) and live (a DevTools client through the relay)
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    key_id TEXT,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    start_url TEXT NOT NULL,
    device TEXT NOT NULL,
    record_video BIGINT NOT NULL,
    timeout_ms BIGINT NOT NULL,
    steps TEXT NOT NULL DEFAULT '[]',
    step_results TEXT NOT NULL DEFAULT '[]',
    final_url TEXT,
    page_title TEXT,
    video_key TEXT,
    console_error_count BIGINT NOT NULL DEFAULT 0,
    network_error_count BIGINT NOT NULL DEFAULT 0,
    console_errors TEXT NOT NULL DEFAULT '[]',
    network_errors TEXT NOT NULL DEFAULT '[]',
    error TEXT,
    finalization_error TEXT,
    end_reason TEXT,
    connect_token_hash TEXT,
    connect_expires_at BIGINT,
    stop_requested BIGINT NOT NULL DEFAULT 0,
    actions_reserved BIGINT NOT NULL,
    actions_charged BIGINT NOT NULL DEFAULT 0,
    usage_month TEXT NOT NULL,
    worker TEXT,
    lease_until BIGINT,
    created_at BIGINT NOT NULL,
    started_at BIGINT,
    ended_at BIGINT
);

CREATE INDEX runs_user_created ON runs(user_id, created_at, id);

CREATE INDEX runs_active ON runs(status, lease_until) WHERE status IN ('pending', 'running');
