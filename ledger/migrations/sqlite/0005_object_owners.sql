-- Who made the stored objects that have no metadata (files, uploads,
-- containers, message batches), by the backend that holds them and the
-- provider's id: the owner mark of the key or team (a MAC, never the
-- key), so that a key's lists show its own. A row is deleted when the
-- object is deleted through the gateway.
CREATE TABLE object_owners (
	backend    TEXT NOT NULL,
	object_id  TEXT NOT NULL,
	owner_mark TEXT NOT NULL,
	created_us BIGINT NOT NULL,
	PRIMARY KEY (backend, object_id)
);
