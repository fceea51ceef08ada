package route

// Checking reports whether a health check of b is running, for the
// engine's tests outside the package.
func Checking(b *Backend) bool { return b.check.checking() }

// LognormalTimes is lognormalTimes, for the engine's tests outside the
// package.
var LognormalTimes = lognormalTimes

// RaceEnabled is raceEnabled, for allocation guards outside the package.
const RaceEnabled = raceEnabled
