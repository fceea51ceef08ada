package cache

import (
	"context"
	"errors"
	"io"
	"net/http"
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
		go func() { e, _, _ := g.Wait(context.Background()); got <- e }()
	}
	poll.Until(t, 10*time.Second, func() bool { return fs.Waiting() == 3 }, func() string { return "followers not waiting" })
	e := entry("p", "", "", 1)
	fs.Land(k, f, e, nil)
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
	if e, r, err := f.Wait(ctx); e != nil || r != nil || err == nil {
		t.Fatalf("a wait past its context: %v, %v", e, err)
	}
	if fs.Waiting() != 0 {
		t.Fatal("a follower that left is still counted")
	}
}

// readAll reads r to its end: the bytes and the end's error.
func readAll(t *testing.T, r *Reader) (string, error) {
	t.Helper()
	var b []byte
	for {
		p, err := r.Next(t.Context())
		b = append(b, p...)
		if err != nil {
			return string(b), err
		}
	}
}

func TestFlightStreamReachesFollowersAsItArrives(t *testing.T) {
	var fs Flights
	k := Key{2}
	f, _ := fs.Join(k)
	g, _ := fs.Join(k)
	joined := make(chan *Reader)
	go func() { _, r, _ := g.Wait(t.Context()); joined <- r }()
	f.Share(200, http.Header{"Content-Type": {"text/event-stream"}}, 1<<20)
	r := <-joined
	if r == nil || r.Status() != 200 || r.Header().Get("Content-Type") != "text/event-stream" {
		t.Fatal("a waiting follower did not join the stream")
	}
	f.Append([]byte("data: 1\n\n"))
	if p, err := r.Next(t.Context()); string(p) != "data: 1\n\n" || err != nil {
		t.Fatalf("the first event before the second was sent: %q, %v", p, err)
	}
	_, r2, _ := g.Wait(t.Context()) // joins late: reads from the first byte
	f.Append([]byte("data: [DONE]\n\n"))
	fs.Land(k, f, nil, nil)
	if b, err := readAll(t, r); b != "data: [DONE]\n\n" || err != io.EOF {
		t.Fatalf("the rest: %q, %v", b, err)
	}
	if b, err := readAll(t, r2); b != "data: 1\n\ndata: [DONE]\n\n" || err != io.EOF {
		t.Fatalf("a late joiner: %q, %v", b, err)
	}
}

func TestFlightStreamEndsWithTheLeadersError(t *testing.T) {
	var fs Flights
	k := Key{3}
	f, _ := fs.Join(k)
	g, _ := fs.Join(k)
	f.Share(200, nil, 1<<20)
	_, r, _ := g.Wait(t.Context())
	f.Append([]byte("data: 1\n\n"))
	cut := errors.New("cut")
	fs.Land(k, f, nil, cut)
	if b, err := readAll(t, r); b != "data: 1\n\n" || err != cut {
		t.Fatalf("a cut stream: %q, %v", b, err)
	}
}

func TestFlightStreamPastItsBound(t *testing.T) {
	var fs Flights
	k := Key{4}
	f, _ := fs.Join(k)
	g, _ := fs.Join(k)
	f.Share(200, nil, 10)
	_, fast, _ := g.Wait(t.Context())
	_, slow, _ := g.Wait(t.Context())
	f.Append([]byte("12345678"))
	if p, _ := fast.Next(t.Context()); string(p) != "12345678" {
		t.Fatalf("fast read %q", p)
	}
	f.Append([]byte("abc")) // 11 bytes: past the bound
	if _, r, err := g.Wait(t.Context()); r != nil || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a follower joining past the bound: %v, %v", r, err)
	}
	if f.Bytes() != nil {
		t.Fatal("the bytes of a stream past its bound are still offered to store")
	}
	if p, _ := fast.Next(t.Context()); string(p) != "abc" {
		t.Fatalf("a joined reader past the bound: %q", p)
	}
	f.Append([]byte("defghij")) // slow is 18 bytes behind: cut
	if _, err := slow.Next(t.Context()); !errors.Is(err, ErrLagged) {
		t.Fatalf("a reader past the bound behind: %v", err)
	}
	f.mu.Lock()
	held := len(f.buf)
	f.mu.Unlock()
	if held != 7 {
		t.Fatalf("%d bytes held, want the 7 the one reader has not read", held)
	}
	fs.Land(k, f, nil, nil)
	if b, err := readAll(t, fast); b != "defghij" || err != io.EOF {
		t.Fatalf("%q, %v", b, err)
	}
}

func TestFlightCallOutlivesItsLeaderWhileReadersRead(t *testing.T) {
	var fs Flights
	k := Key{5}
	f, _ := fs.Join(k)
	g, _ := fs.Join(k)
	f.Share(200, nil, 1<<20)
	_, r, _ := g.Wait(t.Context())
	abandoned := 0
	if !f.LeaderLeft(func() { abandoned++ }) {
		t.Fatal("the call stops while a reader reads")
	}
	if abandoned != 0 {
		t.Fatal("abandoned with a reader")
	}
	r.Close()
	if abandoned != 1 {
		t.Fatalf("abandoned %d times after its last reader left, want 1", abandoned)
	}
	if r, err := f.join(); r != nil || err != nil {
		t.Fatal("a reader joined an abandoned flight")
	}
	fs.Land(k, f, nil, context.Canceled)
	if e, r, err := g.Wait(t.Context()); e != nil || r != nil || err != nil {
		t.Fatalf("a follower of an abandoned flight: %v, %v, %v: want to call for itself", e, r, err)
	}
}

func TestFlightWithoutReadersStopsWhenItsLeaderLeaves(t *testing.T) {
	var fs Flights
	k := Key{6}
	f, _ := fs.Join(k)
	abandoned := 0
	if f.LeaderLeft(func() { abandoned++ }) || abandoned != 1 {
		t.Fatalf("a leader without readers left: abandoned %d, want the call stopped", abandoned)
	}
}
