-- A key's tags (a JSON list of strings) and metadata (a JSON object of
-- strings), both checked by the admin API and the config's validation.
ALTER TABLE api_keys ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
ALTER TABLE api_keys ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';

-- The tags the request's key had when it was recorded, for the request
-- logs (a JSON list); usage_tags has one row per tag, for filters and
-- spend by tag. A key's tags changing later leaves these as they were.
ALTER TABLE usage_requests ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
CREATE TABLE usage_tags (
	request_id TEXT NOT NULL,
	tag        TEXT NOT NULL,
	at_us      BIGINT NOT NULL,
	PRIMARY KEY (request_id, tag)
);
CREATE INDEX usage_tags_tag_at ON usage_tags (tag, at_us);

-- Request logs page by (at_us, request_id).
CREATE INDEX usage_requests_at_id ON usage_requests (at_us, request_id);

-- Daily sums per tag, as usage_daily, updated in the same transaction: a
-- request with two tags counts in both; one without any counts under the
-- tag ''.
CREATE TABLE usage_daily_tags (
	day               TEXT NOT NULL,
	tag               TEXT NOT NULL,
	key_id            TEXT NOT NULL,
	team              TEXT NOT NULL,
	pool              TEXT NOT NULL,
	backend           TEXT NOT NULL,
	model             TEXT NOT NULL,
	requests          BIGINT NOT NULL,
	failovers         BIGINT NOT NULL,
	prompt_tokens     BIGINT NOT NULL,
	completion_tokens BIGINT NOT NULL,
	cached_tokens     BIGINT NOT NULL,
	reasoning_tokens  BIGINT NOT NULL,
	cost_nusd         BIGINT NOT NULL,
	PRIMARY KEY (day, tag, key_id, team, pool, backend, model)
);
CREATE INDEX usage_daily_tags_tag ON usage_daily_tags (tag, day);

-- The usage recorded before tags existed had none: it counts under ''.
INSERT INTO usage_daily_tags (day, tag, key_id, team, pool, backend, model, requests, failovers,
	prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_nusd)
SELECT day, '', key_id, team, pool, backend, model, requests, failovers,
	prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_nusd FROM usage_daily;
