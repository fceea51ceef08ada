package proxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/pricing"
	"github.com/switchover-gw/switchover/tenant"
)

// TestBudgetReservationHoldsOnEveryPath: through the listener, a
// request's price ($1 a completion token, max_tokens 3: $3) is reserved
// against a $4 budget while it runs, so a second one is refused until it
// ends, and the reservation is given back however it ends: answered,
// failed upstream, or cancelled by its client.
func TestBudgetReservationHoldsOnEveryPath(t *testing.T) {
	clk := fakeclock.New()
	const secret = "sk-budget-caller-0123456789"
	dir := tenant.NewDirectory(clk, nil)
	dir.SetConfig([]tenant.ConfigKey{{Secret: secret, Principal: tenant.Principal{ID: "k",
		Limits: tenant.Limits{Budget: 4, BudgetPeriod: "day"}}}}, nil)
	lim := tenant.NewLimiter(clk, tenant.NewSpend(clk, nil), dir.Team)
	lim.Price = func(backend, model string) (pricing.Price, bool) { return pricing.Price{Output: 1e6}, true }
	hold := make(chan struct{})
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		has := func(what string) bool { return strings.Contains(string(in), `"content":"`+what+`"`) }
		if has("fail") {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"no","type":"invalid_request_error"}}`)
			return
		}
		if has("hold") {
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		if has("cancel") {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"1","object":"chat.completion","choices":[]}`)
	})
	u, ended := limitedGateway(t, &Handler{Clock: clk}, up, func(rt *Routes) { rt.Resolver, rt.Admission = dir, lim })
	call := func(ctx context.Context, q string) (int, string) {
		// The query names the request for waitEnded, and the content
		// tells the upstream what to do.
		body := `{"model":"chat-prod","max_tokens":3,"messages":[{"role":"user","content":"` + q + `"}]}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u+"/v1/chat/completions?"+q, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	admitted := func(what string) {
		t.Helper()
		if st, b := call(t.Context(), "next"); st != http.StatusOK {
			t.Fatalf("%s: the next request: %d %s", what, st, b)
		}
		waitEnded(t, ended, "next")
	}
	admitted("first")

	// In flight: its $3 is reserved, and a second does not fit.
	done := make(chan int)
	go func() { st, _ := call(context.Background(), "hold"); done <- st }()
	waitInFlight(t, lim)
	if st, b := call(t.Context(), "refused"); st != http.StatusTooManyRequests || !strings.Contains(b, "budget_exceeded") {
		t.Fatalf("a second request while the first holds the budget: %d %s", st, b)
	}
	close(hold)
	if st := <-done; st != http.StatusOK {
		t.Fatalf("the held request: %d", st)
	}
	waitEnded(t, ended, "hold")
	admitted("after an answer")

	// Failed upstream.
	if st, _ := call(t.Context(), "fail"); st == http.StatusOK {
		t.Fatal("the failing request was answered")
	}
	waitEnded(t, ended, "fail")
	admitted("after a failure")

	// Cancelled by its client while upstream.
	ctx, cancel := context.WithCancel(t.Context())
	go func() { call(ctx, "cancel"); done <- 0 }()
	waitInFlight(t, lim)
	cancel()
	<-done
	waitEnded(t, ended, "cancel")
	admitted("after a cancellation")
}

// waitInFlight waits until key k has a request in flight.
func waitInFlight(t *testing.T, lim *tenant.Limiter) {
	t.Helper()
	poll.Until(t, 10*time.Second, func() bool { return lim.InFlight("k") == 1 }, func() string { return "the request never got in flight" })
}
