// Package clienttest calls a gateway under test the way an application
// does: a request with its bearer key, the answer's body read whole.
package clienttest

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Client is the HTTP client of the calls: a timeout, so that a gateway that
// never answers fails the test instead of hanging it.
var Client = &http.Client{Timeout: 30 * time.Second}

// Call sends method to url with key as the bearer token and body (a JSON
// body when not empty), then the header pairs in hdr (an empty value
// removes the header, the key's included), and returns the response with
// its body, read and closed. It fails t when no answer comes.
func Call(t testing.TB, method, url, key, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}
