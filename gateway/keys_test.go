package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/pgtest"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/pricing"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/sim"
)

const tenantKey = "tenant-key-0123456789abcdef0123456789"

// post sends a chat request with key and returns the status, the headers
// and the body.
func post(t *testing.T, url, key, body string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

const chatBody = `{"model":"chat-prod","max_tokens":5,"messages":[{"role":"user","content":"count the tokens of this prompt"}]}`

type refusalBody struct {
	Error struct {
		Message, Type, Code string
		Limit               struct {
			Subject, Name, Limit string
			Max, Used            float64
			Reset                time.Time
		} `json:"switchover_limit"`
	}
}

// TestKeyRateLimitIsRefusedBeforeTheBackend: a key over its requests per
// minute gets an OpenAI-format 429 with the limit, what it used, when it
// resets and Retry-After; the backend never sees the request and its
// breaker is not told.
func TestKeyRateLimitIsRefusedBeforeTheBackend(t *testing.T) {
	// 12 a minute: 2 at once.
	e := startProviders(t, []string{"openai"}, nil, "keys:\n  - {name: app, key: "+tenantKey+", rpm: 12}\n")
	for i := range 2 {
		if st, _, b := post(t, e.url, tenantKey, chatBody); st != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, st, b)
		}
	}
	st, h, b := post(t, e.url, tenantKey, chatBody)
	if st != http.StatusTooManyRequests {
		t.Fatalf("third request at once on rpm 12: %d %s", st, b)
	}
	var r refusalBody
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if r.Error.Code != "rate_limit_exceeded" || r.Error.Limit.Limit != "requests per minute" || r.Error.Limit.Max != 12 || r.Error.Limit.Used != 2 || r.Error.Limit.Name != "app" {
		t.Errorf("refusal %s", b)
	}
	if r.Error.Limit.Reset.IsZero() || h.Get("Retry-After") == "" || h.Get("X-Ratelimit-Limit-Requests") != "12" || h.Get("X-Ratelimit-Remaining-Requests") != "0" {
		t.Errorf("reset %v, headers %v", r.Error.Limit.Reset, h)
	}
	if calls := e.sim.Stats()["openai"].Calls; calls != 2 {
		t.Errorf("the backend got %d calls, want the 2 admitted", calls)
	}
	for _, p := range e.gw.Status().Pools {
		for _, m := range p.Members {
			if m.Breaker.State != "closed" || m.Breaker.Failures != 0 {
				t.Errorf("%s's breaker was told of a refusal: %+v", m.Backend, m.Breaker)
			}
		}
	}
	// An Anthropic caller is refused in Anthropic's format.
	req, _ := http.NewRequest(http.MethodPost, e.url+"/v1/messages", strings.NewReader(`{"model":"chat-prod","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("x-api-key", tenantKey)
	req.Header.Set("content-type", "application/json")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ab, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(ab), `"rate_limit_error"`) {
		t.Errorf("Anthropic caller: %d %s", resp.StatusCode, ab)
	}
	metrics := scrape(t, e.gw)
	if !strings.Contains(metrics, `switchover_key_refused_total{code="rate_limit_exceeded",key="app",limit="requests per minute"} 2`) {
		t.Errorf("no refusal count in the metrics")
	}
	eventually(t, "the refusal's log line", func() bool { return strings.Contains(e.logs.String(), `"refused":"rate_limit_exceeded"`) })
}

// TestKeyAllowedModels: a key limited to some pools or model names gets
// 403 model_not_allowed for the others, and the backend is not called.
func TestKeyAllowedModels(t *testing.T) {
	e := startProviders(t, []string{"openai"}, nil, "keys:\n  - {name: app, key: "+tenantKey+", models: [chat-prod]}\n")
	if st, _, b := post(t, e.url, tenantKey, chatBody); st != http.StatusOK {
		t.Fatalf("allowed model: %d %s", st, b)
	}
	st, h, b := post(t, e.url, tenantKey, strings.Replace(chatBody, "chat-prod", "claude-sonnet-4-5", 1))
	if st != http.StatusForbidden || !strings.Contains(string(b), `"model_not_allowed"`) || h.Get("X-Should-Retry") != "false" {
		t.Fatalf("a model name the key may not use: %d %v %s", st, h, b)
	}
	if calls := e.sim.Stats()["openai"].Calls; calls != 1 {
		t.Errorf("the backend got %d calls, want 1", calls)
	}
}

// stores are the two stores, each a func that returns the store YAML
// block for a test.
var stores = []struct {
	name string
	yaml func(t *testing.T) string
}{
	{"sqlite", func(t *testing.T) string {
		return fmt.Sprintf("store: {sqlite: %q}\n", filepath.Join(t.TempDir(), "data", "switchover.db"))
	}},
	{"postgres", func(t *testing.T) string { return fmt.Sprintf("store: {postgres: %q}\n", pgtest.Shared(t)) }},
}

// spend waits until the store holds n requests for key and returns its row.
func spend(t *testing.T, s ledger.Store, key string, n int64) ledger.SpendRow {
	t.Helper()
	var row ledger.SpendRow
	now := time.Now().UTC()
	from := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	var rows []ledger.SpendRow
	var err error
	poll.Until(t, 30*time.Second, func() bool {
		rows, err = s.Spend(context.Background(), ledger.SpendQuery{From: from, To: from.AddDate(0, 0, 2), Key: key})
		if err == nil && len(rows) == 1 && rows[0].Requests >= n {
			row = rows[0]
			return true
		}
		return false
	}, func() string {
		return fmt.Sprintf("the store holds %+v (error %v) for key %s, want %d requests", rows, err, key, n)
	})
	if row.Requests != n {
		t.Fatalf("the store holds %d requests for key %s, want %d", row.Requests, key, n)
	}
	return row
}

// TestStoreKeysAndUsage: a key made in the store works at once; the usage
// of its plain, streamed (asked or not for usage) and translated answers
// is recorded with the tokens the answers reported and their list price,
// on SQLite and on PostgreSQL.
func TestStoreKeysAndUsage(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			e := startProviders(t, []string{"openai"}, nil, st.yaml(t))
			store := e.gw.Ledger()
			if store == nil {
				t.Fatal("no store")
			}
			k, secret, err := ledger.NewKey(t.Context(), store, ledger.Key{Name: "app-team", Team: "apps"}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			c := openai.NewClient(option.WithBaseURL(e.url+"/v1"), option.WithAPIKey(secret), option.WithMaxRetries(0))
			params := openai.ChatCompletionNewParams{Model: "chat-prod", MaxTokens: openai.Int(5),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("count the tokens of this prompt")}}
			plain, err := c.Chat.Completions.New(t.Context(), params)
			if err != nil {
				t.Fatal(err)
			}
			// Golden numbers of the simulator for this prompt.
			if plain.Usage.PromptTokens != 8 || plain.Usage.CompletionTokens != 5 {
				t.Errorf("the simulator answered %d prompt and %d completion tokens; its golden numbers are 8 and 5", plain.Usage.PromptTokens, plain.Usage.CompletionTokens)
			}
			s := c.Chat.Completions.NewStreaming(t.Context(), params) // usage not asked: the gateway asks, and strips it
			for s.Next() {
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if st, _, b := post(t, e.url, "wrong-"+secret, chatBody); st != http.StatusUnauthorized {
				t.Fatalf("a wrong key: %d %s", st, b)
			}
			req, _ := http.NewRequest(http.MethodPost, e.url+"/v1/messages", strings.NewReader(`{"model":"chat-prod","max_tokens":5,"messages":[{"role":"user","content":"count the tokens of this prompt"}]}`))
			req.Header.Set("x-api-key", secret)
			req.Header.Set("content-type", "application/json")
			resp, err := testClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var msg struct {
				Usage struct {
					InputTokens  int64 `json:"input_tokens"`
					OutputTokens int64 `json:"output_tokens"`
				}
			}
			json.NewDecoder(resp.Body).Decode(&msg)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("Anthropic caller: %d", resp.StatusCode)
			}
			row := spend(t, store, k.ID, 3)
			wantPrompt := 2*plain.Usage.PromptTokens + msg.Usage.InputTokens
			wantCompletion := 2*plain.Usage.CompletionTokens + msg.Usage.OutputTokens
			if row.PromptTokens != wantPrompt || row.CompletionTokens != wantCompletion {
				t.Errorf("stored %d prompt, %d completion tokens; the answers said %d, %d", row.PromptTokens, row.CompletionTokens, wantPrompt, wantCompletion)
			}
			price, ok := pricing.Lookup(plain.Model)
			if !ok {
				t.Fatalf("no list price for %s", plain.Model)
			}
			wantCost := 2*price.Cost(plain.Usage.PromptTokens, 0, plain.Usage.CompletionTokens) + price.Cost(msg.Usage.InputTokens, 0, msg.Usage.OutputTokens)
			if d := row.Cost - wantCost; d > 1e-9 || d < -1e-9 {
				t.Errorf("stored cost $%.9f, want $%.9f", row.Cost, wantCost)
			}
			byTeam, err := store.Spend(t.Context(), ledger.SpendQuery{From: time.Now().AddDate(0, 0, -1), To: time.Now().Add(time.Hour), By: []string{ledger.ByTeam, ledger.ByBackend}})
			if err != nil || len(byTeam) != 1 || byTeam[0].Team != "apps" || byTeam[0].Backend != "openai" || byTeam[0].Requests != 3 {
				t.Errorf("spend by team and backend: %+v %v", byTeam, err)
			}
			// Revoked in the store: refused from the next refresh on.
			if err := store.RevokeKey(t.Context(), k.ID, time.Now()); err != nil {
				t.Fatal(err)
			}
			e.gw.KeysChanged()
			if st, _, b := post(t, e.url, secret, chatBody); st != http.StatusUnauthorized || !strings.Contains(string(b), "revoked") {
				t.Fatalf("a revoked key: %d %s", st, b)
			}
			if strings.Contains(e.logs.String(), secret) {
				t.Error("the key's secret is in the log")
			}
		})
	}
}

// webhook collects the kinds of the notifications it receives.
type webhook struct {
	mu    sync.Mutex
	kinds []string
	texts []string
	srv   *httptest.Server
}

func newWebhook(t *testing.T) *webhook {
	w := &webhook{}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var n struct{ Kind, Text string }
		json.NewDecoder(r.Body).Decode(&n)
		w.mu.Lock()
		w.kinds = append(w.kinds, n.Kind)
		w.texts = append(w.texts, n.Text)
		w.mu.Unlock()
	}))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *webhook) got(kind string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for i, k := range w.kinds {
		if k == kind {
			out = append(out, w.texts[i])
		}
	}
	return out
}

// TestBudgetStopsAndNotifies: a key's budget stops its requests once
// spent, with 429 budget_exceeded until the period ends, and sends one
// notification at 80% and one at 100%.
func TestBudgetStopsAndNotifies(t *testing.T) {
	hook := newWebhook(t)
	per := perCall // priced at exactly what it costs: the budget is spent to the cent
	budget := 5 * per
	extra := fmt.Sprintf("store: {sqlite: %q}\nnotifications: {webhooks: [{url: %q}]}\nteams:\n  - {name: apps}\nkeys:\n  - {name: app, key: %s, team: apps, budget: %s/day}\n",
		filepath.Join(t.TempDir(), "s.db"), hook.srv.URL, tenantKey, fmt.Sprint(budget))
	e := startProvidersWith(t, []string{"openai"}, nil, extra, outputPriced)
	n := 0
	for ; n < 20; n++ {
		st, h, b := post(t, e.url, tenantKey, chatBody)
		if st == http.StatusOK {
			continue
		}
		var r refusalBody
		json.Unmarshal(b, &r)
		if st != http.StatusTooManyRequests || r.Error.Code != "budget_exceeded" || h.Get("X-Should-Retry") != "false" || h.Get("Retry-After") == "" {
			t.Fatalf("request %d: %d %v %s", n+1, st, h, b)
		}
		if r.Error.Limit.Max != budget || r.Error.Limit.Used < budget || r.Error.Limit.Reset.Hour() != 0 {
			t.Errorf("refusal %s", b)
		}
		break
	}
	if n != 5 {
		t.Fatalf("%d requests admitted on a budget of 5 requests' cost, want 5", n)
	}
	if calls := e.sim.Stats()["openai"].Calls; calls != 5 {
		t.Errorf("the backend got %d calls", calls)
	}
	eventually(t, "two budget notifications", func() bool { return len(hook.got("budget")) == 2 })
	got := hook.got("budget")
	if !strings.Contains(got[0], "80%") || !strings.Contains(got[1], "whole budget") {
		t.Errorf("budget notifications: %q", got)
	}
}

// TestBudgetUnderConcurrency: eight callers at once on one budget spend
// it, and what is admitted beyond it is no more than the requests that
// were already in flight.
func TestBudgetUnderConcurrency(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			per := perCall // priced at exactly what it costs
			const want, callers = 20, 8
			e := startProvidersWith(t, []string{"openai"}, nil, st.yaml(t), outputPriced)
			k, secret, err := ledger.NewKey(t.Context(), e.gw.Ledger(), ledger.Key{Name: "batch", Budget: want * per, BudgetPeriod: "month"}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			var ok, refused atomic.Int64
			var wg sync.WaitGroup
			for range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						st, _, b := post(t, e.url, secret, chatBody)
						switch {
						case st == http.StatusOK:
							ok.Add(1)
						case st == http.StatusTooManyRequests && strings.Contains(string(b), "budget_exceeded"):
							refused.Add(1)
							return
						default:
							t.Errorf("%d %s", st, b)
							return
						}
					}
				}()
			}
			wg.Wait()
			if n := ok.Load(); n < want || n >= want+callers {
				t.Fatalf("%d requests admitted on a budget of %d with %d callers; want %d to %d", n, want, callers, want, want+callers-1)
			}
			row := spend(t, e.gw.Ledger(), k.ID, ok.Load())
			t.Logf("admitted %d on a budget of %d, spent $%.6f of $%.6f", ok.Load(), want, row.Cost, want*per)
		})
	}
}

// TestStoreDownKeepsServing: with PostgreSQL stopped, known keys keep
// working from memory and their usage waits in the buffer; a key the
// memory does not know is answered 503 (it may be good); once the
// database is back every request's usage is stored.
func TestStoreDownKeepsServing(t *testing.T) {
	srv := pgtest.StartServer(t)
	e := startProviders(t, []string{"openai"}, nil, fmt.Sprintf("store: {postgres: %q}\n", srv.NewDatabase(t)))
	store := e.gw.Ledger()
	k, secret, err := ledger.NewKey(t.Context(), store, ledger.Key{Name: "app"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	e.gw.KeysChanged()
	srv.Stop()
	const n = 10
	for i := range n {
		if st, _, b := post(t, e.url, secret, chatBody); st != http.StatusOK {
			t.Fatalf("request %d with the database down: %d %s", i+1, st, b)
		}
	}
	unknown, _, _ := ledger.NewSecret()
	if st, h, b := post(t, e.url, unknown, chatBody); st != http.StatusServiceUnavailable || !strings.Contains(string(b), "key_store_unavailable") || h.Get("Retry-After") == "" {
		t.Fatalf("an unknown key with the database down: %d %s", st, b)
	}
	srv.Restart()
	spend(t, store, k.ID, n)
}

// TestFleetSharesKeyRateLimits: two replicas sharing a Redis hold one
// key's requests per minute for the fleet: what one admitted is taken
// from the other's bucket, even before the other has seen the key.
func TestFleetSharesKeyRateLimits(t *testing.T) {
	// 6 a minute: one at once, and one more every 10 s.
	e := startFleetEnv(t, 2, "", "", "keys:\n  - {name: app, key: "+tenantKey+", rpm: 6}\n")
	a, b := e.replicas[0], e.replicas[1]
	start := time.Now()
	if st, _, body := post(t, a.url, tenantKey, chatBody); st != http.StatusOK {
		t.Fatalf("through %s: %d %s", a.name, st, body)
	}
	// Wait for a's exchange after its request, then two of b's: the
	// second began after a's totals were published.
	aSyncs := a.gw.LimitSyncs()
	eventually(t, a.name+" exchanges its totals", func() bool { return a.gw.LimitSyncs() > aSyncs })
	bSyncs := b.gw.LimitSyncs()
	eventually(t, b.name+" reads them", func() bool { return b.gw.LimitSyncs() >= bSyncs+2 })
	st, _, _ := post(t, b.url, tenantKey, chatBody)
	// Unless 10 s passed (one request refilled), b's bucket is a's.
	if refilled := time.Since(start) >= 10*time.Second; st == http.StatusOK && !refilled {
		t.Fatalf("%s admitted a request the fleet's bucket did not have (%s took it)", b.name, a.name)
	}
}

// TestStoreRecordsTranslatedAnswers: an OpenAI caller answered by an
// Anthropic or a Gemini backend has the tokens of the translated answer
// stored, as the answer reported them to the caller.
func TestStoreRecordsTranslatedAnswers(t *testing.T) {
	for _, backend := range []string{"claude", "gemini"} {
		t.Run(backend, func(t *testing.T) {
			e := startProviders(t, []string{backend}, nil, stores[0].yaml(t))
			k, secret, err := ledger.NewKey(t.Context(), e.gw.Ledger(), ledger.Key{Name: "app"}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			c := openai.NewClient(option.WithBaseURL(e.url+"/v1"), option.WithAPIKey(secret), option.WithMaxRetries(0))
			r, err := c.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "chat-prod", MaxTokens: openai.Int(5),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("count the tokens of this prompt")}})
			if err != nil {
				t.Fatal(err)
			}
			row := spend(t, e.gw.Ledger(), k.ID, 1)
			if r.Usage.CompletionTokens == 0 || row.PromptTokens != r.Usage.PromptTokens || row.CompletionTokens != r.Usage.CompletionTokens {
				t.Errorf("stored %d prompt, %d completion tokens; the answer said %d, %d", row.PromptTokens, row.CompletionTokens, r.Usage.PromptTokens, r.Usage.CompletionTokens)
			}
			if row.Cost <= 0 {
				t.Errorf("%s's answer (model %s) was not priced", backend, r.Model)
			}
		})
	}
}

// TestKeyLimitedToModelsReachesItsStoredResponses is a regression test: a
// key limited to some models was refused a call on its own stored
// response (GET /v1/responses/{id}), which names no model.
func TestKeyLimitedToModelsReachesItsStoredResponses(t *testing.T) {
	e := startProviders(t, []string{"openai"}, nil, "keys:\n  - {name: app, key: "+tenantKey+", models: [chat-prod], pools: [chat-prod]}\n")
	c := openai.NewClient(option.WithBaseURL(e.url+"/v1"), option.WithAPIKey(tenantKey), option.WithMaxRetries(0))
	r, err := c.Responses.New(t.Context(), responseParams("first"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{})
	if err != nil || got.ID != r.ID {
		t.Fatalf("get %s: %v", r.ID, err)
	}
}

// TestFleetNotifiesABudgetOnce: two replicas that both see a key's spend
// reach 80% and 100% of its budget send one notification of each for the
// fleet, not one per replica. The budget is held in Redis for the fleet:
// once one replica has spent it, the other refuses the key's first
// request.
func TestFleetNotifiesABudgetOnce(t *testing.T) {
	// Each call costs $1 ($1 a completion token, max_tokens 1; prompts
	// free, so that its price is what it costs): a budget of 4, without
	// a store, is reached by 4 calls.
	e := startFleetEnv(t, 2, ", price: {input: 0, output: 1000000}", "",
		"keys:\n  - {name: app, key: "+tenantKey+", budget: 4/day}\n")
	// The replica that is not the fleet's notifier goes first: a budget is
	// notified by the replica that sees it, notifier or not (regression:
	// a non-notifier's budget notifications were dropped).
	eventually(t, "a notifier", func() bool {
		return e.replicas[0].gw.Status().Fleet.Notifier || e.replicas[1].gw.Status().Fleet.Notifier
	})
	order := e.replicas
	if order[0].gw.Status().Fleet.Notifier {
		order = []*replica{order[1], order[0]}
	}
	for i := range 4 {
		if st, _, b := post(t, order[0].url, tenantKey, `{"model":"chat-prod","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`); st != http.StatusOK {
			t.Fatalf("%s request %d: %d %s", order[0].name, i+1, st, b)
		}
	}
	for _, r := range order {
		if st, _, b := post(t, r.url, tenantKey, chatBody); st != http.StatusTooManyRequests || !strings.Contains(string(b), "budget_exceeded") {
			t.Fatalf("%s: a request once the fleet spent the budget: %d %s", r.name, st, b)
		}
	}
	count := func() (n int) {
		for _, r := range e.replicas {
			for _, k := range r.notes.kinds() {
				if k == "budget" {
					n++
				}
			}
		}
		return n
	}
	eventually(t, "the budget notifications", func() bool { return count() >= 2 })
	if n := count(); n != 2 {
		t.Fatalf("%d budget notifications from two replicas, want one at 80%% and one at 100%%", n)
	}
	if got := order[0].notes.kinds(); !slices.Equal(got, []string{"budget", "budget"}) {
		t.Errorf("%s, which saw the budget run out first, sent %v", order[0].name, got)
	}
}

