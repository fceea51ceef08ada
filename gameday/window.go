package gameday

import (
	"sort"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/load"
	"github.com/switchover-gw/switchover/sim"
)

// WindowResult is what one fault window of the outage region cost: the
// upstream calls per request while it lasted, and the time the clients
// spent waiting on it. A scenario whose region fails several times (a
// flapping region) gets one per window, so that the first can be compared
// with the fourth.
type WindowResult struct {
	// From and To bound the window, relative to the run's start.
	From time.Duration `json:"from_ns"`
	To   time.Duration `json:"to_ns"`
	Mode string        `json:"mode"`
	// Requests counts the requests sent within the window.
	Requests int `json:"requests"`
	// Calls counts every call the regions received within the window,
	// whatever sent it: requests' attempts, retries, hedges, health
	// checks and probes, calls abandoned later (the noise load's too, if
	// any). -1 when the window was not measured (it ended after the run).
	Calls int64 `json:"calls"`
	// CallsPerRequest is Calls / Requests; 0 when either is unknown.
	CallsPerRequest float64 `json:"calls_per_request"`
	// Waited counts the requests in flight at some moment of the window
	// that waited: whose latency was more than twice the p95 of the run's
	// requests that overlap no fault window.
	Waited int `json:"waited"`
	// Wait is what they waited in all beyond that baseline's p50: the
	// window's cost to the clients (waiting requests × wait).
	Wait time.Duration `json:"wait_ns"`
}

// callMeter reads the regions' call counters at the edges of fault
// windows, as they pass in real time, so that the calls of a window can
// be told from the others. It is safe for concurrent use.
type callMeter struct {
	mu     sync.Mutex
	at     map[time.Duration]int64 // edge (from the sim's start) -> calls by then
	timers []*time.Timer
}

// meterCalls starts reading s's call counters at the edges of windows
// (times from the sim's start). Stop it when the run ends.
func meterCalls(s *sim.Sim, windows []Fault) *callMeter {
	m := &callMeter{at: map[time.Duration]int64{}}
	for _, f := range windows {
		for _, edge := range []time.Duration{f.From.D(), f.To.D()} {
			m.timers = append(m.timers, time.AfterFunc(time.Until(s.Started().Add(edge)), func() {
				var n int64
				for _, st := range s.Stats() {
					n += st.Calls
				}
				m.mu.Lock()
				m.at[edge] = n
				m.mu.Unlock()
			}))
		}
	}
	return m
}

// stop ends the reading; edges not yet reached stay unknown.
func (m *callMeter) stop() {
	for _, t := range m.timers {
		t.Stop()
	}
}

// calls is the number of calls between edges from and to, -1 when either
// was not read.
func (m *callMeter) calls(from, to time.Duration) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, okA := m.at[from]
	b, okB := m.at[to]
	if !okA || !okB {
		return -1
	}
	return b - a
}

// outageWindows are the faults on region, in time order.
func outageWindows(region string, faults []Fault) []Fault {
	var out []Fault
	for _, f := range faults {
		if f.Region == region {
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].From < out[j].From })
	return out
}

// windows reads each fault window of region off a run: calls from the
// meter (edges from the sim's start; offset is the load's start from the
// sim's), requests and waits from the samples.
func windows(region string, rr RunResult, m *callMeter, offset time.Duration) []WindowResult {
	var fws []FaultWindow
	for _, f := range rr.Faults {
		if f.Region == region {
			fws = append(fws, f)
		}
	}
	if len(fws) == 0 {
		return nil
	}
	p50, p95 := baseline(rr.Samples, rr.Faults)
	var out []WindowResult
	for _, f := range fws {
		w := WindowResult{From: f.From, To: f.To, Mode: f.Mode, Calls: m.calls(f.From+offset, f.To+offset)}
		for _, s := range rr.Samples {
			if s.Start >= f.From && s.Start < f.To {
				w.Requests++
			}
			if s.End() >= f.From && s.Start <= f.To && p95 > 0 && s.Latency > 2*p95 {
				w.Waited++
				w.Wait += s.Latency - p50
			}
		}
		if w.Calls >= 0 && w.Requests > 0 {
			w.CallsPerRequest = float64(w.Calls) / float64(w.Requests)
		}
		out = append(out, w)
	}
	return out
}

// baseline is the p50 and p95 latency of the answered requests that
// overlap no fault window (of all answered requests when none is clear of
// them); zero when none was answered.
func baseline(samples []load.Sample, faults []FaultWindow) (p50, p95 time.Duration) {
	var clear, all []time.Duration
	for _, s := range samples {
		if !s.OK {
			continue
		}
		all = append(all, s.Latency)
		overlaps := false
		for _, f := range faults {
			if s.End() >= f.From && s.Start <= f.To {
				overlaps = true
				break
			}
		}
		if !overlaps {
			clear = append(clear, s.Latency)
		}
	}
	if len(clear) == 0 {
		clear = all
	}
	p := load.NewPercentiles(clear)
	return p.P50, p.P95
}
