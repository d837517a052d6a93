-- webhooks: endpoints, deliveries (outbox), attempts, quota warnings
CREATE TABLE webhook_endpoints (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    description TEXT,
    secret_enc TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    deleted_at BIGINT
);

CREATE INDEX webhook_endpoints_user ON webhook_endpoints(user_id, created_at);

CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id),
    user_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    response_code BIGINT,
    error_message TEXT,
    created_at BIGINT NOT NULL,
    last_attempt_at BIGINT,
    next_attempt_at BIGINT
);

CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, created_at);

CREATE TABLE webhook_attempts (
    id BIGSERIAL PRIMARY KEY,
    delivery_id TEXT NOT NULL,
    attempted_at BIGINT NOT NULL,
    status_code BIGINT,
    error TEXT,
    duration_ms BIGINT NOT NULL
);

CREATE INDEX webhook_attempts_delivery ON webhook_attempts(delivery_id, id);

CREATE TABLE quota_warnings (
    user_id TEXT NOT NULL,
    month TEXT NOT NULL,
    threshold BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, month, threshold)
);
