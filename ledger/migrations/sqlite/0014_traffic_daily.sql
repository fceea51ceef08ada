-- Traffic per UTC day, pool and backend, for the console's traffic
-- charts: exact counts over any range without reading the request log's
-- rows (a 90-day range reads at most 90 rows per pool and backend). The
-- transaction that writes a request's row (RecordUsage) adds it here;
-- this migration adds the rows already stored; store.retention deletes
-- the days it has pruned the request log of.
-- day is days since the epoch (UTC), backend the one that answered
-- ('' for none). requests counts every request of the log, cache answers
-- and unanswered ones too; errors those with a status of 400 or more or
-- no answer; failovers those answered after a failover. le_N counts the
-- calls (not cache answers, with a duration) that took more than the
-- edge before and at most N ms; le_inf those above 120000 ms. The edges
-- are ledger's trafficEdges: change neither without the other. Stored in
-- key order (WITHOUT ROWID), so that a range of days is one read.
CREATE TABLE traffic_daily (
	day       BIGINT NOT NULL,
	pool      TEXT NOT NULL,
	backend   TEXT NOT NULL,
	requests  BIGINT NOT NULL DEFAULT 0,
	errors    BIGINT NOT NULL DEFAULT 0,
	failovers BIGINT NOT NULL DEFAULT 0,
	le_50 BIGINT NOT NULL DEFAULT 0,
	le_100 BIGINT NOT NULL DEFAULT 0,
	le_200 BIGINT NOT NULL DEFAULT 0,
	le_300 BIGINT NOT NULL DEFAULT 0,
	le_400 BIGINT NOT NULL DEFAULT 0,
	le_500 BIGINT NOT NULL DEFAULT 0,
	le_750 BIGINT NOT NULL DEFAULT 0,
	le_1000 BIGINT NOT NULL DEFAULT 0,
	le_1500 BIGINT NOT NULL DEFAULT 0,
	le_2000 BIGINT NOT NULL DEFAULT 0,
	le_3000 BIGINT NOT NULL DEFAULT 0,
	le_4000 BIGINT NOT NULL DEFAULT 0,
	le_5000 BIGINT NOT NULL DEFAULT 0,
	le_7500 BIGINT NOT NULL DEFAULT 0,
	le_10000 BIGINT NOT NULL DEFAULT 0,
	le_15000 BIGINT NOT NULL DEFAULT 0,
	le_20000 BIGINT NOT NULL DEFAULT 0,
	le_30000 BIGINT NOT NULL DEFAULT 0,
	le_60000 BIGINT NOT NULL DEFAULT 0,
	le_120000 BIGINT NOT NULL DEFAULT 0,
	le_inf BIGINT NOT NULL DEFAULT 0,
	PRIMARY KEY (day, pool, backend)
) WITHOUT ROWID;

INSERT INTO traffic_daily (day, pool, backend, requests, errors, failovers,
	le_50, le_100, le_200, le_300, le_400, le_500, le_750, le_1000, le_1500, le_2000, le_3000, le_4000, le_5000, le_7500, le_10000, le_15000, le_20000, le_30000, le_60000, le_120000, le_inf)
SELECT at_us / 86400000000, pool, backend, COUNT(*),
	SUM(CASE WHEN unanswered <> 0 OR status >= 400 THEN 1 ELSE 0 END),
	SUM(CASE WHEN failover <> 0 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 0 AND duration_ms <= 50 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 50 AND duration_ms <= 100 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 100 AND duration_ms <= 200 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 200 AND duration_ms <= 300 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 300 AND duration_ms <= 400 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 400 AND duration_ms <= 500 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 500 AND duration_ms <= 750 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 750 AND duration_ms <= 1000 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 1000 AND duration_ms <= 1500 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 1500 AND duration_ms <= 2000 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 2000 AND duration_ms <= 3000 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 3000 AND duration_ms <= 4000 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 4000 AND duration_ms <= 5000 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 5000 AND duration_ms <= 7500 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 7500 AND duration_ms <= 10000 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 10000 AND duration_ms <= 15000 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 15000 AND duration_ms <= 20000 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 20000 AND duration_ms <= 30000 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 30000 AND duration_ms <= 60000 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 60000 AND duration_ms <= 120000 THEN 1 ELSE 0 END),
	SUM(CASE WHEN cache = '' AND duration_ms > 120000 THEN 1 ELSE 0 END)
FROM usage_requests GROUP BY at_us / 86400000000, pool, backend;
