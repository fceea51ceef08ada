//go:build race

package route

// raceEnabled: the race detector is on, and allocation figures are not
// those of a normal build (sync.Pool drops items at random, among
// others): tests that bound allocations skip.
const raceEnabled = true
