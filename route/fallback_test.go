package route_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/route"
)

// poolEnv is newEnvClock for a pool named name.
func poolEnv(t *testing.T, clk *fakeclock.Clock, name string, specs ...memberSpec) *env {
	t.Helper()
	e := newEnvClock(t, clk, specs...)
	e.pool.Name = name
	return e
}

var never = breaker.Settings{Failures: 1000}

func failing(name string) memberSpec {
	return memberSpec{name: name, priority: 1, script: []step{status(503)}, settings: never}
}

func answering(name string) memberSpec {
	return memberSpec{name: name, priority: 1, script: []step{answer(name)}}
}

// asAnthropic and asGemini make a member's backend speak that provider's
// API at the same upstream.
func asAnthropic(b *route.Backend) {
	b.Provider = &route.Anthropic{BaseURL: apiRoot(b), APIKey: "ak-" + b.Name}
}

func asGemini(b *route.Backend) {
	b.Provider = &route.Gemini{BaseURL: apiRoot(b), APIKey: "gk-" + b.Name}
}

func apiRoot(b *route.Backend) *url.URL {
	u := *b.Provider.(*route.OpenAI).BaseURL
	u.Path = ""
	return &u
}

// doReq sends body for op to p and reads the answer.
func doReq(t *testing.T, p *route.Pool, op route.Operation, body string) (*http.Response, *route.Report, string) {
	t.Helper()
	r, err := route.NewRequest(op, []byte(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, rep, err := p.Do(t.Context(), r)
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, rep, string(b)
}

func TestFallbackWhenThePoolIsExhausted(t *testing.T) {
	tests := []struct {
		name string
		// primary is the pool's state: its members fail, or are benched
		// or drained.
		primary     []memberSpec
		prepare     func(*testing.T, *env)
		wantPrimary int // attempts in the primary
	}{
		{"every member fails", []memberSpec{failing("weu"), failing("sec")}, nil, 2},
		{"every member drained", []memberSpec{answering("weu"), answering("sec")}, func(t *testing.T, e *env) {
			e.backends["weu"].Drain()
			e.backends["sec"].Drain()
		}, 0},
		{"every member benched", []memberSpec{
			{name: "weu", priority: 1, script: []step{status(503)}, settings: breaker.Settings{Failures: 1}},
		}, func(t *testing.T, e *env) {
			e.do(t, chatBody) // trips weu's breaker
		}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := fakeclock.New()
			a := poolEnv(t, clk, "chat-prod", tc.primary...)
			b := poolEnv(t, clk, "chat-spare", answering("spare"))
			b.pool.Members[0].Deployment = "gpt-4o-spare"
			if tc.prepare != nil {
				tc.prepare(t, a)
			}
			a.pool.Fallback = b.pool
			primaryCalls := a.calls()

			resp, rep, body := doReq(t, a.pool, route.ChatCompletions, chatBody)
			if resp.StatusCode != 200 || !strings.Contains(body, "hello from spare") {
				t.Fatalf("status %d body %s", resp.StatusCode, body)
			}
			if got := resp.Header.Get(route.HeaderFallback); got != "chat-prod" {
				t.Fatalf("%s %q, want chat-prod", route.HeaderFallback, got)
			}
			if got := resp.Header.Get(route.HeaderBackend); got != "spare" {
				t.Fatalf("served by %q", got)
			}
			if rep.Pool != "chat-spare" || rep.FallbackFrom != "chat-prod" || rep.FallbackCause != route.FallbackExhausted ||
				rep.Served == nil || rep.Prior == nil || rep.Prior.Pool != "chat-prod" || len(rep.Prior.Attempts) != tc.wantPrimary {
				t.Fatalf("report %+v, prior %+v", rep, rep.Prior)
			}
			if n := a.calls() - primaryCalls; n != tc.wantPrimary {
				t.Fatalf("%d calls to the primary, want %d", n, tc.wantPrimary)
			}
			// The fallback's own model name applies.
			var sent struct{ Model string }
			if err := json.Unmarshal([]byte(b.ups["spare"].Body(0)), &sent); err != nil || sent.Model != "gpt-4o-spare" {
				t.Fatalf("the fallback was asked for %q (%v)", sent.Model, err)
			}
			ev := a.events.kinds(route.EventFallback)
			if len(ev) != 1 || ev[0].Pool != "chat-prod" || ev[0].From != "chat-prod" || ev[0].To != "chat-spare" || ev[0].Cause != route.FallbackExhausted {
				t.Fatalf("fallback events %+v", ev)
			}
		})
	}
}

func TestNoFallbackWhenThePoolAnswers(t *testing.T) {
	clk := fakeclock.New()
	a := poolEnv(t, clk, "chat-prod", failing("weu"), answering("sec"))
	b := poolEnv(t, clk, "chat-spare", answering("spare"))
	a.pool.Fallback, a.pool.ContextFallback = b.pool, b.pool
	resp, rep, _ := doReq(t, a.pool, route.ChatCompletions, chatBody)
	if resp.StatusCode != 200 || resp.Header.Get(route.HeaderBackend) != "sec" || resp.Header.Get(route.HeaderFallback) != "" ||
		rep.FallbackFrom != "" || rep.Prior != nil {
		t.Fatalf("status %d, headers %v, report %+v", resp.StatusCode, resp.Header, rep)
	}
	if n := b.calls(); n != 0 {
		t.Fatalf("%d calls to the fallback", n)
	}
}

// Context-window refusals as each provider sends them.
const (
	openAIContext    = `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	azureContext     = `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	responsesContext = `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`
	anthropicContext = `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"},"request_id":"req_011"}`
	anthropicLimit   = `{"type":"error","error":{"type":"invalid_request_error","message":"input length and ` + "`max_tokens`" + ` exceed context limit: 188240 + 21333 > 200000, decrease input length or ` + "`max_tokens`" + ` and try again"}}`
	geminiContext    = `{"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`
	contentFilter    = `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true,"severity":"high"}}}}}`
	// A filter refusal that also mentions a context length must still not
	// fall back.
	contentFilterContext = `{"error":{"message":"maximum context length: filtered","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation"}}}`
	otherBadRequest      = `{"error":{"message":"Invalid value for 'temperature': must be at most 2.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`
)

const anthropicBody = `{"model":"chat-prod","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`

func TestContextFallback(t *testing.T) {
	tests := []struct {
		name   string
		op     route.Operation
		body   string
		tune   func(*route.Backend)
		status int
		refuse string
		// fallback: the context fallback answers; else the client gets
		// the 400.
		fallback bool
	}{
		{"openai context_length_exceeded", route.ChatCompletions, chatBody, nil, 400, openAIContext, true},
		{"azure context_length_exceeded", route.ChatCompletions, chatBody, nil, 400, azureContext, true},
		{"openai responses context window", route.ChatCompletions, chatBody, nil, 400, responsesContext, true},
		{"anthropic prompt is too long, translated for an openai client", route.ChatCompletions, chatBody, asAnthropic, 400, anthropicContext, true},
		{"anthropic prompt is too long, to an anthropic client", route.Messages, anthropicBody, asAnthropic, 400, anthropicContext, true},
		{"anthropic input and max_tokens exceed the limit", route.ChatCompletions, chatBody, asAnthropic, 400, anthropicLimit, true},
		{"gemini input token count", route.ChatCompletions, chatBody, asGemini, 400, geminiContext, true},
		{"openai context to an anthropic client, code lost in translation", route.Messages, anthropicBody, nil, 400, openAIContext, true},
		{"azure content filter", route.ChatCompletions, chatBody, nil, 400, contentFilter, false},
		{"azure content filter to an anthropic client", route.Messages, anthropicBody, nil, 400, contentFilter, false},
		{"content filter naming a context length", route.ChatCompletions, chatBody, nil, 400, contentFilterContext, false},
		{"another 400", route.ChatCompletions, chatBody, nil, 400, otherBadRequest, false},
		{"a 413", route.ChatCompletions, chatBody, nil, 413, `{"error":{"message":"maximum context length exceeded","type":"invalid_request_error","code":"context_length_exceeded"}}`, false},
		{"a 422", route.ChatCompletions, chatBody, nil, 422, openAIContext, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := fakeclock.New()
			a := poolEnv(t, clk, "chat-8k", memberSpec{name: "small", priority: 1, script: []step{raw(tc.status, tc.refuse)}, tune: tc.tune})
			big := poolEnv(t, clk, "chat-1m", answering("large"))
			big.pool.Members[0].Deployment = "gpt-4.1"
			spare := poolEnv(t, clk, "chat-spare", answering("spare"))
			a.pool.ContextFallback, a.pool.Fallback = big.pool, spare.pool

			resp, rep, body := doReq(t, a.pool, tc.op, tc.body)
			if spare.calls() != 0 {
				t.Fatalf("a refusal went to the exhaustion fallback")
			}
			if !tc.fallback {
				if resp.StatusCode != tc.status || resp.Header.Get(route.HeaderFallback) != "" || rep.FallbackFrom != "" || big.calls() != 0 {
					t.Fatalf("status %d, %s %q, report %+v, %d calls to the context fallback", resp.StatusCode, route.HeaderFallback, resp.Header.Get(route.HeaderFallback), rep, big.calls())
				}
				if tc.op == route.ChatCompletions && tc.tune == nil && body != tc.refuse {
					t.Fatalf("body %s, want the backend's own %s", body, tc.refuse)
				}
				return
			}
			if resp.StatusCode != 200 || resp.Header.Get(route.HeaderBackend) != "large" || resp.Header.Get(route.HeaderFallback) != "chat-8k" {
				t.Fatalf("status %d headers %v body %s", resp.StatusCode, resp.Header, body)
			}
			if rep.Pool != "chat-1m" || rep.FallbackFrom != "chat-8k" || rep.FallbackCause != route.FallbackContextWindow ||
				rep.Prior == nil || len(rep.Prior.Attempts) != 1 || rep.Prior.Attempts[0].Status != 400 {
				t.Fatalf("report %+v prior %+v", rep, rep.Prior)
			}
			if tc.op == route.Messages && !strings.Contains(body, `"type":"message"`) {
				t.Fatalf("an anthropic client got %s", body)
			}
			var sent struct{ Model string }
			if err := json.Unmarshal([]byte(big.ups["large"].Body(0)), &sent); err != nil || sent.Model != "gpt-4.1" {
				t.Fatalf("the context fallback was asked for %q (%v)", sent.Model, err)
			}
		})
	}
}

