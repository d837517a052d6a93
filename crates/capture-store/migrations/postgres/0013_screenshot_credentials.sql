-- a capture's headers, cookies and HTTP credentials, sealed with the service's master key
-- (XChaCha20-Poly1305); cleared when the job ends, done or failed. NULL when none were given.
ALTER TABLE screenshots ADD COLUMN credentials TEXT;
