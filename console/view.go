package console

import (
	"math"
	"strings"
	"time"
)

// Windows over which the overview's figures are computed.
const (
	rateWindow    = 10 * time.Second // requests per second
	errorWindow   = time.Minute      // error share
	latencyWindow = time.Minute      // p95 time to first byte
)

// View is the overview's live state: what the page shows and the event
// stream sends (as JSON) every second.
type View struct {
	At    time.Time  `json:"at"`
	Pools []PoolView `json:"pools"`
	// Shape names the pools and members; the page reloads when it
	// changes (a reload of the configuration).
	Shape string `json:"shape"`
}

// PoolView is one pool of the overview.
type PoolView struct {
	Name        string    `json:"name"`
	Aliases     []string  `json:"aliases,omitempty"`
	Active      []string  `json:"active"`
	ActiveSince time.Time `json:"active_since,omitzero"`
	// ActiveSinceStart: ActiveSince is when the gateway began following
	// the pool (its start); the set may be active since earlier.
	ActiveSinceStart bool         `json:"active_since_start,omitempty"`
	Members          []MemberView `json:"members"`
	Chart            Chart        `json:"chart"`
}

// MemberView is one member of a pool in the overview.
type MemberView struct {
	Backend    string `json:"backend"`
	Type       string `json:"type"`
	Region     string `json:"region,omitempty"`
	Priority   int    `json:"priority"`
	Weight     int    `json:"weight"`
	Overridden bool   `json:"overridden"`
	Drained    bool   `json:"drained"`
	Usable     bool   `json:"usable"`
	Active     bool   `json:"active"`
	// Breaker is the breaker's state; Left the time until an open one
	// lets a probe through ("" otherwise); Why what opened it.
	Breaker  string `json:"breaker"`
	Left     string `json:"left,omitempty"`
	Why      string `json:"why,omitempty"`
	Failures int    `json:"failures"`
	InFlight int64  `json:"in_flight"`
	// RPS is attempts per second over the last 10 s; ErrShare the share
	// of the last minute's attempts that failed; P95 the 95th percentile
	// of the last minute's times to first byte, in ms (a histogram
	// bucket's upper bound). Nil: no attempts in the window.
	RPS      float64  `json:"rps"`
	ErrShare *float64 `json:"err_share,omitempty"`
	P95      *float64 `json:"p95_ms,omitempty"`
	Headroom *float64 `json:"headroom,omitempty"`
	Probe    string   `json:"probe,omitempty"`
	ProbeUp  bool     `json:"probe_up"`
}

// Chart is a pool's traffic by backend over the samples kept: attempts
// per second between each sample and the one before.
type Chart struct {
	// Start and End are the times of the first and last point, Unix ms.
	Start  int64    `json:"start"`
	End    int64    `json:"end"`
	Max    float64  `json:"max"`
	Series []Series `json:"series"`
}

// Series is one backend's line in a Chart.
type Series struct {
	Backend string    `json:"backend"`
	Points  []float64 `json:"points"`
}

