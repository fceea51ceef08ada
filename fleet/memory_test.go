package fleet_test

import (
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