func TestContextRefusalWithoutContextFallback(t *testing.T) {
	clk := fakeclock.New()
	a := poolEnv(t, clk, "chat-8k", memberSpec{name: "small", priority: 1, script: []step{raw(400, openAIContext)}})
	spare := poolEnv(t, clk, "chat-spare", answering("spare"))
	a.pool.Fallback = spare.pool // for exhaustion only
	resp, _, body := doReq(t, a.pool, route.ChatCompletions, chatBody)
	if resp.StatusCode != 400 || body != openAIContext || spare.calls() != 0 {
		t.Fatalf("status %d body %s, %d calls to the fallback", resp.StatusCode, body, spare.calls())
	}
}

func TestFallbackChainDepth(t *testing.T) {
	clk := fakeclock.New()
	names := []string{"p0", "p1", "p2", "p3", "p4"}
	var envs []*env
	for _, n := range names {
		envs = append(envs, poolEnv(t, clk, n, failing(n+"-a")))
	}
	for i := 0; i+1 < len(envs); i++ {
		envs[i].pool.Fallback = envs[i+1].pool
	}
	resp, rep, _ := doReq(t, envs[0].pool, route.ChatCompletions, chatBody)
	if resp.StatusCode != 503 || resp.Header.Get(route.HeaderFallback) != "p2" || rep.Pool != "p3" {
		t.Fatalf("status %d, %s %q, pool %s", resp.StatusCode, route.HeaderFallback, resp.Header.Get(route.HeaderFallback), rep.Pool)
	}
	for i, e := range envs {
		want := 1
		if i > route.MaxFallbackDepth {
			want = 0
		}
		if n := e.calls(); n != want {
			t.Errorf("%s: %d calls, want %d", names[i], n, want)
		}
	}
	var chain []string
	for r := rep; r != nil; r = r.Prior {
		chain = append(chain, r.Pool+"<"+r.FallbackFrom)
	}
	if got := strings.Join(chain, " "); got != "p3<p2 p2<p1 p1<p0 p0<" {
		t.Fatalf("chain %s", got)
	}
}

