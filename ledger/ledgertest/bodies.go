package ledgertest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/ledger"
)

// testRequestBodies: kept bodies are stored in their own table, their
// secrets redacted, their sizes and truncation kept, bytes of any value
// round-tripped; a request without bodies has none; the log's reads
// never carry them; a second record of the same request changes
// nothing; the bodies' retention deletes bodies and leaves their rows,
// the rows' deletes their bodies.
func testRequestBodies(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	at := func(h int) time.Time { return day(5).Add(time.Duration(h) * time.Hour) }
	secret := "sk-proj-" + strings.Repeat("Ab1", 12)
	req := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"my key is ` + secret + ` <script>alert(1)</script>"}]}`)
	resp := []byte("data: {\"choices\":[{\"delta\":{\"content\":\"AKIAABCDEFGHIJKLMNOP\"}}]}\n\ndata: [DONE]\n\n")
	binary := []byte{0, 0xff, 0xfe, 'a', 0, '\n'}
	recs := []ledger.Usage{
		{At: at(1), RequestID: "b1", KeyID: "A", Pool: "chat", Status: 200,
			Bodies: &ledger.Bodies{Request: req, Response: resp, RequestSize: int64(len(req)), ResponseSize: 9000, ResponseTruncated: true}},
		{At: at(2), RequestID: "b2", KeyID: "A", Pool: "chat", Status: 200},
		{At: at(3), RequestID: "b3", KeyID: "A", Pool: "audio", Status: 200,
			Bodies: &ledger.Bodies{Request: binary, Response: nil, RequestSize: 6, ResponseSize: -1, Note: "the response is compressed (gzip)"}},
	}
	if err := s.RecordUsage(ctx, recs); err != nil {
		t.Fatal(err)
	}
	b, err := s.RequestBodies(ctx, "b1")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b.Request, []byte(secret)) || !bytes.Contains(b.Request, []byte("my key is "+ledger.Redacted+" <script>")) {
		t.Errorf("request body kept as %q: the key is not redacted", b.Request)
	}
	if bytes.Contains(b.Response, []byte("AKIA")) || !b.ResponseTruncated || b.RequestTruncated ||
		b.RequestSize != int64(len(req)) || b.ResponseSize != 9000 {
		t.Errorf("bodies of b1 = %+v", b)
	}
	if b, err := s.RequestBodies(ctx, "b3"); err != nil || !bytes.Equal(b.Request, binary) || len(b.Response) != 0 ||
		b.Response == nil || b.ResponseSize != -1 || b.Note != "the response is compressed (gzip)" {
		t.Errorf("bodies of b3 = %+v, %v; want the bytes as recorded", b, err)
	}
	for _, id := range []string{"b2", "nope", "", strings.Repeat("x", 300)} {
		if _, err := s.RequestBodies(ctx, id); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("RequestBodies(%.10q) = %v, want ErrNotFound", id, err)
		}
	}
	// The log's reads carry no bodies.
	if u, err := s.Request(ctx, "b1"); err != nil || u.Bodies != nil {
		t.Errorf("Request(b1) = %+v, %v; want no bodies", u.Bodies, err)
	}
	us, err := s.Requests(ctx, ledger.RequestQuery{Limit: 10})
	if err != nil || len(us) != 3 {
		t.Fatalf("Requests = %d, %v", len(us), err)
	}
	for _, u := range us {
		if u.Bodies != nil {
			t.Errorf("Requests' %s has bodies", u.RequestID)
		}
	}
	// Recorded again (a retried batch) with other bodies: the first stay.
	again := recs[0]
	again.Bodies = &ledger.Bodies{Request: []byte("other")}
	if err := s.RecordUsage(ctx, []ledger.Usage{again}); err != nil {
		t.Fatal(err)
	}
	if b, err := s.RequestBodies(ctx, "b1"); err != nil || bytes.Equal(b.Request, []byte("other")) {
		t.Errorf("bodies of b1 after a second record: %q, %v", b.Request, err)
	}
	// The bodies' retention: older than at(2) go, rows stay.
	if n, err := s.DeleteBodiesBefore(ctx, at(2), 100); err != nil || n != 1 {
		t.Fatalf("DeleteBodiesBefore = %d, %v; want 1", n, err)
	}
	if _, err := s.RequestBodies(ctx, "b1"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("bodies of b1 after their retention: %v", err)
	}
	if _, err := s.Request(ctx, "b1"); err != nil {
		t.Errorf("row of b1 after the bodies' retention: %v", err)
	}
	if _, err := s.DeleteBodiesBefore(ctx, at(2), 0); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("DeleteBodiesBefore(limit 0) = %v, want ErrInvalid", err)
	}
	// The rows' retention takes their bodies.
	if n, err := s.DeleteRequestsBefore(ctx, at(4), 100); err != nil || n != 3 {
		t.Fatalf("DeleteRequestsBefore = %d, %v; want 3", n, err)
	}
	if _, err := s.RequestBodies(ctx, "b3"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("bodies of b3 after its row's retention: %v", err)
	}
}

// testBodiesRetention: RunBodies on a fake clock deletes the bodies
// older than its keep each round, and a keep of 0 none.
func testBodiesRetention(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	now := day(20)
	recs := []ledger.Usage{
		{At: now.Add(-8 * 24 * time.Hour), RequestID: "old", Bodies: &ledger.Bodies{Request: []byte("{}")}},
		{At: now.Add(-ledger.DefaultBodyRetention + 30*time.Minute), RequestID: "young", Bodies: &ledger.Bodies{Request: []byte("{}")}},
	}
	if err := s.RecordUsage(ctx, recs); err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.New()
	clk.Advance(now.Sub(clk.Now()))
	r := ledger.NewRetention(s, ledger.RetentionOptions{Keep: ledger.MinRetention, Clock: clk})
	if n, _, err := r.BodiesRound(ctx, 0); n != 0 || err != nil {
		t.Fatalf("BodiesRound(0) = %d, %v; want nothing done", n, err)
	}
	rounds := make(chan round, 10)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.RunBodies(runCtx, ledger.DefaultBodyRetention, func(n int, before time.Time, err error) { rounds <- round{n, before, err} })
	}()
	defer func() { cancel(); <-done }()
	if got := waitRound(t, rounds); got != (round{1, now.Add(-ledger.DefaultBodyRetention), nil}) {
		t.Fatalf("first round %+v, want 1 deleted", got)
	}
	waitTimer(t, clk, time.Hour)
	clk.Advance(time.Hour) // "young" is now 7d30m old
	if got := waitRound(t, rounds); got.deleted != 1 || got.err != nil {
		t.Fatalf("second round %+v, want 1 deleted", got)
	}
	for _, id := range []string{"old", "young"} {
		if _, err := s.RequestBodies(ctx, id); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("bodies of %s: %v, want deleted", id, err)
		}
		if _, err := s.Request(ctx, id); err != nil {
			t.Errorf("row of %s: %v, want kept", id, err)
		}
	}
}
