-- The audit trail: who did what, when. One row per operator action
-- (drain, breaker, pool member, reload, cache purge), key or team change
-- and console sign-in (or refused one). actor is who (the console's user,
-- or "admin key (as NAME) from ADDRESS"), action the event's kind
-- ("admin:drain", "signin"), target what it acted on (a backend, a
-- pool), detail a JSON object of at most a few KB. Never a secret.
CREATE TABLE audit (
	id     TEXT NOT NULL,
	at_us  BIGINT NOT NULL,
	actor  TEXT NOT NULL,
	action TEXT NOT NULL,
	target TEXT NOT NULL DEFAULT '',
	detail TEXT NOT NULL DEFAULT '{}',
	PRIMARY KEY (id)
);
CREATE INDEX audit_at ON audit (at_us, id);
CREATE INDEX audit_actor_at ON audit (actor, at_us, id);
CREATE INDEX audit_action_at ON audit (action, at_us, id);
