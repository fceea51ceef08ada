package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
)

// Slack posts {"text": …} to a Slack incoming-webhook URL: a headline with
// the pool name in bold, then the notification's Text, escaped for Slack.
// A Slack is safe for concurrent use. Do not modify it while in use.
type Slack struct {
	// Label is the sink's Name in logs and metrics. Default "slack".
	Label string
	// URL is the incoming-webhook URL. Required. It embeds the token, so it
	// is never logged: errors show its scheme and host only.
	URL string
	// Client sends the requests. Nil means a shared client with a
	// DefaultHTTPTimeout timeout.
	Client *http.Client
}

var _ Sink = (*Slack)(nil)

// Name implements Sink.
func (s *Slack) Name() string {
	if s.Label != "" {
		return s.Label
	}
	return "slack"
}

// String describes the sink without the URL's token.
func (s Slack) String() string { return "slack " + s.Name() + " to " + redactURL(s.URL) }

// GoString is String, so that %#v prints no token either.
func (s Slack) GoString() string { return s.String() }

// slackEscape escapes the three characters Slack's mrkdwn reserves.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// SlackText formats n for Slack: "<title> on pool *<pool>*", a newline, and
// n.Text.
func SlackText(n Notification) string {
	return slackEscape.Replace(title(n)) + " on pool *" + slackEscape.Replace(n.Pool) + "*\n" + slackEscape.Replace(n.Text)
}

// Send implements Sink.
func (s *Slack) Send(ctx context.Context, n Notification) error {
	body, err := json.Marshal(struct {
		Text string `json:"text"`
	}{SlackText(n)})
	if err != nil {
		return err
	}
	return post(ctx, s.Client, s.Name(), s.URL, body, nil)
}

// title is a short headline for n, without the pool.
func title(n Notification) string {
	settled := ""
	if n.Details[DetailSettled] == "true" {
		settled = " (settled after flapping)"
	}
	switch n.Kind {
	case KindFailover:
		return "Failover" + settled
	case KindFailback:
		return "Failback" + settled
	case KindChange:
		return "Active backend changed" + settled
	case KindFlapping:
		return "Active backend flapping"
	case KindStorm:
		return "Failover storm"
	case KindAdmin:
		return "Operator action"
	case KindMisconfigured:
		return "Backend misconfigured"
	default:
		return "Notification " + string(n.Kind)
	}
}
