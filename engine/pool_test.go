package engine

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/route"
)

// TestStrategyNamesAgree: the names the configuration accepts are the
// strategies the engine has.
func TestStrategyNamesAgree(t *testing.T) {
	if got, want := config.StrategyNames(), route.Strategies(); !slices.Equal(got, want) {
		t.Fatalf("config accepts %v, the engine has %v", got, want)
	}
	for _, name := range config.StrategyNames() {
		if _, err := route.NewStrategy(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestHeadroomStrategyReadsAnIdleAzureBackendAsFull is the regression test
// for the headroom strategy passing over an idle Azure backend: what was
// left of its 10-second slice was divided by its per-minute limit, so it
// read a sixth full and lost to a backend with half its quota left.
func TestHeadroomStrategyReadsAnIdleAzureBackendAsFull(t *testing.T) {
	clk := fakeclock.New()
	azure, openai := &route.LocalQuota{}, &route.LocalQuota{}
	now := clk.Now()
	azure.Observe(now, now, 200, http.Header{"X-Ratelimit-Limit-Requests": {"60"}, "X-Ratelimit-Remaining-Requests": {"9"}})
	openai.Observe(now, now, 200, http.Header{"X-Ratelimit-Limit-Requests": {"100"}, "X-Ratelimit-Remaining-Requests": {"50"}, "X-Ratelimit-Reset-Requests": {"1m"}})
	sel := selector(route.StrategyHeadroom, Deps{Clock: clk})
	c := []*route.Member{{Backend: &route.Backend{Name: "openai", Quota: openai}}, {Backend: &route.Backend{Name: "azure", Quota: azure}}}
	clk.Advance(11 * time.Second) // azure's slice has refilled: it is idle
	for range 3 {
		if i := sel.Select(nil, c); i < 0 || c[i].Backend.Name != "azure" {
			t.Fatalf("picked %d of [openai (half left), azure (idle)], want azure", i)
		}
	}
}
