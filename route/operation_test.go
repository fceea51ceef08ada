package route_test

// Regression tests for section 1 of issue 22: one call to an operation a
// region does not serve benched the whole pool. A failing status is
// judged at the scope it speaks of: the operation on that member, or the
// backend.

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/translate"
)

// azureNotFound is Azure's answer for a deployment that does not exist.
const azureNotFound = `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}`

// azureOpNotSupported is Azure's answer for an operation the deployment's
// model does not serve.
const azureOpNotSupported = `{"error":{"code":"OperationNotSupported","message":"The embeddings operation does not work with the specified model, gpt-4o. Please choose different model and try again."}}`

const embeddingsBody = `{"model":"chat-prod","input":"hello"}`

// lacking answers refusal to calls whose path ends with one of ops
// ("/embeddings", "/realtime"), and name's chat completion to the others.
func lacking(name string, refusal step, ops ...string) step {
	ok := answer(name)
	return func(w http.ResponseWriter, r *http.Request) {
		for _, op := range ops {
			if strings.HasSuffix(r.URL.Path, op) {
				refusal(w, r)
				return
			}
		}
		ok(w, r)
	}
}

// callsTo counts the calls u got whose path ends with suffix.
func callsTo(u *upstream, suffix string) int {
	n := 0
	for i := 0; i < u.Calls(); i++ {
		if strings.HasSuffix(strings.SplitN(u.Path(i), "?", 2)[0], suffix) {
			n++
		}
	}
	return n
}

// doOp sends body as a call of op through the pool and returns the
// answer, its report and its body.
func (e *env) doOp(t *testing.T, op route.Operation, body string) (*http.Response, *route.Report, string) {
	t.Helper()
	r, err := route.NewRequest(op, []byte(body), http.Header{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, rep, err := e.pool.Do(ctx, r)
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, rep, string(b)
}

// closedAndQuiet fails the test unless every backend's breaker is closed
// with no failure counted, no transition was seen and no backend was
// reported misconfigured.
func (e *env) closedAndQuiet(t *testing.T) {
	t.Helper()
	for name, b := range e.backends {
		if s := b.Breaker.Snapshot(); s.State != breaker.Closed || s.Failures != 0 {
			t.Fatalf("%s: breaker %v with %d failures", name, s.State, s.Failures)
		}
	}
	e.events.mu.Lock()
	trs := len(e.events.trs)
	e.events.mu.Unlock()
	if trs != 0 {
		t.Fatalf("%d breaker transitions", trs)
	}
	if evs := e.events.kinds(route.EventMisconfigured); len(evs) != 0 {
		t.Fatalf("misconfigured events %+v", evs)
	}
}

// TestUnservedOperationBenchesNoBackend is the bug: one embeddings call
// to a chat pool whose regions have no embeddings deployment (404 from
// each) benched every member as misconfigured, and the next chat calls
// got 503. Now the caller gets a clear 404 naming the operation, no
// breaker hears of it, and 30 of 30 chat calls are answered.
func TestUnservedOperationBenchesNoBackend(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{lacking("weu", raw(404, azureNotFound), "/embeddings")}},
		memberSpec{name: "sec", priority: 2, script: []step{lacking("sec", raw(404, azureNotFound), "/embeddings")}},
	)
	resp, rep, body := e.doOp(t, route.Embeddings, embeddingsBody)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status %d, want 404: %s", resp.StatusCode, body)
	}
	apiErr := decodeError(t, body)
	if apiErr.Error.Code != "operation_not_supported" || !strings.Contains(apiErr.Error.Message, "embeddings") {
		t.Fatalf("error %+v, want operation_not_supported naming embeddings", apiErr.Error)
	}
	if resp.Header.Get("Retry-After") != "" {
		t.Fatalf("Retry-After %q on an operation no member serves", resp.Header.Get("Retry-After"))
	}
	if len(rep.Attempts) != 2 || rep.Attempts[0].Reason != route.ReasonOperationUnsupported || rep.Attempts[1].Reason != route.ReasonOperationUnsupported {
		t.Fatalf("attempts %+v, want both members asked, each lacking the operation", rep.Attempts)
	}
	e.closedAndQuiet(t)
	if evs := e.events.kinds(route.EventOperationUnsupported); len(evs) != 2 || evs[0].Op != route.Embeddings {
		t.Fatalf("operation-unsupported events %+v, want one per member", evs)
	}
	for i := 0; i < 30; i++ {
		resp, rep, body := e.do(t, chatBody)
		if resp.StatusCode != 200 || resp.Header.Get(route.HeaderBackend) != "weu" || rep.Failover {
			t.Fatalf("chat call %d: %d from %q (failover %v): %s", i+1, resp.StatusCode, resp.Header.Get(route.HeaderBackend), rep.Failover, body)
		}
	}
	e.closedAndQuiet(t)
}

