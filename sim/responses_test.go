package sim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/switchover-gw/switchover/internal/fakeclock"
)

// responsesClient is an openai-go client for the Responses API, files and
// batches of ep: the API base for openai, the azure package for azure
// (which puts these resource-level calls under /openai/...?api-version=).
func responsesClient(ep Endpoint, opts ...option.RequestOption) openai.Client {
	opts = append([]option.RequestOption{option.WithMaxRetries(0)}, opts...)
	if ep.Flavour == Azure {
		return azureSDKClient(ep, opts...)
	}
	return newClient(ep, opts...)
}

// responsesURL is the URL of the Responses API path p ("responses",
// "responses/{id}") of ep: /v1/ for openai, the api-version form for azure.
func responsesURL(ep Endpoint, p string) string {
	if ep.Flavour == Azure {
		q := "?"
		if strings.Contains(p, "?") {
			q = "&"
		}
		return ep.URL + "/openai/" + p + q + "api-version=" + testAPIVersion
	}
	return ep.URL + "/" + p
}

func hdrFor(ep Endpoint) map[string]string {
	if ep.Flavour == Azure {
		return map[string]string{"Api-Key": keyOr(ep.Key)}
	}
	return map[string]string{"Authorization": "Bearer " + keyOr(ep.Key)}
}

func respParams(ep Endpoint, prompt string) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: ep.Deployment,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
	}
}

func TestResponsesThroughSDK(t *testing.T) {
	for _, fl := range []Flavour{OpenAI, Azure} {
		t.Run(string(fl), func(t *testing.T) {
			s := startSim(t, one(fl, func(d *Deployment) { d.Key = "k"; d.Reply.Tokens = 6 }))
			ep := s.Deployments()[0]
			client := responsesClient(ep)
			ctx := context.Background()

			got, err := client.Responses.New(ctx, respParams(ep, "hello there"))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got.Status != "completed" || got.OutputText() == "" || got.Usage.OutputTokens != 6 || !strings.HasPrefix(got.ID, "resp_") {
				t.Fatalf("response = %+v", got)
			}
			if owner, ok := s.ObjectOwner(got.ID); !ok || owner != "d1" {
				t.Errorf("ObjectOwner(%s) = %q %v", got.ID, owner, ok)
			}
			again, err := client.Responses.Get(ctx, got.ID, responses.ResponseGetParams{})
			if err != nil || again.OutputText() != got.OutputText() {
				t.Errorf("Get: %v %q, want %q", err, again.OutputText(), got.OutputText())
			}

			p := respParams(ep, "hello there")
			p.MaxOutputTokens = openai.Int(3)
			cut, err := client.Responses.New(ctx, p)
			if err != nil || cut.Status != "incomplete" || cut.IncompleteDetails.Reason != "max_output_tokens" || cut.Usage.OutputTokens != 3 {
				t.Errorf("cut = %v %+v", err, cut)
			}

			stream := client.Responses.NewStreaming(ctx, respParams(ep, "stream please"))
			var types []string
			var deltas strings.Builder
			var final responses.Response
			seq := int64(-1)
			for stream.Next() {
				ev := stream.Current()
				types = append(types, ev.Type)
				if ev.SequenceNumber != seq+1 {
					t.Errorf("sequence_number %d after %d", ev.SequenceNumber, seq)
				}
				seq = ev.SequenceNumber
				if ev.Type == "response.output_text.delta" {
					deltas.WriteString(ev.Delta)
				}
				if ev.Type == "response.completed" {
					final = ev.Response
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("stream: %v", err)
			}
			want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
			if len(types) != len(want)+6+4 || strings.Join(types[:4], ",") != strings.Join(want, ",") {
				t.Errorf("event types = %v", types)
			}
			tail := []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
			if strings.Join(types[len(types)-4:], ",") != strings.Join(tail, ",") {
				t.Errorf("last events = %v", types[len(types)-4:])
			}
			if final.OutputText() == "" || final.OutputText() != deltas.String() {
				t.Errorf("completed text %q, deltas %q", final.OutputText(), deltas.String())
			}
			if _, err := client.Responses.Get(ctx, final.ID, responses.ResponseGetParams{}); err != nil {
				t.Errorf("a streamed response is stored too: %v", err)
			}

			if err := client.Responses.Delete(ctx, got.ID); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			_, err = client.Responses.Get(ctx, got.ID, responses.ResponseGetParams{})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
				t.Errorf("Get after Delete: %v, want 404", err)
			}
			if st := s.Stats()["d1"]; st.Answered != 6 || st.Rejected != 1 || st.Tokens == 0 {
				t.Errorf("stats = %+v, want 6 answered, 1 rejected, tokens charged", st)
			}
		})
	}
}

