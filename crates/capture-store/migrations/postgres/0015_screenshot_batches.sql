-- Bulk captures: one row per batch, counting down as its jobs end (the row's lock orders the
-- last two jobs of a batch ending at once, so batch.completed is emitted exactly once).
CREATE TABLE screenshot_batches (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    total BIGINT NOT NULL,
    remaining BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    completed_at BIGINT
);
ALTER TABLE screenshots ADD COLUMN batch_id TEXT;
ALTER TABLE screenshots ADD COLUMN batch_index BIGINT;
CREATE INDEX screenshots_batch ON screenshots(batch_id, batch_index);
