-- back-pressure: index of the jobs waiting for or in capture
CREATE INDEX screenshots_active ON screenshots(user_id) WHERE status IN ('pending', 'processing');
