package route

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
)

// askedQuota is a Quota that counts how often it is asked, and refuses
// every call while full is set.
type askedQuota struct {
	asked atomic.Int64
	full  atomic.Bool
}

func (q *askedQuota) Fits(time.Time, Cost) (bool, time.Time) {
	q.asked.Add(1)
	return !q.full.Load(), time.Time{}
}

func (q *askedQuota) Admit(now time.Time, c Cost) (func(), bool, time.Time) {
	ok, until := q.Fits(now, c)
	return func() {}, ok, until
}

func (q *askedQuota) Observe(time.Time, time.Time, int, http.Header) {}

// wholeTierPool is a pool of n members at priority 1, weights 1 to 3 in
// turn, each backend with a breaker and an askedQuota.
func wholeTierPool(t *testing.T, n int) *Pool {
	t.Helper()
	var spec [][2]int
	for i := range n {
		spec = append(spec, [2]int{1, 1 + i%3})
	}
	p := &Pool{Name: "big", Members: members(spec...)}
	for _, m := range p.Members {
		m.Backend.Breaker = breaker.New(m.Backend.Name, breaker.Settings{})
		m.Backend.Quota = &askedQuota{}
	}
	t.Cleanup(func() {
		for _, m := range p.Members {
			m.Backend.Breaker.(*breaker.Breaker).Retire()
		}
	})
	return p
}

