package ledgerapi

import (
	"encoding/base64"
	"encoding/csv"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/internal/labels"
	"github.com/switchover-gw/switchover/ledger"
)

// Request logs' page sizes.
const (
	// DefaultRequestsLimit is the page size without ?limit=.
	DefaultRequestsLimit = 100
	// MaxRequestsLimit is the largest ?limit=.
	MaxRequestsLimit = 1000
)

// RequestRow is one request of GET /admin/usage/requests.
type RequestRow struct {
	Time      time.Time `json:"time"`
	RequestID string    `json:"request_id"`
	Key       string    `json:"key"`
	Team      string    `json:"team"`
	Tags      []string  `json:"tags"`
	// EndUser is the end user the request was made for (its user field
	// or header); "" when none was given.
	EndUser          string  `json:"end_user"`
	Pool             string  `json:"pool"`
	Backend          string  `json:"backend"`
	Model            string  `json:"model"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	CachedTokens     int64   `json:"cached_tokens"`
	ReasoningTokens  int64   `json:"reasoning_tokens"`
	Cost             float64 `json:"cost"`
	// Estimated: the answer reported no usage; the gateway counted it.
	Estimated bool `json:"estimated"`
	// Status is the HTTP status returned to the client; 0 when the client
	// went away first.
	Status   int  `json:"status"`
	Failover bool `json:"failover"`
	// Cache is "hit" or "coalesced" for an answer the response cache gave
	// without calling a backend (its cost 0, its tokens none), and
	// SavedUSD what the call that made it had cost; "" and 0 for a call.
	Cache    string  `json:"cache"`
	SavedUSD float64 `json:"saved_usd"`
	// Tried is how many attempts the request made; Hedge the hedge's
	// outcome ("primary", "hedge", "neither", "refused"; "" without
	// one); DurationMs and FirstByteMs its timings. Unanswered: no
	// backend answered (Backend is ""); such a request costs nothing.
	Tried       int    `json:"tried"`
	Hedge       string `json:"hedge"`
	DurationMs  int64  `json:"duration_ms"`
	FirstByteMs int64  `json:"first_byte_ms"`
	Unanswered  bool   `json:"unanswered"`
	// Attempts are its attempts (at most 16, ledger.MaxAttempts), in
	// GET /admin/usage/requests/{id} only.
	Attempts []ledger.Attempt `json:"attempts,omitempty"`
}

// RequestDetail is the JSON answer of GET /admin/usage/requests/{id}.
type RequestDetail struct {
	Request RequestRow `json:"request"`
	// Bodies are the request's bodies as the request log kept them, or
	// why it has none.
	Bodies BodiesView `json:"bodies"`
}

// BodiesView is a request's kept bodies (request_log.bodies), as text:
// bytes that are not UTF-8 read as U+FFFD. Their secrets were redacted
// before they were stored; headers are never kept.
type BodiesView struct {
	// Kept is false when none were kept (Note says why), and the other
	// fields are then empty.
	Kept     bool   `json:"kept"`
	Request  string `json:"request"`
	Response string `json:"response"`
	// RequestSize and ResponseSize are the whole bodies' sizes in bytes
	// (-1: unknown, or there was no answer); *Truncated mark a body of
	// which only the first part was kept.
	RequestSize       int64  `json:"request_size"`
	ResponseSize      int64  `json:"response_size"`
	RequestTruncated  bool   `json:"request_truncated"`
	ResponseTruncated bool   `json:"response_truncated"`
	Note              string `json:"note,omitempty"`
}

// NoBodiesNote is BodiesView.Note for a request without kept bodies.
const NoBodiesNote = "no bodies kept: its pool and key keep none (request_log.bodies), or they are older than store.body_retention"

// BodiesOf is the view of b.
func BodiesOf(b ledger.Bodies) BodiesView {
	return BodiesView{Kept: true, Request: strings.ToValidUTF8(string(b.Request), "\uFFFD"), Response: strings.ToValidUTF8(string(b.Response), "\uFFFD"),
		RequestSize: b.RequestSize, ResponseSize: b.ResponseSize, RequestTruncated: b.RequestTruncated,
		ResponseTruncated: b.ResponseTruncated, Note: b.Note}
}

// Requests is the JSON answer of GET /admin/usage/requests.
type Requests struct {
	Requests []RequestRow `json:"requests"`
	// NextCursor is the ?cursor= of the next page (older requests); ""
	// on the last page.
	NextCursor string `json:"next_cursor"`
}

func rowOf(u ledger.Usage) RequestRow {
	tags := u.Tags
	if tags == nil {
		tags = []string{}
	}
	return RequestRow{Time: u.At.UTC(), RequestID: u.RequestID, Key: u.KeyID, Team: u.Team, Tags: tags, EndUser: u.EndUser, Pool: u.Pool,
		Backend: u.Backend, Model: u.Model, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		CachedTokens: u.CachedTokens, ReasoningTokens: u.ReasoningTokens, Cost: u.Cost, Estimated: u.Estimated,
		Status: u.Status, Failover: u.Failover, Cache: u.Cache, SavedUSD: u.Saved, Tried: u.Tried, Hedge: u.Hedge,
		DurationMs: u.DurationMs, FirstByteMs: u.FirstByteMs, Unanswered: u.Unanswered}
}

// request answers GET /admin/usage/requests/{id}: one request with its
// attempts and its kept bodies; 404 when none has that id. Only the
// admin key reaches it (the admin guard): bodies are end users' content.
func (h *Handler) request(w http.ResponseWriter, r *http.Request, s ledger.Store) {
	id := r.PathValue("id")
	if len(id) > ledger.MaxText || strings.ContainsFunc(id, func(c rune) bool { return c < ' ' || c == 0x7f }) {
		h.fail(w, r, badField("id", "is not a request id"))
		return
	}
	u, err := s.Request(r.Context(), id)
	if err != nil {
		if errors.Is(err, ledger.ErrNotFound) {
			err = fmt.Errorf("%w: no request %q in the log (never recorded, or past the retention)", ledger.ErrNotFound, truncate(id))
		}
		h.fail(w, r, err)
		return
	}
	row := rowOf(u)
	row.Attempts = u.Attempts
	if row.Attempts == nil {
		row.Attempts = []ledger.Attempt{}
	}
	d := RequestDetail{Request: row, Bodies: BodiesView{Note: NoBodiesNote}}
	switch b, err := s.RequestBodies(r.Context(), id); {
	case err == nil:
		d.Bodies = BodiesOf(b)
	case !errors.Is(err, ledger.ErrNotFound):
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// requests answers GET /admin/usage/requests?from=&to=&key=&team=&tag=
// &model=&end_user=&pool=&backend=&failover=&cache=&q=&status=&cursor=
// &limit=&format=: one row per request, newest
// first; the next page's cursor is in next_cursor and the X-Next-Cursor
// header.
func (h *Handler) requests(w http.ResponseWriter, r *http.Request, s ledger.Store) {
	q, format, err := requestQuery(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// One more than asked tells whether there is a next page.
	want := q.Limit
	q.Limit++
	us, err := s.Requests(r.Context(), q)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var a Requests
	if len(us) > want {
		us = us[:want]
		a.NextCursor = encodeCursor(ledger.CursorOf(us[len(us)-1]))
		w.Header().Set("X-Next-Cursor", a.NextCursor)
	}
	a.Requests = make([]RequestRow, 0, len(us))
	for _, u := range us {
		a.Requests = append(a.Requests, rowOf(u))
	}
	if format == "csv" {
		writeRequestsCSV(w, a.Requests)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// requestQuery reads the parameters of GET /admin/usage/requests.
func requestQuery(r *http.Request) (ledger.RequestQuery, string, error) {
	v := r.URL.Query()
	q := ledger.RequestQuery{Key: v.Get("key"), Team: v.Get("team"), Model: v.Get("model"),
		EndUser: v.Get("end_user"), Pool: v.Get("pool"), Backend: v.Get("backend"), Failover: v.Get("failover"),
		Cache: v.Get("cache"), Text: v.Get("q"), Limit: DefaultRequestsLimit}
	var err error
	if s := v.Get("from"); s != "" {
		if q.From, err = parseTime("from", s); err != nil {
			return q, "", err
		}
	}
	if s := v.Get("to"); s != "" {
		if q.To, err = parseTime("to", s); err != nil {
			return q, "", err
		}
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.To.After(q.From) {
		return q, "", badField("to", "%s is not after from (%s); to is exclusive", q.To.Format(time.RFC3339), q.From.Format(time.RFC3339))
	}
	if q.Tag = v.Get("tag"); q.Tag != "" {
		if err := labels.CheckTag(q.Tag); err != nil {
			return q, "", badField("tag", "%v", err)
		}
	}
	for field, s := range map[string]string{"key": q.Key, "team": q.Team, "model": q.Model, "pool": q.Pool, "backend": q.Backend} {
		if err := checkName(field, s); err != nil {
			return q, "", err
		}
	}
	if len(q.EndUser) > ledger.MaxEndUser {
		return q, "", badField("end_user", "is %d bytes, longer than any end user kept (%d)", len(q.EndUser), ledger.MaxEndUser)
	}
	switch q.Failover {
	case "", "yes", "no":
	default:
		return q, "", badField("failover", "%q is not yes or no", truncate(q.Failover))
	}
	switch q.Cache {
	case "", "hit", "coalesced", "any", "none":
	default:
		return q, "", badField("cache", "%q is not hit, coalesced, any or none", truncate(q.Cache))
	}
	if len(q.Text) > ledger.MaxText {
		return q, "", badField("q", "is %d bytes, longer than anything searched (%d)", len(q.Text), ledger.MaxText)
	}
	if q.StatusMin, q.StatusMax, err = parseStatus(v.Get("status")); err != nil {
		return q, "", err
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxRequestsLimit {
			return q, "", badField("limit", "%q is not a number from 1 to %d", truncate(s), MaxRequestsLimit)
		}
		q.Limit = n
	}
	if s := v.Get("cursor"); s != "" {
		if q.Before, err = decodeCursor(s); err != nil {
			return q, "", err
		}
	}
	format := v.Get("format")
	if format != "" && format != "json" && format != "csv" {
		return q, "", badField("format", "%q is not json or csv", truncate(format))
	}
	return q, format, nil
}

// parseStatus reads ?status=: a status (429), a class (4xx) or "error"
// (400 to 599); "" is any.
func parseStatus(s string) (lo, hi int, err error) {
	switch {
	case s == "":
		return 0, 0, nil
	case s == "error":
		return 400, 599, nil
	case len(s) == 3 && s[1:] == "xx" && s[0] >= '1' && s[0] <= '5':
		lo = int(s[0]-'0') * 100
		return lo, lo + 99, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 100 || n > 599 {
		return 0, 0, badField("status", "%q is not a status such as 429, a class such as 5xx, or error", truncate(s))
	}
	return n, n, nil
}

// cursorPrefix marks this API's cursors (and their version).
const cursorPrefix = "c1."

// encodeCursor makes the opaque ?cursor= of position c.
func encodeCursor(c ledger.Cursor) string {
	raw := strconv.FormatInt(c.At.UnixMicro(), 10) + "," + c.RequestID
	return cursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// maxCursor bounds a cursor's length (a request id is at most a few
// hundred bytes).
const maxCursor = 512

func decodeCursor(s string) (ledger.Cursor, error) {
	bad := badField("cursor", "not a cursor of this API: pass next_cursor of the last page as it was given")
	rest, ok := strings.CutPrefix(s, cursorPrefix)
	if !ok || len(s) > maxCursor {
		return ledger.Cursor{}, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return ledger.Cursor{}, bad
	}
	at, id, ok := strings.Cut(string(raw), ",")
	us, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || us <= 0 || id == "" {
		return ledger.Cursor{}, bad
	}
	return ledger.Cursor{At: time.UnixMicro(us).UTC(), RequestID: id}, nil
}

// truncate shortens a parameter echoed in an error.
func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// requestsCSVHeader is the header line of the CSV request logs; the
// columns that came later (end_user, cache and saved_usd, then the
// request log's) are last, so that those before them kept their places.
var requestsCSVHeader = []string{"time", "request_id", "key", "team", "tags", "pool", "backend", "model",
	"prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens", "cost_usd", "estimated", "status", "failover", "end_user",
	"cache", "saved_usd", "tried", "hedge", "duration_ms", "first_byte_ms", "unanswered"}

func writeRequestsCSV(w http.ResponseWriter, rows []RequestRow) {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	cw := csv.NewWriter(w)
	_ = cw.Write(requestsCSVHeader)
	for _, r := range rows {
		_ = cw.Write([]string{r.Time.Format(time.RFC3339Nano), textCell(r.RequestID), textCell(r.Key), textCell(r.Team),
			textCell(strings.Join(r.Tags, " ")), textCell(r.Pool), textCell(r.Backend), textCell(r.Model), itoa(r.PromptTokens), itoa(r.CompletionTokens), itoa(r.CachedTokens),
			itoa(r.ReasoningTokens), strconv.FormatFloat(r.Cost, 'f', -1, 64), strconv.FormatBool(r.Estimated),
			strconv.Itoa(r.Status), strconv.FormatBool(r.Failover), textCell(r.EndUser),
			textCell(r.Cache), strconv.FormatFloat(r.SavedUSD, 'f', -1, 64), strconv.Itoa(r.Tried), textCell(r.Hedge),
			itoa(r.DurationMs), itoa(r.FirstByteMs), strconv.FormatBool(r.Unanswered)})
	}
	cw.Flush() // an error is the client's going away: nothing to do
}
