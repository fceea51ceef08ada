// Package geminitest calls a gateway under test as Gemini's clients do:
// Google's Go SDK (google.golang.org/genai) by base URL, or a plain POST
// with the key in x-goog-api-key, and reads Google's error shape.
package geminitest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/switchover-gw/switchover/internal/clienttest"
)

// Client is Google's SDK client for the gateway at url, with key ("" sends
// none: the SDK then needs one, so a placeholder is given and the header
// removed).
func Client(t testing.TB, url, key string) *genai.Client {
	t.Helper()
	cfg := &genai.ClientConfig{Backend: genai.BackendGeminiAPI, APIKey: key, HTTPOptions: genai.HTTPOptions{BaseURL: url}}
	if key == "" {
		cfg.APIKey = "placeholder"
		cfg.HTTPClient = &http.Client{Transport: dropHeader{"X-Goog-Api-Key"}, Timeout: clienttest.Client.Timeout}
	}
	c, err := genai.NewClient(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// dropHeader is a transport that removes a header from every request.
type dropHeader struct{ name string }

func (d dropHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Del(d.name)
	return http.DefaultTransport.RoundTrip(r)
}

// Status is the error.status of a Gemini error body; it fails t when body
// is not one.
func Status(t testing.TB, body []byte) string {
	t.Helper()
	var b struct {
		Error struct {
			Code    int    `json:"code"`
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("not a Gemini error: %s", body)
	}
	return b.Error.Status
}

// Post posts the JSON body to url with the gateway key in x-goog-api-key
// ("" sends none) and returns the answer's status and body.
func Post(t testing.TB, url, key, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("X-Goog-Api-Key", key)
	}
	resp, err := clienttest.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
