package route

// InFlight returns the number of attempts in flight on the backend, across
// every pool it belongs to: begun and not yet ended. An attempt is in
// flight from when it is sent until its outcome is known (for an answer
// passed on, its body closed), so a long stream counts for its whole
// length. LeastBusy picks by it. Safe for concurrent use.
func (b *Backend) InFlight() int64 { return b.inflight.Load() }

// beginAttempt counts an attempt on the backend as in flight. Every call
// must be matched by one endAttempt. Safe for concurrent use.
func (b *Backend) beginAttempt() { b.inflight.Add(1) }

// endAttempt counts an attempt begun by beginAttempt as ended. Safe for
// concurrent use.
func (b *Backend) endAttempt() { b.inflight.Add(-1) }
