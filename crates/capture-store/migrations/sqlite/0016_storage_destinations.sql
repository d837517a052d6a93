-- Customers' own buckets: an S3-compatible target per row; the key pair is sealed with the
-- master key (it must be read back to sign uploads) and never returned. Deleting one removes
-- its row: jobs naming it then report storageError.
CREATE TABLE storage_destinations (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    name TEXT NOT NULL,
    url TEXT NOT NULL,
    endpoint TEXT,
    region TEXT NOT NULL,
    access_key_id_enc TEXT NOT NULL,
    secret_access_key_enc TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX storage_destinations_user ON storage_destinations(user_id, created_at);

-- Where a capture's copy went in the customer's bucket, or why it could not be written.
ALTER TABLE screenshots ADD COLUMN storage_url TEXT;
ALTER TABLE screenshots ADD COLUMN storage_error TEXT;
