-- The secret a rotation with a grace period replaced (its lookup prefix
-- and hash), which keeps working until prev_until_us; '' and 0: none.
ALTER TABLE api_keys ADD COLUMN prev_prefix TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN prev_hash BLOB NOT NULL DEFAULT x'';
ALTER TABLE api_keys ADD COLUMN prev_until_us BIGINT NOT NULL DEFAULT 0;
CREATE INDEX api_keys_prev_prefix ON api_keys (prev_prefix);
