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

// Spend is what each key and team spent, by day, for budgets: the store's
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
	clock  clock.Clock
	source SpendSource

	mu      sync.Mutex
	base    map[string]map[int64]int64 // subject → day → the store's figure
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

func subjects(key, team string) []string {
	s := make([]string, 0, 2)
	if key != "" {
		s = append(s, "key:"+key)
	}
	if team != "" {
		s = append(s, "team:"+team)
	}
	return s
}

func addTo(m map[string]map[int64]int64, subject string, day, cost int64) {
	d := m[subject]
	if d == nil {
		d = map[int64]int64{}
		m[subject] = d
	}
	d[day] += cost
}

// dayOf numbers t's UTC day: days since 1970-01-01.
func dayOf(t time.Time) int64 { return t.Unix() / 86400 }

// Add counts cost (US dollars) spent at at by key ID key and its team
// ("" for none).
func (s *Spend) Add(key, team string, cost float64, at time.Time) {
	k, t := (&Principal{ID: key, Team: team}).names()
	s.add(k, t, cost, at)
}

// add is Add with the subjects' names ("key:ID", "team:NAME" or "").
func (s *Spend) add(key, team string, cost float64, at time.Time) {
	day, n := dayOf(at), nanos(cost)
	s.mu.Lock()
	addTo(s.pending, key, day, n)
	if team != "" {
		addTo(s.pending, team, day, n)
	}
	s.mu.Unlock()
}

// Written tells that the records were stored; each must have been Added
// (same key, team, cost and day).
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
		day := dayOf(u.At)
		for _, sub := range subjects(u.KeyID, u.Team) {
			// A record may be written before its Add (the writer can be
			// quicker than the request's end): pending goes below zero
			// until the Add comes, and the sum stays right throughout.
			addTo(s.pending, sub, day, -nanos(u.Cost))
			if d := s.pending[sub]; d[day] == 0 {
				delete(d, day)
				if len(d) == 0 {
					delete(s.pending, sub)
				}
			}
			addTo(b.cost, sub, day, nanos(u.Cost))
		}
	}
	s.written = append(s.written, b)
}

// Spent returns what subject ("key:ID" or "team:NAME") spent from since on.
func (s *Spend) Spent(subject string, since time.Time) float64 {
	from := dayOf(since)
	sum := func(d map[int64]int64) (t int64) {
		for day, c := range d {
			if day >= from {
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

// Refresh reads the spend of every key and team since the earliest
// period start a budget can have (this week's Monday or the first of the
// month) from the store.
func (s *Spend) Refresh(ctx context.Context) error {
	if s.source == nil {
		s.prune()
		return nil
	}
	began := s.clock.Now()
	week, _ := ledger.PeriodStart(ledger.PeriodWeek, began)
	month, _ := ledger.PeriodStart(ledger.PeriodMonth, began)
	from := month
	if week.Before(month) {
		from = week
	}
	to, _ := ledger.PeriodStart(ledger.PeriodDay, began)
	to = to.AddDate(0, 0, 1)
	base := map[string]map[int64]int64{}
	for _, by := range []string{ledger.ByKey, ledger.ByTeam} {
		rows, err := s.source.Spend(ctx, ledger.SpendQuery{From: from, To: to, By: []string{by, ledger.ByDay}})
		if err != nil {
			s.mu.Lock()
			s.stale = true
			s.mu.Unlock()
			return err
		}
		for _, r := range rows {
			name := r.Key
			if by == ledger.ByTeam {
				name = r.Team
			}
			if name == "" || r.Cost == 0 {
				continue
			}
			addTo(base, by+":"+name, dayOf(r.Day), nanos(r.Cost))
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

// prune drops the days no budget can count any more.
func (s *Spend) prune() {
	cut := dayOf(s.clock.Now()) - 32
	s.mu.Lock()
	defer s.mu.Unlock()
	for sub, d := range s.pending {
		for day := range d {
			if day < cut {
				delete(d, day)
			}
		}
		if len(d) == 0 {
			delete(s.pending, sub)
		}
	}
}
