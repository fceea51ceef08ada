package sim

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// TestDeploymentLacksOperations: a deployment that serves chat alone
// answers embeddings and a realtime upgrade as Azure answers a deployment
// that lacks them (404 DeploymentNotFound, or 400 OperationNotSupported),
// after the key check, and still answers chat; the calls count as
// rejected.
func TestDeploymentLacksOperations(t *testing.T) {
	tests := []struct {
		name     string
		fl       Flavour
		status   int // UnsupportedStatus
		want     int
		wantBody string
	}{
		{"azure 404", Azure, 0, 404, `"code":"DeploymentNotFound"`},
		{"azure 400", Azure, 400, 400, `"code":"OperationNotSupported","message":"The embeddings operation does not work with the specified model, gpt-4o-mini-2024-07-18.`},
		{"openai 404", OpenAI, 404, 404, `"code":"model_not_found"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, one(tc.fl, func(d *Deployment) {
				d.Key, d.Operations, d.UnsupportedStatus = "k", []string{"chat"}, tc.status
			}))
			ep := s.Deployments()[0]
			key := map[string]string{"api-key": "k", "Authorization": "Bearer k"}
			embeddings := ep.URL + "/openai/deployments/chat-prod/embeddings?api-version=2024-10-21"
			if tc.fl == OpenAI {
				embeddings = ep.URL + "/embeddings"
			}
			if resp, b := do(t, http.MethodPost, embeddings, `{"model":"chat-prod","input":"x"}`, nil); resp.StatusCode != 401 {
				t.Fatalf("without a key: %d %s, want the key refused first", resp.StatusCode, b)
			}
			resp, b := do(t, http.MethodPost, embeddings, `{"model":"chat-prod","input":"x"}`, key)
			if resp.StatusCode != tc.want || !strings.Contains(string(b), tc.wantBody) {
				t.Fatalf("embeddings: %d %s\nwant %d with %s", resp.StatusCode, b, tc.want, tc.wantBody)
			}
			if resp, b := do(t, http.MethodPost, chatPath(ep), chatBodyFor(ep, "hi", 3), key); resp.StatusCode != 200 {
				t.Fatalf("chat: %d %s", resp.StatusCode, b)
			}
			hdr := http.Header{"Api-Key": {"k"}, "Authorization": {"Bearer k"}}
			_, resp, err := websocket.Dial(t.Context(), wsURL(ep.URL)+realtimePath(tc.fl), &websocket.DialOptions{HTTPHeader: hdr})
			if err == nil || resp == nil || resp.StatusCode != tc.want {
				t.Fatalf("realtime upgrade: %v (%v), want %d", err, resp, tc.want)
			}
			if st := s.Stats()["d1"]; st.Rejected != 3 || st.Answered != 1 {
				t.Fatalf("stats %+v, want 3 rejected (the keyless call too) and 1 answered", st)
			}
		})
	}
}

func realtimePath(fl Flavour) string {
	if fl == OpenAI {
		return "/realtime?model=chat-prod"
	}
	return "/openai/v1/realtime?model=chat-prod"
}

// TestOperationsSetAtRunTime: the control API (and Sim.SetOperations)
// changes what a deployment serves from the next call; an empty list
// serves every operation again; unknown names and deployments are
// refused.
func TestOperationsSetAtRunTime(t *testing.T) {
	s := startSim(t, one(Azure, nil))
	ep := s.Deployments()[0]
	embeddings := func() int {
		resp, _ := do(t, http.MethodPost, ep.URL+"/openai/v1/embeddings", `{"model":"chat-prod","input":"x"}`, nil)
		return resp.StatusCode
	}
	if got := embeddings(); got != 200 {
		t.Fatalf("by default: %d", got)
	}
	resp, b := do(t, http.MethodPost, s.ControlURL()+"/deployments/d1/operations", `{"operations":["chat","realtime"]}`, nil)
	if resp.StatusCode != 200 || string(b) != `{"operations":["chat","realtime"]}` {
		t.Fatalf("POST operations: %d %s", resp.StatusCode, b)
	}
	if got := embeddings(); got != 404 {
		t.Fatalf("after setting chat and realtime: embeddings %d", got)
	}
	if resp, b := do(t, http.MethodGet, s.ControlURL()+"/deployments/d1/operations", "", nil); resp.StatusCode != 200 || string(b) != `{"operations":["chat","realtime"]}` {
		t.Fatalf("GET operations: %d %s", resp.StatusCode, b)
	}
	if resp, b := do(t, http.MethodPost, s.ControlURL()+"/deployments/d1/operations", `{"operations":["chat","embedings"]}`, nil); resp.StatusCode != 400 || !strings.Contains(string(b), "embedings") {
		t.Fatalf("unknown operation: %d %s", resp.StatusCode, b)
	}
	if resp, _ := do(t, http.MethodPost, s.ControlURL()+"/deployments/nope/operations", `{"operations":["chat"]}`, nil); resp.StatusCode != 404 {
		t.Fatalf("unknown deployment: %d", resp.StatusCode)
	}
	if err := s.SetOperations("nope", nil); !errors.Is(err, ErrUnknownDeployment) {
		t.Fatalf("SetOperations on an unknown deployment: %v", err)
	}
	if err := s.SetOperations("d1", nil); err != nil {
		t.Fatal(err)
	}
	if got := embeddings(); got != 200 {
		t.Fatalf("after clearing: embeddings %d", got)
	}
	if ops, err := s.Operations("d1"); err != nil || ops != nil {
		t.Fatalf("Operations after clearing: %v %v, want every one (nil)", ops, err)
	}
}
