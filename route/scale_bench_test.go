package route

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
)

// The costs of selection that must not grow with the pool: the same
// allocations, and about the same time, with 1 and 100 members. Compare
// the pairs of one run (docs/performance.md has the commands).

const scaleBody = `{"model":"chat-prod","messages":[{"role":"user","content":"hello"}],"max_tokens":5}`

// scaleLayouts are the shapes of a pool of n members the benchmarks and
// the allocation test use: "tiers" has one member at priority 1 and the
// rest spread over priorities 2 to 5; "flat" has every member at priority
// 1 with weights 1 to 3. In both, every tenth member but the first is
// benched (its breaker forced open) and every member has a breaker and a
// quota, as the gateway's backends do.
var scaleLayouts = []string{"tiers", "flat"}

// scalePool is a pool of n members in layout, on backends whose provider
// calls base (nil: no upstream, for selection alone).
func scalePool(tb testing.TB, layout string, n int, base *url.URL) *Pool {
	tb.Helper()
	p := &Pool{Name: "chat-prod"}
	tr := NewTransport(TransportSettings{})
	for i := range n {
		name := fmt.Sprintf("b%03d", i)
		b := &Backend{
			Name:             name,
			Provider:         &OpenAI{BaseURL: base, APIKey: "sk-" + name},
			Transport:        tr,
			Breaker:          breaker.New(name, breaker.Settings{}),
			Quota:            &LocalQuota{},
			Timeout:          time.Minute,
			FirstByteTimeout: 30 * time.Second,
			IdleTimeout:      30 * time.Second,
		}
		m := &Member{Backend: b, Priority: 1, Weight: 1 + i%3}
		if layout == "tiers" && i > 0 {
			m.Priority = 2 + i%4
		}
		if i > 0 && i%10 == 0 {
			b.Breaker.Force(breaker.Open, time.Time{}, breaker.KindManual, "benched for the benchmark")
		}
		p.Members = append(p.Members, m)
	}
	tb.Cleanup(func() {
		for _, m := range p.Members {
			m.Backend.Breaker.(*breaker.Breaker).Retire()
		}
	})
	return p
}

// selectOnce is one request's selection: the member, its breaker's
// ticket and its quota's reservation, given back at once.
func selectOnce(tb testing.TB, p *Pool, r *Request) {
	var tried memberSet
	rep := Report{}
	m, done, release := p.next(r, &rep, &tried)
	if m == nil {
		tb.Fatal("no member selected")
	}
	done(breaker.Outcome{Result: breaker.Success})
	if release != nil {
		release()
	}
}

// BenchmarkSelectScale is the selection of one request's member (next:
// candidates, strategy, breaker and quota admission) in pools of 1 and
// 100 members.
func BenchmarkSelectScale(b *testing.B) {
	r, err := NewRequest(ChatCompletions, []byte(scaleBody), http.Header{})
	if err != nil {
		b.Fatal(err)
	}
	for _, layout := range scaleLayouts {
		for _, n := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/members=%d", layout, n), func(b *testing.B) {
				p := scalePool(b, layout, n, nil)
				b.ReportAllocs()
				for b.Loop() {
					selectOnce(b, p, r)
				}
			})
		}
	}
}

// BenchmarkPoolDoScale is BenchmarkPoolDo in pools of 1 and 100 members:
// one chat completion through Pool.Do to a loopback upstream.
func BenchmarkPoolDoScale(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(scaleAnswer))
	defer up.Close()
	base, _ := url.Parse(up.URL + "/v1")
	header := http.Header{"Authorization": {"Bearer caller-key"}, "X-Request-Id": {"req-1"}}
	for _, layout := range scaleLayouts {
		for _, n := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/members=%d", layout, n), func(b *testing.B) {
				p := scalePool(b, layout, n, base)
				ctx := b.Context()
				b.ReportAllocs()
				for b.Loop() {
					doOnce(b, ctx, p, header)
				}
			})
		}
	}
}

// scaleAnswer is the upstream of the scale benchmarks: a chat completion
// with the rate-limit headers a quota reads.
func scaleAnswer(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Ratelimit-Remaining-Requests", "59")
	w.Header().Set("X-Ratelimit-Limit-Requests", "60")
	io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
}

