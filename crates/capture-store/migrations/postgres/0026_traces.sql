-- The W3C `traceparent` of the request that made a capture job (issue 44), when the service
-- exports traces: the worker's spans of the job continue that trace. Null when not traced.
ALTER TABLE screenshots ADD COLUMN traceparent TEXT;
