package sim

import (
	"context"
	"math"
	"time"
)

// lognormal returns median * exp(spread*z): a lognormal draw when z is
// standard normal. A zero median gives zero.
func lognormal(median time.Duration, spread, z float64) time.Duration {
	if median <= 0 {
		return 0
	}
	d := float64(median) * math.Exp(spread*z)
	if d >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(d)
}

// scale multiplies d by factor (the slow fault); factor <= 0 means 1.
func scale(d time.Duration, factor float64) time.Duration {
	if factor <= 0 || factor == 1 {
		return d
	}
	f := float64(d) * factor
	if f >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(f)
}

// timing is the latency plan of one request, drawn before it is answered.
type timing struct {
	total      time.Duration // non-streamed answer
	firstToken time.Duration // streamed answer: before the first event
	perToken   time.Duration // streamed answer: between content chunks
}

// planTiming draws a request's latency from z (standard normal) and
// multiplies it by factor (the slow fault; 0 means 1).
func planTiming(l Latency, z, factor float64) timing {
	return timing{
		total:      scale(lognormal(l.Median, l.Spread, z), factor),
		firstToken: scale(lognormal(l.FirstToken, l.Spread, z), factor),
		perToken:   scale(l.PerToken, factor),
	}
}

// realWaiter waits in real time. It is safe for concurrent use.
type realWaiter struct{}

var _ Waiter = realWaiter{}

func (realWaiter) Wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
