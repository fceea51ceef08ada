package asynclog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// recorder is an output that keeps each write separately and tells a
// channel about each.
type recorder struct {
	mu     sync.Mutex
	writes []string
	wrote  chan struct{}
}

func newRecorder() *recorder { return &recorder{wrote: make(chan struct{}, 100)} }

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.writes = append(r.writes, string(p))
	r.mu.Unlock()
	select {
	case r.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (r *recorder) all() (string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.writes, ""), len(r.writes)
}

const noTicker = -1

// Regression: every request log line was its own write(2) to stderr.
func TestManyLinesOneWrite(t *testing.T) {
	out := newRecorder()
	w := New(out, Options{Interval: noTicker})
	defer w.Close()
	var want strings.Builder
	for i := range 100 {
		line := fmt.Sprintf("level=INFO msg=request n=%d\n", i)
		want.WriteString(line)
		w.Write([]byte(line))
	}
	if got, n := out.all(); n != 0 {
		t.Fatalf("%d writes before Flush: %q", n, got)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got, n := out.all()
	if n != 1 || got != want.String() {
		t.Fatalf("after Flush: %d writes, %q; want 1 write of the 100 lines in order", n, got)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, n := out.all(); n != 1 {
		t.Fatalf("an empty Flush wrote: %d writes", n)
	}
}

func TestFlushBySize(t *testing.T) {
	out := newRecorder()
	w := New(out, Options{Interval: noTicker, FlushSize: 16})
	defer w.Close()
	w.Write([]byte("0123456789\n")) // under FlushSize: stays
	w.Write([]byte("0123456789\n")) // past it: wakes the writer
	select {
	case <-out.wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("a buffer past FlushSize was not written out")
	}
	if got, _ := out.all(); got != "0123456789\n0123456789\n" {
		t.Fatalf("wrote %q", got)
	}
}

func TestDropsWhenFull(t *testing.T) {
	out := newRecorder()
	drops := 0
	w := New(out, Options{Interval: noTicker, FlushSize: 100, MaxPending: 100, OnDrop: func() { drops++ }})
	defer w.Close()
	line := []byte(strings.Repeat("x", 59) + "\n")
	tests := []struct {
		name    string
		dropped uint64
	}{
		{"fits", 0},
		{"over MaxPending: dropped", 1},
		{"still over: dropped", 2},
	}
	for _, tt := range tests {
		if n, err := w.Write(line); n != len(line) || err != nil {
			t.Fatalf("%s: Write = %d, %v; a drop must not fail the caller", tt.name, n, err)
		}
		if w.Dropped() != tt.dropped || drops != int(tt.dropped) {
			t.Fatalf("%s: dropped %d (OnDrop %d), want %d", tt.name, w.Dropped(), drops, tt.dropped)
		}
	}
	w.Flush()
	if got, _ := out.all(); got != string(line) {
		t.Fatalf("wrote %q, want the one line that fitted", got)
	}
	if _, err := w.Write(line); err != nil || w.Dropped() != 2 {
		t.Fatalf("after Flush a line did not fit: dropped %d", w.Dropped())
	}
}

func TestCloseWritesOutThenWritesThrough(t *testing.T) {
	out := newRecorder()
	w := New(out, Options{}) // with its ticker, as in production
	w.Write([]byte("before close\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := out.all(); got != "before close\n" {
		t.Fatalf("after Close: %q", got)
	}
	w.Write([]byte("after close\n"))
	if got, _ := out.all(); got != "before close\nafter close\n" {
		t.Fatalf("a write after Close was not written at once: %q", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentWritersLoseNothing(t *testing.T) {
	var out bytes.Buffer // written by one goroutine at a time (outMu)
	w := New(&out, Options{FlushSize: 256, Interval: noTicker})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				fmt.Fprintf(w, "g=%d i=%d\n", g, i)
			}
		})
	}
	wg.Wait()
	w.Close()
	if n := strings.Count(out.String(), "\n"); n != 8*200 || w.Dropped() != 0 {
		t.Fatalf("%d lines written, %d dropped; want %d and 0", n, w.Dropped(), 8*200)
	}
}

// BenchmarkRequestLine is the cost of one request log line (slog, text)
// on the request's goroutine, written to a file: straight (one write(2)
// per line) and through a Writer.
func BenchmarkRequestLine(b *testing.B) {
	for _, buffered := range []bool{false, true} {
		name := "unbuffered"
		if buffered {
			name = "buffered"
		}
		b.Run(name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			var out io.Writer = f
			if buffered {
				w := New(f, Options{})
				defer w.Close()
				out = w
			}
			lg := slog.New(slog.NewTextHandler(out, nil))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					lg.LogAttrs(context.Background(), slog.LevelInfo, "request",
						slog.String("request_id", "0123456789abcdef0123456789abcdef"), slog.String("method", "POST"),
						slog.String("path", "/v1/chat/completions"), slog.Int("status", 200), slog.String("pool", "chat-prod"),
						slog.Int64("duration_ms", 12), slog.Int64("bytes", 1118))
				}
			})
		})
	}
}

// Regression: the writer woke on a ticker every Interval, busy or idle (an
// idle gateway woke five times a second to find nothing to write). Now a
// line arms the timer when it finds the buffer empty, and nothing else
// does.
func TestIdleWriterArmsNoTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := newRecorder()
		w := New(out, Options{Interval: 200 * time.Millisecond})
		defer w.Close()
		time.Sleep(10 * time.Second)
		if n := w.wakes.Load(); n != 0 {
			t.Fatalf("woke %d times in 10 s with nothing to write", n)
		}
		io.WriteString(w, "one\n")
		time.Sleep(150 * time.Millisecond)
		io.WriteString(w, "two\n") // into a buffer that waits: no timer of its own
		time.Sleep(49 * time.Millisecond)
		synctest.Wait()
		if got, _ := out.all(); got != "" {
			t.Fatalf("written before the first line's interval: %q", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got, n := out.all(); got != "one\ntwo\n" || n != 1 {
			t.Fatalf("after the interval: %q in %d writes, want both lines in one", got, n)
		}
		// A line after the write-out waits its own interval, from when it came.
		time.Sleep(100 * time.Millisecond)
		io.WriteString(w, "three\n")
		time.Sleep(199 * time.Millisecond)
		synctest.Wait()
		if got, _ := out.all(); got != "one\ntwo\n" {
			t.Fatalf("the third line went early: %q", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got, _ := out.all(); got != "one\ntwo\nthree\n" {
			t.Fatalf("the third line: %q", got)
		}
		time.Sleep(10 * time.Second)
		if n := w.wakes.Load(); n != 2 {
			t.Fatalf("woke %d times for two write-outs", n)
		}
	})
}

// A buffer written out by size before its timer is due leaves the timer
// nothing to write; a line after that still goes out within Interval.
func TestWrittenBySizeThenByTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := newRecorder()
		w := New(out, Options{Interval: 200 * time.Millisecond, FlushSize: 8})
		defer w.Close()
		io.WriteString(w, "0123456789\n") // over FlushSize: out at once
		synctest.Wait()
		if got, _ := out.all(); got != "0123456789\n" {
			t.Fatalf("by size: %q", got)
		}
		io.WriteString(w, "x\n")
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		if got, n := out.all(); got != "0123456789\nx\n" || n != 2 {
			t.Fatalf("by the timer: %q in %d writes", got, n)
		}
	})
}
