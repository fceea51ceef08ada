package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/switchover-gw/switchover/internal/fakeclock"
)

// batchInput is three chat lines for model; the third names another model
// and fails.
func batchInput(model string) []byte {
	line := func(id, m string) string {
		return `{"custom_id":"` + id + `","method":"POST","url":"/v1/chat/completions","body":{"model":"` + m + `","messages":[{"role":"user","content":"hi"}],"max_tokens":3}}`
	}
	return []byte(line("a", model) + "\n" + line("b", model) + "\n" + line("c", "other-model") + "\n")
}

func TestBatchesOnTheClockThroughSDK(t *testing.T) {
	for _, fl := range []Flavour{OpenAI, Azure} {
		t.Run(string(fl), func(t *testing.T) {
			clk := fakeclock.New()
			s := startSim(t, one(fl, func(d *Deployment) { d.Key = "k" }), WithClock(clk))
			ep := s.Deployments()[0]
			client := responsesClient(ep)
			ctx := context.Background()
			in, err := client.Files.New(ctx, openai.FileNewParams{
				File: openai.File(bytes.NewReader(batchInput(ep.Deployment)), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch,
			})
			if err != nil {
				t.Fatal(err)
			}
			params := openai.BatchNewParams{InputFileID: in.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h}
			b, err := client.Batches.New(ctx, params)
			if err != nil || b.Status != "validating" || !strings.HasPrefix(b.ID, "batch_") {
				t.Fatalf("New: %v %+v", err, b)
			}
			// One step (1 s) validating, then one step per line.
			steps := []struct {
				advance   time.Duration
				status    string
				completed int64
				failed    int64
			}{
				{0, "validating", 0, 0},
				{time.Second, "in_progress", 0, 0},
				{time.Second, "in_progress", 1, 0},
				{time.Second, "in_progress", 2, 0},
				{time.Second, "completed", 2, 1},
			}
			var got *openai.Batch
			for i, st := range steps {
				clk.Advance(st.advance)
				got, err = client.Batches.Get(ctx, b.ID)
				if err != nil {
					t.Fatal(err)
				}
				if string(got.Status) != st.status || got.RequestCounts.Completed != st.completed || got.RequestCounts.Failed != st.failed {
					t.Errorf("step %d: %s %+v, want %s %d/%d", i, got.Status, got.RequestCounts, st.status, st.completed, st.failed)
				}
			}
			if got.OutputFileID == "" || got.ErrorFileID == "" || got.RequestCounts.Total != 3 {
				t.Fatalf("completed batch = %+v", got)
			}
			resp, err := client.Files.Content(ctx, got.OutputFileID)
			if err != nil {
				t.Fatal(err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != 2 {
				t.Fatalf("output = %s", out)
			}
			var first struct {
				CustomID string `json:"custom_id"`
				Response struct {
					StatusCode int `json:"status_code"`
					Body       struct {
						Object  string
						Choices []struct {
							FinishReason string `json:"finish_reason"`
						}
					}
				}
			}
			if json.Unmarshal([]byte(lines[0]), &first) != nil || first.CustomID != "a" || first.Response.StatusCode != 200 ||
				first.Response.Body.Object != "chat.completion" || first.Response.Body.Choices[0].FinishReason != "length" {
				t.Errorf("first output line = %s", lines[0])
			}
			resp, err = client.Files.Content(ctx, got.ErrorFileID)
			if err != nil {
				t.Fatal(err)
			}
			errs, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(errs), `"custom_id":"c"`) || !strings.Contains(string(errs), `"status_code":404`) {
				t.Errorf("error file = %s", errs)
			}

			other, err := client.Batches.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Second)
			cancelled, err := client.Batches.Cancel(ctx, other.ID)
			if err != nil || cancelled.Status != "cancelled" {
				t.Errorf("Cancel: %v %+v", err, cancelled)
			}
			clk.Advance(time.Hour)
			if g, _ := client.Batches.Get(ctx, other.ID); g.Status != "cancelled" || g.OutputFileID != "" {
				t.Errorf("a cancelled batch became %+v", g)
			}
			list, err := client.Batches.List(ctx, openai.BatchListParams{})
			if err != nil || len(list.Data) != 2 || list.Data[0].ID != other.ID {
				t.Errorf("List: %v %+v", err, list)
			}
		})
	}
}

func TestBatchErrors(t *testing.T) {
	s := startSim(t, Config{Seed: 1, Deployments: []Deployment{
		{Name: "east", Flavour: OpenAI, Deployment: "chat-prod"},
		{Name: "west", Flavour: OpenAI, Deployment: "chat-prod"},
	}})
	east, west := s.Deployments()[0], s.Deployments()[1]
	resp, b := postMultipart(t, east, east.URL+"/files", map[string]string{"purpose": "batch"}, "file", "in.jsonl", batchInput("chat-prod"))
	var f struct{ ID string }
	if resp.StatusCode != 200 || json.Unmarshal(b, &f) != nil {
		t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}
	resp, b = postMultipart(t, east, east.URL+"/files", map[string]string{"purpose": "user_data"}, "file", "x.txt", []byte("x"))
	var userFile struct{ ID string }
	if resp.StatusCode != 200 || json.Unmarshal(b, &userFile) != nil {
		t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}
	body := func(file, endpoint, window string) string {
		return `{"input_file_id":"` + file + `","endpoint":"` + endpoint + `","completion_window":"` + window + `"}`
	}
	tests := []struct {
		name       string
		ep         Endpoint
		body       string
		wantStatus int
		wantBody   string
	}{
		{"file on another deployment", west, body(f.ID, "/v1/chat/completions", "24h"), 404, "No such File object: " + f.ID},
		{"unknown file", east, body("file-nope", "/v1/chat/completions", "24h"), 404, "No such File object: file-nope"},
		{"wrong purpose", east, body(userFile.ID, "/v1/chat/completions", "24h"), 400, "must have purpose 'batch'"},
		{"bad endpoint", east, body(f.ID, "/v1/images", "24h"), 400, "Invalid value for 'endpoint'"},
		{"bad window", east, body(f.ID, "/v1/chat/completions", "1h"), 400, "completion_window"},
		{"no file id", east, `{"endpoint":"/v1/chat/completions","completion_window":"24h"}`, 400, "input_file_id"},
		{"ok", east, body(f.ID, "/v1/chat/completions", "24h"), 200, `"status":"validating"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := do(t, "POST", tc.ep.URL+"/batches", tc.body, hdrFor(tc.ep))
			if resp.StatusCode != tc.wantStatus || !strings.Contains(string(b), tc.wantBody) {
				t.Errorf("%d %s, want %d with %s", resp.StatusCode, b, tc.wantStatus, tc.wantBody)
			}
		})
	}
	resp, b = do(t, "GET", east.URL+"/batches/batch_nope", "", hdrFor(east))
	if resp.StatusCode != 404 {
		t.Errorf("unknown batch: %d %s", resp.StatusCode, b)
	}
}

func TestBatchInvalidLineFails(t *testing.T) {
	clk := fakeclock.New()
	s := startSim(t, one(OpenAI, nil), WithClock(clk))
	ep := s.Deployments()[0]
	client := responsesClient(ep)
	ctx := context.Background()
	in, err := client.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader("not json\n"), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatal(err)
	}
	b, err := client.Batches.New(ctx, openai.BatchNewParams{InputFileID: in.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	got, err := client.Batches.Get(ctx, b.ID)
	if err != nil || got.Status != "failed" || len(got.Errors.Data) != 1 || got.Errors.Data[0].Code != "invalid_json_line" || got.Errors.Data[0].Line != 1 {
		t.Errorf("Get: %v %+v", err, got)
	}
	var apiErr *openai.Error
	if _, err := client.Batches.Get(ctx, "batch_nope"); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("unknown: %v", err)
	}
}
