package syncbuf

import (
	"context"
	"strings"
	"testing"
)

func TestWaitForSeesLaterWrites(t *testing.T) {
	var b Buffer
	waiting := make(chan error, 1)
	go func() {
		waiting <- b.WaitFor(t.Context(), func(s string) bool { return strings.Contains(s, "ready") })
	}()
	b.Write([]byte("starting\n"))
	b.Write([]byte("ready\n"))
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
	// Already true: returns at once.
	if err := b.WaitFor(t.Context(), func(s string) bool { return strings.HasPrefix(s, "starting") }); err != nil {
		t.Fatal(err)
	}
}

func TestWaitForEndsWithItsContext(t *testing.T) {
	var b Buffer
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := b.WaitFor(ctx, func(string) bool { return false }); err != context.Canceled {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}
