-- Fair share is max-min: how many times a task went back to the queue so another account
-- could have its slot (a task handed back twice is not chosen again: no livelock).
ALTER TABLE tasks ADD COLUMN handed_back BIGINT NOT NULL DEFAULT 0;

-- A render link's capture in flight: every view of one link (one owner, one request hash)
-- joins the one capture pending or running, across nodes, instead of starting another.
ALTER TABLE screenshots ADD COLUMN flight TEXT;
CREATE UNIQUE INDEX screenshots_flight ON screenshots(user_id, flight)
    WHERE flight IS NOT NULL AND status IN ('pending', 'processing');
-- The copy to a customer's bucket runs on its own queue after the job is done: pending until
-- it ends with storage_url or storage_error.
ALTER TABLE screenshots ADD COLUMN storage_status TEXT;
