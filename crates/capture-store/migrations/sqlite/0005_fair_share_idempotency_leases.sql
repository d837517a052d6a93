-- fair share: the account each task works for; idempotency: an owner and a lease per in-flight key
ALTER TABLE tasks ADD COLUMN account_id TEXT;

UPDATE tasks SET account_id = (SELECT s.user_id FROM screenshots s WHERE s.id = tasks.subject_id)
WHERE kind = 'screenshot';

UPDATE tasks SET account_id = (SELECT d.user_id FROM webhook_deliveries d WHERE d.id = tasks.subject_id)
WHERE kind = 'webhook';

CREATE INDEX tasks_kind_account ON tasks(kind, status, account_id);

ALTER TABLE idempotency_keys ADD COLUMN owner TEXT;

ALTER TABLE idempotency_keys ADD COLUMN locked_until BIGINT;
