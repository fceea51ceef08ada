package route

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/clock"
)

// errCheckSilence ends a health check before its timeout: neither the
// check nor any call waiting on the backend has had an answer for longer
// than a backend answering as it did would plausibly stay silent.
var errCheckSilence = errors.New("switchover: health check ended: the backend is silent")

// The silence rule (silenceWatch).
const (
	// silenceAlpha is how unlikely the silence must be, were the backend
	// answering as its recent calls did, for the check to fail before its
	// timeout.
	silenceAlpha = 1e-6
	// silenceStep is the resolution of the time the rule is judged at.
	silenceStep = 10 * time.Millisecond
)

// waitSpan is the part of one wait for a first byte that falls within a
// health check: from the wait's length when the check began (0 for a call
// begun since, and for the check itself) to its length now.
type waitSpan struct{ from, to time.Duration }

// silence is what the silence rule judges at one instant: the spans of
// the calls waiting on a backend and of its check, each with the sorted
// times to first byte it is judged by. Not safe for concurrent use.
type silence struct {
	plain, stream, check    []time.Duration // sorted references
	plainS, streamS, checkS []waitSpan
}

// odds is the probability that a backend answering as its references say
// would leave every span unanswered ahead longer than now: the product,
// over the spans, of the chance that a wait of from lasts to+ahead. The
// chance is read off the reference with one pseudo-sample added past the
// longest (the count of longer samples plus one), so a wait longer than
// any sample says nothing rather than everything.
func (s *silence) odds(ahead time.Duration) float64 {
	o := 1.0
	for _, k := range [...]struct {
		ref   []time.Duration
		spans []waitSpan
	}{{s.plain, s.plainS}, {s.stream, s.streamS}, {s.check, s.checkS}} {
		for _, sp := range k.spans {
			o *= float64(longer(k.ref, sp.to+ahead)+1) / float64(longer(k.ref, sp.from)+1)
		}
	}
	return o
}

// waits is how many calls the spans are of, the check's left out.
func (s *silence) waits() int { return len(s.plainS) + len(s.streamS) }

// longer is how many of the sorted samples are longer than d.
func longer(sorted []time.Duration, d time.Duration) int {
	i, found := slices.BinarySearch(sorted, d)
	for found && i < len(sorted) && sorted[i] == d {
		i++
	}
	return len(sorted) - i
}

// silenceOf is what the silence rule judges for b at now, of a check that
// began at began, and whether there is anything to judge: nothing when b
// answered a call since the check began (it is alive, whatever else is
// slow), and no kind of call with too few samples to judge it by (the
// same references the pile-up rule uses; the check's own span counts once
// b has passed minSamples checks).
func (p *Pool) silenceOf(b *Backend, began, now time.Time, streamCheck bool) (*silence, bool) {
	var pb, sb [64]waitSpan
	plain, stream, heard := b.check.spans(began, now, pb[:0], sb[:0], streamCheck)
	if heard {
		return nil, false
	}
	s := &silence{}
	if len(plain) > 0 {
		if ref, ok := p.reference(nil, b, false); ok {
			slices.Sort(ref)
			s.plain, s.plainS = ref, plain
		}
	}
	if len(stream) > 0 {
		if ref, ok := p.reference(nil, b, true); ok {
			slices.Sort(ref)
			s.stream, s.streamS = ref, stream
		}
	}
	if s.waits() == 0 {
		return nil, false
	}
	if ref := b.lat.checkSamples(nil); len(ref) >= minSamples {
		slices.Sort(ref)
		s.check, s.checkS = ref, []waitSpan{{0, now.Sub(began)}}
	}
	return s, true
}

// due is the least time ahead of now, within limit and to silenceStep,
// at which the silence's odds fall below silenceAlpha; false when they do
// not within limit.
func (s *silence) due(limit time.Duration) (time.Duration, bool) {
	if limit < 0 || s.odds(limit) >= silenceAlpha {
		return 0, false
	}
	lo, hi := time.Duration(0), limit // odds(hi) < alpha
	if s.odds(lo) < silenceAlpha {
		return 0, true
	}
	for hi-lo > silenceStep {
		mid := lo + (hi-lo)/2
		if s.odds(mid) < silenceAlpha {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

// silenceWatch ends a health check early when the backend is silent: the
// check fails as soon as neither it nor any call waiting on the backend
// has been answered for so long that a backend answering as its recent
// calls did would be that silent with a probability below silenceAlpha
// (odds), and nothing else the backend was sent has been answered since
// the check began. A backend whose calls take seconds is then benched
// within a second or two of a check that its piled-up calls called for,
// where the check's own timeout, learned from those seconds, would wait
// up to maxCheckTimeout; a backend merely slow goes on answering some of
// its calls, and the check's timeout decides as before. The watch judges
// at the time the odds say as they stand when it is armed (at the check's
// start, then at each judgement that finds them too high), if that is
// before the check's timeout. A call that begins waiting on the backend
// during the check (it was the last choice) is weighed at the next
// judgement but does not arm one: when it did, the checks of a pool whose
// other member was benched failed sooner, and the waiting calls they
// abandoned found no member to take them, where waiting a little longer
// let the benched member's probe bring it back first (regions-taking-turns,
// APIM-style row: 93.8% answered against 96.4%). It is safe for
// concurrent use.
type silenceWatch struct {
	p               *Pool
	b               *Backend
	clk             clock.Clock
	began, deadline time.Time
	cancel          context.CancelCauseFunc
	stream          bool // a streamed check (see checker.spans)

	mu      sync.Mutex
	t       clock.Timer
	stopped bool
	why     string
}

// watchSilence starts the silence rule for a check of b that began at
// began and times out after timeout, streamed or not (stream): it cancels
// the check with errCheckSilence when the rule says so.
func (p *Pool) watchSilence(b *Backend, clk clock.Clock, began time.Time, timeout time.Duration, cancel context.CancelCauseFunc, stream bool) *silenceWatch {
	w := &silenceWatch{p: p, b: b, clk: clk, began: began, deadline: began.Add(timeout), cancel: cancel, stream: stream}
	w.arm(began)
	return w
}

// arm sets the watch to judge when the odds, as they stand at now, fall
// below silenceAlpha, if that is before the check's deadline.
func (w *silenceWatch) arm(now time.Time) {
	s, ok := w.p.silenceOf(w.b, w.began, now, w.stream)
	if !ok {
		return
	}
	d, ok := s.due(w.deadline.Sub(now))
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		if w.t != nil {
			w.t.Stop()
		}
		w.t = clock.At(w.clk, now.Add(max(d, silenceStep)), w.judge)
	}
}

// judge is the watch's timer: the check fails if the odds are below
// silenceAlpha now; otherwise the watch is armed again.
func (w *silenceWatch) judge() {
	now := w.clk.Now()
	if !now.Before(w.deadline) {
		return // the check's timeout decides
	}
	s, ok := w.p.silenceOf(w.b, w.began, now, w.stream)
	if !ok {
		return
	}
	if o := s.odds(0); o < silenceAlpha {
		w.mu.Lock()
		w.why = fmt.Sprintf("no answer to it nor to any of %d calls waiting for %s (odds %.0e if it were answering)", s.waits(), now.Sub(w.began).Round(time.Millisecond), o)
		w.mu.Unlock()
		w.cancel(errCheckSilence)
		return
	}
	w.arm(now)
}

// stop ends the watch.
func (w *silenceWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.t != nil {
		w.t.Stop()
	}
}

// verdict says why the watch ended the check.
func (w *silenceWatch) verdict() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.why
}
