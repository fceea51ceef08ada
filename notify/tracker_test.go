package notify

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
)

// recorder collects notifications.
type recorder struct {
	mu sync.Mutex
	ns []Notification
	ch chan Notification // optional
}

func (r *recorder) notify(n Notification) {
	r.mu.Lock()
	r.ns = append(r.ns, n)
	r.mu.Unlock()
	if r.ch != nil {
		r.ch <- n
	}
}

func (r *recorder) all() []Notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ns)
}

func (r *recorder) kinds() []Kind {
	var ks []Kind
	for _, n := range r.all() {
		ks = append(ks, n.Kind)
	}
	return ks
}

// region pool: eastus (priority 1), westeurope (2), swedencentral (3).
func regions(up ...string) []Member {
	ms := []Member{
		{Backend: "eastus", Priority: 1},
		{Backend: "westeurope", Priority: 2},
		{Backend: "swedencentral", Priority: 3},
	}
	for i := range ms {
		ms[i].Usable = slices.Contains(up, ms[i].Backend)
	}
	return ms
}

var (
	stA    = regions("eastus", "westeurope", "swedencentral") // active eastus (primary)
	stB    = regions("westeurope", "swedencentral")           // active westeurope
	stC    = regions("swedencentral")                         // active swedencentral
	stNone = regions()
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newTestTracker(s TrackerSettings) (*Tracker, *recorder) {
	r := &recorder{}
	s.Notify = r.notify
	return NewTracker(s), r
}

func TestTrackerBaselineIsSilent(t *testing.T) {
	tr, rec := newTestTracker(TrackerSettings{})
	tr.Update("chat", stB, "startup", t0) // even a baseline away from the primary
	if got := rec.all(); len(got) != 0 {
		t.Fatalf("baseline sent %v", got)
	}
	got, since := tr.Active("chat")
	if !slices.Equal(got, []string{"westeurope"}) || !since.Equal(t0) {
		t.Fatalf("Active = %v, %v", got, since)
	}
}

func TestTrackerOneNotificationPerChange(t *testing.T) {
	tr, rec := newTestTracker(TrackerSettings{})
	tr.Update("chat", stA, "", t0)
	for i := range 100 {
		tr.Update("chat", stA, "probe succeeded", t0.Add(time.Duration(i)*time.Second))
	}
	if n := len(rec.all()); n != 0 {
		t.Fatalf("unchanged updates sent %d notifications", n)
	}
	for i := range 100 {
		tr.Update("chat", stB, "429", t0.Add(200*time.Second+time.Duration(i)*time.Second))
	}
	if got := rec.kinds(); !slices.Equal(got, []Kind{KindFailover}) {
		t.Fatalf("kinds = %v, want one failover", got)
	}
	// Member order within the same set is not a change.
	rev := slices.Clone(stB)
	slices.Reverse(rev)
	tr.Update("chat", rev, "", t0.Add(time.Hour))
	if n := len(rec.all()); n != 1 {
		t.Fatalf("reordered members sent a notification (%d)", n)
	}
}

func TestTrackerKinds(t *testing.T) {
	tier := func(up ...string) []Member {
		ms := []Member{{Backend: "e1", Priority: 1}, {Backend: "e2", Priority: 1}, {Backend: "w1", Priority: 2}}
		for i := range ms {
			ms[i].Usable = slices.Contains(up, ms[i].Backend)
		}
		return ms
	}
	type step struct {
		members  []Member
		kind     Kind
		from, to []string
	}
	cases := []struct {
		name  string
		base  []Member
		steps []step
	}{
		{"failover then failback", stA, []step{
			{stB, KindFailover, []string{"eastus"}, []string{"westeurope"}},
			{stA, KindFailback, []string{"westeurope"}, []string{"eastus"}},
		}},
		{"fallback to fallback is a change", stA, []step{
			{stB, KindFailover, []string{"eastus"}, []string{"westeurope"}},
			{stC, KindChange, []string{"westeurope"}, []string{"swedencentral"}},
			{stB, KindChange, []string{"swedencentral"}, []string{"westeurope"}},
			{stA, KindFailback, []string{"westeurope"}, []string{"eastus"}},
		}},
		{"primary straight to second fallback", stA, []step{
			{stC, KindFailover, []string{"eastus"}, []string{"swedencentral"}},
			{stA, KindFailback, []string{"swedencentral"}, []string{"eastus"}},
		}},
		{"nothing usable", stA, []step{
			{stNone, KindFailover, []string{"eastus"}, nil},
			{stB, KindChange, nil, []string{"westeurope"}},
			{stNone, KindChange, []string{"westeurope"}, nil},
			{stA, KindFailback, nil, []string{"eastus"}},
		}},
		{"member of the primary tier drops out", tier("e1", "e2", "w1"), []step{
			{tier("e1", "w1"), KindFailover, []string{"e1", "e2"}, []string{"e1"}},
			{tier("w1"), KindChange, []string{"e1"}, []string{"w1"}},
			{tier("e1", "e2", "w1"), KindFailback, []string{"w1"}, []string{"e1", "e2"}},
		}},
		{"baseline on a fallback", stB, []step{
			{stA, KindFailback, []string{"westeurope"}, []string{"eastus"}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, rec := newTestTracker(TrackerSettings{})
			at := t0
			tr.Update("chat", tc.base, "", at)
			for i, s := range tc.steps {
				at = at.Add(time.Hour) // far apart: no flapping
				tr.Update("chat", s.members, fmt.Sprint("reason ", i), at)
				ns := rec.all()
				if len(ns) != i+1 {
					t.Fatalf("step %d: %d notifications, want %d", i, len(ns), i+1)
				}
				n := ns[i]
				if n.Kind != s.kind || !slices.Equal(n.From, s.from) || !slices.Equal(n.To, s.to) {
					t.Errorf("step %d: got %s %v → %v, want %s %v → %v", i, n.Kind, n.From, n.To, s.kind, s.from, s.to)
				}
				if n.Pool != "chat" || n.Reason != fmt.Sprint("reason ", i) || !n.At.Equal(at) {
					t.Errorf("step %d: pool %q reason %q at %v", i, n.Pool, n.Reason, n.At)
				}
				if got, since := tr.Active("chat"); !slices.Equal(got, s.to) || !since.Equal(at) {
					t.Errorf("step %d: Active = %v since %v", i, got, since)
				}
			}
		})
	}
}

func TestTrackerText(t *testing.T) {
	tr, rec := newTestTracker(TrackerSettings{})
	tr.Update("chat-prod", stA, "", t0)
	at1 := t0.Add(10 * time.Minute)
	tr.Update("chat-prod", stB, "429 quota: 5 failures in 30s, last 429", at1)
	at2 := at1.Add(20 * time.Minute)
	tr.Update("chat-prod", stC, "timeout", at2)
	at3 := at2.Add(20 * time.Minute)
	tr.Update("chat-prod", stA, "breaker closed: probe succeeded", at3)
	ns := rec.all()
	if len(ns) != 3 {
		t.Fatalf("%d notifications", len(ns))
	}
	cases := []struct {
		name    string
		n       Notification
		want    []string
		notWant []string
	}{
		{"failover", ns[0], []string{
			"Active backend changed on pool chat-prod", "eastus → westeurope", "failover",
			"429 quota: 5 failures in 30s, last 429", "2026-11-30T12:10:00Z",
			"Check the quota and the model version of westeurope.",
		}, nil},
		{"change", ns[1], []string{
			"Active backend changed", "westeurope → swedencentral", "timeout", "2026-11-30T12:30:00Z",
			"Check the quota and the model version of swedencentral.",
		}, nil},
		{"failback", ns[2], []string{
			"Active backend changed", "swedencentral → eastus", "back on the primary",
			"breaker closed: probe succeeded", "2026-11-30T12:50:00Z",
		}, []string{"Check the quota"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range tc.want {
				if !strings.Contains(tc.n.Text, w) {
					t.Errorf("text %q lacks %q", tc.n.Text, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(tc.n.Text, w) {
					t.Errorf("text %q has %q", tc.n.Text, w)
				}
			}
		})
	}
}

func TestTrackerTextNoUsableBackend(t *testing.T) {
	tr, rec := newTestTracker(TrackerSettings{})
	tr.Update("p", stA, "", t0)
	tr.Update("p", stNone, "5xx", t0.Add(time.Hour))
	n := rec.all()[0]
	if !strings.Contains(n.Text, "eastus → no usable backend") || !strings.Contains(n.Text, "fail until a backend is usable") {
		t.Fatalf("text %q", n.Text)
	}
}

func TestTrackerFlapping(t *testing.T) {
	const w = 2 * time.Minute
	tr, rec := newTestTracker(TrackerSettings{FlapWindow: w})
	tr.Update("chat", stA, "", t0)
	tr.Update("chat", stB, "429", t0.Add(10*time.Second))
	if got := rec.kinds(); !slices.Equal(got, []Kind{KindFailover}) {
		t.Fatalf("a clean failover must be sent at once, got %v", got)
	}
	// One round trip within the window is an outage and its recovery: a
	// failback (the bug: a one-minute outage was told as "flapping" and
	// its failback never).
	tr.Update("chat", stA, "probe succeeded", t0.Add(40*time.Second))
	if got := rec.kinds(); !slices.Equal(got, []Kind{KindFailover, KindFailback}) {
		t.Fatalf("A→B→A within the window: kinds %v, want failover, failback", got)
	}
	// Back to B within the window: the second return is flapping.
	tr.Update("chat", stB, "429", t0.Add(60*time.Second))
	ns := rec.all()
	if got := rec.kinds(); !slices.Equal(got, []Kind{KindFailover, KindFailback, KindFlapping}) {
		t.Fatalf("A→B→A→B within the window: kinds %v, want failover, failback, flapping", got)
	}
	f := ns[2]
	if !slices.Equal(f.From, []string{"eastus"}) || !slices.Equal(f.To, []string{"westeurope"}) {
		t.Errorf("flapping %v → %v", f.From, f.To)
	}
	if f.Details[DetailChanges] != "3" || f.Details[DetailWindow] != "2m" || f.Details[DetailSets] != "westeurope | eastus" {
		t.Errorf("flapping details %v", f.Details)
	}
	for _, want := range []string{"flapping", "between westeurope and eastus", "3 changes within 2m", "2026-11-30T12:01:00Z",
		"Check the quota and the model version of westeurope."} {
		if !strings.Contains(f.Text, want) {
			t.Errorf("flapping text %q lacks %q", f.Text, want)
		}
	}

	// A again within the window: absorbed.
	last := t0.Add(70 * time.Second)
	tr.Update("chat", stA, "probe succeeded", last)
	if got := rec.kinds(); !slices.Equal(got, []Kind{KindFailover, KindFailback, KindFlapping}) {
		t.Fatalf("A→B→A→B→A within the window: kinds %v, want failover, failback, flapping", got)
	}

	// Not yet stable for the window.
	tr.Tick(last.Add(w - time.Second))
	if n := len(rec.all()); n != 3 {
		t.Fatalf("settled early: %v", rec.kinds())
	}
	tr.Tick(last.Add(w))
	ns = rec.all()
	if got := rec.kinds(); !slices.Equal(got, []Kind{KindFailover, KindFailback, KindFlapping, KindFailback}) {
		t.Fatalf("after stable for the window: kinds %v", got)
	}
	s := ns[3]
	if s.Details[DetailSettled] != "true" || s.Details[DetailChanges] != "4" || !s.At.Equal(last.Add(w)) ||
		!slices.Equal(s.From, []string{"westeurope"}) || !slices.Equal(s.To, []string{"eastus"}) {
		t.Errorf("settled notification %+v", s)
	}
	if !strings.Contains(s.Text, "settled") || !strings.Contains(s.Text, "westeurope → eastus, unchanged for 2m") ||
		!strings.Contains(s.Text, "back on the primary") || !strings.Contains(s.Text, "4 changes while flapping since 2026-11-30T12:00:10Z") {
		t.Errorf("settled text %q", s.Text)
	}
	tr.Tick(last.Add(time.Hour))
	if n := len(rec.all()); n != 4 {
		t.Fatalf("settled twice: %v", rec.kinds())
	}
	// Calm again: a later failover is a plain one.
	tr.Update("chat", stB, "5xx", last.Add(2*time.Hour))
	if got := rec.kinds(); got[len(got)-1] != KindFailover || len(got) != 5 {
		t.Fatalf("kinds %v", got)
	}
}

func TestTrackerFlappingSettlesAwayFromPrimary(t *testing.T) {
	const w = 2 * time.Minute
	tr, rec := newTestTracker(TrackerSettings{FlapWindow: w})
	tr.Update("chat", stA, "", t0)
	tr.Update("chat", stB, "429", t0.Add(1*time.Second))
	tr.Update("chat", stA, "probe", t0.Add(2*time.Second))
	tr.Update("chat", stB, "429 again", t0.Add(3*time.Second))
	tr.Update("chat", stA, "probe", t0.Add(4*time.Second))
	tr.Update("chat", stB, "429 again", t0.Add(5*time.Second))
	tr.Tick(t0.Add(5*time.Second + w))
	ns := rec.all()
	if got := rec.kinds(); !slices.Equal(got, []Kind{KindFailover, KindFailback, KindFlapping, KindFailover}) {
		t.Fatalf("kinds %v", got)
	}
	s := ns[3]
	if !slices.Equal(s.From, []string{"eastus"}) || !slices.Equal(s.To, []string{"westeurope"}) ||
		s.Details[DetailSettled] != "true" || s.Reason != "429 again" {
		t.Errorf("settled %+v", s)
	}
	if !strings.Contains(s.Text, "Check the quota and the model version of westeurope") {
		t.Errorf("settled text %q", s.Text)
	}
}

func TestTrackerFlappingBetweenFallbacksSettlesAsChange(t *testing.T) {
	tr, rec := newTestTracker(TrackerSettings{})
	tr.Update("chat", stB, "", t0)
	tr.Update("chat", stC, "timeout", t0.Add(time.Second))
	tr.Update("chat", stB, "probe", t0.Add(2*time.Second))
	tr.Update("chat", stC, "timeout", t0.Add(3*time.Second))
	tr.Tick(t0.Add(time.Hour))
	if got := rec.kinds(); !slices.Equal(got, []Kind{KindChange, KindChange, KindFlapping, KindChange}) {
		t.Fatalf("kinds %v", got)
	}
}

func TestTrackerFlappingAtMostOncePerWindow(t *testing.T) {
	const w = 2 * time.Minute
	tr, rec := newTestTracker(TrackerSettings{FlapWindow: w})
	tr.Update("chat", stA, "", t0)
	states := [][]Member{stB, stA}
	// A change every 50s, for 10 minutes: never stable for 2m.
	for i := 1; i <= 12; i++ {
		tr.Update("chat", states[(i-1)%2], "x", t0.Add(time.Duration(i)*50*time.Second))
	}
	var flaps []Notification
	for _, n := range rec.all() {
		if n.Kind == KindFlapping {
			flaps = append(flaps, n)
		}
	}
	// 50s is a failover and 100s its failback; flapping starts at the
	// second return, 150s, then at most one per 2m: 150, 300, 450, 600.
	wantAt := []time.Duration{150, 300, 450, 600}
	if len(flaps) != len(wantAt) {
		t.Fatalf("%d flapping notifications (%v), want %d", len(flaps), rec.kinds(), len(wantAt))
	}
	for i, f := range flaps {
		if !f.At.Equal(t0.Add(wantAt[i] * time.Second)) {
			t.Errorf("flapping %d at %v, want +%ds", i, f.At.Sub(t0), wantAt[i])
		}
	}
	// Within (180s, 300s]: changes at 200, 250, 300.
	if flaps[1].Details[DetailChanges] != "3" {
		t.Errorf("changes within the window = %s, want 3", flaps[1].Details[DetailChanges])
	}
	if got := rec.kinds(); got[0] != KindFailover || got[1] != KindFailback || len(got) != 2+len(wantAt) {
		t.Errorf("kinds %v", got)
	}
}

func TestTrackerSlowFlipIsPlainFailback(t *testing.T) {
	const w = 2 * time.Minute
	tr, rec := newTestTracker(TrackerSettings{FlapWindow: w})
	tr.Update("chat", stA, "", t0)
	tr.Update("chat", stB, "429", t0)
	tr.Update("chat", stA, "probe succeeded", t0.Add(w+time.Second))
	if got := rec.kinds(); !slices.Equal(got, []Kind{KindFailover, KindFailback}) {
		t.Fatalf("kinds %v", got)
	}
}

func TestTrackerSettledByUpdateWithoutTick(t *testing.T) {
	const w = 2 * time.Minute
	tr, rec := newTestTracker(TrackerSettings{FlapWindow: w})
	tr.Update("chat", stA, "", t0)
	tr.Update("chat", stB, "429", t0.Add(time.Second))
	tr.Update("chat", stA, "probe", t0.Add(2*time.Second))
	tr.Update("chat", stB, "429", t0.Add(3*time.Second))
	tr.Update("chat", stA, "probe", t0.Add(4*time.Second))
	tr.Update("chat", stC, "timeout", t0.Add(10*time.Minute))
	ns := rec.all()
	if got := rec.kinds(); !slices.Equal(got, []Kind{KindFailover, KindFailback, KindFlapping, KindFailback, KindFailover}) {
		t.Fatalf("kinds %v", got)
	}
	if !ns[3].At.Equal(t0.Add(4*time.Second+w)) || ns[3].Details[DetailSettled] != "true" {
		t.Errorf("settled %+v", ns[3])
	}
	if !slices.Equal(ns[4].From, []string{"eastus"}) || !slices.Equal(ns[4].To, []string{"swedencentral"}) {
		t.Errorf("failover %+v", ns[4])
	}
}

func TestTrackerRunTicks(t *testing.T) {
	clk := fakeclock.New()
	rec := &recorder{ch: make(chan Notification, 10)}
	tr := NewTracker(TrackerSettings{Clock: clk, Notify: rec.notify})
	start := clk.Now()
	tr.Update("chat", stA, "", start)
	tr.Update("chat", stB, "429", start)
	tr.Update("chat", stA, "probe", start.Add(time.Second))
	tr.Update("chat", stB, "429", start.Add(2*time.Second))
	tr.Update("chat", stA, "probe", start.Add(3*time.Second))
	<-rec.ch // failover
	<-rec.ch // failback
	<-rec.ch // flapping
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tr.Run(ctx, time.Millisecond); close(done) }()
	defer func() { cancel(); <-done }()
	clk.Advance(time.Hour)
	select {
	case n := <-rec.ch:
		if n.Kind != KindFailback || n.Details[DetailSettled] != "true" {
			t.Fatalf("got %+v", n)
		}
	case <-time.After(5 * time.Second): // a guard against a hang, not a timing assertion
		t.Fatal("Run did not settle the pool")
	}
}

func TestTrackerStorm(t *testing.T) {
	tr, rec := newTestTracker(TrackerSettings{})
	tr.Update("chat", stA, "", t0)
	tr.Update("chat", stB, "429", t0)
	base := len(rec.all())
	storms := func() []Notification {
		var s []Notification
		for _, n := range rec.all()[base:] {
			if n.Kind == KindStorm {
				s = append(s, n)
			}
		}
		return s
	}
	at := t0
	fail := func(n int, step time.Duration) {
		for range n {
			tr.Failover("chat", at)
			at = at.Add(step)
		}
	}
	fail(49, time.Second)
	if len(storms()) != 0 {
		t.Fatal("49 failovers raised a storm")
	}
	fail(1, time.Second)
	if len(storms()) != 0 {
		t.Fatal("50 failovers (not more than 50) raised a storm")
	}
	fail(1, time.Second)
	if s := storms(); len(s) != 1 {
		t.Fatalf("51 failovers: %d storms", len(s))
	}
	s := storms()[0]
	if s.Details[DetailFailovers] != "51" || s.Details[DetailWindow] != "5m" || s.Details[DetailThreshold] != "50" ||
		!slices.Equal(s.From, []string{"eastus"}) || !slices.Equal(s.To, []string{"westeurope"}) || s.Pool != "chat" {
		t.Errorf("storm %+v", s)
	}
	for _, want := range []string{"storm", "chat", "51", "5m", "threshold 50", "westeurope"} {
		if !strings.Contains(s.Text, want) {
			t.Errorf("storm text %q lacks %q", s.Text, want)
		}
	}
	fail(200, 100*time.Millisecond)
	if len(storms()) != 1 {
		t.Fatal("a second storm without falling below the threshold")
	}
	// The first failovers age out but the count stays above 50: no re-arm.
	at = t0.Add(5*time.Minute + 30*time.Second)
	fail(10, time.Second)
	if len(storms()) != 1 {
		t.Fatal("a second storm while the count stayed above the threshold")
	}
	// Everything ages out: the count falls below, and a new rise alerts.
	at = at.Add(10 * time.Minute)
	fail(51, time.Second)
	if len(storms()) != 2 {
		t.Fatalf("after falling below and rising again: %d storms, want 2", len(storms()))
	}
}

func TestTrackerStormBeforeAnyUpdate(t *testing.T) {
	tr, rec := newTestTracker(TrackerSettings{StormThreshold: 2})
	for range 3 {
		tr.Failover("fresh", t0)
	}
	ns := rec.all()
	if len(ns) != 1 || ns[0].Kind != KindStorm || ns[0].From != nil || ns[0].To != nil {
		t.Fatalf("notifications %+v", ns)
	}
	if strings.Contains(ns[0].Text, "Traffic is on") || !strings.Contains(ns[0].Text, "3 requests failed over within 5m (threshold 2)") {
		t.Errorf("text %q", ns[0].Text)
	}
}

func TestTrackerStormWindowSlides(t *testing.T) {
	tr, rec := newTestTracker(TrackerSettings{StormThreshold: 10, StormWindow: time.Minute})
	// 10 failovers per 61s window never exceed 10 within a minute.
	for i := range 100 {
		tr.Failover("chat", t0.Add(time.Duration(i)*6100*time.Millisecond))
	}
	if n := len(rec.all()); n != 0 {
		t.Fatalf("%d storms for a rate at the threshold", n)
	}
}

func TestTrackerStormPerPool(t *testing.T) {
	tr, rec := newTestTracker(TrackerSettings{
		StormFor: func(pool string) (int, time.Duration) {
			switch pool {
			case "small":
				return 5, time.Minute
			case "off":
				return -1, 0
			}
			return 0, 0
		},
	})
	for i := range 60 {
		at := t0.Add(time.Duration(i) * time.Second)
		tr.Failover("small", at)
		tr.Failover("default", at)
		tr.Failover("off", at)
	}
	byPool := map[string]int{}
	for _, n := range rec.all() {
		byPool[n.Pool]++
		if n.Pool == "small" && n.Details[DetailWindow] != "1m" {
			t.Errorf("small window %q", n.Details[DetailWindow])
		}
	}
	// small: 6th failover storms; 1m window: at 60 failovers in 60s the
	// count never falls below 5, so only one.
	if byPool["small"] != 1 || byPool["default"] != 1 || byPool["off"] != 0 {
		t.Fatalf("storms per pool %v", byPool)
	}
}

func TestTrackerSendAdmin(t *testing.T) {
	clk := fakeclock.New()
	tr, rec := newTestTracker(TrackerSettings{Clock: clk})
	tr.Send(Notification{Kind: KindAdmin, Pool: "chat", Reason: "westeurope drained by alice"})
	n := rec.all()[0]
	if !n.At.Equal(clk.Now()) || !strings.Contains(n.Text, "Operator action on pool chat: westeurope drained by alice") ||
		!strings.Contains(n.Text, "2026-11-30T12:00:00Z") {
		t.Fatalf("admin %+v", n)
	}
	tr.Send(Notification{Kind: KindAdmin, Pool: "chat", Text: "custom", At: t0})
	if n := rec.all()[1]; n.Text != "custom" {
		t.Fatalf("Text replaced: %q", n.Text)
	}
}

// Notify is called without the tracker's locks: calling back into the
// tracker from it must not deadlock.
func TestTrackerNotifyOutsideLocks(t *testing.T) {
	var tr *Tracker
	var got []string
	tr = NewTracker(TrackerSettings{StormThreshold: 1, Notify: func(n Notification) {
		a, _ := tr.Active(n.Pool)
		got = append(got, fmt.Sprint(n.Kind, a))
		tr.Update("other", stA, "", n.At)
		tr.Failover(n.Pool, n.At) // may post again: delivered after this one
	}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.Update("chat", stA, "", t0)
		tr.Update("chat", stB, "429", t0)
		tr.Failover("chat", t0)
		tr.Failover("chat", t0)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second): // a guard against a deadlock, not a timing assertion
		t.Fatal("deadlock: Notify called with a lock held")
	}
	if len(got) < 2 || got[0] != "failover[westeurope]" || got[1] != "storm[westeurope]" {
		t.Fatalf("got %v", got)
	}
}

func TestTrackerConcurrentOrder(t *testing.T) {
	var mu sync.Mutex
	last := map[string]Kind{}
	var bad []string
	tr := NewTracker(TrackerSettings{FlapWindow: time.Nanosecond, Notify: func(n Notification) {
		mu.Lock()
		defer mu.Unlock()
		// Alternating A, B far apart: kinds must alternate per pool.
		if last[n.Pool] == n.Kind {
			bad = append(bad, n.Pool+" "+string(n.Kind))
		}
		last[n.Pool] = n.Kind
	}})
	var wg sync.WaitGroup
	for g := range 8 {
		pool := fmt.Sprint("p", g%4)
		wg.Go(func() {
			for i := range 500 {
				tr.Failover(pool, t0.Add(time.Duration(i)*time.Millisecond))
				tr.Active(pool)
			}
		})
	}
	for p := range 4 {
		pool := fmt.Sprint("p", p)
		wg.Go(func() {
			tr.Update(pool, stA, "", t0)
			for i := range 200 {
				st := stB
				if i%2 == 1 {
					st = stA
				}
				tr.Update(pool, st, "x", t0.Add(time.Duration(i+1)*time.Hour))
			}
		})
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("out of order: %v", bad[:min(5, len(bad))])
	}
}

func TestTrackerForget(t *testing.T) {
	tr, rec := newTestTracker(TrackerSettings{})
	tr.Update("chat", stA, "", t0)
	tr.Forget("chat")
	if a, _ := tr.Active("chat"); a != nil {
		t.Fatalf("Active after Forget = %v", a)
	}
	tr.Update("chat", stB, "", t0.Add(time.Hour)) // new baseline
	if n := len(rec.all()); n != 0 {
		t.Fatalf("%d notifications", n)
	}
}

func TestTrackerZeroSettingsNoNotify(t *testing.T) {
	tr := NewTracker(TrackerSettings{})
	tr.Update("chat", stA, "", t0)
	tr.Update("chat", stB, "", t0.Add(time.Hour))
	for range 100 {
		tr.Failover("chat", t0.Add(time.Hour))
	}
	tr.Send(Notification{Kind: KindAdmin})
	if a, _ := tr.Active("chat"); !slices.Equal(a, []string{"westeurope"}) {
		t.Fatalf("Active = %v", a)
	}
}

func BenchmarkTrackerFailover(b *testing.B) {
	tr := NewTracker(TrackerSettings{StormThreshold: 1 << 30, Notify: func(Notification) {}})
	tr.Update("chat", stA, "", t0)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		tr.Failover("chat", t0.Add(time.Duration(i)*time.Millisecond))
		i++
	}
}

func BenchmarkTrackerUpdateUnchanged(b *testing.B) {
	tr := NewTracker(TrackerSettings{Notify: func(Notification) {}})
	tr.Update("chat", stA, "", t0)
	b.ReportAllocs()
	for b.Loop() {
		tr.Update("chat", stA, "probe", t0)
	}
}
