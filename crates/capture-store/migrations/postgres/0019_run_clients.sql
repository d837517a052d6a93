-- Which OAuth client started a live run as an MCP automation session (NULL: an API key or
-- the website), and whether the session is open to the account's other clients (`shared`).
-- Without `shared`, only the client that started it may use or see it.
ALTER TABLE runs ADD COLUMN client_id TEXT;
ALTER TABLE runs ADD COLUMN shared BIGINT NOT NULL DEFAULT 0;
