-- Signed render links: each account's link keys; the signing secret is sealed with the master
-- key (it must be read back to check a link's HMAC). A revoked key signs nothing.
CREATE TABLE render_keys (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    name TEXT NOT NULL,
    secret_enc TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX render_keys_user ON render_keys(user_id, created_at);

-- The capture cache: a job made with cacheTtl carries a keyed hash of its request and the
-- time its answer may be reused until; a job answered from another's file names it.
ALTER TABLE screenshots ADD COLUMN cache_hash TEXT;
ALTER TABLE screenshots ADD COLUMN cache_until BIGINT;
ALTER TABLE screenshots ADD COLUMN cached_from TEXT;
CREATE INDEX screenshots_cache ON screenshots(user_id, cache_hash, created_at);