func responseParams(input string) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:           "chat-prod",
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String(input)},
		MaxOutputTokens: openai.Int(256),
	}
}

// startQuotaGateway is one simulated region whose window holds one call
// a 10 s slice, behind a gateway with the keys YAML keys ("" for none),
// both on clk; it returns the chat URL and the simulator.
func startQuotaGateway(t *testing.T, clk *fakeclock.Clock, keys string) (string, *sim.Sim) {
	t.Helper()
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Slice: 10 * time.Second, Deployments: []sim.Deployment{
		{Name: "uksouth", Flavour: sim.Azure, Deployment: "chat-prod", Quota: sim.Quota{RPM: 6}},
	}}, sim.WithClock(clk), sim.WithWaiter(instant{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ep := s.Deployments()[0]
	y := fmt.Sprintf("log: {level: error}\nserver: {drain_delay: 0s}\n%sbackends:\n  - {name: uksouth, type: azure, url: %q, probe: {disabled: true}}\npools:\n  - name: chat-prod\n    members: [{backend: uksouth}]\n", keys, ep.URL)
	cfg, err := config.Parse("queue.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(cfg, gateway.Options{Clock: clk, Logger: gateway.NewLogger(io.Discard, "text", "error")})
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, g) + "/v1/chat/completions", s
}

// TestKeyPatienceMakesItsCallersPatient: a key with patience (a batch
// job's) has its requests wait for quota without sending
// x-switchover-max-wait; another key's are refused at once.
func TestKeyPatienceMakesItsCallersPatient(t *testing.T) {
	clk := fakeclock.New()
	url, _ := startQuotaGateway(t, clk, "keys:\n  - {name: app, key: app-key-0123456789abcdef0123456789}\n  - {name: batch, key: batch-key-0123456789abcdef0123456789, patience: 30s}\n")
	post := func(key string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"model":"chat-prod","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := post("app-key-0123456789abcdef0123456789"); resp.StatusCode != 200 {
		t.Fatalf("first call: %d", resp.StatusCode)
	}
	if resp := post("app-key-0123456789abcdef0123456789"); resp.StatusCode != 429 {
		t.Fatalf("a key without patience: %d, want 429 at once", resp.StatusCode)
	}
	before := clk.Pending()
	got := make(chan *http.Response, 1)
	go func() { got <- post("batch-key-0123456789abcdef0123456789") }()
	wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second) // a guard against a hang
	defer wcancel()
	if err := clk.BlockUntilContext(wctx, before+2); err != nil { // its deadline and the window's reset
		resp := <-got
		t.Fatalf("the patient key's request did not wait: %d", resp.StatusCode)
	}
	clk.Advance(10 * time.Second)
	resp := <-got
	if resp.StatusCode != 200 || resp.Header.Get(route.HeaderQueueWait) == "" {
		t.Fatalf("the patient key: %d, waited %q", resp.StatusCode, resp.Header.Get(route.HeaderQueueWait))
	}
}

// instant waits out no simulated latency, so the test runs on the fake
// clock alone.
type instant struct{}

func (instant) Wait(ctx context.Context, d time.Duration) error { return ctx.Err() }