func TestResponsesNotStored(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ep := s.Deployments()[0]
	client := responsesClient(ep)
	p := respParams(ep, "hi")
	p.Store = openai.Bool(false)
	got, err := client.Responses.New(context.Background(), p)
	if err != nil {
		t.Fatalf("New: %v %+v", err, got)
	}
	resp, b := do(t, "GET", responsesURL(ep, "responses/"+got.ID), "", hdrFor(ep))
	if resp.StatusCode != 404 || !strings.Contains(string(b), "Response with id '"+got.ID+"' not found.") {
		t.Errorf("GET of an unstored response: %d %s", resp.StatusCode, b)
	}
}

func TestResponsesToolCall(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ep := s.Deployments()[0]
	body := `{"model":"chat-prod","input":"weather in Paris?","tools":[{"type":"function","name":"get_weather",` +
		`"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}`
	resp, b := do(t, "POST", ep.URL+"/responses", body, hdrFor(ep))
	var raw struct {
		Output []map[string]any `json:"output"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &raw) != nil || len(raw.Output) != 1 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	item := raw.Output[0]
	if item["type"] != "function_call" || item["name"] != "get_weather" || item["arguments"] != `{"city":"x"}` || !strings.HasPrefix(item["call_id"].(string), "call_") {
		t.Errorf("output item = %v", item)
	}

	stream := strings.Replace(body, `"input"`, `"stream":true,"input"`, 1)
	resp, b = do(t, "POST", ep.URL+"/responses", stream, hdrFor(ep))
	names := eventNames(string(b))
	if resp.StatusCode != 200 || !contains(names, "response.function_call_arguments.delta") || !contains(names, "response.function_call_arguments.done") {
		t.Errorf("stream events = %v", names)
	}

	// After the tool's result, the answer is text.
	result := `{"model":"chat-prod","input":[{"role":"user","content":"weather?"},` +
		`{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{}"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"sunny"}],` +
		`"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`
	resp, b = do(t, "POST", ep.URL+"/responses", result, hdrFor(ep))
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"type":"output_text"`) {
		t.Errorf("after the tool result: %d %s", resp.StatusCode, b)
	}

	none := strings.Replace(body, `"tools"`, `"tool_choice":"none","tools"`, 1)
	resp, b = do(t, "POST", ep.URL+"/responses", none, hdrFor(ep))
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"type":"output_text"`) {
		t.Errorf("tool_choice none: %d %s", resp.StatusCode, b)
	}
}

func eventNames(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			out = append(out, name)
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestResponsesBackgroundOnTheClock(t *testing.T) {
	clk := fakeclock.New()
	s := startSim(t, one(Azure, func(d *Deployment) { d.Key = "k"; d.Latency = Latency{Median: 2 * time.Second} }), WithClock(clk))
	ep := s.Deployments()[0]
	client := responsesClient(ep)
	ctx := context.Background()
	p := respParams(ep, "take your time")
	p.Background = openai.Bool(true)
	got, err := client.Responses.New(ctx, p)
	if err != nil || got.Status != "queued" || len(got.Output) != 0 {
		t.Fatalf("New = %v %+v", err, got)
	}
	status := func(id string) (string, string) {
		r, err := client.Responses.Get(ctx, id, responses.ResponseGetParams{})
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		return string(r.Status), r.OutputText()
	}
	clk.Advance(time.Second)
	if st, _ := status(got.ID); st != "in_progress" {
		t.Errorf("after 1s: %s, want in_progress", st)
	}
	clk.Advance(time.Second)
	if st, text := status(got.ID); st != "completed" || text == "" {
		t.Errorf("after 2s: %s %q, want completed with text", st, text)
	}

	other, err := client.Responses.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	cancelled, err := client.Responses.Cancel(ctx, other.ID)
	if err != nil || cancelled.Status != "cancelled" {
		t.Fatalf("Cancel = %v %+v", err, cancelled)
	}
	clk.Advance(time.Hour)
	if st, _ := status(other.ID); st != "cancelled" {
		t.Errorf("a cancelled response became %s", st)
	}

	sync, err := client.Responses.New(ctx, respParams(ep, "now"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Responses.Cancel(ctx, sync.ID)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		t.Errorf("Cancel of a synchronous response: %v, want 400", err)
	}

	p.Store = openai.Bool(false)
	if _, err := client.Responses.New(ctx, p); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		t.Errorf("background without store: %v, want 400", err)
	}
}

func TestResponsesPreviousResponseIsPerDeployment(t *testing.T) {
	s := startSim(t, Config{Seed: 3, Deployments: []Deployment{
		{Name: "east", Region: "eastus", Deployment: "chat-prod", Key: "k"},
		{Name: "west", Region: "westus", Deployment: "chat-prod", Key: "k"},
	}})
	east, west := s.Deployments()[0], s.Deployments()[1]
	ctx := context.Background()
	ec, wc := responsesClient(east), responsesClient(west)
	first, err := ec.Responses.New(ctx, respParams(east, "remember this"))
	if err != nil {
		t.Fatal(err)
	}
	if owner, _ := s.ObjectOwner(first.ID); owner != "east" {
		t.Errorf("owner of %s = %q, want east", first.ID, owner)
	}
	p := respParams(east, "and then?")
	p.PreviousResponseID = openai.String(first.ID)
	next, err := ec.Responses.New(ctx, p)
	if err != nil || next.PreviousResponseID != first.ID || next.Usage.InputTokens <= first.Usage.TotalTokens {
		t.Errorf("follow-up on the same deployment: %v %+v", err, next)
	}

	tests := []struct {
		name string
		ep   Endpoint
		id   string
	}{
		{"another deployment", west, first.ID},
		{"unknown id", east, "resp_nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"model":"chat-prod","input":"x","previous_response_id":"` + tc.id + `"}`
			resp, b := do(t, "POST", responsesURL(tc.ep, "responses"), body, hdrFor(tc.ep))
			var e openAIErrorBody
			_ = json.Unmarshal(b, &e)
			if resp.StatusCode != 400 || e.Error.Code == nil || *e.Error.Code != "previous_response_not_found" ||
				e.Error.Message != "Previous response with id '"+tc.id+"' not found." {
				t.Errorf("%d %s", resp.StatusCode, b)
			}
		})
	}
	west1, err := wc.Responses.New(ctx, respParams(west, "remember this"))
	if err != nil || west1.ID == first.ID {
		t.Fatalf("west: %v, id %s (east made %s)", err, west1.ID, first.ID)
	}
	if owner, _ := s.ObjectOwner(west1.ID); owner != "west" {
		t.Errorf("owner of %s = %q, want west", west1.ID, owner)
	}
}

func TestResponsesInputItems(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ep := s.Deployments()[0]
	body := `{"model":"chat-prod","input":[{"role":"user","content":"one"},{"role":"assistant","content":"two"},{"role":"user","content":[{"type":"input_text","text":"three"}]}]}`
	resp, b := do(t, "POST", ep.URL+"/responses", body, hdrFor(ep))
	var created struct{ ID string }
	if resp.StatusCode != 200 || json.Unmarshal(b, &created) != nil {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	type list struct {
		Object  string
		Data    []map[string]any
		FirstID *string `json:"first_id"`
		LastID  *string `json:"last_id"`
		HasMore bool    `json:"has_more"`
	}
	get := func(q string) list {
		resp, b := do(t, "GET", ep.URL+"/responses/"+created.ID+"/input_items"+q, "", hdrFor(ep))
		var l list
		if resp.StatusCode != 200 || json.Unmarshal(b, &l) != nil {
			t.Fatalf("%s: %d %s", q, resp.StatusCode, b)
		}
		return l
	}
	text := func(item map[string]any) string {
		parts, _ := item["content"].([]any)
		if len(parts) == 0 {
			return ""
		}
		return parts[0].(map[string]any)["text"].(string)
	}
	all := get("")
	if all.Object != "list" || len(all.Data) != 3 || text(all.Data[0]) != "three" || all.HasMore || *all.FirstID != all.Data[0]["id"] || *all.LastID != all.Data[2]["id"] {
		t.Errorf("default (desc) list = %+v", all)
	}
	first := get("?order=asc&limit=2")
	if len(first.Data) != 2 || text(first.Data[0]) != "one" || !first.HasMore {
		t.Errorf("asc, limit 2 = %+v", first)
	}
	rest := get("?order=asc&after=" + *first.LastID)
	if len(rest.Data) != 1 || text(rest.Data[0]) != "three" || rest.HasMore {
		t.Errorf("after %s = %+v", *first.LastID, rest)
	}
}

func TestResponsesRefusedByFaultsAndQuota(t *testing.T) {
	for _, fl := range []Flavour{OpenAI, Azure} {
		t.Run(string(fl), func(t *testing.T) {
			s := startSim(t, one(fl, func(d *Deployment) { d.Quota = Quota{RPM: 6} }))
			ep := s.Deployments()[0]
			body := `{"model":"chat-prod","input":"hi"}`
			if resp, b := do(t, "POST", responsesURL(ep, "responses"), body, hdrFor(ep)); resp.StatusCode != 200 {
				t.Fatalf("first: %d %s", resp.StatusCode, b)
			}
			resp, _ := do(t, "POST", responsesURL(ep, "responses"), body, hdrFor(ep))
			if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
				t.Errorf("second in the slice: %d, retry-after %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			if err := s.SetFault("d1", Fault{Mode: FaultDown}); err != nil {
				t.Fatal(err)
			}
			resp, b := do(t, "POST", responsesURL(ep, "responses"), body, hdrFor(ep))
			if resp.StatusCode != 503 {
				t.Errorf("down: %d %s, want 503", resp.StatusCode, b)
			}
			resp, _ = do(t, "GET", responsesURL(ep, "responses/resp_x"), "", hdrFor(ep))
			if resp.StatusCode != 503 {
				t.Errorf("down, GET: %d, want 503", resp.StatusCode)
			}
			if st := s.Stats()["d1"]; st.Calls != 4 || st.Answered != 1 || st.Refused != 1 || st.Errors != 2 {
				t.Errorf("stats = %+v", st)
			}
		})
	}
}

func TestResponsesKeyCheck(t *testing.T) {
	s := startSim(t, one(OpenAI, func(d *Deployment) { d.Key = "right" }))
	ep := s.Deployments()[0]
	resp, b := do(t, "POST", ep.URL+"/responses", `{"model":"chat-prod","input":"hi"}`, map[string]string{"Authorization": "Bearer wrong"})
	if resp.StatusCode != 401 || !strings.Contains(string(b), "invalid_api_key") {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}

func TestResponsesStreamFaultsAndFilter(t *testing.T) {
	stream := `{"model":"chat-prod","input":"hi","stream":true}`
	tests := []struct {
		name       string
		fault      string
		body       string
		wantStatus int
		wantCut    bool
		wantEvents int    // `event:` lines seen; -1 to skip
		wantBody   string // a substring of the body
		notInBody  string
	}{
		{"drop_stream", `{"mode":"drop_stream"}`, stream, 200, true, 3, "response.created", "response.completed"},
		{"truncate_stream", `{"mode":"truncate_stream","after":5}`, stream, 200, false, 5, "response.output_text.delta", "response.completed"},
		{"blocked prompt", "", `{"model":"chat-prod","input":"trigger-content-filter"}`, 400, false, -1, "invalid_prompt", ""},
		{"filtered reply", "", `{"model":"chat-prod","input":"trigger-filtered-reply"}`, 200, false, -1, `"incomplete_details":{"reason":"content_filter"}`, ""},
		{"slow answers late but whole", `{"mode":"slow","factor":3}`, `{"model":"chat-prod","input":"hi"}`, 200, false, -1, `"status":"completed"`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, one(OpenAI, nil))
			ep := s.Deployments()[0]
			if tc.fault != "" {
				setFaultHTTP(t, s, "d1", tc.fault)
			}
			resp, err := noKeepAlive.Post(ep.URL+"/responses", "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if cut := errors.Is(err, io.ErrUnexpectedEOF); cut != tc.wantCut {
				t.Errorf("read err = %v, want cut %v", err, tc.wantCut)
			}
			n := len(eventNames(string(b)))
			if resp.StatusCode != tc.wantStatus || (tc.wantEvents >= 0 && n != tc.wantEvents) ||
				!strings.Contains(string(b), tc.wantBody) || (tc.notInBody != "" && strings.Contains(string(b), tc.notInBody)) {
				t.Errorf("%d, %d events:\n%s", resp.StatusCode, n, b)
			}
		})
	}
}

func TestResponsesSameSeedSameObjects(t *testing.T) {
	run := func(seed int64) (id, text, fileID string) {
		cfg := one(OpenAI, nil)
		cfg.Seed = seed
		s := startSim(t, cfg)
		ep := s.Deployments()[0]
		_, b := do(t, "POST", ep.URL+"/responses", `{"model":"chat-prod","input":"hi"}`, nil)
		var r struct {
			ID     string
			Output []struct {
				Content []struct{ Text string }
			}
		}
		if err := json.Unmarshal(b, &r); err != nil || len(r.Output) == 0 {
			t.Fatalf("%s", b)
		}
		_, fb := postMultipart(t, ep, ep.URL+"/files", map[string]string{"purpose": "batch"}, "file", "a.jsonl", []byte("{}"))
		var f struct{ ID string }
		_ = json.Unmarshal(fb, &f)
		return r.ID, r.Output[0].Content[0].Text, f.ID
	}
	id1, text1, file1 := run(5)
	id2, text2, file2 := run(5)
	if id1 != id2 || text1 != text2 || file1 != file2 {
		t.Errorf("same seed, different objects: %s %q %s / %s %q %s", id1, text1, file1, id2, text2, file2)
	}
	if id3, _, _ := run(6); id3 == id1 {
		t.Errorf("another seed gave the same id %s", id3)
	}
}

func TestResponsesGetStreamWaitsOnTheClock(t *testing.T) {
	clk := fakeclock.New()
	s := startSim(t, one(OpenAI, func(d *Deployment) { d.Latency = Latency{Median: 2 * time.Second} }), WithClock(clk))
	ep := s.Deployments()[0]
	client := responsesClient(ep)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := respParams(ep, "later")
	p.Background = openai.Bool(true)
	bg, err := client.Responses.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		types []string
		text  string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		stream := client.Responses.GetStreaming(ctx, bg.ID, responses.ResponseGetParams{StartingAfter: openai.Int(1)})
		var r result
		for stream.Next() {
			ev := stream.Current()
			r.types = append(r.types, ev.Type)
			if ev.Type == "response.completed" {
				r.text = ev.Response.OutputText()
			}
		}
		r.err = stream.Err()
		done <- r
	}()
	// The GET waits on a timer for the response to complete.
	if err := clk.BlockUntilTimer(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	r := <-done
	got, err := client.Responses.Get(ctx, bg.ID, responses.ResponseGetParams{})
	if r.err != nil || err != nil || len(r.types) == 0 || r.types[0] != "response.output_item.added" || r.text == "" || r.text != got.OutputText() {
		t.Errorf("stream after seq 1: %v %v, text %q (GET says %q), err %v / %v", r.types, len(r.types), r.text, got.OutputText(), r.err, err)
	}

	resp, b := do(t, "GET", ep.URL+"/responses/"+bg.ID+"?stream=true&starting_after=x", "", nil)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "starting_after") {
		t.Errorf("bad starting_after: %d %s", resp.StatusCode, b)
	}
}
