-- the saved test inbox of each account (address at CAPTURE_INBOX_DOMAIN, its password
-- encrypted with the master key), the mail it received, and the auth history per origin
CREATE TABLE inboxes (
    user_id TEXT PRIMARY KEY REFERENCES users(id),
    address TEXT NOT NULL UNIQUE,
    password_enc TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    address_rotated_at BIGINT NOT NULL,
    password_rotated_at BIGINT NOT NULL
);

CREATE TABLE inbox_messages (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    address TEXT NOT NULL,
    mail_from TEXT NOT NULL,
    from_address TEXT,
    from_domain TEXT,
    subject TEXT,
    size_bytes BIGINT NOT NULL,
    parsed TEXT NOT NULL,
    received_at BIGINT NOT NULL,
    seen_at BIGINT
);

CREATE INDEX inbox_messages_user_received ON inbox_messages(user_id, received_at, id);

CREATE INDEX inbox_messages_received ON inbox_messages(received_at);

CREATE TABLE auth_history (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    origin TEXT NOT NULL,
    action TEXT NOT NULL,
    outcome TEXT NOT NULL,
    method TEXT,
    note TEXT,
    created_at BIGINT NOT NULL
);

CREATE INDEX auth_history_user_origin ON auth_history(user_id, origin, created_at);