func TestFallbackCycleEnds(t *testing.T) {
	tests := []struct {
		name  string
		first step // pool A's member's answer
		link  func(a, b *route.Pool)
		calls [2]int
		pool  string // the pool whose answer the client gets
	}{
		{"A to B to A", status(503), func(a, b *route.Pool) { a.Fallback, b.Fallback = b, a }, [2]int{1, 1}, "B"},
		{"A to itself", status(503), func(a, b *route.Pool) { a.Fallback = a }, [2]int{1, 0}, "A"},
		{"A context to B, B exhausted back to A", raw(400, openAIContext), func(a, b *route.Pool) { a.ContextFallback, b.Fallback = b, a }, [2]int{1, 1}, "B"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := fakeclock.New()
			a := poolEnv(t, clk, "A", memberSpec{name: "a", priority: 1, script: []step{tc.first}, settings: never})
			b := poolEnv(t, clk, "B", failing("b"))
			tc.link(a.pool, b.pool)
			resp, rep, _ := doReq(t, a.pool, route.ChatCompletions, chatBody)
			if rep.Pool != tc.pool {
				t.Fatalf("answered by pool %s, want %s", rep.Pool, tc.pool)
			}
			if got := [2]int{a.calls(), b.calls()}; got != tc.calls {
				t.Fatalf("calls %v, want %v (status %d)", got, tc.calls, resp.StatusCode)
			}
		})
	}
}

