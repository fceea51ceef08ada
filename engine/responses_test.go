package engine

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/sim"
)

func responseParams(input string) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:           "chat-prod",
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String(input)},
		MaxOutputTokens: openai.Int(256),
	}
}

// TestResponsesThroughGateway drives the Responses API through the gateway
// with the official SDK, plain and streamed, to each provider: natively to
// Azure, OpenAI and an OpenAI-compatible server, through chat to Anthropic
// and Gemini. The id names the backend that answered.
func TestResponsesThroughGateway(t *testing.T) {
	for _, name := range []string{"aoai-weu", "openai", "local", "claude", "gemini"} {
		t.Run(name, func(t *testing.T) {
			e := startProviders(t, []string{name}, nil, "")
			c := e.openai()
			var raw *http.Response
			r, err := c.Responses.New(t.Context(), responseParams("Hello there"), option.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			if got := raw.Header.Get(route.HeaderBackend); got != name {
				t.Errorf("served by %q, want %q", got, name)
			}
			if r.OutputText() == "" || r.Status != "completed" {
				t.Errorf("status %q text %q", r.Status, r.OutputText())
			}
			if owner, _, ok := route.UntagID(r.ID); !ok || owner != name {
				t.Errorf("id %q names owner %q, want %q", r.ID, owner, name)
			}

			stream := c.Responses.NewStreaming(t.Context(), responseParams("Stream please"), option.WithResponseInto(&raw))
			var text, doneID string
			for stream.Next() {
				ev := stream.Current()
				switch ev.Type {
				case "response.output_text.delta":
					text += ev.Delta
				case "response.completed":
					doneID = ev.Response.ID
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if text == "" || doneID == "" {
				t.Fatalf("stream: text %q, completed id %q", text, doneID)
			}
			if owner, _, ok := route.UntagID(doneID); !ok || owner != name {
				t.Errorf("streamed id %q names owner %q, want %q", doneID, owner, name)
			}
		})
	}
}

// TestResponsesFailoverBeforeTheFirstEvent: a Responses call fails over
// like chat when the first member is down, streamed too.
func TestResponsesFailoverBeforeTheFirstEvent(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu", "claude"}, nil, "")
	e.fault(t, "aoai-weu", "down")
	c := e.openai()
	var raw *http.Response
	r, err := c.Responses.New(t.Context(), responseParams("Hello"), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get(route.HeaderBackend) != "claude" || raw.Header.Get(route.HeaderFailover) != "true" || r.OutputText() == "" {
		t.Fatalf("backend %q failover %q text %q", raw.Header.Get(route.HeaderBackend), raw.Header.Get(route.HeaderFailover), r.OutputText())
	}
}

// TestResponsesStateStaysWithItsOwner: a follow-up naming a previous
// response, and calls on a stored response, go to the backend that made
// it, whichever member the pool would pick; when that backend is benched
// they fail with owner_unavailable naming it, and never reach another.
func TestResponsesStateStaysWithItsOwner(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu", "openai"}, nil, "")
	c := e.openai()
	ctx := t.Context()
	bench := func(name string) {
		e.engine.Backends[name].Breaker.Force(breaker.Open, time.Now().Add(time.Hour), breaker.KindManual, "test")
	}
	unbench := func(name string) {
		e.engine.Backends[name].Breaker.Force(breaker.Closed, time.Time{}, breaker.KindManual, "test")
	}
	served := func(raw *http.Response) string { return raw.Header.Get(route.HeaderBackend) }

	var raw *http.Response
	r1, err := c.Responses.New(ctx, responseParams("first"), option.WithResponseInto(&raw))
	if err != nil || served(raw) != "aoai-weu" {
		t.Fatalf("r1: %v, served by %q", err, served(raw))
	}
	bench("aoai-weu")
	r2, err := c.Responses.New(ctx, responseParams("second"), option.WithResponseInto(&raw))
	if err != nil || served(raw) != "openai" {
		t.Fatalf("r2: %v, served by %q", err, served(raw))
	}
	unbench("aoai-weu")

	// aoai-weu is the pool's first choice again, but r2 lives on openai.
	p := responseParams("and then?")
	p.PreviousResponseID = openai.String(r2.ID)
	r3, err := c.Responses.New(ctx, p, option.WithResponseInto(&raw))
	if err != nil || served(raw) != "openai" {
		t.Fatalf("follow-up of r2: %v, served by %q, want openai", err, served(raw))
	}
	if owner, _, _ := route.UntagID(r3.ID); owner != "openai" {
		t.Fatalf("r3 id %q", r3.ID)
	}

	// Retrieval of r1 from aoai-weu, with its peer benched.
	bench("openai")
	got, err := c.Responses.Get(ctx, r1.ID, responses.ResponseGetParams{}, option.WithResponseInto(&raw))
	if err != nil || got.ID != r1.ID || served(raw) != "aoai-weu" {
		t.Fatalf("get r1: %v, id %q, served by %q", err, got.ID, served(raw))
	}
	items, err := c.Responses.InputItems.List(ctx, r1.ID, responses.InputItemListParams{})
	if err != nil || len(items.Data) == 0 {
		t.Fatalf("input items of r1: %v %+v", err, items)
	}

	// The owner benched: a clear error naming it, no answer from another.
	p.PreviousResponseID = openai.String(r3.ID)
	_, err = c.Responses.New(ctx, p, option.WithResponseInto(&raw))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != "owner_unavailable" || !strings.Contains(apiErr.Message, "openai") {
		t.Fatalf("follow-up with its owner benched: %v", err)
	}
	if raw.Header.Get("Retry-After") == "" {
		t.Errorf("no Retry-After on owner_unavailable")
	}
	if _, err := c.Responses.Get(ctx, r3.ID, responses.ResponseGetParams{}); !errors.As(err, &apiErr) || apiErr.Code != "owner_unavailable" {
		t.Fatalf("get with its owner benched: %v", err)
	}

	// Deleted on its owner: gone, and the owner is not benched for it.
	if err := c.Responses.Delete(ctx, r1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Responses.Get(ctx, r1.ID, responses.ResponseGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("get after delete: %v", err)
	}
	if s := e.engine.Backends["aoai-weu"].Breaker.Snapshot(); s.State != breaker.Closed {
		t.Fatalf("a 404 for a deleted response benched its owner: %v", s.State)
	}

	// An id the gateway never returned.
	if _, err := c.Responses.Get(ctx, "resp_0123456789", responses.ResponseGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "not_found" {
		t.Fatalf("untagged id: %v", err)
	}
}

// TestResponsesAPIFalseTranslates: a backend configured without the
// Responses API gets Responses calls as chat completions, and the caller
// still gets a Responses answer; with the API, the backend's own
// response comes back.
func TestResponsesAPIFalseTranslates(t *testing.T) {
	for _, tt := range []struct {
		name       string
		mod        func(string) string
		wantNative bool
	}{
		{"default: native", nil, true},
		{"responses_api: false: through chat", func(y string) string {
			return strings.Replace(y, "{name: local, type: openai_compatible,", "{name: local, type: openai_compatible, responses_api: false,", 1)
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := startProvidersWith(t, []string{"local"}, nil, "", tt.mod)
			c := e.openai()
			r, err := c.Responses.New(t.Context(), responseParams("Hello"))
			if err != nil {
				t.Fatal(err)
			}
			_, orig, _ := route.UntagID(r.ID)
			if _, native := e.sim.ObjectOwner(orig); native != tt.wantNative || r.OutputText() == "" {
				t.Fatalf("id %q made by the backend: %v, want %v; text %q", orig, native, tt.wantNative, r.OutputText())
			}
		})
	}
}

var weatherFn = responses.ToolParamOfFunction("get_weather", map[string]any{
	"type":       "object",
	"properties": map[string]any{"city": map[string]any{"type": "string"}},
	"required":   []string{"city"},
}, false)

// TestResponsesToolsAcrossAFailover is the failover-safe way to hold a
// Responses conversation: store false, the whole context sent each turn.
// The tool call comes from Azure natively; Azure is then benched, and the
// turn with the tool's output is answered by Anthropic through chat.
func TestResponsesToolsAcrossAFailover(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu", "claude"}, nil, "")
	c := e.openai()
	ctx := t.Context()
	user := responses.ResponseInputItemParamOfMessage("Weather in Paris?", responses.EasyInputMessageRoleUser)
	p := responses.ResponseNewParams{
		Model: "chat-prod", Store: openai.Bool(false), MaxOutputTokens: openai.Int(256),
		Tools: []responses.ToolUnionParam{weatherFn},
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{user}},
	}
	var raw *http.Response
	r1, err := c.Responses.New(ctx, p, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	var call *responses.ResponseFunctionToolCall
	for _, it := range r1.Output {
		if fc, ok := it.AsAny().(responses.ResponseFunctionToolCall); ok {
			call = &fc
		}
	}
	if call == nil || call.Name != "get_weather" || raw.Header.Get(route.HeaderBackend) != "aoai-weu" {
		t.Fatalf("turn 1 from %q: %+v", raw.Header.Get(route.HeaderBackend), r1.Output)
	}

	e.engine.Backends["aoai-weu"].Breaker.Force(breaker.Open, time.Now().Add(time.Hour), breaker.KindManual, "test")
	out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"temp_c":21}`)
	out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
	p.Input.OfInputItemList = responses.ResponseInputParam{user,
		responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name), out}
	r2, err := c.Responses.New(ctx, p, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get(route.HeaderBackend) != "claude" || r2.OutputText() == "" {
		t.Fatalf("turn 2 from %q: %+v", raw.Header.Get(route.HeaderBackend), r2.Output)
	}
}

// TestResponsesStructuredOutput: a json_schema text format reaches a
// native member as it is and Gemini through chat; Anthropic, which cannot
// honour it, is skipped with the reason.
func TestResponsesStructuredOutput(t *testing.T) {
	p := responseParams("Give me a city")
	p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigParamOfJSONSchema("city", map[string]any{
		"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"},
	})}
	for _, tt := range []struct {
		order []string
		want  string
	}{
		{[]string{"openai"}, "openai"},
		{[]string{"claude", "gemini"}, "gemini"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			e := startProviders(t, tt.order, nil, "")
			var raw *http.Response
			c := e.openai()
			r, err := c.Responses.New(t.Context(), p, option.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			if raw.Header.Get(route.HeaderBackend) != tt.want || r.OutputText() == "" {
				t.Fatalf("from %q: %q", raw.Header.Get(route.HeaderBackend), r.OutputText())
			}
		})
	}
}

// TestBackgroundResponsesPolledOnTheirOwner: a background response is
// polled, and cancelled, on the region that runs it, through its peer's
// failure, with the simulated regions on a fake clock.
func TestBackgroundResponsesPolledOnTheirOwner(t *testing.T) {
	clk, s, sv, _ := simRegions(t, "{failures: 3, window: 30s, trip: 30s}", func(d *sim.Deployment) { d.Latency.Median = 2 * time.Second })
	c := openai.NewClient(option.WithBaseURL(sv.url+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	ctx := t.Context()
	p := responseParams("Take your time")
	p.Background = openai.Bool(true)
	var raw *http.Response
	r, err := c.Responses.New(ctx, p, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	owner := raw.Header.Get(route.HeaderBackend)
	if r.Status != "queued" && r.Status != "in_progress" {
		t.Fatalf("background response status %q", r.Status)
	}
	for _, other := range []string{"uksouth", "swedencentral", "westeurope"} {
		if other != owner {
			if err := s.SetFault(other, sim.Fault{Mode: sim.FaultMode("down")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	clk.Advance(time.Minute)
	got, err := c.Responses.Get(ctx, r.ID, responses.ResponseGetParams{}, option.WithResponseInto(&raw))
	if err != nil || got.Status != "completed" || raw.Header.Get(route.HeaderBackend) != owner {
		t.Fatalf("polled: %v, status %q from %q (owner %q)", err, got.Status, raw.Header.Get(route.HeaderBackend), owner)
	}

	r2, err := c.Responses.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	cancelled, err := c.Responses.Cancel(ctx, r2.ID)
	if err != nil || cancelled.Status != "cancelled" || cancelled.ID != r2.ID {
		t.Fatalf("cancel: %v, %+v", err, cancelled)
	}
}

// TestResponsesWithTheAzureSDKShape: the openai-go Azure option calls the
// gateway the way it calls an Azure resource (/openai/responses with an
// api-version, deployment paths for chat); both are served, and a stored
// response is read back the same way.
func TestResponsesWithTheAzureSDKShape(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu", "openai"}, nil, "")
	c := openai.NewClient(azure.WithEndpoint(e.url, "2025-04-01-preview"), azure.WithAPIKey("unused"), azure.WithUnsafeAllowHTTP(), option.WithMaxRetries(0))
	var raw *http.Response
	r, err := c.Responses.New(t.Context(), responseParams("Hello from Azure"), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if raw.Request.URL.Path != "/openai/responses" || r.OutputText() == "" {
		t.Fatalf("path %s, text %q", raw.Request.URL.Path, r.OutputText())
	}
	got, err := c.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{})
	if err != nil || got.ID != r.ID {
		t.Fatalf("get: %v %+v", err, got)
	}
	chat, err := c.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "chat-prod",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if err != nil || len(chat.Choices) == 0 {
		t.Fatalf("chat: %v", err)
	}
}
