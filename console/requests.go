package console

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

// requestsPage is the size of a page of the request log.
const requestsPage = 50

// requestFilter is the request log page's filter, as its form sends it.
type requestFilter struct {
	From, To, Key, Team, Model, Pool, Backend, Status, Failover, Cache, Text, EndUser string
}

// requestsData is the request log page.
type requestsData struct {
	Store  bool
	Err    string
	Filter requestFilter
	Rows   []ledger.Usage
	// Next is the query of the next (older) page, "" on the last (a
	// url.Values encoding: safe in an href as it is).
	Next template.URL
	// EndUsers is whether the page shows end users (admins only).
	EndUsers bool
}

// store is the gateway's ledger, nil without one.
func (c *Console) store() ledger.Store {
	if l, ok := c.gw.(Ledgered); ok {
		return l.Ledger()
	}
	return nil
}

// requestsPage lists the request log, newest first, filtered and paged.
// Viewers see no end users, and their text search does not match them.
func (c *Console) requestsPage(w http.ResponseWriter, r *http.Request, s *session) {
	v := r.URL.Query()
	admin := s.Role == RoleAdmin
	f := requestFilter{From: v.Get("from"), To: v.Get("to"), Key: v.Get("key"), Team: v.Get("team"), Model: v.Get("model"),
		Pool: v.Get("pool"), Backend: v.Get("backend"), Status: v.Get("status"), Failover: v.Get("failover"),
		Cache: v.Get("cache"), Text: v.Get("q")}
	if admin {
		f.EndUser = v.Get("end_user")
	}
	d := requestsData{Filter: f, EndUsers: admin}
	st := c.store()
	if st == nil {
		c.render(w, http.StatusOK, "requests", s, d)
		return
	}
	d.Store = true
	q, err := f.query(v)
	status := http.StatusOK
	if err == nil {
		q.TextNoEndUser = !admin
		q.Limit = requestsPage + 1
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		d.Rows, err = st.Requests(ctx, q)
		if len(d.Rows) > requestsPage {
			d.Rows = d.Rows[:requestsPage]
			last := d.Rows[len(d.Rows)-1]
			next := url.Values{}
			for k, vs := range v {
				if k != "before" && k != "before_id" {
					next[k] = vs
				}
			}
			next.Set("before", strconv.FormatInt(last.At.UnixMicro(), 10))
			next.Set("before_id", last.RequestID)
			d.Next = template.URL(next.Encode())
		}
	}
	if err != nil {
		d.Err = err.Error()
		if errors.Is(err, ledger.ErrInvalid) {
			status = http.StatusBadRequest
		}
	}
	c.render(w, status, "requests", s, d)
}

// query is f as the store's query; ErrInvalid for a bad field.
func (f requestFilter) query(v url.Values) (ledger.RequestQuery, error) {
	q := ledger.RequestQuery{Key: f.Key, Team: f.Team, Model: f.Model, Pool: f.Pool, Backend: f.Backend,
		Failover: f.Failover, Cache: f.Cache, Text: strings.TrimSpace(f.Text), EndUser: f.EndUser}
	var err error
	if q.From, err = parseWhen("from", f.From); err != nil {
		return q, err
	}
	if q.To, err = parseWhen("to", f.To); err != nil {
		return q, err
	}
	switch s := f.Status; {
	case s == "":
	case s == "error":
		q.StatusMin, q.StatusMax = 400, 599
	case len(s) == 3 && s[1:] == "xx" && s[0] >= '1' && s[0] <= '5':
		q.StatusMin = int(s[0]-'0') * 100
		q.StatusMax = q.StatusMin + 99
	default:
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 || n > 599 {
			return q, fmt.Errorf("%w: status %q is not a status such as 429, a class such as 5xx, or error", ledger.ErrInvalid, bounded(s))
		}
		q.StatusMin, q.StatusMax = n, n
	}
	if b := v.Get("before"); b != "" {
		us, err := strconv.ParseInt(b, 10, 64)
		id := v.Get("before_id")
		if err != nil || us <= 0 || id == "" {
			return q, fmt.Errorf("%w: the page's position (before) is not one this page gave", ledger.ErrInvalid)
		}
		q.Before = ledger.Cursor{At: time.UnixMicro(us).UTC(), RequestID: id}
	}
	return q, nil
}

