package route_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/route"
)

// Example shows the routing engine as a library: a Pool is the
// http.RoundTripper of the official OpenAI client, so the client gets the
// gateway's failover and sin bin in-process. The primary region here is out
// of quota; the call is answered by the secondary, and the primary is
// benched after its first refusal.
func Example() {
	westeurope := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"code":"429","message":"Requests have exceeded call rate limit."}}`)
	}))
	defer westeurope.Close()
	swedencentral := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"1","object":"chat.completion","created":1,"model":"gpt-4o",
			"choices":[{"index":0,"message":{"role":"assistant","content":"Hello from Sweden."},"finish_reason":"stop"}]}`)
	}))
	defer swedencentral.Close()

	weuURL, _ := url.Parse(westeurope.URL)
	secURL, _ := url.Parse(swedencentral.URL)
	backend := func(name, region string, endpoint *url.URL) *route.Backend {
		return &route.Backend{
			Name:     name,
			Region:   region,
			Provider: &route.Azure{Endpoint: endpoint, APIKey: "key-of-" + name, APIVersion: "2024-10-21"},
			Breaker: breaker.New(name, breaker.Settings{
				Failures: 1, Trip: 30 * time.Second, AcceptRetryAfter: true,
			}),
			StreamFirstByteTimeout: 10 * time.Second,
		}
	}
	pool := &route.Pool{
		Name: "chat-prod",
		Members: []*route.Member{
			{Backend: backend("aoai-westeurope", "westeurope", weuURL), Priority: 1},
			{Backend: backend("aoai-swedencentral", "swedencentral", secURL), Priority: 2},
		},
	}

	client := openai.NewClient(
		option.WithBaseURL("http://switchover.invalid/v1/"), // the pool decides where calls go
		option.WithAPIKey("unused"),                         // each backend sends its own key
		option.WithHTTPClient(&http.Client{Transport: pool}),
	)
	var raw *http.Response
	resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "chat-prod", // the Azure deployment name on both resources
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
	}, option.WithResponseInto(&raw))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(resp.Choices[0].Message.Content)
	fmt.Println("answered by:", raw.Header.Get(route.HeaderBackend), "in", raw.Header.Get(route.HeaderRegion))
	fmt.Println("failover:", raw.Header.Get(route.HeaderFailover))
	fmt.Println("westeurope breaker:", pool.Members[0].Backend.Breaker.Snapshot().State)
	// Output:
	// Hello from Sweden.
	// answered by: aoai-swedencentral in swedencentral
	// failover: true
	// westeurope breaker: open
}
