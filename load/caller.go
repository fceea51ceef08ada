package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/route"
)

// Caller makes one request and reports it. start is the request's offset
// from the start of the run; the Caller fills in everything else.
// Implementations must be safe for concurrent use.
type Caller interface {
	Call(ctx context.Context, start time.Duration) Sample
}

// Request describes the chat completion every request of a run sends.
type Request struct {
	// Model is the body's model (the gateway's pool name). Default
	// "chat-prod".
	Model string
	// Prompt is the user message. Default "Say hello in one word."
	Prompt string
	// MaxTokens is the body's max_tokens. 0 leaves it out.
	MaxTokens int
	// Stream asks for a streamed answer (with include_usage).
	Stream bool
	// MaxWait, if positive, is sent as x-switchover-max-wait: how long the
	// gateway may hold the request for quota when every region is out.
	MaxWait time.Duration
	// API is the call's shape: "chat" (chat completions, the default) or
	// "responses" (the Responses API: input, max_output_tokens; streams
	// of response.* events).
	API string
	// Repeat, if positive, makes the prompts of a run's requests distinct
	// except for this share of the requests (0 to 1, 1 excluded), which
	// repeat an earlier request's body byte for byte, as a retry loop, an
	// agent asking the same question again or a dashboard refreshing
	// would: what a response cache can answer. See NthBody. 0, the
	// default, sends one body for every request.
	Repeat float64
}

// defaultPrompt is the user message of a Request without a Prompt.
const defaultPrompt = "Say hello in one word."

// headerCache is the gateway's answer header saying whether the response
// cache answered: hit, coalesced, miss or bypass (proxy.HeaderCache).
const headerCache = "X-Switchover-Cache"

// APIResponses is the Request.API of Responses API calls.
const APIResponses = "responses"

// Path is the API path the request is sent to under /v1/.
func (r Request) Path() string {
	if r.API == APIResponses {
		return "responses"
	}
	return "chat/completions"
}

// Body returns the JSON body of the request.
func (r Request) Body() []byte {
	if r.Model == "" {
		r.Model = "chat-prod"
	}
	if r.Prompt == "" {
		r.Prompt = defaultPrompt
	}
	body := map[string]any{
		"model":    r.Model,
		"messages": []map[string]string{{"role": "user", "content": r.Prompt}},
	}
	if r.MaxTokens > 0 {
		body["max_tokens"] = r.MaxTokens
	}
	if r.Stream {
		body["stream"] = true
		body["stream_options"] = map[string]bool{"include_usage": true}
	}
	if r.API == APIResponses {
		body = map[string]any{"model": r.Model, "input": r.Prompt, "store": false}
		if r.MaxTokens > 0 {
			body["max_output_tokens"] = r.MaxTokens
		}
		if r.Stream {
			body["stream"] = true
		}
	}
	b, _ := json.Marshal(body)
	return b
}

// HTTPCaller sends the request over HTTP: to the gateway, to one region,
// or, with a route.Pool as the client's transport, through a client-side
// failover strategy. It is safe for concurrent use.
type HTTPCaller struct {
	// Client sends the requests. Nil means a client with a keep-alive pool
	// sized for load.
	Client *http.Client
	// URL is the chat completions URL. With a route.Pool transport only
	// its path matters.
	URL string
	// Key is sent as "Authorization: Bearer" and "api-key". Optional.
	Key     string
	Request Request
	// Timeout bounds each request, waits included. Default 60s.
	Timeout time.Duration
	// WaitRetryAfter makes the caller sleep for a refusal's Retry-After
	// and try again, as long as the wait fits in Timeout: the only
	// strategy that helps when every region is out of quota, and a slow
	// one.
	WaitRetryAfter bool

	bodyOnce sync.Once
	body     []byte
	// sent numbers the requests of a Request with Repeat.
	sent atomic.Int64
}

var defaultClient = &http.Client{Transport: &http.Transport{
	Proxy:               nil,
	MaxIdleConnsPerHost: 1024,
	IdleConnTimeout:     90 * time.Second,
	DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
}}

// Call implements Caller.
func (c *HTTPCaller) Call(ctx context.Context, start time.Duration) Sample {
	body := c.nextBody()
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	began := time.Now()
	var s attemptSample
	var waited time.Duration
	for {
		s = c.once(ctx, began, body)
		if !c.WaitRetryAfter || s.OK || s.retryAfter <= 0 {
			break
		}
		deadline, _ := ctx.Deadline()
		if time.Until(deadline) < s.retryAfter {
			break // the wait would not fit: report the refusal
		}
		t := time.NewTimer(s.retryAfter)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		waited += s.retryAfter
		if ctx.Err() != nil {
			break
		}
	}
	s.Sample.Start = start
	s.Sample.Latency = time.Since(began)
	s.Sample.Waited = waited
	return s.Sample
}

// attemptSample is a Sample with the refusal's Retry-After.
type attemptSample struct {
	Sample
	retryAfter time.Duration
}

