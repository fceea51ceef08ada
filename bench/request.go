package bench

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"time"
)

// request is the one call every target gets: the same body and headers,
// a short chat completion as an OpenAI SDK sends it.
type request struct {
	url     string
	body    []byte
	headers [][2]string
}

var (
	chatBody   = []byte(`{"model":"chat-prod","max_tokens":8,"messages":[{"role":"user","content":"Say hello in one word."}]}`)
	streamBody = []byte(`{"model":"chat-prod","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"Say hello in one word."}]}`)
)

func chatRequest(url string, stream bool) request {
	r := request{url: url, body: chatBody, headers: [][2]string{
		{"Content-Type", "application/json"},
		{"Authorization", "Bearer " + benchKey},
	}}
	if stream {
		r.body = streamBody
	}
	return r
}

// forModel is r asking for model instead of chat-prod.
func (r request) forModel(model string) request {
	r.body = bytes.Replace(r.body, []byte(`"model":"chat-prod"`), []byte(`"model":`+strconv.Quote(model)), 1)
	return r
}

func (r request) httpRequest(ctx context.Context) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(r.body))
	if err != nil {
		return nil, err
	}
	for _, h := range r.headers {
		req.Header.Set(h[0], h[1])
	}
	return req, nil
}

// newClient is a keep-alive client for one target, with room for conns
// connections.
func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}
