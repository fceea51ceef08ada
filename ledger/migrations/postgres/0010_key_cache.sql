-- A key's own response cache settings (internal/cachepolicy's JSON:
-- {"ttl":"10m0s","coalesce":true,"max_wait":"5s","max_entry":"1MiB"}),
-- which win over its pools'; '' is none: the key follows its pools'.
ALTER TABLE api_keys ADD COLUMN cache TEXT NOT NULL DEFAULT '';
