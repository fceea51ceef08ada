package tenant

import "time"

// bucket is a token bucket that holds a minute's worth of its limit and
// may go into debt: a request takes its estimate up front (at most the
// whole bucket need be there), and what it really used is settled later.
type bucket struct {
	limit float64 // per minute, and the capacity
	level float64
	at    time.Time
}

func newBucket(limit float64, now time.Time) *bucket {
	return &bucket{limit: limit, level: limit, at: now}
}

// fill refills the bucket up to now.
func (b *bucket) fill(now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.level = min(b.limit, b.level+b.limit*d.Minutes())
		b.at = now
	}
}

// resize changes the limit, keeping the share used.
func (b *bucket) resize(limit float64, now time.Time) {
	if limit == b.limit || limit <= 0 {
		return
	}
	b.fill(now)
	used := b.limit - b.level
	b.limit = limit
	b.level = limit - used
}

// need is what must be in the bucket for a take of n: n, but never more
// than the whole bucket, so that a request larger than the limit still
// runs once the bucket is full.
func (b *bucket) need(n float64) float64 { return min(n, b.limit) }

// wait returns how long until a take of n fits (0 if it does now).
func (b *bucket) wait(n float64, now time.Time) time.Duration {
	b.fill(now)
	short := b.need(n) - b.level
	if short <= 0 {
		return 0
	}
	return time.Duration(short / b.limit * float64(time.Minute))
}

// take removes n (the bucket may go below zero).
func (b *bucket) take(n float64, now time.Time) {
	b.fill(now)
	b.level -= n
}

// used is what has been taken and not refilled: the bucket's used share.
func (b *bucket) used(now time.Time) float64 {
	b.fill(now)
	return b.limit - b.level
}
