-- A run's (and an automation session's) cookieConsent: the consent engine's answer in every
-- page it loads (runs made before it existed ran without one: none).
ALTER TABLE runs ADD COLUMN cookie_consent TEXT NOT NULL DEFAULT 'none';
