//go:build race

package gateway_test

// raceEnabled: the race detector is on, and allocation figures are not
// those of a normal build: tests that bound allocations skip.
const raceEnabled = true