// TestRepeatedUnservedCallBenchesNothing: a key holder repeating a call
// of an operation no member serves costs one upstream call per member per
// UnsupportedHold and benches nothing; chat calls in between are all
// answered by the first member.
func TestRepeatedUnservedCallBenchesNothing(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{lacking("weu", raw(404, azureNotFound), "/embeddings")}},
		memberSpec{name: "sec", priority: 2, script: []step{lacking("sec", raw(404, azureNotFound), "/embeddings")}},
	)
	for i := 0; i < 50; i++ {
		if resp, _, body := e.doOp(t, route.Embeddings, embeddingsBody); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("embeddings call %d: %d %s", i+1, resp.StatusCode, body)
		}
		if resp, _, _ := e.do(t, chatBody); resp.StatusCode != 200 || resp.Header.Get(route.HeaderBackend) != "weu" {
			t.Fatalf("chat call %d: %d from %q", i+1, resp.StatusCode, resp.Header.Get(route.HeaderBackend))
		}
		e.clock.Advance(400 * time.Millisecond)
	}
	for _, name := range []string{"weu", "sec"} {
		if n := callsTo(e.ups[name], "/embeddings"); n != 1 {
			t.Fatalf("%s got %d embeddings calls in %s, want 1", name, n, 50*400*time.Millisecond)
		}
	}
	e.closedAndQuiet(t)
	e.clock.Advance(route.UnsupportedHold)
	_, rep, _ := e.doOp(t, route.Embeddings, embeddingsBody)
	if len(rep.Attempts) != 2 {
		t.Fatalf("after the hold: attempts %+v, want each member asked again", rep.Attempts)
	}
	e.closedAndQuiet(t)
}

// TestUnservedOperationFailsOverToAMemberThatServesIt: the first member
// lacks embeddings, the second serves them: the call is answered there,
// and later calls go there at once, without a failover (the first member
// is not the one an embeddings call would go to).
func TestUnservedOperationFailsOverToAMemberThatServesIt(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{lacking("weu", raw(404, azureNotFound), "/embeddings")}},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	resp, rep, body := e.doOp(t, route.Embeddings, embeddingsBody)
	if resp.StatusCode != 200 || resp.Header.Get(route.HeaderBackend) != "sec" {
		t.Fatalf("%d from %q: %s", resp.StatusCode, resp.Header.Get(route.HeaderBackend), body)
	}
	if rep.Failover || resp.Header.Get(route.HeaderFailover) != "false" {
		t.Fatalf("failover %v (%s from %s): the first member does not serve the operation", rep.Failover, rep.FailoverReason, rep.FailoverFrom)
	}
	resp, rep, _ = e.doOp(t, route.Embeddings, embeddingsBody)
	if resp.StatusCode != 200 || len(rep.Attempts) != 1 || rep.Attempts[0].Backend != "sec" || rep.Failover {
		t.Fatalf("second call: %d, attempts %+v, failover %v (%s)", resp.StatusCode, rep.Attempts, rep.Failover, rep.FailoverReason)
	}
	if evs := e.events.kinds(route.EventFailover); len(evs) != 0 {
		t.Fatalf("failover events %+v", evs)
	}
	if n := callsTo(e.ups["weu"], "/embeddings"); n != 1 {
		t.Fatalf("weu got %d embeddings calls, want 1", n)
	}
	if resp, _, _ := e.do(t, chatBody); resp.Header.Get(route.HeaderBackend) != "weu" {
		t.Fatalf("chat went to %q", resp.Header.Get(route.HeaderBackend))
	}
	e.closedAndQuiet(t)
}

