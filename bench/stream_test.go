package bench

import (
	"context"
	"testing"
	"time"
)

func TestFlushedApart(t *testing.T) {
	const iv = 10 * time.Millisecond
	ms := time.Millisecond
	tests := []struct {
		name string
		s    streamSample
		want bool
	}{
		{"each on its own, spread", streamSample{Arrivals: []time.Duration{1 * ms, 11 * ms, 21 * ms}, Chunks: []int{1, 1, 1}}, true},
		{"two in one read", streamSample{Arrivals: []time.Duration{1 * ms, 21 * ms}, Chunks: []int{2, 1}}, false},
		{"collected, then sent close together", streamSample{Arrivals: []time.Duration{20 * ms, 20*ms + 100*time.Microsecond, 21 * ms}, Chunks: []int{1, 1, 1}}, false},
		{"one missing", streamSample{Arrivals: []time.Duration{1 * ms, 11 * ms}, Chunks: []int{1, 1}}, false},
	}
	for _, tt := range tests {
		if got := flushedApart(tt.s, 3, iv); got != tt.want {
			t.Errorf("%s: flushedApart = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestReadStreamFromTheMock(t *testing.T) {
	up, err := NewUpstream()
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	up.SetStream(StreamShape{Chunks: 4, Interval: time.Millisecond})
	s, err := readStream(context.Background(), newClient(1), up.URL+azurePath)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range s.Chunks {
		n += k
	}
	if n != 4 || s.FirstToken <= 0 || s.FirstToken != s.Arrivals[0] {
		t.Errorf("read %d content chunks (want 4), first token at %v, arrivals %v", n, s.FirstToken, s.Arrivals)
	}
}

func TestUpstreamHoldsStreamsUntilReleased(t *testing.T) {
	up, err := NewUpstream()
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	up.SetStream(StreamShape{Chunks: 2, Hold: true})
	ctx := context.Background()
	wait := openStreams(ctx, up.URL+azurePath, 5, 1000)
	if held := up.waitHeld(ctx, 5, time.Minute); held != 5 {
		t.Fatalf("%d streams held, want 5", held)
	}
	up.Release()
	if failed, err := wait(); failed != 0 {
		t.Errorf("%d streams failed after the release: %v", failed, err)
	}
	if up.Held() != 0 || up.Calls() != 5 {
		t.Errorf("after the release: %d held, %d calls; want 0, 5", up.Held(), up.Calls())
	}
}

func TestUpstreamAnswersChat(t *testing.T) {
	up, err := NewUpstream()
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	tg := &target{name: Direct, url: up.URL + azurePath}
	if err := tg.probe(newClient(1)); err != nil {
		t.Fatal(err)
	}
}
