package config

import "fmt"

// validate checks the notification sinks: webhook, Slack and Teams URLs
// are http(s), exec commands are lists.
func (n Notifications) validate(ps *Problems) {
	if n.Attempts < 1 {
		ps.add("notifications.attempts", "must be 1 or more")
	}
	for i, w := range n.Webhooks {
		if !isHTTPURL(w.URL.Value()) {
			ps.add(fmt.Sprintf("notifications.webhooks[%d].url", i), "not an http(s) URL")
		}
	}
	for kind, sinks := range map[string][]URLSink{"slack": n.Slack, "teams": n.Teams} {
		for i, w := range sinks {
			if !isHTTPURL(w.URL.Value()) {
				ps.add(fmt.Sprintf("notifications.%s[%d].url", kind, i), "not an http(s) URL")
			}
		}
	}
	for i, e := range n.Exec {
		if len(e.Command) == 0 || e.Command[0] == "" {
			ps.add(fmt.Sprintf("notifications.exec[%d].command", i), "give the command as a list: [program, arg, …]")
		}
	}
}