// parseWhen reads a time of the filter: a date (UTC), a date and time
// as an <input type=datetime-local> sends it (UTC), or RFC 3339.
func parseWhen(field, s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: %s %q is not a date such as 2026-12-01 or a time such as 2026-12-01T08:30 (UTC)", ledger.ErrInvalid, field, bounded(s))
}

// bounded shortens what a page echoes.
func bounded(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// requestData is the page of one request.
type requestData struct {
	Store    bool
	Err      string
	ID       string
	Req      *ledger.Usage
	Timeline timeline
	EndUsers bool
	// ShowBodies is whether the page shows the request's kept bodies
	// (admins only: they are end users' content); Bodies are those, nil
	// when none were kept (BodiesNote says why).
	ShowBodies bool
	Bodies     *keptBodies
	BodiesNote string
}

// keptBodies are a request's kept bodies as the page shows them: text,
// escaped by the template like every other value.
type keptBodies struct {
	Request, Response                   string
	RequestSize, ResponseSize           string
	RequestTruncated, ResponseTruncated bool
	Note                                string
}

// bodiesOf reads the kept bodies of request id for the page.
func (d *requestData) bodiesOf(ctx context.Context, st ledger.Store, id string) {
	b, err := st.RequestBodies(ctx, id)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		d.BodiesNote = "No bodies kept: its pool and key keep none (request_log.bodies), or they are older than store.body_retention."
	case err != nil:
		d.BodiesNote = "The store answered with an error: " + err.Error()
	default:
		size := func(n int64) string {
			if n < 0 {
				return "size unknown"
			}
			return strconv.FormatInt(n, 10) + " bytes"
		}
		d.Bodies = &keptBodies{Request: strings.ToValidUTF8(string(b.Request), "\uFFFD"), Response: strings.ToValidUTF8(string(b.Response), "\uFFFD"),
			RequestSize: size(b.RequestSize), ResponseSize: size(b.ResponseSize), RequestTruncated: b.RequestTruncated,
			ResponseTruncated: b.ResponseTruncated, Note: b.Note}
	}
}

// requestPage shows one request: its fields, its attempts as a
// timeline and, to admins, its kept bodies.
func (c *Console) requestPage(w http.ResponseWriter, r *http.Request, s *session) {
	d := requestData{ID: r.PathValue("id"), EndUsers: s.Role == RoleAdmin, ShowBodies: s.Role == RoleAdmin}
	st := c.store()
	status := http.StatusOK
	if st != nil {
		d.Store = true
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		u, err := st.Request(ctx, d.ID)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			d.Err, status = "No request "+strconv.Quote(bounded(d.ID))+" in the log: never recorded, or older than the store's retention.", http.StatusNotFound
		case err != nil:
			d.Err, status = "The store answered with an error: "+err.Error(), http.StatusInternalServerError
		default:
			if !d.EndUsers {
				u.EndUser = ""
			}
			d.Req = &u
			d.Timeline = timelineOf(u)
			if d.ShowBodies {
				d.bodiesOf(ctx, st, d.ID)
			}
		}
	}
	c.render(w, status, "request", s, d)
}

// requestsAround is the query of the request log page for the requests
// that tried backend within 5 minutes of at (an event's time), encoded
// by url.Values: safe in an href as it is.
func requestsAround(backend string, at time.Time) template.URL {
	v := url.Values{}
	v.Set("backend", backend)
	v.Set("from", at.Add(-5*time.Minute).UTC().Format(time.RFC3339))
	v.Set("to", at.Add(5*time.Minute).UTC().Format(time.RFC3339))
	return template.URL(v.Encode())
}
