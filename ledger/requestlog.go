package ledger

import "encoding/json"

// Attempt is one attempt of a request, as the request log keeps it.
type Attempt struct {
	Backend string `json:"backend"`
	// Status is the backend's HTTP status, 0 when it gave none (a
	// transport error, a timeout).
	Status int `json:"status,omitempty"`
	// Reason is the engine's word for how it ended: "ok" for the
	// response passed on to the client (whatever its status), else
	// "rate_limited", "timeout", "server_error", ...
	Reason string `json:"reason,omitempty"`
	// StartMs is when it began, in milliseconds after the request's
	// first attempt; DurationMs how long it ran until its response
	// headers (its first byte) or its error.
	StartMs    int64 `json:"start_ms"`
	DurationMs int64 `json:"duration_ms"`
	// Hedge marks the hedge (the second attempt sent while the first was
	// still waiting); Abandoned an attempt given up before its answer.
	Hedge     bool `json:"hedge,omitempty"`
	Abandoned bool `json:"abandoned,omitempty"`
}

// MaxAttempts is how many attempts a request's log keeps (the first
// ones); Usage.Tried counts them all.
const MaxAttempts = 16

// MaxText bounds RequestQuery.Text, in bytes.
const MaxText = 256

// maxReason bounds an attempt's reason, in bytes.
const maxReason = 64

// attemptsJSON is the stored form of u's attempts: at most MaxAttempts,
// their backends and reasons bounded.
func attemptsJSON(as []Attempt) string {
	if len(as) > MaxAttempts {
		as = as[:MaxAttempts]
	}
	out := make([]Attempt, len(as))
	for i, a := range as {
		a.Backend = bounded(a.Backend, MaxEndUser)
		a.Reason = bounded(a.Reason, maxReason)
		out[i] = a
	}
	b, err := json.Marshal(out)
	if err != nil { // cannot happen: strings and numbers only
		return "[]"
	}
	return string(b)
}

// bounded is s cut to at most n bytes.
func bounded(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// triedBackends are the distinct backends u tried, the one that answered
// among them, for usage_attempts.
func triedBackends(u Usage) []string {
	var out []string
	add := func(b string) {
		for _, o := range out {
			if o == b {
				return
			}
		}
		out = append(out, b)
	}
	if u.Backend != "" {
		add(u.Backend)
	}
	for i, a := range u.Attempts {
		if i == MaxAttempts {
			break
		}
		if a.Backend != "" {
			add(bounded(a.Backend, MaxEndUser))
		}
	}
	return out
}