func chatRequest(t *testing.T) *Request {
	t.Helper()
	r, err := NewRequest(ChatCompletions, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`), http.Header{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// firstPick is one request's first selection in p, its breaker ticket and
// quota given back at once; "" when none.
func firstPick(t *testing.T, p *Pool, r *Request, tried *memberSet) string {
	t.Helper()
	m, done, release := p.next(r, &Report{}, tried)
	if m == nil {
		return ""
	}
	done(breaker.Outcome{Result: breaker.Success})
	if release != nil {
		release()
	}
	for i, o := range p.Members {
		if o == m {
			tried.add(i)
		}
	}
	return m.Backend.Name
}

func TestWholeTierPicksAreTheSmoothSequence(t *testing.T) {
	// A tier of 12 (more than wholeTierMin): while every member can take
	// calls, the first picks are exactly SmoothWeighted's over the whole
	// tier, and only each pick's quota is asked, not the eleven others'.
	p := wholeTierPool(t, 12)
	r := chatRequest(t)
	want := picks(&SmoothWeighted{}, p.Members, 240)
	var got strings.Builder
	for range 240 {
		got.WriteString(firstPick(t, p, r, &memberSet{}))
	}
	if got.String() != want {
		t.Fatalf("first picks\n%s\nwant the smooth sequence of the whole tier\n%s", got.String(), want)
	}
	var asked int64
	for _, m := range p.Members {
		asked += m.Backend.Quota.(*askedQuota).asked.Load()
	}
	if asked != 240 {
		t.Fatalf("members' quotas asked %d times for 240 picks, want 240 (the picks' alone)", asked)
	}
}

func TestWholeTierSmallTierIsWalked(t *testing.T) {
	// A tier of wholeTierMin members is walked as before: every member's
	// quota is asked on each request.
	p := wholeTierPool(t, wholeTierMin)
	r := chatRequest(t)
	for range 10 {
		firstPick(t, p, r, &memberSet{})
	}
	for _, m := range p.Members {
		if n := m.Backend.Quota.(*askedQuota).asked.Load(); n < 10 {
			t.Fatalf("%s's quota asked %d times in 10 requests, want each request", m.Backend.Name, n)
		}
	}
}

func TestWholeTierSharesWhileMembersCannotTakeCalls(t *testing.T) {
	// One member benched, one out of quota, one under a health check: none
	// of them gets a call, and the others' shares stay their weights'
	// among themselves (within a pick or two over 10 cycles).
	p := wholeTierPool(t, 12)
	r := chatRequest(t)
	p.Members[1].Backend.Breaker.Force(breaker.Open, time.Time{}, breaker.KindManual, "benched for the test")
	p.Members[4].Backend.Quota.(*askedQuota).full.Store(true)
	p.Members[7].Backend.check.active.Store(true)
	out := map[string]bool{"b": true, "e": true, "h": true}
	total := 0
	for _, m := range p.Members {
		if !out[m.Backend.Name] {
			total += m.weight()
		}
	}
	n := 10 * total
	counts := map[string]int{}
	for range n {
		counts[firstPick(t, p, r, &memberSet{})]++
	}
	for _, m := range p.Members {
		name, got := m.Backend.Name, counts[m.Backend.Name]
		if out[name] {
			if got != 0 {
				t.Errorf("%s, which cannot take calls, got %d", name, got)
			}
			continue
		}
		if want := 10 * m.weight(); got < want-2 || got > want+2 {
			t.Errorf("%s (weight %d) got %d of %d picks, want %d±2", name, m.weight(), got, n, want)
		}
	}
}

func TestWholeTierRetryKeepsTheFirstPicks(t *testing.T) {
	// Retries are picked by walking the members (the first pick is
	// tried): they leave the whole tier's sequence of first picks as it
	// is without them.
	p := wholeTierPool(t, 12)
	r := chatRequest(t)
	want := picks(&SmoothWeighted{}, p.Members, 120)
	var first strings.Builder
	for i := range 120 {
		var tried memberSet
		first.WriteString(firstPick(t, p, r, &tried))
		if i%3 == 0 {
			if retry := firstPick(t, p, r, &tried); retry == "" || strings.HasSuffix(first.String(), retry) {
				t.Fatalf("request %d: retry on %q after %q", i, retry, first.String()[i:])
			}
		}
	}
	if first.String() != want {
		t.Fatalf("first picks with retries\n%s\nwant\n%s", first.String(), want)
	}
}

func TestWholeTierOwnSelectorIsGivenTheCandidates(t *testing.T) {
	// A pool with a Selector of its own is walked: its Select is given
	// every member that can take the call.
	p := wholeTierPool(t, 12)
	p.Members[2].Backend.Breaker.Force(breaker.Open, time.Time{}, breaker.KindManual, "benched for the test")
	var sizes []int
	p.Selector = selectorFunc(func(_ *Request, c []*Member) int {
		sizes = append(sizes, len(c))
		return 0
	})
	firstPick(t, p, chatRequest(t), &memberSet{})
	if len(sizes) != 1 || sizes[0] != 11 {
		t.Fatalf("Select given %v candidates, want [11]", sizes)
	}
}

type selectorFunc func(*Request, []*Member) int

func (f selectorFunc) Select(r *Request, c []*Member) int { return f(r, c) }

func TestWholeTierSlowStartMemberTakesItsShare(t *testing.T) {
	// A member of a tier of 12 back from repeated trips, in its slow
	// start at a tenth: on its turns in the whole tier's sequence it takes
	// a tenth of them (about 10 of its 100 in 1,200 calls), the others go
	// elsewhere; once the slow start is over it takes all of its turns.
	clk := fakeclock.New()
	var spec [][2]int
	for range 12 {
		spec = append(spec, [2]int{1, 1})
	}
	p := &Pool{Name: "big", Members: breakered(clk, members(spec...)), Clock: clk}
	t.Cleanup(func() {
		for _, m := range p.Members {
			m.Backend.Breaker.(*breaker.Breaker).Retire()
		}
	})
	intoSlowStart(t, p.Members[0].Backend.Breaker)
	r := chatRequest(t)
	count := func(n int) int {
		got := 0
		for range n {
			if firstPick(t, p, r, &memberSet{}) == "a" {
				got++
			}
		}
		return got
	}
	if got := count(1200); got < 6 || got > 14 {
		t.Errorf("in its slow start at a tenth, a took %d of 1,200 calls in a tier of 12, want about 10", got)
	}
	clk.Advance(time.Minute)
	if got := count(1200); got != 100 {
		t.Errorf("after its slow start, a took %d of 1,200 calls, want its 100", got)
	}
}

func TestWholeTierGoesOnWithTheSequenceTheWalkBegan(t *testing.T) {
	// Picks walked first (a request without a body to read: nil), then
	// made from the whole tier: one sequence, the smooth one, as if every
	// pick had been made one way.
	p := wholeTierPool(t, 12)
	want := picks(&SmoothWeighted{}, p.Members, 60)
	var got strings.Builder
	for range 7 {
		got.WriteString(firstPick(t, p, nil, &memberSet{}))
	}
	r := chatRequest(t)
	for range 53 {
		got.WriteString(firstPick(t, p, r, &memberSet{}))
	}
	if got.String() != want {
		t.Fatalf("picks walked then whole\n%s\nwant one smooth sequence\n%s", got.String(), want)
	}
}
