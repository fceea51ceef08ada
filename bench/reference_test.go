package bench

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/poll"
)

func TestServeAnswerAnswersAndStops(t *testing.T) {
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ServeAnswer(ctx, addr) }()
	var body string
	poll.Until(t, 5*time.Second, func() bool {
		resp, err := http.Post("http://"+addr+"/openai/deployments/chat/chat/completions", "application/json", strings.NewReader(`{"messages":[]}`))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK
	}, func() string { return "the reference server did not answer" })
	if body != string(chatAnswer) {
		t.Errorf("answer %q, want the mock's chat completion", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ServeAnswer after its context ended: %v", err)
	}
}
