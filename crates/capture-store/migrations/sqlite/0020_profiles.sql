-- Browser profiles: a signed-in browser state (cookies, localStorage, IndexedDB) per
-- account, that captures, audits, runs and sessions can start from. The state is sealed
-- with the master key; `summary` (counts, cookie domains and origins, no values) is what the
-- API shows. Deleting one removes its row (the SQLite store overwrites the freed space).
CREATE TABLE profiles (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    name TEXT NOT NULL,
    state_enc TEXT,
    summary TEXT NOT NULL,
    saved_from TEXT,
    saved_at BIGINT,
    expired_at BIGINT,
    expired_by TEXT,
    last_used_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (user_id, name)
);
CREATE INDEX profiles_user ON profiles(user_id, created_at);

-- A run or session that starts from a profile (its id), and the profile (id or name) its
-- state is saved into when it ends.
ALTER TABLE runs ADD COLUMN profile_id TEXT;
ALTER TABLE runs ADD COLUMN save_profile TEXT;
