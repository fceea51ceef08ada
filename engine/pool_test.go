package engine

import (
	"slices"
	"testing"

	"github.com/switchover-gw/switchover/config"
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
