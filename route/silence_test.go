package route

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// lognormalTimes is n times to first byte of a lognormal backend (median,
// spread: the sigma of their logs), at the quantiles (i+1/2)/n: the shape
// of the game day's regions without a random draw.
func lognormalTimes(n int, median time.Duration, spread float64) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		z := math.Sqrt2 * math.Erfinv(2*(float64(i)+0.5)/float64(n)-1)
		out[i] = time.Duration(float64(median) * math.Exp(spread*z))
	}
	return out
}

func TestLonger(t *testing.T) {
	s := []time.Duration{1, 2, 2, 3}
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{{0, 4}, {1, 3}, {2, 1}, {3, 0}, {4, 0}} {
		if got := longer(s, tc.d); got != tc.want {
			t.Errorf("longer(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

// darkSpans is what a backend receiving a call every 500 ms leaves
// waiting once it has been dark for dark: the calls begun since, each
// waiting from its start.
func darkSpans(dark time.Duration) []waitSpan {
	var out []waitSpan
	for began := time.Duration(0); began < dark; began += 500 * time.Millisecond {
		out = append(out, waitSpan{from: dark - began, to: dark - began})
	}
	return out
}

// TestSilenceOfADarkSlowBackend: issue 22's 3 s primary, dark for 6 s
// when its piled-up calls get it checked, is judged silent within 2.5 s
// of the check (the check's timeout, learned from its 3 s answers, is
// 10 s); and a fleet just started, with eight answers to judge by, within
// 4 s.
func TestSilenceOfADarkSlowBackend(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers int
		within  time.Duration
	}{
		{"64 answers", 64, 2500 * time.Millisecond},
		{"a fleet just started: 8 answers", 8, 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := lognormalTimes(tc.answers, 3*time.Second, 0.3)
			s := &silence{plain: ref, plainS: darkSpans(6 * time.Second)}
			d, ok := s.due(maxCheckTimeout)
			if !ok || d > tc.within {
				t.Fatalf("judged silent after %v (%v), want within %v", d, ok, tc.within)
			}
			if s.odds(d) >= silenceAlpha || d > silenceStep && s.odds(d-silenceStep) < silenceAlpha {
				t.Fatalf("due %v is not the first step below alpha: odds %g then %g", d, s.odds(d-silenceStep), s.odds(d))
			}
		})
	}
}

// TestSilenceOfOneCallDecidesNothing: a lone call past every sample, and
// the check, cannot be silent enough: a backend with little traffic is
// judged by the check's timeout alone.
func TestSilenceOfOneCallDecidesNothing(t *testing.T) {
	ref := lognormalTimes(64, 3*time.Second, 0.3)
	s := &silence{plain: ref, plainS: []waitSpan{{9 * time.Second, 9 * time.Second}}, check: ref, checkS: []waitSpan{{}}}
	if d, ok := s.due(maxCheckTimeout); ok {
		t.Fatalf("judged silent after %v", d)
	}
}

// TestSilenceNeverOutlastsAHealthySlowBackend: no false bench of a
// healthy slow backend whose slow calls are ordinary for it. A backend
// answering lognormally (3 s at the median, spreads from 0.3 to 1, and a
// quick one) at 2 calls a second is checked at 2,000 instants drawn at
// random, a minute of traffic drawn afresh before each (whatever called
// for the check): in every one, one of the calls waiting on it (or the
// check, which takes as long as a call) answers before the silence rule
// would end the check.
func TestSilenceNeverOutlastsAHealthySlowBackend(t *testing.T) {
	for _, tc := range []struct {
		median time.Duration
		spread float64
	}{{3 * time.Second, 0.3}, {3 * time.Second, 0.6}, {3 * time.Second, 1}, {300 * time.Millisecond, 0.25}} {
		rng := rand.New(rand.NewPCG(22, uint64(tc.spread*100)))
		draw := func() time.Duration {
			return time.Duration(float64(tc.median) * math.Exp(tc.spread*rng.NormFloat64()))
		}
		for trial := range 2000 {
			type call struct{ began, end time.Duration }
			var calls []call
			now := time.Minute // 120 calls or so before it: 64 answered and more
			for at := time.Duration(0); at < now; at += time.Duration(rng.ExpFloat64() * float64(500*time.Millisecond)) {
				calls = append(calls, call{at, at + draw()})
			}
			slices.SortFunc(calls, func(a, b call) int { return int(a.end - b.end) })
			var ref []time.Duration
			var s silence
			first := draw() // the check's own answer
			for _, c := range calls {
				switch {
				case c.end <= now:
					ref = append(ref, c.end-c.began)
				case c.began <= now:
					s.plainS = append(s.plainS, waitSpan{now - c.began, now - c.began})
					first = min(first, c.end-now)
				}
			}
			ref = ref[max(len(ref)-latencySamples, 0):]
			slices.Sort(ref)
			s.plain, s.check, s.checkS = ref, ref, []waitSpan{{}}
			if d, ok := s.due(maxCheckTimeout); ok && d < first {
				t.Fatalf("median %v spread %g, trial %d: judged silent after %v, but an answer came after %v (%d calls waiting)", tc.median, tc.spread, trial, d, first, len(s.plainS))
			}
		}
	}
}

// TestSilenceAfterAnAnswerDecidesNothing: once the backend has answered
// a call since the check began, it is alive, however many other calls
// still wait on it.
func TestSilenceAfterAnAnswerDecidesNothing(t *testing.T) {
	p, b := poolWith(lognormalTimes(64, 3*time.Second, 0.3)...)
	began := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	for i := range 12 {
		b.check.wait(&waiter{began: began.Add(-time.Duration(i) * 500 * time.Millisecond)})
	}
	now := began.Add(3 * time.Second)
	s, ok := p.silenceOf(b, began, now, false)
	if !ok || s.odds(0) >= silenceAlpha {
		t.Fatalf("12 calls silent for 3 s more: judged %v, want silent", ok)
	}
	b.check.heardFrom(began.Add(time.Second), false)
	if _, ok := p.silenceOf(b, began, now, false); ok {
		t.Fatal("judged silent after an answer since the check began")
	}
}

// TestStreamedCheckHearsOnlyStreams: a check a waiting stream called for
// is streamed (CheckKind), and only a stream's first event is an answer to
// it: plain calls answered while it waits do not excuse its timeout nor
// stop the silence rule, and plain calls waiting are not its silence. (A
// backend whose streams sent only keep-alive comments went on answering
// plain calls at 40 a second, and every check its hung streams called for
// was excused.)
func TestStreamedCheckHearsOnlyStreams(t *testing.T) {
	p, b := poolWith(lognormalTimes(64, 3*time.Second, 0.3)...)
	for _, d := range lognormalTimes(64, 3*time.Second, 0.3) {
		b.lat.observe(true, d)
	}
	began := time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)
	for i := range 12 {
		b.check.wait(&waiter{began: began.Add(-time.Duration(i) * 500 * time.Millisecond), stream: true})
	}
	b.check.wait(&waiter{began: began}) // a plain call, waiting
	now := began.Add(3 * time.Second)
	b.check.heardFrom(began.Add(time.Second), false) // a plain call answered
	if !b.check.heardSince(began, false) || b.check.heardSince(began, true) {
		t.Fatal("a plain answer: want heard by a plain check, not by a streamed one")
	}
	if _, ok := p.silenceOf(b, began, now, false); ok {
		t.Fatal("a plain check judged silent after a plain answer")
	}
	s, ok := p.silenceOf(b, began, now, true)
	if !ok || s.odds(0) >= silenceAlpha {
		t.Fatalf("a streamed check with 12 streams silent for 3 s more and a plain answer: judged %v, want silent", ok)
	}
	if len(s.plainS) != 0 || len(s.streamS) != 12 {
		t.Fatalf("a streamed check's silence: %d plain and %d stream waits, want 0 and 12", len(s.plainS), len(s.streamS))
	}
	b.check.heardFrom(began.Add(2*time.Second), true) // a stream's first event
	if !b.check.heardSince(began, true) {
		t.Fatal("a stream's event: not heard by a streamed check")
	}
	if _, ok := p.silenceOf(b, began, now, true); ok {
		t.Fatal("a streamed check judged silent after a stream's event")
	}
	if CheckKind(ProbeChat, true) != ProbeStream || CheckKind("", true) != ProbeStream || CheckKind(ProbeModels, true) != ProbeModels || CheckKind(ProbeChat, false) != ProbeChat {
		t.Fatal("CheckKind")
	}
}
