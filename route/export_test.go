package route

import "time"

// Checking reports whether a health check of b is running, for the
// engine's tests outside the package.
func Checking(b *Backend) bool { return b.check.checking() }

// CheckBegan is when the backend's latest health check began.
func CheckBegan(b *Backend) time.Time {
	b.check.mu.Lock()
	defer b.check.mu.Unlock()
	return b.check.last
}

// LognormalTimes is lognormalTimes, for the engine's tests outside the
// package.
var LognormalTimes = lognormalTimes

// RaceEnabled is raceEnabled, for allocation guards outside the package.
const RaceEnabled = raceEnabled
