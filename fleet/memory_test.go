package fleet_test

import (
	"context"
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

// TestMemorySubscribeRacingClose is the regression test for a Subscribe
// that ran concurrently with its view's Close and returned a live channel
// (nil error) that Close never closed: Subscribe checked v.closed, then
// registered the subscription under a second hold of the lock, and a
// Close in between took v.subs without it.
func TestMemorySubscribeRacingClose(t *testing.T) {
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
