package ledger

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Usage is what one request used. PromptTokens include CachedTokens (the
// part read from a prompt cache) and CompletionTokens include
// ReasoningTokens, as OpenAI reports them; extractors of other APIs
// normalise to that. Tokens counted against TPM limits and returned by
// SpentSince are PromptTokens + CompletionTokens.
type Usage struct {
	// At is when the request ended; its UTC day is the day it counts for.
	// Required (Writer.Add fills in the clock's time).
	At time.Time `json:"at"`
	// RequestID makes recording idempotent: a second record with the same
	// ID is ignored. Required (Writer.Add fills in a random one).
	RequestID string `json:"request_id"`
	KeyID     string `json:"key_id,omitempty"`
	Team      string `json:"team,omitempty"`
	Pool      string `json:"pool,omitempty"`
	Backend   string `json:"backend,omitempty"`
	Region    string `json:"region,omitempty"`
	Model     string `json:"model,omitempty"`
	// Tags are the key's tags when the request was made (see Key.Tags).
	Tags []string `json:"tags,omitempty"`
	// EndUser is the end user the request was made for (the request's
	// "user", Anthropic's metadata.user_id, or the gateway's end-user
	// header), as the caller sent it; at most MaxEndUser bytes, "" for
	// none. Only the per-request rows keep it.
	EndUser string `json:"end_user,omitempty"`

	PromptTokens     int64 `json:"prompt_tokens,omitempty"`
	CompletionTokens int64 `json:"completion_tokens,omitempty"`
	CachedTokens     int64 `json:"cached_tokens,omitempty"`
	ReasoningTokens  int64 `json:"reasoning_tokens,omitempty"`
	// Cost in USD; stored in nano-USD (integers), so that sums are exact
	// and the same on every store.
	Cost float64 `json:"cost,omitempty"`
	// Status is the HTTP status returned to the client.
	Status int `json:"status,omitempty"`
	// Failover is true when the request was served by another backend
	// than the first one tried.
	Failover bool `json:"failover,omitempty"`
	// Estimated is true when the answer reported no usage and the
	// tokens were counted by the gateway's tokenizer instead.
	Estimated bool `json:"estimated,omitempty"`
	// Cache is "hit" or "coalesced" for an answer the response cache gave
	// without calling a backend (its Cost and tokens are then zero, and
	// Saved is what the call that made it had cost, in USD); "" for a
	// call. Only the per-request rows keep them.
	Cache string  `json:"cache,omitempty"`
	Saved float64 `json:"saved,omitempty"`

	// The request log's (only the per-request rows keep them; see
	// requestlog.go). Attempts are the first MaxAttempts attempts, Tried
	// how many there were; Hedge the hedge's outcome ("primary",
	// "hedge", "neither", "refused"; "" without a hedge); Duration and
	// FirstByte the request's, in milliseconds. Unanswered marks a
	// request that no backend answered (Backend ""): it is logged, and
	// counted in no spend.
	Attempts    []Attempt `json:"attempts,omitempty"`
	Tried       int       `json:"tried,omitempty"`
	Hedge       string    `json:"hedge,omitempty"`
	DurationMs  int64     `json:"duration_ms,omitempty"`
	FirstByteMs int64     `json:"first_byte_ms,omitempty"`
	Unanswered  bool      `json:"unanswered,omitempty"`

	// Bodies are the request's bodies, for a pool or key that keeps them
	// (bodies.go); nil for none. Never in the spool (json "-"): their
	// secrets are redacted as the store writes them, so a crash loses
	// the bodies of the records it replays, never their spend. Request
	// leaves it nil: RequestBodies reads them.
	Bodies *Bodies `json:"-"`
}

// Groupings accepted in SpendQuery.By.
const (
	ByKey     = "key"
	ByTeam    = "team"
	ByPool    = "pool"
	ByBackend = "backend"
	ByModel   = "model"
	ByDay     = "day"
	// ByTag groups by the tags the requests' keys had: a request counts
	// once under each of its tags, and under "" when it had none, so
	// the groups' sum exceeds the total when requests have several.
	ByTag = "tag"
	// ByHour groups by UTC hour (for budgets of hours); it always sums
	// the per-request rows.
	ByHour = "hour"
	// ByEndUser groups by the request's end user (Usage.EndUser); the
	// requests without one are a group of their own, named "".
	ByEndUser = "end_user"
)

var groupings = []string{ByKey, ByTeam, ByPool, ByBackend, ByModel, ByDay, ByHour, ByTag, ByEndUser}

// MaxEndUser is the longest end user, in bytes, a usage record keeps.
// The gateway refuses a request whose end user is longer (400).
const MaxEndUser = 256

// SpendQuery asks for spend over [From, To), grouped by the dimensions in
// By (none: one total row), optionally limited to one key, team and/or
// tag (a request with that tag among its key's tags at the time).
//
// When From and To both fall on UTC midnights (days, weeks, months), and
// By has no ByHour, the store reads its daily aggregate, whose size does not grow with traffic;
// otherwise it sums the per-request rows, which is exact but costs a scan
// of the requests in the range. A query by end user (ByEndUser, or an
// EndUser filter) always sums the per-request rows: the daily aggregate
// does not keep end users. With an EndUser filter the scan is of that end
// user's requests only (an index); grouped by end user without one, of
// every request in the range.
type SpendQuery struct {
	From, To time.Time
	By       []string
	Key      string
	Team     string
	Tag      string
	// EndUser limits the answer to one end user's requests; "" is every
	// request, with an end user or not.
	EndUser string
}

// byRequest reports whether q must sum the per-request rows: its range
// is not whole days, or it asks by end user.
func (q SpendQuery) byRequest() bool {
	return !isMidnight(q.From) || !isMidnight(q.To) || q.EndUser != "" || slices.Contains(q.By, ByEndUser)
}

func (q SpendQuery) validate() error {
	for _, b := range q.By {
		if !slices.Contains(groupings, b) {
			return fmt.Errorf("%w: spend grouping %q (want one of %v)", ErrInvalid, b, groupings)
		}
	}
	if !q.To.After(q.From) {
		return fmt.Errorf("%w: spend range [%s, %s) is empty", ErrInvalid, q.From, q.To)
	}
	return nil
}

// SpendRow is one group of a Spend answer. The grouping fields not asked
// for are empty; Day is the UTC midnight of the day when grouped by day,
// Hour the start of the UTC hour when grouped by hour.
type SpendRow struct {
	Key     string    `json:"key,omitempty"`
	Team    string    `json:"team,omitempty"`
	Pool    string    `json:"pool,omitempty"`
	Backend string    `json:"backend,omitempty"`
	Model   string    `json:"model,omitempty"`
	Day     time.Time `json:"day,omitzero"`
	Hour    time.Time `json:"hour,omitzero"`
	Tag     string    `json:"tag,omitempty"`
	EndUser string    `json:"end_user,omitempty"`

	Requests         int64   `json:"requests"`
	Failovers        int64   `json:"failovers"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	CachedTokens     int64   `json:"cached_tokens"`
	ReasoningTokens  int64   `json:"reasoning_tokens"`
	Cost             float64 `json:"cost"`
}

// Filter limits SpentSince to one key and/or one team; empty fields match
// everything.
type Filter struct {
	Key  string
	Team string
}

const nanoPerUSD = 1e9

func toNano(usd float64) int64 { return int64(math.Round(usd * nanoPerUSD)) }

func fromNano(n int64) float64 { return float64(n) / nanoPerUSD }

// dayOf returns the UTC day of t as stored ("2006-01-02").
func dayOf(t time.Time) string { return t.UTC().Format(time.DateOnly) }

func isMidnight(t time.Time) bool {
	t = t.UTC()
	return t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0
}

// micros stores a time: microseconds since the epoch, 0 for the zero time.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}
