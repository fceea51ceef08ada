// Package fleet makes several gateway replicas act as one: breaker trips,
// quota knowledge, operator actions, notifications and the event history
// are shared through a Store (Redis in production, see fleet/redisstore),
// while every request is still decided from the replica's own memory. A
// replica never waits for the store on a request's path: what it learns
// is published in the background, what others learned is applied as it
// arrives, and when the store is slow or gone the replica carries on
// alone and reconciles when it returns.
package fleet

import (
	"context"
	"errors"
	"time"
)

// ErrClosed is returned by a Store used after Close.
var ErrClosed = errors.New("fleet: store closed")

// Store is what the replicas of a fleet share. Every method is bounded by
// its context: an implementation must return when ctx ends. Keys are the
// caller's; an implementation may prefix them (one Redis serving several
// fleets). A Store must be safe for concurrent use.
type Store interface {
	// Publish sends msg to every subscription of the fleet, this
	// replica's included.
	Publish(ctx context.Context, msg []byte) error
	// Subscribe returns the messages published after it returns, until
	// ctx ends or the subscription is lost; the channel is then closed,
	// and the caller subscribes again.
	Subscribe(ctx context.Context) (<-chan []byte, error)

	// Put stores value under key for ttl; zero ttl keeps it until
	// deleted.
	Put(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Delete removes key; a missing key is no error.
	Delete(ctx context.Context, key string) error
	// List returns every live key that starts with prefix, with its
	// value.
	List(ctx context.Context, prefix string) (map[string][]byte, error)

	// Count records the event id at now in the sliding window key (an id
	// recorded twice counts once, at the time it was first recorded,
	// while that is in the window) and returns how many events the window
	// holds in (now-window, now].
	Count(ctx context.Context, key, id string, now time.Time, window time.Duration) (int, error)

	// Acquire takes the lease key for holder for ttl, or extends it when
	// holder has it already, and reports whether holder has it.
	Acquire(ctx context.Context, key, holder string, ttl time.Duration) (bool, error)
	// Release gives the lease up if holder has it.
	Release(ctx context.Context, key, holder string) error

	// Append adds entry to the log key, keeping the newest max entries.
	Append(ctx context.Context, key string, entry []byte, max int) error
	// Tail returns up to n of the newest entries of log key, oldest first.
	Tail(ctx context.Context, key string, n int) ([][]byte, error)

	// Close releases the store's connections; calls after it fail with
	// ErrClosed.
	Close() error
}
