-- 1 when the answer reported no usage and its tokens were counted by the
-- gateway's tokenizer (an estimate), 0 when the upstream reported them.
ALTER TABLE usage_requests ADD COLUMN estimated INTEGER NOT NULL DEFAULT 0;
