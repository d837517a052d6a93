-- Monitors (issue 42): a page checked on a schedule and compared with its baseline. The
-- schedule and the capture options are JSON as the request gave them (checked by the server);
-- `next_run_at` is when the next check is due (null while paused). A scheduler claims a due
-- monitor by moving `next_run_at` on from the value it read (compare-and-set), so one check
-- runs per due time however many nodes look.
CREATE TABLE monitors (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    name TEXT NOT NULL,
    url TEXT NOT NULL,
    schedule TEXT NOT NULL,
    capture TEXT NOT NULL,
    compare TEXT NOT NULL,
    threshold DOUBLE PRECISION NOT NULL,
    ignore_selectors TEXT NOT NULL DEFAULT '[]',
    notify TEXT NOT NULL DEFAULT '{}',
    baseline_mode TEXT NOT NULL DEFAULT 'auto',
    status TEXT NOT NULL DEFAULT 'active',
    baseline_check_id TEXT,
    next_run_at BIGINT,
    failures BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX monitors_due ON monitors (next_run_at);
CREATE INDEX monitors_user ON monitors (user_id, created_at);

-- A monitor's checks: each a capture job, then its comparison with the baseline.
CREATE TABLE monitor_checks (
    id TEXT PRIMARY KEY,
    monitor_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    status TEXT NOT NULL,
    screenshot_id TEXT,
    diff_ratio DOUBLE PRECISION,
    regions TEXT,
    diff_key TEXT,
    text_key TEXT,
    text_diff TEXT,
    error TEXT,
    created_at BIGINT NOT NULL,
    completed_at BIGINT
);
CREATE INDEX monitor_checks_monitor ON monitor_checks (monitor_id, created_at);
