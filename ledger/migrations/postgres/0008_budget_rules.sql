-- Budgets beside a key's or a team's own (budget_nusd of api_keys and
-- teams): its soft budget, an alert threshold (pool ''), and a key's
-- budgets of one pool (Key.Budgets). owner is 'key:ID' or 'team:NAME';
-- a soft budget's period is its owner's. model is '' (kept for budgets
-- by a model name that is not a pool's).
CREATE TABLE budget_rules (
	owner         TEXT NOT NULL,
	pool          TEXT NOT NULL DEFAULT '',
	model         TEXT NOT NULL DEFAULT '',
	budget_nusd   BIGINT NOT NULL DEFAULT 0,
	budget_period TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (owner, pool, model)
);
