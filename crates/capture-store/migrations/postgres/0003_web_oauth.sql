-- website sessions, sign-in throttling, OAuth 2.1 clients, codes and tokens
CREATE TABLE web_sessions (
    id_hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    csrf_token TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL
);

CREATE INDEX web_sessions_user ON web_sessions(user_id);

CREATE TABLE login_attempts (
    id BIGSERIAL PRIMARY KEY,
    attempt_key TEXT NOT NULL,
    succeeded BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE INDEX login_attempts_key ON login_attempts(attempt_key, created_at);

CREATE TABLE oauth_clients (
    client_id TEXT PRIMARY KEY,
    client_name TEXT,
    redirect_uris TEXT NOT NULL,
    token_endpoint_auth_method TEXT NOT NULL,
    client_secret_hash TEXT,
    metadata_url TEXT,
    metadata TEXT,
    created_at BIGINT NOT NULL
);

CREATE TABLE oauth_codes (
    code_hash TEXT PRIMARY KEY,
    client_id TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users(id),
    redirect_uri TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    scope TEXT NOT NULL,
    resource TEXT,
    expires_at BIGINT NOT NULL,
    used_at BIGINT,
    created_at BIGINT NOT NULL
);

CREATE TABLE oauth_tokens (
    token_hash TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    client_id TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users(id),
    scope TEXT NOT NULL,
    resource TEXT,
    family_id TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    revoked_at BIGINT,
    created_at BIGINT NOT NULL
);

CREATE INDEX oauth_tokens_family ON oauth_tokens(family_id);

CREATE INDEX oauth_tokens_user ON oauth_tokens(user_id);
