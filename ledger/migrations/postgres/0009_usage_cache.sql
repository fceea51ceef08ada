-- Answers the response cache gave without calling a backend: cache is
-- 'hit' or 'coalesced' ('' for a call), their cost_nusd is 0, and
-- saved_nusd is what the call that made the answer had cost, the spend
-- the cache saved. Only the per-request rows carry them.
ALTER TABLE usage_requests ADD COLUMN cache TEXT NOT NULL DEFAULT '';
ALTER TABLE usage_requests ADD COLUMN saved_nusd BIGINT NOT NULL DEFAULT 0;
