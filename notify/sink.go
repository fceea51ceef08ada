package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Sink delivers notifications somewhere. Send must honour ctx (the
// Dispatcher gives each attempt a deadline and cancels it at shutdown) and
// be safe for concurrent use; the Dispatcher calls it from one goroutine per
// sink. Errors must not contain secrets.
type Sink interface {
	// Name identifies the sink in logs, metrics and errors. It must not
	// contain secrets and should be unique among a Dispatcher's sinks.
	Name() string
	Send(ctx context.Context, n Notification) error
}

// ErrInvalidURL is returned by HTTP sinks whose URL does not parse. The
// error does not repeat the URL, which may contain a token. It is
// permanent.
var ErrInvalidURL = errors.New("invalid URL")

// ErrPermanent marks errors that another attempt cannot fix (errors.Is):
// the Dispatcher does not retry them. Sinks wrap it, for example
// fmt.Errorf("%w: bad credentials", ErrPermanent); an HTTPError matches it
// for a 4xx other than 408 and 429.
var ErrPermanent = errors.New("permanent failure")

// HTTPError is a non-2xx response from an HTTP sink. It names the URL by
// scheme and host only.
type HTTPError struct {
	Sink       string
	URL        string // scheme://host
	StatusCode int
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("notify: %s: %s answered %d %s", e.Sink, e.URL, e.StatusCode, http.StatusText(e.StatusCode))
}

// Is reports whether the error matches ErrPermanent: every status but
// 5xx, 408 and 429, which another attempt may fix.
func (e *HTTPError) Is(target error) bool {
	return target == ErrPermanent &&
		e.StatusCode < 500 && e.StatusCode != http.StatusRequestTimeout && e.StatusCode != http.StatusTooManyRequests
}

// redactURL keeps the scheme and host of a URL: webhook URLs of Slack and
// Teams carry their token in the path or query.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "<redacted URL>"
	}
	return u.Scheme + "://" + u.Host
}

// DefaultHTTPTimeout bounds a request of an HTTP sink whose Client is nil.
const DefaultHTTPTimeout = 10 * time.Second

// defaultClient is shared by the HTTP sinks with a nil Client, so that they
// share connections. It holds no per-sink state.
var defaultClient = &http.Client{Timeout: DefaultHTTPTimeout}

// post sends body to rawURL and checks the status. Errors name the sink and
// the redacted URL only.
func post(ctx context.Context, client *http.Client, name, rawURL string, body []byte, header func(http.Header)) error {
	if client == nil {
		client = defaultClient
	}
	where := redactURL(rawURL)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("notify: %s: %w (%w)", name, ErrInvalidURL, ErrPermanent)
	}
	req.Header.Set("User-Agent", "switchover-notify")
	if header != nil {
		header(req.Header)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		// *url.Error prints the full URL; keep only what went wrong.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("notify: %s: post to %s: %w", name, where, err)
	}
	// Drain a little so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &HTTPError{Sink: name, URL: where, StatusCode: resp.StatusCode}
	}
	return nil
}

// wire is the JSON form of a Notification, used by Webhook and Exec.
type wire struct {
	Kind    Kind              `json:"kind"`
	Pool    string            `json:"pool"`
	From    []string          `json:"from"`
	To      []string          `json:"to"`
	Reason  string            `json:"reason"`
	At      time.Time         `json:"at"`
	Text    string            `json:"text"`
	Details map[string]string `json:"details"`
}

// MarshalJSON encodes n as {"kind","pool","from","to","reason","at","text",
// "details"}: from and to are arrays (empty, not null, for no backend), at
// is RFC 3339 in UTC and details an object (empty when there are none).
func (n Notification) MarshalJSON() ([]byte, error) {
	w := wire(n)
	w.At = w.At.UTC()
	if w.From == nil {
		w.From = []string{}
	}
	if w.To == nil {
		w.To = []string{}
	}
	if w.Details == nil {
		w.Details = map[string]string{}
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes the form MarshalJSON writes, for receivers written
// in Go.
func (n *Notification) UnmarshalJSON(b []byte) error {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*n = Notification(w)
	return nil
}
