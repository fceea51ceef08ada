// Package ledger keeps virtual keys, teams and the usage and spend of
// requests, in SQLite (embedded, the default: one file in the data
// directory, nothing else to run) or PostgreSQL (for several replicas
// sharing one database). Both run the same schema, migrated at open by
// numbered, embedded migrations.
//
// # Layout
//
// This package holds the Store interface and its types, the SQL store
// both databases share (NewSQLStore), what differs between them
// (Dialect), the migrations (Migrate) and the Writer. It links no
// database driver: packages that only use a Store (tenant, proxy) stay
// free of them. The drivers live in packages of their own, which open a
// Store: ledger/sqlite (sqlite.Open) and ledger/postgres (postgres.Open).
//
// # Keys
//
// NewKey creates a key and returns its secret once; the store keeps only
// SHA-256 of it and a short lookup prefix, so Verify costs one indexed
// lookup whatever the number of keys. Rotate replaces the secret (the old
// one stops working at once); RevokeKey ends a key. Key limits (RPM, TPM,
// concurrency, budget per day, week or month) and teams' limits are
// stored here; enforcing them is the gateway's business.
//
// # Usage
//
// Usage is recorded per request and summed per UTC day in the same
// transaction, so spend over whole days (Spend, SpentSince) reads the
// daily sums, not every request. Writer takes usage off the request path:
// Add never blocks; batches are written asynchronously.
//
// # When the database fails
//
// What happens when the database is down, the disk is full or the file is
// read-only:
//
//   - RecordUsage returns the error and writes nothing of the batch (one
//     transaction); it never panics. Retrying the batch is safe, since
//     records are idempotent on RequestID.
//   - Writer keeps the failed batch and everything added meanwhile, up to
//     WriterOptions.Buffer records in all, and retries with a backoff
//     doubling from MinBackoff to MaxBackoff; OnError hears of each
//     failure. Once the store works again, everything held is written,
//     once. Beyond Buffer, new records are dropped and counted (Dropped,
//     OnDrop): requests are never slowed or refused for the ledger's sake.
//     Close keeps retrying until its context ends, then reports what it
//     could not write.
//   - Verify, Keys, Spend and SpentSince return the store's error, which
//     is none of ErrNotFound, ErrRevoked or ErrExpired. The caller decides:
//     refuse the request (fail closed) or trust a recent cached answer
//     (fail open for keys it has already verified). Verify itself never
//     reports a key as valid without having read it.
//
// A Store and a Writer are safe for concurrent use.
package ledger
