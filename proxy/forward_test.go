package proxy

import (
	"errors"
	"testing"

	"github.com/switchover-gw/switchover/route"
)

// TestForwards: what unknown_paths takes for a list of paths: the listed
// prefixes at segment boundaries, in their case; never the provider's
// admin APIs, realtime sub-paths or stored chat completions unless an
// entry names them ("*" does not); never a path shadowing a routed or
// pinned one (400).
func TestForwards(t *testing.T) {
	pinned := []Pinned{{Path: "files", Pool: &route.Pool{}}}
	tests := []struct {
		allow []string
		path  string
		want  int // 0: taken
	}{
		{[]string{"assistants"}, "/v1/assistants", 0},
		{[]string{"assistants"}, "/openai/v1/assistants/asst_1/files", 0},
		{[]string{"assistants"}, "/v1/assistantsx", 404},
		{[]string{"assistants"}, "/v1/Assistants", 404},
		{[]string{"assistants"}, "/v1/threads", 404},
		{nil, "/v1/assistants", 404},
		{[]string{"*"}, "/v1/evals/e1/runs", 0},
		{[]string{"*"}, "/v1/organization/admin_api_keys", 404},
		{[]string{"*"}, "/v1/ORGANIZATION/users", 404},
		{[]string{"*"}, "/v1/organizations", 404},
		{[]string{"*"}, "/v1/admin_api_keys", 404},
		{[]string{"*"}, "/v1/dashboard/billing", 404},
		{[]string{"*"}, "/v1/realtime/client_secrets", 404},
		{[]string{"*"}, "/v1/realtime/calls", 404},
		{[]string{"*"}, "/v1/chat/completions/chatcmpl-1", 400}, // routed by the gateway (stored chats)
		{[]string{"realtime"}, "/v1/realtime/client_secrets", 0},
		{[]string{"realtime/client_secrets"}, "/v1/realtime/client_secrets", 0},
		{[]string{"realtime/client_secrets"}, "/v1/realtime/sessions", 404},
		{[]string{"organization/usage"}, "/v1/organization/usage/completions", 0},
		{[]string{"organization/usage"}, "/v1/organization/admin_api_keys", 404},
		{[]string{"chat/completions"}, "/v1/chat/completions/chatcmpl-1", 400},
		{[]string{"*"}, "/v1/Chat/Completions", 400},
		{[]string{"*"}, "/v1/Files/file-1", 400},
		{[]string{"*"}, "/v1/openai/v1/chat/completions", 400},
		{[]string{"*"}, "/v1/v1/embeddings", 400},
		{[]string{"*"}, "/v1/deployments/d/chat/completions", 400},
		{[]string{"*"}, "/v1/openai/deployments/d/embeddings", 400},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			rt := &Routes{Unknown: &route.Pool{}, UnknownAllow: tc.allow, Pinned: pinned}
			rel, _ := apiRelative(tc.path)
			err := rt.forwards(tc.path, rel)
			var e *apiError
			switch {
			case tc.want == 0 && err != nil:
				t.Fatalf("allow %q: %v, want it taken", tc.allow, err)
			case tc.want != 0 && (!errors.As(err, &e) || e.status != tc.want):
				t.Fatalf("allow %q: %v, want %d", tc.allow, err, tc.want)
			}
		})
	}
}
