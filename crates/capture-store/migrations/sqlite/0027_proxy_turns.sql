-- A per-job pool's next turn: each job taken with the pool takes one (UPDATE … RETURNING, on
-- every node alike), so its members serve jobs in turn rather than by a hash of the job's id.
ALTER TABLE proxies ADD COLUMN turns INTEGER NOT NULL DEFAULT 0;
