package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
)

// Teams posts each notification as an Adaptive Card message to a Microsoft
// Teams incoming webhook or a Teams Workflows ("Post to a channel when a
// webhook request is received") URL, in the documented form:
//
//	{"type": "message",
//	 "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive",
//	                  "contentUrl": null,
//	                  "content": {"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
//	                              "type": "AdaptiveCard", "version": "1.4",
//	                              "body": [TextBlock title, TextBlock text, FactSet]}}]}
//
// A Teams is safe for concurrent use. Do not modify it while in use.
type Teams struct {
	// Label is the sink's Name in logs and metrics. Default "teams".
	Label string
	// URL is the webhook or Workflows URL. Required. It embeds a
	// signature, so it is never logged: errors show its scheme and host
	// only.
	URL string
	// Client sends the requests. Nil means a shared client with a
	// DefaultHTTPTimeout timeout.
	Client *http.Client
}

var _ Sink = (*Teams)(nil)

// Name implements Sink.
func (t *Teams) Name() string {
	if t.Label != "" {
		return t.Label
	}
	return "teams"
}

// String describes the sink without the URL's signature.
func (t Teams) String() string { return "teams " + t.Name() + " to " + redactURL(t.URL) }

// GoString is String, so that %#v prints no signature either.
func (t Teams) GoString() string { return t.String() }

type teamsMessage struct {
	Type        string            `json:"type"`
	Attachments []teamsAttachment `json:"attachments"`
}

type teamsAttachment struct {
	ContentType string    `json:"contentType"`
	ContentURL  *string   `json:"contentUrl"`
	Content     teamsCard `json:"content"`
}

type teamsCard struct {
	Schema  string           `json:"$schema"`
	Type    string           `json:"type"`
	Version string           `json:"version"`
	Body    []map[string]any `json:"body"`
}

// TeamsMessage builds the message Teams posts for n.
func TeamsMessage(n Notification) any {
	list := func(s []string) string {
		if len(s) == 0 {
			return "none usable"
		}
		return strings.Join(s, ", ")
	}
	facts := []map[string]string{
		{"title": "Pool", "value": n.Pool},
		{"title": "From", "value": list(n.From)},
		{"title": "To", "value": list(n.To)},
	}
	if n.Reason != "" {
		facts = append(facts, map[string]string{"title": "Reason", "value": n.Reason})
	}
	facts = append(facts, map[string]string{"title": "At", "value": stamp(n.At)})
	body := []map[string]any{
		{"type": "TextBlock", "text": title(n) + " on pool " + n.Pool, "weight": "Bolder", "size": "Medium", "wrap": true},
		{"type": "TextBlock", "text": n.Text, "wrap": true},
		{"type": "FactSet", "facts": facts},
	}
	return teamsMessage{
		Type: "message",
		Attachments: []teamsAttachment{{
			ContentType: "application/vnd.microsoft.card.adaptive",
			Content: teamsCard{
				Schema:  "http://adaptivecards.io/schemas/adaptive-card.json",
				Type:    "AdaptiveCard",
				Version: "1.4",
				Body:    body,
			},
		}},
	}
}

// Send implements Sink.
func (t *Teams) Send(ctx context.Context, n Notification) error {
	body, err := json.Marshal(TeamsMessage(n))
	if err != nil {
		return err
	}
	return post(ctx, t.Client, t.Name(), t.URL, body, nil)
}
