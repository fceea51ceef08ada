package sim

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/switchover-gw/switchover/internal/fakeclock"
)

func TestOpenAIDuration(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		want string
	}{
		{"milliseconds", 20 * time.Millisecond, "20ms"},
		{"rounds up to a millisecond", 19*time.Millisecond + time.Microsecond, "20ms"},
		{"seconds with a fraction", 1200 * time.Millisecond, "1.2s"},
		{"whole second", time.Second, "1s"},
		{"minutes", 6 * time.Minute, "6m0s"},
		{"zero", 0, "0s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := openAIDuration(tc.d); got != tc.want {
				t.Errorf("openAIDuration(%s) = %q, want %q", tc.d, got, tc.want)
			}
		})
	}
}

// tripQuota sends requests until one is refused and returns that response;
// the clock is advanced by advance before the refused one.
func tripQuota(t *testing.T, clock *fakeclock.Clock, admitted int, send func() (*http.Response, []byte), advance time.Duration) (*http.Response, []byte) {
	t.Helper()
	for i := range admitted {
		resp, b := send()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d: %s", i+1, resp.StatusCode, b)
		}
	}
	clock.Advance(advance)
	resp, b := send()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("request %d: status %d, want 429: %s", admitted+1, resp.StatusCode, b)
	}
	return resp, b
}

func TestAzure429(t *testing.T) {
	tests := []struct {
		name     string
		quota    Quota
		path     string
		body     string
		admitted int
		wantMsg  string
		wantHdr  map[string]string
	}{
		{
			name:     "chat over RPM",
			quota:    Quota{RPM: 60},
			path:     "/openai/deployments/chat-prod/chat/completions?api-version=2024-10-21",
			body:     `{"messages":[{"role":"user","content":"hello"}]}`,
			admitted: 10,
			wantMsg:  "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded call rate limit of your current OpenAI S0 pricing tier. Please retry after 7 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.",
			wantHdr:  map[string]string{"Retry-After": "7", "Retry-After-Ms": "6800", "X-Ratelimit-Remaining-Requests": "0", "X-Ms-Region": "testregion"},
		},
		{
			name:     "embeddings over TPM",
			quota:    Quota{TPM: 60}, // 10 tokens per slice
			path:     "/openai/deployments/chat-prod/embeddings?api-version=2024-06-01",
			body:     `{"input":"twelve chars"}`, // 3 tokens
			admitted: 3,
			wantMsg:  "Requests to the Embeddings_Create Operation under Azure OpenAI API version 2024-06-01 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 7 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.",
			wantHdr:  map[string]string{"Retry-After": "7", "Retry-After-Ms": "6800", "X-Ratelimit-Remaining-Tokens": "1"},
		},
		{
			name:     "completions over TPM",
			quota:    Quota{TPM: 120, DefaultMaxTokens: 8}, // 20 per slice; 2+8 each
			path:     "/openai/deployments/chat-prod/completions?api-version=2024-10-21",
			body:     `{"prompt":"say hi"}`,
			admitted: 2,
			wantMsg:  "Requests to the Completions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit",
			wantHdr:  map[string]string{"X-Ratelimit-Remaining-Tokens": "0"},
		},
		{
			name:     "v1 route names api version v1",
			quota:    Quota{RPM: 6},
			path:     "/openai/v1/chat/completions",
			body:     `{"model":"chat-prod","messages":[{"role":"user","content":"hello"}]}`,
			admitted: 1,
			wantMsg:  "under Azure OpenAI API version v1 have exceeded call rate limit",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := fakeclock.New()
			s := startSim(t, one(Azure, func(d *Deployment) { d.Quota = tc.quota }), WithClock(clock))
			ep := s.Deployments()[0]
			clock.Advance(3200 * time.Millisecond)
			send := func() (*http.Response, []byte) { return do(t, http.MethodPost, ep.URL+tc.path, tc.body, nil) }
			resp, b := tripQuota(t, clock, tc.admitted, send, 0)
			var body azureErrorBody
			if err := json.Unmarshal(b, &body); err != nil {
				t.Fatalf("body %s: %v", b, err)
			}
			if body.Error.Code != "429" || !strings.Contains(body.Error.Message, tc.wantMsg) {
				t.Errorf("error = %+v\nwant code 429 and message containing %q", body.Error, tc.wantMsg)
			}
			for k, v := range tc.wantHdr {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			for _, k := range []string{"X-Request-Id", "Apim-Request-Id"} {
				if resp.Header.Get(k) == "" {
					t.Errorf("header %s missing", k)
				}
			}
			st := s.Stats()["d1"]
			if st.Refused != 1 || st.Answered != int64(tc.admitted) {
				t.Errorf("stats = %+v, want %d answered and 1 refused", st, tc.admitted)
			}
		})
	}
}

