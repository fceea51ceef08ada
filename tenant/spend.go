package tenant

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/ledger"
)

// SpendSource is the store's record of spend; ledger.Store implements it.
type SpendSource interface {
	Spend(ctx context.Context, q ledger.SpendQuery) ([]ledger.SpendRow, error)
}

// Spend is what each key and team spent, by hour, for budgets: the store's
// last figure (Refresh) plus what this replica spent that the figure does
// not include yet. Without a source, it is what this replica spent since
// it started. It is safe for concurrent use.
//
// A cost is pending from Add until the usage writer reports it written
// (Written); a written cost counts on its own until a Refresh that
// started after the write has read it back from the store. A write that
// lands while a Refresh runs may be counted twice until the next one:
// budgets err on the side of stopping early, never late.
type Spend struct {
	clock   clock.Clock
	source  SpendSource
	periods func() []string
	pools   func() bool
	members func(subject string) []string

	// Buckets are UTC hours (hours since 1970-01-01). The store's figure
	// of a whole day that no period of hours needs is kept in its first
	// hour: every period starts on the hour, and a day's first hour
	// counts for a period exactly when the whole day does.
	mu      sync.Mutex
	base    map[string]map[int64]int64 // subject → hour → the store's figure
	pending map[string]map[int64]int64 // added, not yet written
	written []writtenBatch             // written since the last Refresh began
	stale   bool                       // the last Refresh failed
}

type writtenBatch struct {
	at   time.Time
	cost map[string]map[int64]int64
}

// NewSpend returns a Spend reading from source (nil: memory only).
func NewSpend(c clock.Clock, source SpendSource) *Spend {
	return &Spend{clock: clock.Or(c), source: source, base: map[string]map[int64]int64{}, pending: map[string]map[int64]int64{}}
}

// SetMembers tells Spent which subjects a subject's spend is the sum of:
// an organisation's ("org:NAME") is its teams' ("team:NAME"), as usage
// is recorded by team (Directory.Members). Nil (the default): none. Call
// it before use.
func (s *Spend) SetMembers(members func(subject string) []string) {
	s.mu.Lock()
	s.members = members
	s.mu.Unlock()
}

// SetPoolBudgets tells Refresh whether some key has budgets of one pool
// (Directory.PoolBudgets), so that it reads the spend of each key on each
// pool too. Nil (the default): none. Call it before the first Refresh.
func (s *Spend) SetPoolBudgets(any func() bool) {
	s.mu.Lock()
	s.pools = any
	s.mu.Unlock()
}

// SetPeriods tells Refresh which budget periods are in use (see
// Directory.Periods), so that it reads back from the store as far as the
// longest needs, by hour where a period starts on an hour other than
// midnight. Nil (the default): "week" and "month". Call it before the
// first Refresh.
func (s *Spend) SetPeriods(periods func() []string) {
	s.mu.Lock()
	s.periods = periods
	s.mu.Unlock()
}

func subjects(key, team, pool string) []string {
	s := make([]string, 0, 3)
	if key != "" {
		s = append(s, "key:"+key)
		if pool != "" {
			s = append(s, poolSubject("key:"+key, pool))
		}
	}
	if team != "" {
		s = append(s, "team:"+team)
	}
	return s
}

// poolSubject is the subject of key's spend (its limiter name, "key:ID")
// on pool, for its budgets of one pool.
func poolSubject(key, pool string) string { return key + "/pool:" + pool }

func addTo(m map[string]map[int64]int64, subject string, hour, cost int64) {
	d := m[subject]
	if d == nil {
		d = map[int64]int64{}
		m[subject] = d
	}
	d[hour] += cost
}

// hourOf numbers t's UTC hour: hours since 1970-01-01, rounded down.
func hourOf(t time.Time) int64 {
	u := t.Unix()
	if u < 0 && u%3600 != 0 {
		return u/3600 - 1
	}
	return u / 3600
}

