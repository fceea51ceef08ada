package gateway

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/proxy"
	"github.com/switchover-gw/switchover/tenant"
)

// Failed key checks: an address may fail failedKeyBurst in a row, then
// one every failedKeyEvery.
const (
	failedKeyBurst = 20
	failedKeyEvery = time.Second
	// goodKeysPerAddress is how many keys that passed from an address
	// are remembered: they pass while it is throttled.
	goodKeysPerAddress = 8
	// maxThrottled bounds the addresses remembered; past it those whose
	// bucket has refilled are forgotten.
	maxThrottled = 4096
)

// keyThrottle throttles failed key checks per client address with a
// token bucket: each wrong key takes a token; with none left the
// address's requests get 429 with Retry-After before their key is
// checked, so a guessing loop learns nothing more, except for keys that
// passed from that address before (goodKeysPerAddress): a caller with a
// valid key in use is never slowed by a neighbour behind the same
// address guessing. It is safe for concurrent use.
type keyThrottle struct {
	clk   clock.Clock
	mu    sync.Mutex
	addrs map[string]*keyFailures
}

// keyFailures is one address's bucket and its keys that passed.
type keyFailures struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
	good   [goodKeysPerAddress][sha256.Size]byte
	ngood  int
}

func newKeyThrottle(clk clock.Clock) *keyThrottle {
	return &keyThrottle{clk: clock.Or(clk), addrs: map[string]*keyFailures{}}
}

// refill brings f's tokens up to now. Requires t.mu held.
func (f *keyFailures) refill(now time.Time) {
	f.tokens = min(failedKeyBurst, f.tokens+float64(now.Sub(f.at))/float64(failedKeyEvery))
	f.at = now
}

// wait is how long addr must wait before a key it presents (sum, the
// key's hash) is checked; 0 to check it now.
func (t *keyThrottle) wait(addr string, sum [sha256.Size]byte) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.addrs[addr]
	if f == nil {
		return 0
	}
	f.refill(t.clk.Now())
	if f.tokens >= 1 || slices.Contains(f.good[:f.ngood], sum) {
		return 0
	}
	return time.Duration((1 - f.tokens) * float64(failedKeyEvery))
}

// failed takes a token from addr's bucket.
func (t *keyThrottle) failed(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clk.Now()
	f := t.addrs[addr]
	if f == nil {
		t.forgetLocked(now)
		f = &keyFailures{tokens: failedKeyBurst, at: now}
		t.addrs[addr] = f
	}
	f.refill(now)
	f.tokens = max(0, f.tokens-1)
}

// passed remembers that the key whose hash is sum passed from addr.
func (t *keyThrottle) passed(addr string, sum [sha256.Size]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.addrs[addr]
	if f == nil {
		now := t.clk.Now()
		t.forgetLocked(now)
		f = &keyFailures{tokens: failedKeyBurst, at: now}
		t.addrs[addr] = f
	}
	if slices.Contains(f.good[:f.ngood], sum) {
		return
	}
	if f.ngood == goodKeysPerAddress {
		copy(f.good[:], f.good[1:])
		f.ngood--
	}
	f.good[f.ngood] = sum
	f.ngood++
}

// forgetLocked, with maxThrottled addresses remembered, forgets those
// whose bucket is full again. Requires t.mu held.
func (t *keyThrottle) forgetLocked(now time.Time) {
	if len(t.addrs) < maxThrottled {
		return
	}
	for a, f := range t.addrs {
		if f.refill(now); f.tokens >= failedKeyBurst {
			delete(t.addrs, a)
		}
	}
	for a := range t.addrs {
		if len(t.addrs) < maxThrottled {
			break
		}
		delete(t.addrs, a) // memory is bounded before the throttle is
	}
}

// notingResolver is the key store's resolver, noting each key it finds
// or refuses as unknown in the request's KeyCheck (proxy.NoteKeyCheck),
// for the throttle of failed key checks.
type notingResolver struct{ proxy.KeyResolver }

func (n notingResolver) Authenticate(ctx context.Context, secret string) (*tenant.Principal, error) {
	p, err := n.KeyResolver.Authenticate(ctx, secret)
	switch {
	case err == nil:
		proxy.NoteKeyCheck(ctx, true)
	case errors.Is(err, tenant.ErrUnknownKey):
		proxy.NoteKeyCheck(ctx, false)
	}
	return p, err
}

var _ proxy.KeyResolver = notingResolver{}
