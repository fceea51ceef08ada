-- A key's own request log settings (ledger.KeyRequestLog's JSON:
-- {"bodies":true,"max_body_bytes":65536}), which win over its pools'
-- request_log; '' is none: the key follows its pools'.
ALTER TABLE api_keys ADD COLUMN request_log TEXT NOT NULL DEFAULT '';