// buildView computes the view of st from the samples. Requires external
// locking.
func (s *sampler) buildView(st Status) View {
	v := View{At: st.At, Pools: []PoolView{}}
	sms := s.samples()
	var shape strings.Builder
	for _, p := range st.Pools {
		pv := PoolView{Name: p.Name, Aliases: p.Aliases, Active: p.Active, ActiveSince: p.ActiveSince, ActiveSinceStart: p.ActiveSinceStart, Members: []MemberView{}}
		shape.WriteString(p.Name + ":")
		active := map[string]bool{}
		for _, a := range p.Active {
			active[a] = true
		}
		for _, m := range p.Members {
			shape.WriteString(m.Backend + ",")
			id := memberID{p.Name, m.Backend}
			mv := MemberView{Backend: m.Backend, Type: m.Type, Region: m.Region, Priority: m.Priority, Weight: m.Weight,
				Overridden: m.Overridden, Drained: m.Drained, Usable: m.Usable, Active: active[m.Backend],
				Breaker: m.Breaker, Failures: m.Failures, InFlight: m.InFlight}
			if m.Breaker == "open" {
				mv.Left = m.Left.Round(time.Second).String()
			}
			if m.Breaker == "open" || m.Breaker == "half-open" {
				mv.Why = whyOpen(st.Events, m.Backend)
			}
			if m.HeadroomKnown {
				h := m.Headroom
				mv.Headroom = &h
			}
			if pr := m.Probe; pr != nil {
				mv.Probe, mv.ProbeUp = pr.Result, pr.Up
				if pr.Error != "" {
					mv.Probe += ": " + pr.Error
				}
			}
			if a, b, ok := window(sms, rateWindow); ok {
				if dt := b.at.Sub(a.at).Seconds(); dt > 0 {
					mv.RPS = round2(float64(delta(b.attempts[id], a.attempts[id])) / dt)
				}
			}
			if a, b, ok := window(sms, errorWindow); ok {
				if n := delta(b.attempts[id], a.attempts[id]); n > 0 {
					share := round2(float64(delta(b.errors[id], a.errors[id])) / float64(n))
					mv.ErrShare = &share
				}
			}
			if a, b, ok := window(sms, latencyWindow); ok {
				if p95, ok := quantile(a.firstByte[m.Backend], b.firstByte[m.Backend], 0.95); ok {
					ms := p95 * 1000
					mv.P95 = &ms
				}
			}
			pv.Members = append(pv.Members, mv)
		}
		pv.Chart = chart(sms, p)
		shape.WriteString(";")
		v.Pools = append(v.Pools, pv)
	}
	v.Shape = shape.String()
	return v
}

// window returns the oldest sample within d of the newest, and the
// newest; false with fewer than two.
func window(sms []sample, d time.Duration) (a, b sample, ok bool) {
	if len(sms) < 2 {
		return a, b, false
	}
	b = sms[len(sms)-1]
	a = sms[len(sms)-2]
	for i := len(sms) - 2; i >= 0 && b.at.Sub(sms[i].at) <= d; i-- {
		a = sms[i]
	}
	return a, b, true
}

// delta is b-a, 0 when the counter went back (a gateway restart).
func delta(b, a uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}

// quantile is the q-quantile of the observations between two cumulative
// histograms, as the upper bound of the bucket it falls in (the largest
// finite bound when it falls past them); false when none were made.
func quantile(a, b []Bucket, q float64) (float64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	count := func(h []Bucket, i int) uint64 {
		if i < len(h) {
			return h[i].Count
		}
		return 0
	}
	total := delta(count(b, len(b)-1), count(a, len(b)-1))
	// The last bucket is not +Inf in a Prometheus histogram's buckets;
	// observations past it are counted in the sample count only, which
	// the console does not have: the last bound stands for them.
	if total == 0 {
		return 0, false
	}
	rank := uint64(math.Ceil(q * float64(total)))
	for i := range b {
		if delta(count(b, i), count(a, i)) >= rank {
			return b[i].Le, true
		}
	}
	return b[len(b)-1].Le, true
}

// chart is pool p's attempts per second by member over the samples.
func chart(sms []sample, p Pool) Chart {
	c := Chart{Series: []Series{}}
	if len(sms) > 0 {
		c.Start, c.End = sms[0].at.UnixMilli(), sms[len(sms)-1].at.UnixMilli()
		if len(sms) > 1 {
			c.Start = sms[1].at.UnixMilli()
		}
	}
	for _, m := range p.Members {
		id := memberID{p.Name, m.Backend}
		se := Series{Backend: m.Backend, Points: []float64{}}
		for i := 1; i < len(sms); i++ {
			v := 0.0
			if dt := sms[i].at.Sub(sms[i-1].at).Seconds(); dt > 0 {
				v = round2(float64(delta(sms[i].attempts[id], sms[i-1].attempts[id])) / dt)
			}
			se.Points = append(se.Points, v)
			c.Max = max(c.Max, v)
		}
		c.Series = append(c.Series, se)
	}
	return c
}

// whyOpen is the cause of backend's last breaker transition to open,
// from the events.
func whyOpen(evs []Event, backend string) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if e := evs[i]; e.Kind == "breaker" && e.Backend == backend && e.Opened != "" {
			return e.Opened
		}
	}
	return ""
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }
