package tenant

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
)

// euAsk is a request of end user u, unpriced, of tokens tokens.
func euAsk(u string, tokens int64) Ask {
	return Ask{Pool: "pool", Model: "pool", Tokens: tokens, EndUser: u}
}

// admitN admits n requests of p for end user u, settling each at once,
// and returns how many were admitted and the last refusal.
func admitN(l *Limiter, p *Principal, u string, n int) (admitted int, last *Refusal) {
	for range n {
		tk, r := l.AdmitAsk(p, euAsk(u, 0))
		if r != nil {
			last = r
			continue
		}
		admitted++
		tk.Done(0, false, 0)
	}
	return admitted, last
}

// TestEndUserRatesArePerEndUserOfEachKey: a key's end_user rpm holds
// each of its end users to it, apart from the others, from requests
// without an end user, and from the same id sent with another key.
func TestEndUserRatesArePerEndUserOfEachKey(t *testing.T) {
	c := fakeclock.New()
	l := NewLimiter(c, nil, nil)
	lim := Limits{EndUser: EndUserLimits{RPM: 60}} // ten in any 10 s
	a, b := key("a", lim), key("b", lim)
	if n, _ := admitN(l, a, "alice", 10); n != 10 {
		t.Fatalf("alice of key a: %d of 10 admitted", n)
	}
	n, r := admitN(l, a, "alice", 1)
	if n != 0 || r == nil {
		t.Fatal("alice's 11th request at once was admitted")
	}
	if r.Status != http.StatusTooManyRequests || r.Code != "rate_limit_exceeded" || r.Subject != "end_user" || r.Name != "alice" ||
		r.Limit != "requests per minute" || r.Max != 60 || r.Used != 10 || r.RetryAfter != time.Second {
		t.Fatalf("refusal: %+v", r)
	}
	if strings.Contains(r.Message, "alice") || !strings.Contains(r.Message, "key a") {
		t.Errorf("the message (which the request log writes) names the end user, or not its key: %q", r.Message)
	}
	for _, tc := range []struct {
		name string
		p    *Principal
		user string
	}{{"bob of key a", a, "bob"}, {"alice of key b", b, "alice"}, {"no end user", a, ""}} {
		if n, r := admitN(l, tc.p, tc.user, 10); n != 10 {
			t.Errorf("%s: %d of 10 admitted (%v)", tc.name, n, r)
		}
	}
	c.Advance(time.Second)
	if n, r := admitN(l, a, "alice", 2); n != 1 {
		t.Fatalf("alice a second later: %d of 2 admitted (%v), want 1", n, r)
	}
}

// TestTeamEndUserLimitsHoldAcrossItsKeys: a team's end_user limits are
// each end user's across the team's keys; tokens are settled to what the
// answer used.
func TestTeamEndUserLimitsHoldAcrossItsKeys(t *testing.T) {
	c := fakeclock.New()
	team := Limits{EndUser: EndUserLimits{RPM: 60, TPM: 6000}} // 10 requests, 1000 tokens in any 10 s
	l := NewLimiter(c, nil, func(string) (Limits, bool) { return team, true })
	a, b := &Principal{ID: "a", Team: "t"}, &Principal{ID: "b", Team: "t"}
	for i := range 5 {
		for _, p := range []*Principal{a, b} {
			tk, r := l.AdmitAsk(p, euAsk("alice", 100))
			if r != nil {
				t.Fatalf("request %d of key %s: %v", i, p.ID, r)
			}
			tk.Done(50, true, 0) // used half its estimate
		}
	}
	// 10 requests: the rpm is used up; 500 tokens of 1000 are.
	_, r := l.AdmitAsk(a, euAsk("alice", 0))
	if r == nil || r.Subject != "end_user" || r.Limit != "requests per minute" || !strings.Contains(r.Message, "team t") {
		t.Fatalf("alice's 11th request through the team: %+v", r)
	}
	c.Advance(6 * time.Second) // six requests' and 600 tokens' worth refill
	if _, r := l.AdmitAsk(b, euAsk("alice", 500)); r != nil {
		t.Fatalf("alice within her tokens: %v", r)
	}
	if _, r := l.AdmitAsk(b, euAsk("alice", 2000)); r == nil || r.Limit != "tokens per minute" {
		t.Fatalf("alice past her tokens: %+v", r)
	}
}

// TestEndUserTakeGivenBackWhenTheKeyRefuses: a request its end user
// admits and its key refuses takes nothing from the end user.
func TestEndUserTakeGivenBackWhenTheKeyRefuses(t *testing.T) {
	c := fakeclock.New()
	l := NewLimiter(c, nil, nil)
	p := key("k", Limits{RPM: 6, EndUser: EndUserLimits{RPM: 12}}) // the key: 1 at once; each end user: 2
	if _, r := l.AdmitAsk(p, euAsk("alice", 0)); r != nil {
		t.Fatal(r)
	}
	_, r := l.AdmitAsk(p, euAsk("alice", 0))
	if r == nil || r.Subject != "key" {
		t.Fatalf("the second request: %+v, want the key's refusal", r)
	}
	u := l.EndUsers.users[endUserKey{"key:k", "alice"}].Value.(*endUser)
	if used := u.rpm.used(c.Now()); used != 1 || u.inflight != 1 {
		t.Fatalf("alice's bucket has %v used, %d in flight; want 1 and 1", used, u.inflight)
	}
}

// TestMillionEndUsersStayBounded: a key sending ever new end user ids
// does not grow the state past Max; the least recently used are
// forgotten, and idle ones go after 10 minutes.
func TestMillionEndUsersStayBounded(t *testing.T) {
	c := fakeclock.New()
	l := NewLimiter(c, nil, nil)
	l.EndUsers = NewEndUsers(c, 1000)
	p := key("k", Limits{EndUser: EndUserLimits{RPM: 60, Budget: 1, BudgetPeriod: "day"}})
	const ids = manyEndUsers
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range ids {
		tk, r := l.AdmitAsk(p, euAsk(fmt.Sprintf("user-%d", i), 0))
		if r != nil {
			t.Fatalf("user %d: %v", i, r)
		}
		tk.Done(0, true, 0.0001)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// 1,000 end users take well under 1 MB; a million kept would take
	// hundreds.
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 8<<20 {
		t.Errorf("the heap grew by %d MiB over %d end users", grew>>20, ids)
	}
	if n, ev := l.EndUsers.Len(), l.EndUsers.Evicted(); n != 1000 || len(l.EndUsers.users) != 1000 || ev != ids-1000 {
		t.Fatalf("after %d end users: %d kept (map %d), %d forgotten; want 1000, %d", ids, n, len(l.EndUsers.users), ev, ids-1000)
	}
	if len(l.subjects) != 1 {
		t.Fatalf("the limiter's own state has %d subjects, want the key's alone", len(l.subjects))
	}
	c.Advance(11 * time.Minute)
	if err := l.EndUsers.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := l.EndUsers.Len(); n != 0 {
		t.Fatalf("after 11 idle minutes %d end users are kept", n)
	}
}

// TestEndUserEvictionSparesRequestsInFlight: to make room, an end user
// with a request in flight is kept over an idle one.
func TestEndUserEvictionSparesRequestsInFlight(t *testing.T) {
	c := fakeclock.New()
	l := NewLimiter(c, nil, nil)
	l.EndUsers = NewEndUsers(c, 2)
	p := key("k", Limits{EndUser: EndUserLimits{RPM: 600}})
	busy, _ := l.AdmitAsk(p, euAsk("busy", 0))
	if tk, r := l.AdmitAsk(p, euAsk("idle", 0)); r == nil {
		tk.Done(0, false, 0)
	}
	if _, r := l.AdmitAsk(p, euAsk("new", 0)); r != nil {
		t.Fatal(r)
	}
	e := l.EndUsers
	if _, ok := e.users[endUserKey{"key:k", "busy"}]; !ok {
		t.Fatal("the end user with a request in flight was forgotten")
	}
	if _, ok := e.users[endUserKey{"key:k", "idle"}]; ok {
		t.Fatal("the idle end user was kept over the busy one")
	}
	busy.Done(0, false, 0)
}

// TestEndUserBudget: each end user's budget holds on its own (priced
// requests reserve their price), and resets with its period.
func TestEndUserBudget(t *testing.T) {
	c := fakeclock.New()
	l := NewLimiter(c, nil, nil)
	l.Price = gpt4o
	p := key("k", Limits{EndUser: EndUserLimits{Budget: 0.05, BudgetPeriod: "day"}})
	large := ask(10000, 100) // priced about $0.026
	large.EndUser = "alice"
	var admitted []*Ticket
	for range 4 {
		if tk, r := l.AdmitAsk(p, large); r == nil {
			admitted = append(admitted, tk)
		} else if r.Subject != "end_user" || r.Code != "budget_exceeded" || r.Name != "alice" {
			t.Fatalf("refusal: %+v", r)
		}
	}
	if len(admitted) != 1 {
		t.Fatalf("%d of 4 large requests of alice admitted on $0.05, want 1", len(admitted))
	}
	admitted[0].Done(10100, true, 0.02)
	if _, r := l.AdmitAsk(p, large); r != nil {
		t.Fatalf("a second one, within what is left: %v", r)
	}
	_, r := l.AdmitAsk(p, large)
	if r == nil || r.RetryAfter != time.Second {
		t.Fatalf("a third while the second is in flight: %+v, want a refusal to retry when it ends", r)
	}
	bob := large
	bob.EndUser = "bob"
	if _, r := l.AdmitAsk(p, bob); r != nil {
		t.Fatalf("bob's budget is his own: %v", r)
	}
	c.Advance(24 * time.Hour)
	alice := l.EndUsers.users[endUserKey{"key:k", "alice"}].Value.(*endUser)
	alice.inflight, alice.reserved = 0, 0 // the one in flight ended yesterday, unpriced
	if _, r := l.AdmitAsk(p, large); r != nil {
		t.Fatalf("alice on a new day: %v", r)
	}
}

// fakeLoad is an EndUserLoad over a table of spend, by scope and user,
// that counts its calls and may fail.
type fakeLoad struct {
	mu    sync.Mutex
	spent map[endUserKey]float64
	calls int
	err   error
}

func (f *fakeLoad) load(_ context.Context, key, team, user string, _ time.Time) (float64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	scope := "key:" + key
	if team != "" {
		scope = "team:" + team
	}
	return f.spent[endUserKey{scope, user}], f.err
}

func (f *fakeLoad) set(scope, user string, usd float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.spent[endUserKey{scope, user}] = usd
}

// TestEndUserBudgetCountsTheStore: an end user met anew may have one
// request in flight until its spend is read from the store (Kick asks
// for it); then the store's figure counts, read again while it is
// active, and a cost is never left out.
func TestEndUserBudgetCountsTheStore(t *testing.T) {
	c := fakeclock.New()
	l := NewLimiter(c, nil, nil)
	store := &fakeLoad{spent: map[endUserKey]float64{{"key:k", "alice"}: 0.045}}
	l.EndUsers.Load = store.load
	p := key("k", Limits{EndUser: EndUserLimits{Budget: 0.05, BudgetPeriod: "day"}})
	a := euAsk("alice", 0)
	first, r := l.AdmitAsk(p, a)
	if r != nil {
		t.Fatalf("alice's first request, before her spend is read: %v", r)
	}
	_, r = l.AdmitAsk(p, a)
	if r == nil || r.RetryAfter != time.Second || r.Code != "rate_limit_exceeded" || r.Limit != "budget" || !strings.Contains(r.Message, "being read") {
		t.Fatalf("a second at once, before her spend is read: %+v", r)
	}
	select {
	case <-l.EndUsers.Kick():
	default:
		t.Fatal("no Kick for an end user whose spend is to be read")
	}
	first.Done(0, true, 0.004) // $0.049 in all
	if err := l.EndUsers.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The store's figure does not have the $0.004 yet: counted on top.
	u := l.EndUsers.users[endUserKey{"key:k", "alice"}].Value.(*endUser)
	if got := spentOf(u); got != 0.049 {
		t.Fatalf("after the first read alice has spent $%v, want $0.049", got)
	}
	tk, r := l.AdmitAsk(p, a) // unpriced: expected to cost her average, $0.004
	if r == nil {
		tk.Done(0, true, 0.004)
		t.Fatal("alice admitted at $0.049 of $0.05, her requests costing $0.004")
	}
	if r.Code != "budget_exceeded" || r.Used != 0.049 {
		t.Fatalf("refusal: %+v", r)
	}
	// The store records the $0.004: within two reads it is counted once.
	store.set("key:k", "alice", 0.049)
	for range 2 {
		c.Advance(31 * time.Second)
		u.used = c.Now() // active since the last read
		if err := l.EndUsers.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := spentOf(u); got < 0.049 {
			t.Fatalf("alice's spend fell to $%v, under what she spent", got)
		}
	}
	if got := spentOf(u); got != 0.049 {
		t.Fatalf("after two more reads alice has spent $%v, want $0.049", got)
	}
	// Idle since the last read: not read again.
	calls := store.calls
	c.Advance(time.Minute)
	l.EndUsers.Refresh(context.Background())
	if store.calls != calls {
		t.Fatal("an idle end user's spend was read again")
	}
}

// TestEndUserBudgetWhenTheStoreFails: a read that fails lets the end user
// go on by this replica's figures, keeping every cost, and is tried
// again.
func TestEndUserBudgetWhenTheStoreFails(t *testing.T) {
	c := fakeclock.New()
	l := NewLimiter(c, nil, nil)
	store := &fakeLoad{spent: map[endUserKey]float64{}, err: errors.New("store down")}
	l.EndUsers.Load = store.load
	p := key("k", Limits{EndUser: EndUserLimits{Budget: 0.05, BudgetPeriod: "day"}})
	tk, _ := l.AdmitAsk(p, euAsk("alice", 0))
	tk.Done(0, true, 0.01)
	if err := l.EndUsers.Refresh(context.Background()); err == nil {
		t.Fatal("Refresh with the store down: no error")
	}
	for i := range 2 { // no longer one at a time
		if _, r := l.AdmitAsk(p, euAsk("alice", 0)); r != nil {
			t.Fatalf("request %d after a failed read: %v", i, r)
		}
	}
	u := l.EndUsers.users[endUserKey{"key:k", "alice"}].Value.(*endUser)
	c.Advance(31 * time.Second)
	u.used = c.Now()
	l.EndUsers.Refresh(context.Background())
	if store.calls != 2 || spentOf(u) != 0.01 {
		t.Fatalf("after a second failed read: %d reads, $%v spent; want 2, $0.01", store.calls, spentOf(u))
	}
}

func spentOf(u *endUser) float64 { return float64(u.base+u.older+u.prev+u.cur) / 1e9 }

// TestEndUserEarlySpendBeforeItsSpendIsRead: before an end user's spend
// is first read from the store, it may spend a tenth of its budget on
// this replica (at least one request), in all, not one request at a time
// (a slow store let a second replica admit two requests of an end user
// whose budget was spent, one after the other).
func TestEndUserEarlySpendBeforeItsSpendIsRead(t *testing.T) {
	c := fakeclock.New()
	l := NewLimiter(c, nil, nil)
	store := &fakeLoad{spent: map[endUserKey]float64{{"key:k", "alice"}: 1}}
	l.EndUsers.Load = store.load
	p := key("k", Limits{EndUser: EndUserLimits{Budget: 1, BudgetPeriod: "day"}})
	admitted := 0
	for range 20 {
		tk, r := l.AdmitAsk(p, euAsk("alice", 0))
		if r != nil {
			if r.RetryAfter != time.Second || r.Code != "rate_limit_exceeded" {
				t.Fatalf("refusal before her spend is read: %+v", r)
			}
			break
		}
		admitted++
		tk.Done(0, true, 0.03) // then expected to cost $0.03 each
	}
	// $0.03, $0.06, $0.09 spent; a fourth, expected at $0.03, would pass
	// a tenth of $1.
	if admitted != 3 {
		t.Fatalf("%d requests of $0.03 admitted one after the other before her spend was read, want 3 (a tenth of $1)", admitted)
	}
	if err := l.EndUsers.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, r := l.AdmitAsk(p, euAsk("alice", 0)); r == nil || r.Code != "budget_exceeded" || r.RetryAfter <= time.Second {
		t.Fatalf("once her spent budget is read: %+v", r)
	}
	if _, r := l.AdmitAsk(p, euAsk("bob", 0)); r != nil {
		t.Fatalf("bob's first request: %v", r)
	}
}

// BenchmarkAdmitEndUser: admitting and settling a request of one of
// 1,000 end users of a key with end_user_limits, beside the same without
// an end user.
func BenchmarkAdmitEndUser(b *testing.B) {
	p := key("k", Limits{RPM: 1e9, EndUser: EndUserLimits{RPM: 1e9, TPM: 1e9, Budget: 1e9, BudgetPeriod: "month"}}).withNames()
	users := make([]string, 1000)
	for i := range users {
		users[i] = fmt.Sprintf("user-%d", i)
	}
	for _, tc := range []struct {
		name  string
		users []string
	}{{"end user", users}, {"none", []string{""}}} {
		b.Run(tc.name, func(b *testing.B) {
			l := NewLimiter(fakeclock.New(), nil, nil)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				tk, r := l.AdmitAsk(p, euAsk(tc.users[i%len(tc.users)], 10))
				if r != nil {
					b.Fatal(r)
				}
				tk.Done(10, true, 0)
				i++
			}
		})
	}
}
