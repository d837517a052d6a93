-- audit campaigns: campaigns, their rows (a website and a recipient), per-account
-- suppressions, sender limits, daily send counters and the outbox of campaign mail
CREATE TABLE campaigns (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    key_id TEXT,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    send_at BIGINT NOT NULL,
    timezone TEXT NOT NULL,
    report_type TEXT NOT NULL,
    send_hours TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    launched_at BIGINT,
    completed_at BIGINT
);

CREATE INDEX campaigns_user_created ON campaigns(user_id, created_at, id);

CREATE INDEX campaigns_active ON campaigns(status) WHERE status IN ('scheduled', 'running');

CREATE TABLE campaign_rows (
    id TEXT PRIMARY KEY,
    campaign_id TEXT NOT NULL REFERENCES campaigns(id),
    user_id TEXT NOT NULL,
    website_url TEXT NOT NULL,
    recipient_email TEXT NOT NULL,
    email_key TEXT NOT NULL,
    recipient_domain TEXT NOT NULL,
    report_type TEXT NOT NULL,
    state TEXT NOT NULL,
    reason TEXT,
    audit_id TEXT,
    unsubscribe_token TEXT NOT NULL UNIQUE,
    message_id TEXT,
    next_check_at BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    sent_at BIGINT,
    UNIQUE (campaign_id, email_key, website_url)
);

CREATE INDEX campaign_rows_campaign ON campaign_rows(campaign_id, created_at, id);

CREATE INDEX campaign_rows_due ON campaign_rows(next_check_at) WHERE state IN ('pending', 'auditing', 'ready');

CREATE TABLE suppressions (
    user_id TEXT NOT NULL REFERENCES users(id),
    email_key TEXT NOT NULL,
    email TEXT NOT NULL,
    reason TEXT NOT NULL,
    detail TEXT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, email_key)
);

CREATE TABLE sender_limits (
    sender TEXT PRIMARY KEY,
    daily_limit BIGINT,
    warmup_start BIGINT NOT NULL,
    warmup_growth BIGINT NOT NULL,
    warmup_max BIGINT NOT NULL,
    first_day TEXT,
    updated_at BIGINT NOT NULL
);

CREATE TABLE send_counts (
    scope TEXT NOT NULL,
    name TEXT NOT NULL,
    day TEXT NOT NULL,
    sent BIGINT NOT NULL,
    PRIMARY KEY (scope, name, day)
);

CREATE TABLE campaign_outbox (
    id TEXT PRIMARY KEY,
    row_id TEXT NOT NULL UNIQUE,
    campaign_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    sender TEXT NOT NULL,
    recipient TEXT NOT NULL,
    day TEXT NOT NULL,
    state TEXT NOT NULL,
    worker TEXT,
    message_id TEXT,
    response TEXT,
    attempts BIGINT NOT NULL DEFAULT 1,
    claimed_at BIGINT NOT NULL,
    finished_at BIGINT
);

CREATE INDEX campaign_outbox_sending ON campaign_outbox(claimed_at) WHERE state = 'sending';
