package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
)

// Webhook signature headers.
const (
	// SignatureHeader carries "sha256=" and the lowercase hex HMAC-SHA256,
	// keyed with Webhook.Secret, of the timestamp header's value, a ".",
	// and the request body as sent.
	SignatureHeader = "X-Switchover-Signature"
	// TimestampHeader carries the Unix time in seconds at which the
	// request was signed. Receivers should reject timestamps far from
	// their own clock (say more than 5 minutes) to stop replays.
	TimestampHeader = "X-Switchover-Timestamp"
)

// Webhook posts each notification as JSON (see Notification.MarshalJSON)
// with Content-Type application/json.
//
// When Secret is set, every request is signed so that a receiver can check
// it came from this gateway and was not altered:
//
//	X-Switchover-Timestamp: 1796040000
//	X-Switchover-Signature: sha256=<hex(HMAC-SHA256(Secret, timestamp + "." + body))>
//
// A receiver recomputes the HMAC over the timestamp header, a dot and the
// raw body, compares it in constant time (hmac.Equal) and rejects old
// timestamps. Each attempt is signed anew.
//
// A Webhook is safe for concurrent use. Do not modify it while in use.
type Webhook struct {
	// Label is the sink's Name in logs and metrics. Default "webhook".
	Label string
	// URL receives the POST. Required. Never logged: errors show its
	// scheme and host only.
	URL string
	// Secret, if set, signs requests as described above. Never logged.
	Secret string
	// Headers are added to every request (for example an Authorization
	// header). They cannot replace Content-Type or the signature headers.
	// Never logged.
	Headers map[string]string
	// Client sends the requests. Nil means a shared client with a
	// DefaultHTTPTimeout (10s) timeout; the Dispatcher's shorter
	// per-attempt deadline applies as well.
	Client *http.Client
	// Clock stamps signed requests. Nil means the wall clock.
	Clock Clock
}

var _ Sink = (*Webhook)(nil)

// Name implements Sink.
func (w *Webhook) Name() string {
	if w.Label != "" {
		return w.Label
	}
	return "webhook"
}

// String describes the webhook without its secret, path or headers.
func (w Webhook) String() string {
	return "webhook " + w.Name() + " to " + redactURL(w.URL)
}

// GoString is String, so that %#v prints no secret either.
func (w Webhook) GoString() string { return w.String() }

// Send implements Sink.
func (w *Webhook) Send(ctx context.Context, n Notification) error {
	body, err := json.Marshal(n)
	if err != nil {
		return err
	}
	return post(ctx, w.Client, w.Name(), w.URL, body, func(h http.Header) {
		for k, v := range w.Headers {
			h.Set(k, v)
		}
		if w.Secret == "" {
			h.Del(SignatureHeader)
			h.Del(TimestampHeader)
			return
		}
		clk := w.Clock
		if clk == nil {
			clk = wallClock{}
		}
		ts := strconv.FormatInt(clk.Now().Unix(), 10)
		h.Set(TimestampHeader, ts)
		h.Set(SignatureHeader, Sign(w.Secret, ts, body))
	})
}

// Sign returns the signature header value for body sent at timestamp ts
// (decimal Unix seconds): "sha256=" and the hex HMAC-SHA256 of ts + "." +
// body keyed with secret.
func Sign(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}
