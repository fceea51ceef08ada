-- A key's default wait for quota (keys[].patience for virtual keys), in
-- milliseconds; 0 is the pool's.
ALTER TABLE api_keys ADD COLUMN patience_ms BIGINT NOT NULL DEFAULT 0;