func TestOpenAI429(t *testing.T) {
	tests := []struct {
		name     string
		quota    Quota
		maxTok   int
		admitted int
		wantBody openAIError
		wantHdr  map[string]string
	}{
		{
			name:     "requests",
			quota:    Quota{RPM: 60, TPM: 60000},
			maxTok:   5,
			admitted: 10,
			wantBody: openAIError{
				Message: "Rate limit reached for gpt-4o-mini in organization org-switchover-sim on requests per min (RPM): Limit 60, Used 60, Requested 1. Please try again in 6.8s. Visit https://platform.openai.com/account/rate-limits to learn more.",
				Type:    strp("requests"), Code: strp("rate_limit_exceeded"),
			},
			wantHdr: map[string]string{
				"X-Ratelimit-Limit-Requests": "60", "X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "6.8s",
				"X-Ratelimit-Limit-Tokens": "60000", "X-Ratelimit-Remaining-Tokens": "9930", "X-Ratelimit-Reset-Tokens": "6.8s",
				"Retry-After": "7", "Retry-After-Ms": "6800",
			},
		},
		{
			name:     "tokens",
			quota:    Quota{TPM: 600}, // 100 per slice; each request 2+30
			maxTok:   30,
			admitted: 3,
			wantBody: openAIError{
				Message: "Rate limit reached for gpt-4o-mini in organization org-switchover-sim on tokens per min (TPM): Limit 600, Used 576, Requested 32. Please try again in 6.8s. Visit https://platform.openai.com/account/rate-limits to learn more.",
				Type:    strp("tokens"), Code: strp("rate_limit_exceeded"),
			},
			wantHdr: map[string]string{"X-Ratelimit-Limit-Tokens": "600", "X-Ratelimit-Remaining-Tokens": "4", "X-Ratelimit-Reset-Tokens": "6.8s"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := fakeclock.New()
			s := startSim(t, one(OpenAI, func(d *Deployment) { d.Deployment = "gpt-4o-mini"; d.Quota = tc.quota }), WithClock(clock))
			ep := s.Deployments()[0]
			clock.Advance(3200 * time.Millisecond)
			resp, b := tripQuota(t, clock, tc.admitted, func() (*http.Response, []byte) { return chat(t, ep, "hello", tc.maxTok) }, 0)
			var body struct {
				Error struct {
					Message string  `json:"message"`
					Type    *string `json:"type"`
					Param   *string `json:"param"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &body); err != nil {
				t.Fatal(err)
			}
			e := body.Error
			if e.Message != tc.wantBody.Message || *e.Type != *tc.wantBody.Type || *e.Code != *tc.wantBody.Code || e.Param != nil {
				t.Errorf("error = %s\nwant message %q type %q code %q param null", b, tc.wantBody.Message, *tc.wantBody.Type, *tc.wantBody.Code)
			}
			if !strings.Contains(string(b), `"param":null`) {
				t.Errorf("param not null in %s", b)
			}
			for k, v := range tc.wantHdr {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if !strings.HasPrefix(resp.Header.Get("X-Request-Id"), "req_") {
				t.Errorf("x-request-id = %q, want req_...", resp.Header.Get("X-Request-Id"))
			}
		})
	}
}

func TestRateHeadersOnEveryResponse(t *testing.T) {
	clock := fakeclock.New()
	s := startSim(t, one(OpenAI, func(d *Deployment) { d.Quota = Quota{RPM: 60, TPM: 6000} }), WithClock(clock))
	ep := s.Deployments()[0]
	resp, _ := chat(t, ep, "hello", 5) // 2 + 5 tokens
	want := map[string]string{
		"X-Ratelimit-Remaining-Requests": "9", "X-Ratelimit-Remaining-Tokens": "993",
		"X-Ratelimit-Reset-Requests": "10s", "X-Ratelimit-Limit-Requests": "60",
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if err := s.SetFault("d1", Fault{Mode: FaultDown}); err != nil {
		t.Fatal(err)
	}
	resp, _ = chat(t, ep, "hello", 5)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("X-Ratelimit-Remaining-Requests") != "9" {
		t.Errorf("down: status %d remaining %q, want 503 and 9 (a fault charges nothing)", resp.StatusCode, resp.Header.Get("X-Ratelimit-Remaining-Requests"))
	}
}

func TestClientParses429AsError(t *testing.T) {
	for _, fl := range []Flavour{Azure, OpenAI} {
		t.Run(string(fl), func(t *testing.T) {
			s := startSim(t, one(fl, func(d *Deployment) { d.Quota = Quota{RPM: 6} }))
			ep := s.Deployments()[0]
			client := newClient(ep, option.WithMaxRetries(0))
			ctx := context.Background()
			if _, err := client.Chat.Completions.New(ctx, chatParams(ep, "hello", 3)); err != nil {
				t.Fatalf("first call: %v", err)
			}
			_, err := client.Chat.Completions.New(ctx, chatParams(ep, "hello", 3))
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want *openai.Error", err)
			}
			wantCode := "429"
			if fl == OpenAI {
				wantCode = "rate_limit_exceeded"
			}
			if apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Code != wantCode {
				t.Errorf("StatusCode %d Code %q, want 429 and %q", apiErr.StatusCode, apiErr.Code, wantCode)
			}
			if apiErr.Response.Header.Get("retry-after-ms") != "10000" {
				t.Errorf("retry-after-ms = %q, want 10000", apiErr.Response.Header.Get("retry-after-ms"))
			}
		})
	}
}

// attempt is one HTTP attempt the client made, seen by its middleware.
type attempt struct {
	sent, answered time.Time
	status         int
	retryAfterMs   string
}

func TestClientRetriesAfterRetryAfterMs(t *testing.T) {
	// One request per 200 ms slice. The sim runs on a fake clock that the
	// client's middleware moves past the slice when it sees the 429, while
	// the client itself really waits retry-after-ms before retrying.
	clock := fakeclock.New()
	cfg := one(Azure, func(d *Deployment) { d.Quota = Quota{RPM: 300} })
	cfg.Slice = 200 * time.Millisecond
	s := startSim(t, cfg, WithClock(clock))
	ep := s.Deployments()[0]
	clock.Advance(50 * time.Millisecond)

	var mu sync.Mutex
	var attempts []attempt
	record := func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		a := attempt{sent: time.Now()}
		resp, err := next(r)
		a.answered = time.Now()
		if err == nil {
			a.status = resp.StatusCode
			a.retryAfterMs = resp.Header.Get("retry-after-ms")
			if resp.StatusCode == http.StatusTooManyRequests {
				clock.Advance(200 * time.Millisecond)
			}
		}
		mu.Lock()
		attempts = append(attempts, a)
		mu.Unlock()
		return resp, err
	}
	client := newClient(ep, option.WithMaxRetries(1), option.WithMiddleware(record))
	ctx := context.Background()
	if _, err := client.Chat.Completions.New(ctx, chatParams(ep, "first", 3)); err != nil {
		t.Fatalf("first call: %v", err)
	}
	if _, err := client.Chat.Completions.New(ctx, chatParams(ep, "second", 3)); err != nil {
		t.Fatalf("second call (should succeed on its retry): %v", err)
	}
	st := s.Stats()["d1"]
	if st.Calls != 3 || st.Answered != 2 || st.Refused != 1 {
		t.Fatalf("stats = %+v, want 3 calls: 2 answered, 1 refused (the retried one)", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(attempts) != 3 || attempts[1].status != 429 || attempts[2].status != 200 {
		t.Fatalf("attempts = %+v, want 200, 429, 200", attempts)
	}
	if attempts[1].retryAfterMs != "150" {
		t.Errorf("retry-after-ms = %q, want 150 (to the next 200ms slice)", attempts[1].retryAfterMs)
	}
	if gap := attempts[2].sent.Sub(attempts[1].answered); gap < 150*time.Millisecond {
		t.Errorf("client retried after %s, before retry-after-ms 150", gap)
	}
}

func TestRateHeadersOnRejectedRequests(t *testing.T) {
	s := startSim(t, one(Azure, func(d *Deployment) { d.Key = "k"; d.Quota = Quota{RPM: 60, TPM: 600} }))
	resp, _ := chat(t, s.Deployments()[0], "hi", 3) // no key: 401
	if resp.StatusCode != 401 || resp.Header.Get("X-Ratelimit-Remaining-Requests") != "10" || resp.Header.Get("X-Ratelimit-Remaining-Tokens") != "100" {
		t.Errorf("401 with remaining %q/%q, want 10/100", resp.Header.Get("X-Ratelimit-Remaining-Requests"), resp.Header.Get("X-Ratelimit-Remaining-Tokens"))
	}
}

func TestRequestThatNeverFits(t *testing.T) {
	// 600 TPM is 100 tokens per 10 s slice; 1000 max_tokens (plus the
	// prompt's) is over it in any slice, empty or not.
	tests := []struct {
		fl      Flavour
		wantMsg string
	}{
		{Azure, `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 7 seconds.`},
		{OpenAI, `{"error":{"message":"Request too large for chat-prod in organization org-switchover-sim on tokens per min (TPM): Limit 600, Requested 1002. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`},
	}
	for _, tc := range tests {
		t.Run(string(tc.fl), func(t *testing.T) {
			clock := fakeclock.New()
			s := startSim(t, one(tc.fl, func(d *Deployment) { d.Quota = Quota{RPM: 60, TPM: 600} }), WithClock(clock))
			ep := s.Deployments()[0]
			clock.Advance(3200 * time.Millisecond)
			resp, b := chat(t, ep, "hello", 1000) // 2 + 1000 tokens
			if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(b), tc.wantMsg) {
				t.Fatalf("got %d %s\nwant 429 with %s", resp.StatusCode, b, tc.wantMsg)
			}
			// The headers tell a caller the estimate is over the whole limit.
			want := map[string]string{
				"X-Ratelimit-Limit-Tokens": "600", "X-Ratelimit-Remaining-Tokens": "100",
				"X-Ratelimit-Limit-Requests": "60", "X-Ratelimit-Remaining-Requests": "10",
				"Retry-After": "7",
			}
			for k, v := range want {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			// A small request still fits: the refusal charged nothing.
			if resp, b := chat(t, ep, "hello", 5); resp.StatusCode != 200 {
				t.Errorf("small request after: %d %s", resp.StatusCode, b)
			}
		})
	}
}