// doOnce is one request through p.Do, its answer read.
func doOnce(tb testing.TB, ctx context.Context, p *Pool, header http.Header) {
	r, err := NewRequest(ChatCompletions, []byte(scaleBody), header)
	if err != nil {
		tb.Fatal(err)
	}
	resp, _, err := p.Do(ctx, r)
	if err != nil {
		tb.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("status %d", resp.StatusCode)
	}
}

// TestSelectionAllocationsDoNotGrowWithMembers: selecting a member
// allocates as often in a pool of 100 members as in a pool of one, in
// either layout (candidates beyond eight came from append, one
// allocation per doubling, and a member past the 64th marked tried grew
// a slice).
func TestSelectionAllocationsDoNotGrowWithMembers(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	r, err := NewRequest(ChatCompletions, []byte(scaleBody), http.Header{})
	if err != nil {
		t.Fatal(err)
	}
	for _, layout := range scaleLayouts {
		one, hundred := scalePool(t, layout, 1, nil), scalePool(t, layout, 100, nil)
		a1 := testing.AllocsPerRun(200, func() { selectOnce(t, one, r) })
		a100 := testing.AllocsPerRun(200, func() { selectOnce(t, hundred, r) })
		if a100 != a1 {
			t.Errorf("%s: %v allocations a selection with 100 members, %v with one", layout, a100, a1)
		}
	}
	var s memberSet
	if n := testing.AllocsPerRun(10, func() { s.add(200); s.add(63) }); n != 0 || !s.has(200) || !s.has(63) || s.has(64) {
		t.Errorf("marking members 63 and 200: %v allocations, has(200) %v, has(63) %v, has(64) %v", n, s.has(200), s.has(63), s.has(64))
	}
}

// raceQuota says a call fits and then refuses to admit it, as when
// another request took the last of the quota in between.
type raceQuota struct{}

func (raceQuota) Fits(time.Time, Cost) (bool, time.Time) { return true, time.Time{} }
func (raceQuota) Admit(now time.Time, _ Cost) (func(), bool, time.Time) {
	return nil, false, now.Add(time.Minute)
}
func (raceQuota) Observe(time.Time, time.Time, int, http.Header) {}

// spentQuota has no room until a minute from now.
type spentQuota struct{ raceQuota }

func (spentQuota) Fits(now time.Time, _ Cost) (bool, time.Time) { return false, now.Add(time.Minute) }

// TestSelectionGoesToTheNextTierWhenTheBestRefusesAtAdmission: selection
// walks the tiers best first and stops at the first with a candidate; when
// every candidate of that tier refuses at admission (its quota taken
// since, its half-open probe taken), the next tier's members are
// candidates, as they were when every tier was gathered at once. The
// lower tiers are not walked while the best has a candidate.
func TestSelectionGoesToTheNextTierWhenTheBestRefusesAtAdmission(t *testing.T) {
	r, err := NewRequest(ChatCompletions, []byte(scaleBody), http.Header{})
	if err != nil {
		t.Fatal(err)
	}
	p := scalePool(t, "tiers", 6, nil) // b000 at 1; b001..b005 at 3, 4, 5, 2, 3
	p.Members[0].Backend.Quota = raceQuota{}
	p.Members[4].Backend.Quota = raceQuota{}
	var rep Report
	m, done, release := p.next(r, &rep, &memberSet{})
	if m == nil || m.Priority != 3 {
		t.Fatalf("picked %v, want a member of tier 3 (b000 of tier 1 and b004 of tier 2 refused)", m)
	}
	done(breaker.Outcome{Result: breaker.Success})
	if release != nil {
		release()
	}
	if len(rep.OutOfQuota) != 2 {
		t.Errorf("held for quota: %+v, want b000 and b004", rep.OutOfQuota)
	}

	// The best tier has a candidate: a lower tier's spent quota is not
	// even read.
	q := p.Members[0]
	q.Backend.Quota = &LocalQuota{}
	p.Members[1].Backend.Quota = spentQuota{} // tier 3: noted if walked
	rep = Report{}
	if m, done, _ := p.next(r, &rep, &memberSet{}); m != q {
		t.Fatalf("picked %v, want b000", m)
	} else {
		done(breaker.Outcome{Result: breaker.Success})
	}
	if len(rep.OutOfQuota) != 0 {
		t.Errorf("lower tiers were walked: %+v", rep.OutOfQuota)
	}
}
