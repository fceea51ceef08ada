package engine

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/route"
)

const batchInput = `{"custom_id":"r1","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}}
{"custom_id":"r2","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}}
`

// TestFilesAndBatchesStayWhereTheyWereMade: with files and batches pinned
// to a pool (no failover), an upload is made on a usable member; the
// batch made from it goes to the member that holds the file; retrieval
// reaches that member through its peer's failure, and when the member
// itself is benched the call fails naming it, never reaching the peer.
func TestFilesAndBatchesStayWhereTheyWereMade(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu", "openai"}, nil, "pinned:\n  - {paths: [files, batches], pool: chat-prod}\n")
	c := e.openai()
	ctx := t.Context()
	served := func(raw *http.Response) string { return raw.Header.Get(route.HeaderBackend) }
	var raw *http.Response

	f, err := c.Files.New(ctx, openai.FileNewParams{File: namedReader{strings.NewReader(batchInput), "input.jsonl"}, Purpose: openai.FilePurposeBatch}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if owner, _, ok := route.UntagID(f.ID); !ok || owner != served(raw) || owner != "aoai-weu" {
		t.Fatalf("file id %q, served by %q", f.ID, served(raw))
	}
	b, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if served(raw) != "aoai-weu" || b.InputFileID != f.ID {
		t.Fatalf("batch on %q with input %q (file %q)", served(raw), b.InputFileID, f.ID)
	}

	// The peer down: retrieval still reaches the owner.
	e.fault(t, "openai", "down")
	got, err := c.Batches.Get(ctx, b.ID, option.WithResponseInto(&raw))
	if err != nil || got.ID != b.ID || served(raw) != "aoai-weu" {
		t.Fatalf("get batch: %v, %q from %q", err, got.ID, served(raw))
	}
	content, err := c.Files.Content(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(content.Body)
	content.Body.Close()
	if !bytes.Equal(data, []byte(batchInput)) {
		t.Fatalf("file content changed on the way: %q", data)
	}

	// The owner benched: a clear error naming it; the peer never asked.
	e.engine.Backends["aoai-weu"].Breaker.Force(breaker.Open, time.Now().Add(time.Hour), breaker.KindManual, "test")
	before := e.sim.Stats()["openai"].Calls
	_, err = c.Batches.Get(ctx, b.ID)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != "owner_unavailable" || !strings.Contains(apiErr.Message, "aoai-weu") {
		t.Fatalf("get with the owner benched: %v", err)
	}
	if after := e.sim.Stats()["openai"].Calls; after != before {
		t.Fatalf("the peer got %d calls for an object it does not hold", after-before)
	}
}

// TestUnknownPathsListRoutes: a path nothing routes gets 404 naming what
// the gateway does route, and is never forwarded.
func TestUnknownPathsListRoutes(t *testing.T) {
	e := startProviders(t, []string{"openai"}, nil, "")
	resp, err := http.Get(e.url + "/v1/fine_tuning/jobs")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(body), "responses") || !strings.Contains(string(body), "pinned route") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if n := e.sim.Stats()["openai"].Calls; n != 0 {
		t.Fatalf("an unknown path reached the backend (%d calls)", n)
	}
}

// TestUnknownPathsToTheNamedBackend: with unknown_paths set, a path it
// lists goes to that backend as it is.
func TestUnknownPathsToTheNamedBackend(t *testing.T) {
	e := startProviders(t, []string{"openai"}, nil, "unknown_paths: {backend: openai, paths: [files]}\n")
	resp, err := http.Get(e.url + "/v1/files")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(route.HeaderBackend) != "openai" || !strings.Contains(string(body), `"object":"list"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}