func (c *HTTPCaller) client() *http.Client {
	if c.Client != nil {
		return c.Client
	}
	return defaultClient
}

// nextBody is the body of the caller's next request: the same every time,
// or with Request.Repeat the next of the run's sequence.
func (c *HTTPCaller) nextBody() []byte {
	if c.Request.Repeat > 0 {
		return c.Request.NthBody(int(c.sent.Add(1) - 1))
	}
	c.bodyOnce.Do(func() { c.body = c.Request.Body() })
	return c.body
}

func (c *HTTPCaller) once(ctx context.Context, began time.Time, body []byte) attemptSample {
	var s attemptSample
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		s.Failure = "request"
		return s
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
		req.Header.Set("Api-Key", c.Key)
	}
	if c.Request.MaxWait > 0 {
		req.Header.Set("X-Switchover-Max-Wait", c.Request.MaxWait.String())
	}
	resp, err := c.client().Do(req)
	if err != nil {
		s.Failure = transportFailure(ctx, err)
		return s
	}
	defer resp.Body.Close()
	s.Status = resp.StatusCode
	s.FirstByte = time.Since(began)
	s.Backend = resp.Header.Get(route.HeaderBackend)
	s.Failover = resp.Header.Get(route.HeaderFailover) == "true"
	s.Attempts, _ = strconv.Atoi(resp.Header.Get(route.HeaderAttempts))
	s.Cache = resp.Header.Get(headerCache)
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		s.Failure = strconv.Itoa(resp.StatusCode)
		s.retryAfter = route.RetryAfter(resp.Header, time.Now())
		s.RetryAfter = s.retryAfter
		return s
	}
	if c.Request.Stream && c.Request.API == APIResponses {
		s.OK, s.Failure = readResponsesStream(resp.Body, func() { s.FirstByte = time.Since(began) })
	} else if c.Request.Stream {
		s.OK, s.Failure = readStream(resp.Body, func() { s.FirstByte = time.Since(began) })
	} else {
		s.OK, s.Failure = readCompletion(resp.Body)
	}
	if !s.OK && ctx.Err() != nil {
		s.Failure = "timeout"
	}
	return s
}

func transportFailure(ctx context.Context, err error) string {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "connection"
}

// readCompletion checks a chat completion: at least one choice with
// content (or a tool call, or a finish reason).
func readCompletion(r io.Reader) (bool, string) {
	var c struct {
		Object  string            `json:"object"` // "response": a Responses API answer
		Output  []json.RawMessage `json:"output"`
		Status  string            `json:"status"`
		Choices []struct {
			Message struct {
				Content   *string          `json:"content"`
				ToolCalls []map[string]any `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Data []json.RawMessage `json:"data"` // embeddings
	}
	if err := json.NewDecoder(r).Decode(&c); err != nil {
		return false, "invalid_body"
	}
	if len(c.Data) > 0 {
		return true, ""
	}
	if c.Object == "response" {
		if len(c.Output) > 0 && (c.Status == "completed" || c.Status == "incomplete") {
			return true, ""
		}
		return false, "invalid_body"
	}
	if len(c.Choices) == 0 {
		return false, "invalid_body"
	}
	m := c.Choices[0].Message
	if (m.Content != nil && *m.Content != "") || len(m.ToolCalls) > 0 {
		return true, ""
	}
	return false, "invalid_body"
}

// readStream reads an SSE chat completion stream to its end. It is valid
// when it ends with [DONE], carried at least one chunk, and no error
// event. firstEvent is called at the first data event.
func readStream(r io.Reader, firstEvent func()) (bool, string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	chunks, done := 0, false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if chunks == 0 && !done {
			firstEvent()
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var ev struct {
			Error   json.RawMessage `json:"error"`
			Choices []any           `json:"choices"`
		}
		if json.Unmarshal([]byte(data), &ev) != nil {
			return false, "invalid_body"
		}
		if len(ev.Error) > 0 && string(ev.Error) != "null" {
			return false, "stream_error"
		}
		chunks++
	}
	if sc.Err() != nil {
		return false, "stream_error"
	}
	if !done || chunks == 0 {
		return false, "stream_error"
	}
	return true, ""
}

// readResponsesStream reads a Responses API stream to its end. It is
// valid when it ends with response.completed or response.incomplete and
// carried no error or response.failed event. firstEvent is called at the
// first event.
func readResponsesStream(r io.Reader, firstEvent func()) (bool, string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	events, done := 0, false
	for sc.Scan() {
		name, ok := strings.CutPrefix(sc.Text(), "event:")
		if !ok {
			continue
		}
		if events == 0 {
			firstEvent()
		}
		events++
		switch strings.TrimSpace(name) {
		case "response.completed", "response.incomplete":
			done = true
		case "error", "response.failed":
			return false, "stream_error"
		}
	}
	if sc.Err() != nil || !done {
		return false, "stream_error"
	}
	return true, ""
}

// String describes the caller for progress output.
func (c *HTTPCaller) String() string {
	return fmt.Sprintf("POST %s", c.URL)
}
