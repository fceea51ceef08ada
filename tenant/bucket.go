package tenant

import "time"

// burstShare is the share of a per-minute limit a bucket holds: ten
// seconds' worth. Azure OpenAI and the other providers enforce a
// per-minute quota over short windows (Azure's RPM as RPM/6 per 10 s), so
// a key allowed its whole minute in one burst would use up the regions'
// windows for every other caller; held to ten seconds' worth it keeps to
// its rate as the regions count it.
const burstShare = 1.0 / 6

// bucket is a token bucket refilled at limit per minute, holding ten
// seconds' worth of it (at least one), that may go into debt: a request
// takes its estimate up front (at most the whole bucket need be there),
// and what it really used is settled later.
type bucket struct {
	limit float64 // per minute
	cap   float64
	level float64
	at    time.Time
}

func capacity(limit float64) float64 { return max(limit*burstShare, 1) }

func newBucket(limit float64, now time.Time) *bucket {
	c := capacity(limit)
	return &bucket{limit: limit, cap: c, level: c, at: now}
}

// fill refills the bucket up to now.
func (b *bucket) fill(now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.level = min(b.cap, b.level+b.limit*d.Minutes())
		b.at = now
	}
}

// resize changes the limit, keeping what is used, but owing at most one
// bucket's worth of the new limit (a cut to a replica's share would
// otherwise make a debt several times longer to refill).
func (b *bucket) resize(limit float64, now time.Time) {
	if limit == b.limit || limit <= 0 {
		return
	}
	b.fill(now)
	used := b.cap - b.level
	b.limit, b.cap = limit, capacity(limit)
	b.level = max(b.cap-used, min(b.level, -b.cap))
}

// need is what must be in the bucket for a take of n: n, but never more
// than the whole bucket, so that a request larger than it still runs once
// the bucket is full.
func (b *bucket) need(n float64) float64 { return min(n, b.cap) }

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

// used is what has been taken and not refilled.
func (b *bucket) used(now time.Time) float64 {
	b.fill(now)
	return b.cap - b.level
}

// debit removes n that other replicas took (a negative n gives back what
// their answers used less than estimated). Unlike take it has a floor:
// however much they report, the bucket owes at most one bucket's worth,
// so a wait is at most the refill of two buckets (20 s) and a wrong
// account (a peer's lifetime counted again) cannot lock a key out for
// minutes. What was in debt already stays so. It never fills the bucket
// past its capacity.
func (b *bucket) debit(n float64, now time.Time) {
	b.fill(now)
	level := b.level - n
	level = max(level, min(b.level, -b.cap))
	level = min(level, max(b.level, b.cap))
	b.level = level
}

// atLeast makes the bucket's use at least n (at most a full bucket).
func (b *bucket) atLeast(n float64, now time.Time) {
	b.fill(now)
	b.level = min(b.level, b.cap-min(n, b.cap))
}