func TestNoFallbackForAnOwnersRequest(t *testing.T) {
	clk := fakeclock.New()
	a := poolEnv(t, clk, "chat-prod", failing("weu"))
	spare := poolEnv(t, clk, "chat-spare", answering("spare"))
	a.pool.Fallback = spare.pool
	r, err := route.NewRequest(route.ChatCompletions, []byte(chatBody), nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Owner = "weu"
	_, _, err = a.pool.Do(t.Context(), r)
	var oe *route.OwnerUnavailableError
	if !errors.As(err, &oe) || spare.calls() != 0 {
		t.Fatalf("err %v, %d calls to the fallback", err, spare.calls())
	}
}

func TestNoFallbackWhenTheClientWentAway(t *testing.T) {
	clk := fakeclock.New()
	a := poolEnv(t, clk, "chat-prod", failing("weu"))
	spare := poolEnv(t, clk, "chat-spare", answering("spare"))
	a.pool.Fallback = spare.pool
	r, _ := route.NewRequest(route.ChatCompletions, []byte(chatBody), nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := a.pool.Do(ctx, r); !errors.Is(err, context.Canceled) || spare.calls() != 0 {
		t.Fatalf("err %v, %d calls to the fallback", err, spare.calls())
	}
}

func TestFallbackAfterTheRetryBudgetRefuses(t *testing.T) {
	clk := fakeclock.New()
	a := poolEnv(t, clk, "chat-prod", failing("weu"), failing("sec"))
	a.pool.RetryBudget = &route.RetryBudget{Ratio: -1, MinPerSecond: -1}
	spare := poolEnv(t, clk, "chat-spare", answering("spare"))
	a.pool.Fallback = spare.pool
	resp, rep, _ := doReq(t, a.pool, route.ChatCompletions, chatBody)
	if resp.StatusCode != 200 || !rep.Prior.RetryBudgetSpent || len(rep.Prior.Attempts) != 1 || a.calls() != 1 {
		t.Fatalf("status %d, prior %+v, %d calls to the primary", resp.StatusCode, rep.Prior, a.calls())
	}
}
