package cache

import (
	"context"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/poll"
)

func TestFlightsShareTheLeadersAnswer(t *testing.T) {
	var fs Flights
	k := Key{9}
	f, leader := fs.Join(k)
	if !leader {
		t.Fatal("the first call does not lead")
	}
	got := make(chan *Entry, 3)
	for range 3 {
		g, lead := fs.Join(k)
		if lead || g != f {
			t.Fatal("a second call leads a flight of its own")
		}
		go func() { e, _ := g.Wait(context.Background()); got <- e }()
	}
	poll.Until(t, 10*time.Second, func() bool { return fs.Waiting() == 3 }, func() string { return "followers not waiting" })
	e := entry("p", "", "", 1)
	fs.Land(k, f, e)
	for range 3 {
		if <-got != e {
			t.Fatal("a follower did not get the leader's answer")
		}
	}
	if _, lead := fs.Join(k); !lead {
		t.Fatal("after the landing, the next call does not lead")
	}
}

func TestFlightWaitIsBounded(t *testing.T) {
	var fs Flights
	k := Key{1}
	fs.Join(k)
	f, _ := fs.Join(k)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if e, err := f.Wait(ctx); e != nil || err == nil {
		t.Fatalf("a wait past its context: %v, %v", e, err)
	}
	if fs.Waiting() != 0 {
		t.Fatal("a follower that left is still counted")
	}
}
