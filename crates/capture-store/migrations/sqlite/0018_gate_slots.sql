-- The slots creates pass through on PostgreSQL (capture-store's gate.rs), so one account's
-- creates, and everyone's against the queue bound, do not all queue on one row.
-- An account's create holds one of its slot rows; each slot carries a block of the month's
-- actions granted from usage_counters (granted) and what was charged from it (spent), so a
-- create is charged without touching the counter row. The account's usage is the counter
-- less what its slots hold unspent. A create that needs the exact picture (near a bound,
-- a batch, a run) holds all of the account's slots.
CREATE TABLE account_slots (
    user_id TEXT NOT NULL REFERENCES users(id),
    slot BIGINT NOT NULL,
    month TEXT NOT NULL DEFAULT '',
    granted BIGINT NOT NULL DEFAULT 0,
    spent BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, slot)
);
-- The same for the global bound on queued jobs: a create holds one slot; near the bound, all.
CREATE TABLE queue_slots (slot BIGINT PRIMARY KEY);
INSERT INTO queue_slots (slot) VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9), (10), (11), (12), (13), (14), (15);
