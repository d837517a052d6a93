-- ad generation: drafts (drf_…) and renders (ad_…) in one table, told apart by kind
CREATE TABLE adshots (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    key_id TEXT,
    kind TEXT NOT NULL,
    draft_id TEXT,
    status TEXT NOT NULL,
    stage TEXT,
    progress BIGINT NOT NULL DEFAULT 0,
    input TEXT NOT NULL,
    draft TEXT,
    files TEXT NOT NULL DEFAULT '[]',
    video_key TEXT,
    thumb_key TEXT,
    duration_ms BIGINT,
    width BIGINT,
    height BIGINT,
    meta TEXT,
    error TEXT,
    actions BIGINT NOT NULL,
    usage_month TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    started_at BIGINT,
    completed_at BIGINT
);

CREATE INDEX adshots_user_created ON adshots(user_id, created_at, id);
