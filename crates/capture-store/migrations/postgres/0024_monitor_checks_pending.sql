-- The checks waiting for their capture to end, found by the scheduler every tick without
-- reading a monitor's whole history.
CREATE INDEX monitor_checks_pending ON monitor_checks (created_at) WHERE status = 'pending';
-- Checks by their capture (a screenshot's job page names the check it belongs to).
CREATE INDEX monitor_checks_screenshot ON monitor_checks (screenshot_id);
-- The files a check compared: its capture's, and the baseline's it was compared with.
ALTER TABLE monitor_checks ADD COLUMN image_key TEXT;
ALTER TABLE monitor_checks ADD COLUMN baseline_key TEXT;
