-- website audits: one row per audit, its report (JSON) and what it reserved and charged
CREATE TABLE audits (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    key_id TEXT,
    status TEXT NOT NULL,
    url TEXT NOT NULL,
    report_type TEXT NOT NULL,
    max_pages BIGINT NOT NULL,
    pages_audited BIGINT NOT NULL DEFAULT 0,
    pages_total BIGINT NOT NULL DEFAULT 0,
    scores TEXT,
    report TEXT,
    error TEXT,
    share_token TEXT NOT NULL UNIQUE,
    pdf_key TEXT,
    actions_reserved BIGINT NOT NULL,
    actions_charged BIGINT NOT NULL DEFAULT 0,
    usage_month TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    started_at BIGINT,
    completed_at BIGINT
);

CREATE INDEX audits_user_created ON audits(user_id, created_at, id);

CREATE INDEX audits_active ON audits(user_id) WHERE status IN ('pending', 'processing');
