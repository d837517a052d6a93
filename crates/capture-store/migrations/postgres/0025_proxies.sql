-- Customers' own proxies (issue 43): one URL, or a pool of them with a rotation. The URLs,
-- credentials included, are sealed with the master key (`members_enc`: a JSON array, read
-- back to dial them); `members_shown` is the same list without credentials, as shown.
-- Names are unique per account (a capture names a proxy by id or name).
CREATE TABLE proxies (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    name TEXT NOT NULL,
    members_enc TEXT NOT NULL,
    members_shown TEXT NOT NULL,
    rotation TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (user_id, name)
);
CREATE INDEX proxies_user ON proxies (user_id, created_at);

-- The proxy a run or an automation session leaves through, and the pool member chosen when
-- it was created.
ALTER TABLE runs ADD COLUMN proxy_id TEXT;
ALTER TABLE runs ADD COLUMN proxy_member BIGINT;

-- Where an account's live views may be embedded (a JSON array of origins for the view page's
-- CSP frame-ancestors); null: only Capture's own pages.
ALTER TABLE users ADD COLUMN live_view_frame_ancestors TEXT;
