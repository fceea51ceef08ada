-- The end user a request was made for: the request's "user" (or
-- "safety_identifier"), Anthropic's metadata.user_id, or the
-- x-switchover-end-user header; at most 256 bytes, '' for none. Only
-- the per-request rows carry it (the daily sums do not, so that
-- caller-chosen ids cannot grow them): spend by end user is summed from
-- usage_requests, through this index of the rows that have one.
ALTER TABLE usage_requests ADD COLUMN end_user TEXT NOT NULL DEFAULT '';
CREATE INDEX usage_requests_end_user ON usage_requests (end_user, at_us) WHERE end_user <> '';
