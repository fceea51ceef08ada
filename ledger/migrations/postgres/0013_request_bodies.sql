-- The request log's bodies, for the pools and keys that keep them
-- (request_log.bodies): in a table of their own, so that the log's
-- lists and filters never read them. request and response are the
-- bodies as kept: at most the capture's bound (max_body_bytes), their
-- secrets redacted before the insert (ledger/redact.go);
-- request_size and response_size the bodies' sizes as they passed
-- (larger than kept when truncated, -1 when unknown); *_truncated 1 when
-- the kept body is a prefix; note why a body was not kept ('' when
-- both were). A row is deleted with its request's, or earlier by the
-- bodies' own retention (store.body_retention), by at_us.
CREATE TABLE request_bodies (
	request_id         TEXT NOT NULL,
	at_us              BIGINT NOT NULL,
	request            BYTEA NOT NULL,
	response           BYTEA NOT NULL,
	request_size       BIGINT NOT NULL DEFAULT 0,
	response_size      BIGINT NOT NULL DEFAULT 0,
	request_truncated  INTEGER NOT NULL DEFAULT 0,
	response_truncated INTEGER NOT NULL DEFAULT 0,
	note               TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (request_id)
);
CREATE INDEX request_bodies_at ON request_bodies (at_us, request_id);
