package notify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// receiver is a local HTTP endpoint that records requests.
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	status  int
	bodies  [][]byte
	headers []http.Header
	paths   []string
}

func newReceiver(t *testing.T, status int) *receiver {
	t.Helper()
	r := &receiver{status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, b)
		r.headers = append(r.headers, req.Header.Clone())
		r.paths = append(r.paths, req.URL.RequestURI())
		st := r.status
		r.mu.Unlock()
		w.WriteHeader(st)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) request(i int) ([]byte, http.Header, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bodies[i], r.headers[i], r.paths[i]
}

func sample() Notification {
	n := Notification{
		Kind:    KindFailover,
		Pool:    "chat-prod",
		From:    []string{"eastus"},
		To:      []string{"westeurope"},
		Reason:  "429 quota: 5 failures in 30s, last 429",
		At:      time.Date(2026, 11, 30, 14, 0, 5, 0, time.FixedZone("CET", 3600)),
		Details: map[string]string{DetailPrimary: "eastus"},
	}
	n.Text = composeText(n)
	return n
}

func TestHTTPSinkErrorsHideSecrets(t *testing.T) {
	const token = "T000/B000/XXXXSECRET"
	failing := newReceiver(t, http.StatusInternalServerError)
	gone := newReceiver(t, http.StatusNotFound)
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	cases := []struct {
		name      string
		sink      Sink
		temporary bool
		status    int
	}{
		{"webhook 500", &Webhook{URL: failing.URL + "/services/" + token + "?sig=" + token, Secret: token}, true, 500},
		{"slack 404", &Slack{URL: gone.URL + "/services/" + token}, false, 404},
		{"teams 500", &Teams{URL: failing.URL + "/workflows/" + token + "?sig=" + token}, true, 500},
		{"connection refused", &Slack{URL: downURL + "/services/" + token}, true, 0},
		{"invalid URL", &Webhook{URL: "http://bad host/" + token}, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.sink.Send(context.Background(), sample())
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "/services") {
				t.Fatalf("error leaks the URL: %v", err)
			}
			if !strings.Contains(err.Error(), tc.sink.Name()) {
				t.Errorf("error %q does not name the sink", err)
			}
			var he *HTTPError
			if tc.status != 0 {
				if !errors.As(err, &he) || he.StatusCode != tc.status {
					t.Fatalf("error %v, want HTTPError %d", err, tc.status)
				}
			}
			if temporary(err) != tc.temporary {
				t.Errorf("temporary = %v", temporary(err))
			}
		})
	}
}

func TestSinkStringHidesSecrets(t *testing.T) {
	const token = "XXXXSECRET"
	sinks := []any{
		&Webhook{URL: "https://hooks.example.com/x/" + token, Secret: token, Headers: map[string]string{"Authorization": token}},
		Webhook{URL: "https://hooks.example.com/x/" + token, Secret: token},
		&Slack{URL: "https://hooks.slack.com/services/" + token},
		Slack{URL: "https://hooks.slack.com/services/" + token},
		&Teams{URL: "https://prod.westeurope.logic.azure.com/workflows/x?sig=" + token},
		&Exec{Command: []string{"/usr/local/bin/page", "--token", token}, Env: []string{"T=" + token}},
	}
	for _, s := range sinks {
		for _, verb := range []string{"%v", "%+v", "%s", "%#v"} {
			if out := fmt.Sprintf(verb, s); strings.Contains(out, token) {
				t.Errorf("%s of %T prints the secret: %s", verb, s, out)
			}
		}
	}
}

func TestHTTPSinkHonoursContext(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- (&Webhook{URL: srv.URL}).Send(ctx, sample()) }()
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second): // a guard against a hang
		t.Fatal("Send ignored its context")
	}
}