// TestFailingStatusIsJudgedAtItsScope: which statuses bench the backend
// (its key, its chat deployment), which mark the operation on the member
// alone, and which are the caller's answer.
func TestFailingStatusIsJudgedAtItsScope(t *testing.T) {
	const forbidden = `{"error":{"message":"You are not allowed to generate embeddings from this model","type":"invalid_request_error","code":null}}`
	const badInput = `{"error":{"message":"'$.input' is invalid.","type":"invalid_request_error","code":"invalid_request_error"}}`
	tests := []struct {
		name     string
		op       route.Operation
		body     string
		fail     step
		want     route.Reason // the first member's attempt
		benched  bool
		status   int // the client's
		attempts int
	}{
		{"404 on embeddings: operation", route.Embeddings, embeddingsBody, raw(404, azureNotFound), route.ReasonOperationUnsupported, false, 200, 2},
		{"403 on embeddings: operation", route.Embeddings, embeddingsBody, raw(403, forbidden), route.ReasonOperationUnsupported, false, 200, 2},
		{"405 on embeddings: operation", route.Embeddings, embeddingsBody, status(405), route.ReasonOperationUnsupported, false, 200, 2},
		{"400 OperationNotSupported on embeddings: operation", route.Embeddings, embeddingsBody, raw(400, azureOpNotSupported), route.ReasonOperationUnsupported, false, 200, 2},
		{"404 on moderations: operation", route.Moderations, `{"model":"chat-prod","input":"hi"}`, raw(404, azureNotFound), route.ReasonOperationUnsupported, false, 200, 2},
		{"400 of another code on embeddings: the caller's", route.Embeddings, embeddingsBody, raw(400, badInput), route.ReasonOK, false, 400, 1},
		{"401 on embeddings: the key", route.Embeddings, embeddingsBody, status(401), route.ReasonMisconfigured, true, 200, 2},
		{"404 on chat: the deployment", route.ChatCompletions, chatBody, raw(404, azureNotFound), route.ReasonMisconfigured, true, 200, 2},
		{"403 on chat: the key", route.ChatCompletions, chatBody, raw(403, forbidden), route.ReasonMisconfigured, true, 200, 2},
		{"405 on chat: passed on", route.ChatCompletions, chatBody, status(405), route.ReasonOK, false, 405, 1},
		{"400 OperationNotSupported on chat: passed on", route.ChatCompletions, chatBody, raw(400, azureOpNotSupported), route.ReasonOK, false, 400, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t,
				memberSpec{name: "weu", priority: 1, script: []step{lacking("weu", tc.fail, "/"+string(tc.op))}},
				memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
			)
			resp, rep, body := e.doOp(t, tc.op, tc.body)
			if resp.StatusCode != tc.status || len(rep.Attempts) != tc.attempts || rep.Attempts[0].Reason != tc.want {
				t.Fatalf("%d, attempts %+v; want %d after %d attempts, the first %q: %s", resp.StatusCode, rep.Attempts, tc.status, tc.attempts, tc.want, body)
			}
			if s := e.backends["weu"].Breaker.Snapshot(); (s.State == breaker.Open) != tc.benched {
				t.Fatalf("weu's breaker %v, benched %v wanted", s.State, tc.benched)
			}
			if got := len(e.events.kinds(route.EventMisconfigured)); (got == 1) != tc.benched {
				t.Fatalf("%d misconfigured events, benched %v wanted", got, tc.benched)
			}
			if tc.want != route.ReasonOperationUnsupported {
				return
			}
			if resp, _, _ := e.do(t, chatBody); resp.StatusCode != 200 || resp.Header.Get(route.HeaderBackend) != "weu" {
				t.Fatalf("chat after the operation was marked: %d from %q", resp.StatusCode, resp.Header.Get(route.HeaderBackend))
			}
			if _, rep, _ := e.doOp(t, tc.op, tc.body); len(rep.Attempts) != 1 || rep.Attempts[0].Backend != "sec" {
				t.Fatalf("the marked member was asked again within the hold: %+v", rep.Attempts)
			}
			e.closedAndQuiet(t)
		})
	}
}