// Add counts cost (US dollars) spent at at by key ID key and its team
// ("" for none).
func (s *Spend) Add(key, team string, cost float64, at time.Time) {
	k, t := (&Principal{ID: key, Team: team}).names()
	s.add(cost, at, k, t)
}

// AddOn is Add of a request to pool ("" for none), which counts for the
// key's budgets of that pool too.
func (s *Spend) AddOn(key, team, pool string, cost float64, at time.Time) {
	s.add(cost, at, subjects(key, team, pool)...)
}

// add is Add with the subjects' names ("key:ID", "team:NAME",
// poolSubject; "" for none).
func (s *Spend) add(cost float64, at time.Time, subjects ...string) {
	hour, n := hourOf(at), nanos(cost)
	s.mu.Lock()
	for _, sub := range subjects {
		if sub != "" {
			addTo(s.pending, sub, hour, n)
		}
	}
	s.mu.Unlock()
}

// Written tells that the records were stored; each must have been Added
// (same key, team, cost and hour).
func (s *Spend) Written(batch []ledger.Usage) {
	if s.source == nil {
		return
	}
	b := writtenBatch{at: s.clock.Now(), cost: map[string]map[int64]int64{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range batch {
		if u.Cost == 0 {
			continue
		}
		hour := hourOf(u.At)
		for _, sub := range subjects(u.KeyID, u.Team, u.Pool) {
			// A record may be written before its Add (the writer can be
			// quicker than the request's end): pending goes below zero
			// until the Add comes, and the sum stays right throughout.
			addTo(s.pending, sub, hour, -nanos(u.Cost))
			if d := s.pending[sub]; d[hour] == 0 {
				delete(d, hour)
				if len(d) == 0 {
					delete(s.pending, sub)
				}
			}
			addTo(b.cost, sub, hour, nanos(u.Cost))
		}
	}
	s.written = append(s.written, b)
}

// Spent returns what subject ("key:ID" or "team:NAME") spent from since
// on; since is a period's start (ledger.PeriodStart), always on the hour.
func (s *Spend) Spent(subject string, since time.Time) float64 {
	s.mu.Lock()
	members := s.members
	s.mu.Unlock()
	if members != nil {
		if ms := members(subject); ms != nil {
			var t float64
			for _, m := range ms {
				t += s.spent(m, since)
			}
			return t
		}
	}
	return s.spent(subject, since)
}

// spent is Spent of a subject that has no members.
func (s *Spend) spent(subject string, since time.Time) float64 {
	from := hourOf(since)
	sum := func(d map[int64]int64) (t int64) {
		for hour, c := range d {
			if hour >= from {
				t += c
			}
		}
		return t
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := sum(s.base[subject]) + sum(s.pending[subject])
	for _, b := range s.written {
		t += sum(b.cost[subject])
	}
	return float64(t) / 1e9
}

// nanos is a cost in nano-dollars, as the ledger stores it, so that sums
// are exact.
func nanos(usd float64) int64 { return int64(math.Round(usd * 1e9)) }

// Stale reports whether the last Refresh failed, so spend of other
// replicas since the one before is missing.
func (s *Spend) Stale() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stale
}

// Refresh reads the spend of every key and team from the store, from the
// earliest start of the periods in use (SetPeriods) on: by day from the
// daily aggregate, and by hour from the requests themselves on the days
// where a period of hours starts other than at midnight (only those cost
// a scan of the requests, and only of the period's days).
func (s *Spend) Refresh(ctx context.Context) error {
	if s.source == nil {
		s.prune()
		return nil
	}
	began := s.clock.Now()
	from, hourly, found := s.horizon(began)
	base := map[string]map[int64]int64{}
	if found {
		today, _ := ledger.PeriodStart(ledger.PeriodDay, began)
		tomorrow := today.AddDate(0, 0, 1)
		daily := tomorrow
		if !hourly.IsZero() {
			daily = hourly
		}
		var err error
		if from.Before(daily) {
			err = s.read(ctx, base, from, daily, ledger.ByDay)
		}
		if err == nil && !hourly.IsZero() {
			err = s.read(ctx, base, hourly, tomorrow, ledger.ByHour)
		}
		if err != nil {
			s.mu.Lock()
			s.stale = true
			s.mu.Unlock()
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.base, s.stale = base, false
	keep := s.written[:0]
	for _, b := range s.written {
		if !b.at.Before(began) {
			keep = append(keep, b)
		}
	}
	s.written = keep
	return nil
}

// horizon returns how far back Refresh reads at now: from the earliest
// start of a period in use (a midnight), and by hour from hourly on (the
// midnight before the earliest start that is not one; zero: none). found
// is false when no period is in use.
func (s *Spend) horizon(now time.Time) (from, hourly time.Time, found bool) {
	s.mu.Lock()
	periods := s.periods
	s.mu.Unlock()
	ps := []string{ledger.PeriodWeek, ledger.PeriodMonth}
	if periods != nil {
		ps = periods()
	}
	for _, p := range ps {
		start, err := ledger.PeriodStart(p, now)
		if err != nil {
			continue
		}
		day := start.Truncate(24 * time.Hour)
		if !found || day.Before(from) {
			from = day
		}
		if !start.Equal(day) && (hourly.IsZero() || day.Before(hourly)) {
			hourly = day
		}
		found = true
	}
	return from, hourly, found
}

// read adds the store's spend over [from, to), by key and by team (and by
// key and pool, when some key has budgets of one pool), grouped by day or
// hour (ledger.ByDay, ledger.ByHour), to base.
func (s *Spend) read(ctx context.Context, base map[string]map[int64]int64, from, to time.Time, by string) error {
	s.mu.Lock()
	pools := s.pools
	s.mu.Unlock()
	groups := []string{ledger.ByKey, ledger.ByTeam}
	if pools != nil && pools() {
		groups = append(groups, ledger.ByPool)
	}
	for _, who := range groups {
		q := ledger.SpendQuery{From: from, To: to, By: []string{who, by}}
		if who == ledger.ByPool {
			q.By = []string{ledger.ByKey, ledger.ByPool, by}
		}
		rows, err := s.source.Spend(ctx, q)
		if err != nil {
			return err
		}
		for _, r := range rows {
			var name string
			switch {
			case r.Cost == 0:
			case who == ledger.ByKey && r.Key != "":
				name = "key:" + r.Key
			case who == ledger.ByTeam && r.Team != "":
				name = "team:" + r.Team
			case who == ledger.ByPool && r.Key != "" && r.Pool != "":
				name = poolSubject("key:"+r.Key, r.Pool)
			}
			if name == "" {
				continue
			}
			at := r.Day
			if by == ledger.ByHour {
				at = r.Hour
			}
			addTo(base, name, hourOf(at), nanos(r.Cost))
		}
	}
	return nil
}

// prune drops the hours no budget can count any more: those before the
// earliest start of the periods in use (with none, all but the last day).
// It folds the hours of the days before today into their day's first
// hour, where no period of hours starts within them, so that a long
// period sums a bucket a day.
func (s *Spend) prune() {
	now := s.clock.Now()
	cut := hourOf(now) - 24
	today, _ := ledger.PeriodStart(ledger.PeriodDay, now)
	fold := hourOf(today)
	if from, hourly, found := s.horizon(now); found {
		cut = hourOf(from)
		if !hourly.IsZero() {
			fold = min(fold, hourOf(hourly))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for sub, d := range s.pending {
		for hour, c := range d {
			switch day := hour - hour%24; {
			case hour < cut:
				delete(d, hour)
			case hour < fold && hour != day:
				delete(d, hour)
				d[day] += c
			}
		}
		if len(d) == 0 {
			delete(s.pending, sub)
		}
	}
}
