package fleet_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/fleet"
	"github.com/switchover-gw/switchover/fleet/storetest"
	"github.com/switchover-gw/switchover/internal/fakeclock"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (a, b fleet.Store, advance func(time.Duration)) {
		clk := fakeclock.New()
		m := fleet.NewMemory()
		m.Clock = clk
		a, b = m.View(), m.View()
		t.Cleanup(func() {
			_ = a.Close()
			_ = b.Close()
		})
		return a, b, clk.Advance
	})
}

// TestMemorySubscribeRacingClose: a Subscribe that runs concurrently with
// its view's Close can return a live channel (nil error) that Close never
// closes, so it stays open until the caller's ctx ends, after the store
// was closed. memView.Subscribe checks v.closed, then registers the
// subscription in v.subs under a second lock acquisition; a Close in
// between takes v.subs without it. Known bug in memory.go, not fixed here
// (the file belongs to the coordination work); run with
// SWITCHOVER_KNOWN_BUGS=1 to see it fail.
func TestMemorySubscribeRacingClose(t *testing.T) {
	if os.Getenv("SWITCHOVER_KNOWN_BUGS") != "1" {
		t.Skip("known bug in fleet.Memory (Subscribe racing Close); set SWITCHOVER_KNOWN_BUGS=1 to run")
	}
	const rounds = 20000
	lost := 0
	for round := range rounds {
		v := fleet.NewMemory().View()
		var (
			wg    sync.WaitGroup
			ch    <-chan []byte
			err   error
			start = make(chan struct{})
		)
		wg.Go(func() { <-start; ch, err = v.Subscribe(context.Background()) })
		wg.Go(func() { <-start; _ = v.Close() })
		close(start)
		wg.Wait()
		if err != nil {
			continue // Close came first: fine
		}
		select {
		case _, ok := <-ch:
			if ok {
				t.Fatalf("round %d: a message on a subscription nobody published to", round)
			}
		case <-time.After(time.Second):
			if lost++; lost == 1 {
				t.Errorf("round %d: Subscribe returned a channel concurrently with Close, and Close did not close it", round)
			}
		}
	}
	if lost > 0 {
		t.Logf("%d of %d rounds left a subscription open after Close", lost, rounds)
	}
}
