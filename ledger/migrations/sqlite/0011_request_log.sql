-- The request log: what the per-request usage rows keep beyond spend.
-- attempts is the JSON list of the attempts (at most 16: backend, status,
-- reason, start and duration in ms from the request's start), tried how
-- many there were, hedge the hedge's outcome ('' without one), and
-- duration_ms and first_byte_ms the request's. unanswered is 1 for a
-- request no backend answered (backend ''): it is kept for the log but
-- counted in no spend (neither usage_daily nor the per-request sums).
ALTER TABLE usage_requests ADD COLUMN attempts TEXT NOT NULL DEFAULT '[]';
ALTER TABLE usage_requests ADD COLUMN tried INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_requests ADD COLUMN hedge TEXT NOT NULL DEFAULT '';
ALTER TABLE usage_requests ADD COLUMN duration_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_requests ADD COLUMN first_byte_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_requests ADD COLUMN unanswered INTEGER NOT NULL DEFAULT 0;

-- One row per backend a request tried (the one that answered too), for
-- the log's backend filter: "the requests that went to X".
CREATE TABLE usage_attempts (
	request_id TEXT NOT NULL,
	backend    TEXT NOT NULL,
	at_us      BIGINT NOT NULL,
	PRIMARY KEY (request_id, backend)
);
CREATE INDEX usage_attempts_backend_at ON usage_attempts (backend, at_us, request_id);

-- The log's filters read newest first within one value.
CREATE INDEX usage_requests_model_at ON usage_requests (model, at_us, request_id);
CREATE INDEX usage_requests_pool_at ON usage_requests (pool, at_us, request_id);
CREATE INDEX usage_requests_status_at ON usage_requests (status, at_us, request_id);
CREATE INDEX usage_requests_failover_at ON usage_requests (at_us, request_id) WHERE failover <> 0;
CREATE INDEX usage_requests_cache_at ON usage_requests (cache, at_us, request_id) WHERE cache <> '';