// TestTranslatedChatCallIsJudgedAsChat: an Anthropic client's messages
// call goes to an OpenAI-format member as a chat completion, the
// operation the member is configured for: its 404 says the deployment is
// gone, and benches the backend.
func TestTranslatedChatCallIsJudgedAsChat(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{raw(404, azureNotFound)}},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	resp, rep, body := e.doOp(t, route.Messages, `{"model":"chat-prod","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || len(rep.Attempts) != 2 || rep.Attempts[0].Reason != route.ReasonMisconfigured {
		t.Fatalf("%d, attempts %+v: %s", resp.StatusCode, rep.Attempts, body)
	}
	if s := e.backends["weu"].Breaker.Snapshot(); s.State != breaker.Open {
		t.Fatalf("weu's breaker %v after its chat deployment answered 404", s.State)
	}
}

// TestUnservedOperationAnswersInTheClientsFormat: an Anthropic client's
// count_tokens that no member serves gets Anthropic's not_found_error.
func TestUnservedOperationAnswersInTheClientsFormat(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{raw(404, `{"type":"error","error":{"type":"not_found_error","message":"Not Found"}}`)},
			tune: func(b *route.Backend) {
				base := *b.Provider.(*route.OpenAI).BaseURL
				base.Path = ""
				b.Provider = &route.Anthropic{BaseURL: &base, APIKey: "sk-ant-weu"}
			}},
	)
	resp, _, body := e.doOp(t, route.CountTokens, `{"model":"chat-prod","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if got := translate.ErrorCode(translate.Anthropic, []byte(body)); got != "not_found_error" || !strings.Contains(body, "messages/count_tokens") {
		t.Fatalf("body %s, want Anthropic's not_found_error naming the operation", body)
	}
	e.closedAndQuiet(t)
}

// TestCallOnStateIsNotJudgedAsTheOperation: a 404 for a request that
// names state one backend holds (a previous response) says the state is
// gone: passed on to the caller, nothing marked, nothing benched.
func TestCallOnStateIsNotJudgedAsTheOperation(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{raw(404, `{"error":{"message":"Previous response with id 'resp_x' not found.","type":"invalid_request_error","code":"previous_response_not_found"}}`)}},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	r, err := route.NewRequest(route.Responses, []byte(`{"model":"chat-prod","input":"hi"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Owner = "weu"
	resp, rep, err := e.pool.Do(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || len(rep.Attempts) != 1 || rep.Attempts[0].Reason != route.ReasonOK {
		t.Fatalf("%d, attempts %+v: want the owner's 404 passed on", resp.StatusCode, rep.Attempts)
	}
	e.closedAndQuiet(t)
	if evs := e.events.kinds(route.EventOperationUnsupported); len(evs) != 0 {
		t.Fatalf("operation marked for a call on state: %+v", evs)
	}
}

// TestRealtimeUpgradeToMembersWithoutRealtimeBenchesNothing: a Realtime
// upgrade to a pool whose members do not serve Realtime (404 to the
// upgrade) gets a clear 404, and chat calls are answered as before.
func TestRealtimeUpgradeToMembersWithoutRealtimeBenchesNothing(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{lacking("weu", raw(404, azureNotFound), "/realtime")}},
		memberSpec{name: "sec", priority: 2, script: []step{lacking("sec", raw(404, azureNotFound), "/realtime")}},
	)
	upgrade := func() (*http.Response, *route.Report) {
		r := &route.Request{Op: route.Realtime, Model: "chat-prod", RawQuery: "model=chat-prod",
			Header: http.Header{"Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}, "Sec-Websocket-Version": {"13"}}}
		resp, rep, err := e.pool.Do(t.Context(), r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp, rep
	}
	resp, rep := upgrade()
	if resp.StatusCode != http.StatusNotFound || len(rep.Attempts) != 2 {
		t.Fatalf("%d after %+v, want 404 after asking both", resp.StatusCode, rep.Attempts)
	}
	e.closedAndQuiet(t)
	for i := 0; i < 30; i++ {
		if resp, _, _ := e.do(t, chatBody); resp.StatusCode != 200 || resp.Header.Get(route.HeaderBackend) != "weu" {
			t.Fatalf("chat call %d: %d from %q", i+1, resp.StatusCode, resp.Header.Get(route.HeaderBackend))
		}
	}
	if resp, rep := upgrade(); resp.StatusCode != http.StatusNotFound || len(rep.Attempts) != 0 {
		t.Fatalf("second upgrade: %d after %+v, want 404 without asking", resp.StatusCode, rep.Attempts)
	}
	e.closedAndQuiet(t)
}
