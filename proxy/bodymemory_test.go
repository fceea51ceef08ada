package proxy

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestBodyMemoryReserve(t *testing.T) {
	var m bodyMemory
	const limit = 100
	tests := []struct {
		name     string
		declared int64
		ok       bool
	}{
		{"fits", 60, true},
		{"over what is left", 41, false},
		{"exactly what is left", 40, true},
		{"unknown length reserves nothing yet", -1, true},
		{"full", 1, false},
	}
	var held []*reservation
	for _, tt := range tests {
		r := new(reservation)
		err := m.open(r, tt.declared, limit, nil, 0)
		if (err == nil) != tt.ok {
			t.Fatalf("%s: open(%d) = %v, want ok %v (in use %d)", tt.name, tt.declared, err, tt.ok, m.inUse())
		}
		if err == nil {
			held = append(held, r)
		}
	}
	var r reservation
	if err := m.open(&r, 1<<40, 0, nil, 0); err != nil || m.inUse() != limit {
		t.Fatalf("with no limit: open = %v, in use %d; want nil and nothing more counted", err, m.inUse())
	} else {
		r.close()
	}
	for _, r := range held {
		r.close()
		r.close() // a second close gives nothing back twice
	}
	if m.inUse() != 0 {
		t.Fatalf("in use after every close: %d", m.inUse())
	}
}

func TestBodyMemoryChunkedGrowsWhileRead(t *testing.T) {
	var m bodyMemory
	const limit = 2 * chunkedStep
	r, other := new(reservation), new(reservation)
	m.open(r, -1, limit, nil, 0)
	n, err := io.Copy(io.Discard, r.reader(strings.NewReader(strings.Repeat("x", chunkedStep+1))))
	if err != nil || n != chunkedStep+1 {
		t.Fatalf("read %d, %v", n, err)
	}
	if got := m.inUse(); got != 2*chunkedStep {
		t.Fatalf("in use %d, want %d", got, 2*chunkedStep)
	}
	m.open(other, -1, limit, nil, 0)
	if _, err := io.Copy(io.Discard, other.reader(strings.NewReader("y"))); err != errBodyMemoryFull {
		t.Fatalf("a body past the budget read with %v, want errBodyMemoryFull", err)
	}
	r.close()
	other.close()
	if m.inUse() != 0 {
		t.Fatalf("in use after close: %d", m.inUse())
	}
}

// Regression: a declared Content-Length over max_body was read (up to the
// limit) before the 413; 60 such uploads at once held 3 GB.
func TestDeclaredLengthOverMaxBodyRefusedUnread(t *testing.T) {
	up := newGate()
	u, _ := limitedGateway(t, &Handler{}, up)
	// The body is declared at 2 MiB but never sent: only a refusal
	// before reading can answer.
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest(http.MethodPost, u+"/v1/chat/completions", pr)
	req.ContentLength = 2 << 20
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req) // a read would wait for ever
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
}

func TestBodyMemoryFullThroughHandler(t *testing.T) {
	up := newGate()
	rec := &refusals{}
	h := &Handler{Refusals: rec}
	u, ended := limitedGateway(t, h, up, func(rt *Routes) { rt.MaxBodyMemory = int64(len(chatBody)) + 10 })
	done := make(chan int)
	go func() {
		resp, _ := send(t, http.DefaultClient, http.MethodPost, u+"/v1/chat/completions?held", chatBody, false)
		done <- resp.StatusCode
	}()
	<-up.arrived // the first body is held while its request is in flight

	tests := []struct {
		name, path, body string
		chunked          bool
		wantType         string
	}{
		{"declared length, OpenAI format", "/v1/chat/completions", chatBody, false, "server_error"},
		{"chunked, refused while read", "/v1/chat/completions", chatBody, true, "server_error"},
		{"Anthropic format on /v1/messages", "/v1/messages", chatBody, false, "overloaded_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, eb := send(t, &http.Client{}, http.MethodPost, u+tt.path, tt.body, tt.chunked)
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
				t.Fatalf("status %d, Retry-After %q; want 503 and 1", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			if eb.Error.Type != tt.wantType {
				t.Errorf("error type %q, want %q", eb.Error.Type, tt.wantType)
			}
			if tt.wantType == "server_error" && eb.Error.Code != codeBodyMemoryFull {
				t.Errorf("code %q, want %q", eb.Error.Code, codeBodyMemoryFull)
			}
		})
	}
	close(up.release)
	if got := <-done; got != http.StatusOK {
		t.Fatalf("the request in flight got %d", got)
	}
	waitEnded(t, ended, "held")
	if got, want := rec.all(), []string{codeBodyMemoryFull, codeBodyMemoryFull, codeBodyMemoryFull}; !slices.Equal(got, want) {
		t.Errorf("refusals recorded %q, want %q", got, want)
	}
	if h.bodies.inUse() != 0 {
		t.Fatalf("body memory in use after every request ended: %d", h.bodies.inUse())
	}
	if resp, _ := send(t, http.DefaultClient, http.MethodPost, u+"/v1/chat/completions", chatBody, false); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the budget freed, status %d", resp.StatusCode)
	}
}

// A key's bodies reserve in its share and in the budget; a body past the
// share takes nothing from either, and one past the budget gives back
// what it took of the share.
func TestBodyMemoryKeyShare(t *testing.T) {
	var m bodyMemory
	var key, other atomic.Int64
	var a, b, c, d reservation
	if err := m.open(&a, 60, 100, &key, 80); err != nil {
		t.Fatal(err)
	}
	if err := m.open(&b, 30, 100, &key, 80); err != errKeyBodyMemoryFull {
		t.Fatalf("past the key's share: %v, want errKeyBodyMemoryFull", err)
	}
	if err := m.open(&c, 50, 100, &other, 80); err != errBodyMemoryFull {
		t.Fatalf("past the budget: %v, want errBodyMemoryFull", err)
	}
	if m.inUse() != 60 || key.Load() != 60 || other.Load() != 0 {
		t.Fatalf("in use %d, key %d, other key %d; want 60, 60, 0", m.inUse(), key.Load(), other.Load())
	}
	if err := m.open(&d, 40, 100, &other, 80); err != nil {
		t.Fatalf("another key within the budget: %v", err)
	}
	for _, r := range []*reservation{&a, &b, &c, &d} {
		r.close()
	}
	if m.inUse() != 0 || key.Load() != 0 || other.Load() != 0 {
		t.Fatalf("after close: in use %d, keys %d and %d", m.inUse(), key.Load(), other.Load())
	}
}

// TestDecodingChargeIsNotCountedInTheKeysShare: a translated body's
// decoding was first charged to its key's share too, so with several keys
// (each half the budget) a body whose decoding could never fit a share got
// a 429 that said to retry, for good. It is charged to the budget alone.
func TestDecodingChargeIsNotCountedInTheKeysShare(t *testing.T) {
	var m bodyMemory
	var key atomic.Int64
	var r reservation
	if err := m.open(&r, 10, 1000, &key, 50); err != nil {
		t.Fatal(err)
	}
	if !r.growShared(600) {
		t.Fatal("a decoding within the budget but over the key's share was refused")
	}
	if m.inUse() != 610 || key.Load() != 10 {
		t.Fatalf("in use %d, key %d; want 610, 10", m.inUse(), key.Load())
	}
	if r.growShared(400) {
		t.Fatal("a decoding past the budget was allowed")
	}
	r.close()
	if m.inUse() != 0 || key.Load() != 0 {
		t.Fatalf("after close: in use %d, key %d", m.inUse(), key.Load())
	}
}
