package drill

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// outcome is how the gateway answered one request.
type outcome int

const (
	answered   outcome = iota // 200
	overBudget                // 429 budget_exceeded
	overRate                  // 429 rate_limit_exceeded
	failed                    // any other answer, or none
)

// smallBody is a small chat request: 8 prompt tokens and 5 completion
// tokens on the simulator, about $0.00023 at the drill's price.
var smallBody = chatBody("count the tokens of this prompt", 5)

// smallBodyOf is smallBody of end user user.
func smallBodyOf(user string) string {
	b, _ := json.Marshal(map[string]any{
		"model":      pool,
		"max_tokens": 5,
		"user":       user,
		"messages":   []map[string]string{{"role": "user", "content": "count the tokens of this prompt"}},
	})
	return string(b)
}

// largeBody is a chat request whose prompt is chars characters long.
func largeBody(chars int) string {
	return chatBody(strings.Repeat("word ", chars/5), 5)
}

func chatBody(prompt string, maxTokens int) string {
	b, _ := json.Marshal(map[string]any{
		"model":      pool,
		"max_tokens": maxTokens,
		"messages":   []map[string]string{{"role": "user", "content": prompt}},
	})
	return string(b)
}

// apiError is the part of an OpenAI-style error the drill reads.
type apiError struct {
	Error struct {
		Code string `json:"code"`
	} `json:"error"`
}

// send posts body to the replica at url with key, and returns the
// outcome and, for a refusal, its Retry-After.
func send(ctx context.Context, url, key, body string) (outcome, time.Duration) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return failed, 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		return failed, 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch resp.StatusCode {
	case http.StatusOK:
		return answered, 0
	case http.StatusTooManyRequests:
		var e apiError
		_ = json.Unmarshal(b, &e)
		ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		switch e.Error.Code {
		case "budget_exceeded":
			return overBudget, time.Duration(ra) * time.Second
		case "rate_limit_exceeded":
			return overRate, time.Duration(ra) * time.Second
		}
	}
	return failed, 0
}

// tally counts outcomes. Not safe for concurrent use.
type tally struct {
	admitted, budget, rate, failed int
	maxRetryAfter                  time.Duration
}

func (t *tally) add(o outcome, retryAfter time.Duration) {
	switch o {
	case answered:
		t.admitted++
	case overBudget:
		t.budget++
	case overRate:
		t.rate++
	default:
		t.failed++
	}
	t.maxRetryAfter = max(t.maxRetryAfter, retryAfter)
}

func (t tally) sent() int { return t.admitted + t.budget + t.rate + t.failed }

func (t tally) String() string {
	return fmt.Sprintf("%d admitted, %d over budget, %d over rate, %d failed", t.admitted, t.budget, t.rate, t.failed)
}
