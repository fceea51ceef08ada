-- Keys, teams and usage. Times are microseconds since the epoch in UTC
-- (0 = none) and money is nano-USD, both BIGINT, so that the SQLite and
-- PostgreSQL schemas are the same but for the hash's type, and sums of
-- cost are exact integers on both.
CREATE TABLE teams (
	name          TEXT PRIMARY KEY,
	rpm           BIGINT NOT NULL DEFAULT 0,
	tpm           BIGINT NOT NULL DEFAULT 0,
	budget_nusd   BIGINT NOT NULL DEFAULT 0,
	budget_period TEXT NOT NULL DEFAULT ''
);

CREATE TABLE api_keys (
	id             TEXT PRIMARY KEY,
	name           TEXT NOT NULL DEFAULT '',
	team           TEXT NOT NULL DEFAULT '',
	prefix         TEXT NOT NULL UNIQUE,
	hash           BYTEA NOT NULL,
	pools          TEXT NOT NULL DEFAULT '[]',
	models         TEXT NOT NULL DEFAULT '[]',
	rpm            BIGINT NOT NULL DEFAULT 0,
	tpm            BIGINT NOT NULL DEFAULT 0,
	max_concurrent BIGINT NOT NULL DEFAULT 0,
	budget_nusd    BIGINT NOT NULL DEFAULT 0,
	budget_period  TEXT NOT NULL DEFAULT '',
	expires_us     BIGINT NOT NULL DEFAULT 0,
	created_us     BIGINT NOT NULL,
	revoked_us     BIGINT NOT NULL DEFAULT 0
);

-- One row per request; request_id makes recording idempotent.
CREATE TABLE usage_requests (
	request_id        TEXT PRIMARY KEY,
	at_us             BIGINT NOT NULL,
	day               TEXT NOT NULL,
	key_id            TEXT NOT NULL DEFAULT '',
	team              TEXT NOT NULL DEFAULT '',
	pool              TEXT NOT NULL DEFAULT '',
	backend           TEXT NOT NULL DEFAULT '',
	region            TEXT NOT NULL DEFAULT '',
	model             TEXT NOT NULL DEFAULT '',
	prompt_tokens     BIGINT NOT NULL DEFAULT 0,
	completion_tokens BIGINT NOT NULL DEFAULT 0,
	cached_tokens     BIGINT NOT NULL DEFAULT 0,
	reasoning_tokens  BIGINT NOT NULL DEFAULT 0,
	cost_nusd         BIGINT NOT NULL DEFAULT 0,
	status            INTEGER NOT NULL DEFAULT 0,
	failover          INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX usage_requests_at ON usage_requests (at_us);
CREATE INDEX usage_requests_key_at ON usage_requests (key_id, at_us);
CREATE INDEX usage_requests_team_at ON usage_requests (team, at_us);

-- Daily sums, updated in the transaction that inserts the requests: a
-- month's spend or a budget check reads at most days × groups rows, not
-- every request (a view over usage_requests would scan them all).
CREATE TABLE usage_daily (
	day               TEXT NOT NULL,
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
	PRIMARY KEY (day, key_id, team, pool, backend, model)
);
CREATE INDEX usage_daily_key ON usage_daily (key_id, day);
CREATE INDEX usage_daily_team ON usage_daily (team, day);
