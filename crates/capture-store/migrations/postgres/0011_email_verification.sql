-- accounts that signed up while outgoing mail is configured wait here until they open the
-- link mailed to them; no row means verified (admin-made accounts, older accounts)
CREATE TABLE email_verifications (
    user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
