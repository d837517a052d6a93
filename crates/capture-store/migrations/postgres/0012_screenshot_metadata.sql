-- what a finished capture read from its page (PageMetadata as JSON); NULL for uploads and
-- for jobs finished before it was kept
ALTER TABLE screenshots ADD COLUMN metadata TEXT;
