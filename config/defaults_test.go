package config

import (
	"slices"
	"testing"
	"time"
)

// Regression: DefaultBreakerStatuses and DefaultRetryOn were exported
// variables that every defaulted config shared, so a caller changing a
// config's list changed the default of every config loaded after it.
func TestMutatingADefaultLeavesTheNextConfigsDefault(t *testing.T) {
	const yaml = "backends: [{name: a, type: openai_compatible, url: \"http://127.0.0.1:1\"}, {name: b, type: openai_compatible, url: \"http://127.0.0.1:2\"}]\n" +
		"pools: [{name: p, members: [{backend: a}, {backend: b}]}]\n"
	load := func() *Config {
		t.Helper()
		c, err := Parse("t.yaml", []byte(yaml), goodEnv)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	wantBreaker := StatusList{{429, 429}, {500, 599}}
	wantRetry := StatusList{{429, 429}, {500, 500}, {502, 504}, {529, 529}}

	first := load()
	first.Backends[0].Breaker.Statuses[0] = StatusRange{404, 404}
	first.Pools[0].Retry.On[0] = StatusRange{400, 400}
	DefaultBreakerStatuses()[0] = StatusRange{418, 418}
	DefaultRetryOn()[0] = StatusRange{418, 418}

	if got := first.Backends[1].Breaker.Statuses; !slices.Equal(got, wantBreaker) {
		t.Errorf("another backend's breaker statuses changed with the first's: %v, want %v", got, wantBreaker)
	}
	next := load()
	for i, b := range next.Backends {
		if !slices.Equal(b.Breaker.Statuses, wantBreaker) {
			t.Errorf("next config's backends[%d].breaker.statuses = %v, want %v", i, b.Breaker.Statuses, wantBreaker)
		}
	}
	if got := next.Pools[0].Retry.On; !slices.Equal(got, wantRetry) {
		t.Errorf("next config's pools[0].retry.on = %v, want %v", got, wantRetry)
	}
	if got := DefaultBreakerStatuses(); !slices.Equal(got, wantBreaker) {
		t.Errorf("DefaultBreakerStatuses() = %v after a caller changed a copy, want %v", got, wantBreaker)
	}
	if got := DefaultRetryOn(); !slices.Equal(got, wantRetry) {
		t.Errorf("DefaultRetryOn() = %v after a caller changed a copy, want %v", got, wantRetry)
	}
}

// TestBreakerOutlierDefaults: a breaker's max_trip and slow_start default
// to 5m and 30s, come from backend_defaults when set there, and an
// explicit 0s slow_start (off) is kept, not replaced by the default.
func TestBreakerOutlierDefaults(t *testing.T) {
	const yaml = "backend_defaults: {breaker: {max_trip: 10m}}\n" +
		"backends: [{name: a, type: openai_compatible, url: \"http://127.0.0.1:1\"}, {name: b, type: openai_compatible, url: \"http://127.0.0.1:2\", breaker: {slow_start: 0s, max_trip: 2m}}]\n" +
		"pools: [{name: p, members: [{backend: a}, {backend: b}]}]\n"
	c, err := Parse("t.yaml", []byte(yaml), goodEnv)
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Backends[0].Breaker, c.Backends[1].Breaker
	if a.MaxTrip.D() != 10*time.Minute || a.SlowStart == nil || a.SlowStart.D() != DefaultSlowStart {
		t.Errorf("a: max_trip %v, slow_start %v; want 10m from backend_defaults and the default 30s", a.MaxTrip.D(), a.SlowStart)
	}
	if b.MaxTrip.D() != 2*time.Minute || b.SlowStart == nil || *b.SlowStart != 0 {
		t.Errorf("b: max_trip %v, slow_start %v; want its own 2m and 0s (off)", b.MaxTrip.D(), b.SlowStart)
	}
}
