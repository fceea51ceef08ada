package sim

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/awsauth"
	"github.com/switchover-gw/switchover/internal/eventstream"
	"github.com/switchover-gw/switchover/internal/fakeclock"
)

const (
	simAKID   = "AKIDSIMEXAMPLE"
	simSecret = "sim-secret-access-key"
	simModel  = "anthropic.claude-3-5-haiku-20241022-v1:0"
)

// startBedrock starts one bedrock deployment of simModel in us-east-1
// with the key simAKID:simSecret, and returns its URL and the sim's clock.
func startBedrock(t *testing.T, mod func(*Deployment)) (string, *fakeclock.Clock, *Sim) {
	t.Helper()
	clk := fakeclock.New()
	s := startSim(t, one(Bedrock, func(d *Deployment) {
		d.Region, d.Deployment, d.Key = "us-east-1", simModel, simAKID+":"+simSecret
		if mod != nil {
			mod(d)
		}
	}), WithClock(clk))
	return s.Deployments()[0].URL, clk, s
}

// bedrockCall signs and sends a call to action with body, by secret at
// the clock's time; the model's ':' is escaped as the AWS SDKs do.
func bedrockCall(t *testing.T, base string, clk *fakeclock.Clock, secret, action, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/model/x/"+action, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Path = "/model/" + simModel + "/" + action
	req.URL.RawPath = "/model/" + strings.ReplaceAll(simModel, ":", "%3A") + "/" + action
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		s, err := awsauth.New(context.Background(), awsauth.Settings{Region: "us-east-1", AccessKeyID: simAKID, SecretAccessKey: secret, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Sign(context.Background(), req, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const converseHello = `{"messages":[{"role":"user","content":[{"text":"Hello there"}]}],"inferenceConfig":{"maxTokens":5}}`

// TestBedrockConverse: a signed Converse call is answered in Converse's
// shape, its usage counted and its length cut by maxTokens.
func TestBedrockConverse(t *testing.T) {
	base, clk, _ := startBedrock(t, nil)
	resp := bedrockCall(t, base, clk, simSecret, "converse", converseHello)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Amzn-Requestid") == "" {
		t.Fatalf("status %d, request id %q", resp.StatusCode, resp.Header.Get("X-Amzn-Requestid"))
	}
	var out struct {
		Output struct {
			Message struct {
				Role    string
				Content []struct{ Text string }
			}
		}
		StopReason string
		Usage      struct{ InputTokens, OutputTokens, TotalTokens int }
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Output.Message.Role != "assistant" || len(out.Output.Message.Content) != 1 || out.Output.Message.Content[0].Text == "" ||
		out.StopReason != "max_tokens" || out.Usage.OutputTokens != 5 || out.Usage.TotalTokens != out.Usage.InputTokens+5 {
		t.Fatalf("answer %+v", out)
	}
}

// readEvents decodes an event-stream body into (event type, payload).
func readEvents(t *testing.T, r io.Reader) [][2]string {
	t.Helper()
	var evs [][2]string
	dec := eventstream.NewDecoder(r)
	for {
		m, err := dec.Decode()
		if err == io.EOF {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, [2]string{m.Get(":event-type"), string(m.Payload)})
	}
}

func TestBedrockConverseStream(t *testing.T) {
	base, clk, _ := startBedrock(t, nil)
	resp := bedrockCall(t, base, clk, simSecret, "converse-stream", converseHello)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/vnd.amazon.eventstream" {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs := readEvents(t, resp.Body)
	var types []string
	var text strings.Builder
	for _, e := range evs {
		types = append(types, e[0])
		var d struct{ Delta struct{ Text string } }
		_ = json.Unmarshal([]byte(e[1]), &d)
		text.WriteString(d.Delta.Text)
	}
	got := strings.Join(types, " ")
	if !strings.HasPrefix(got, "messageStart contentBlockDelta") || !strings.HasSuffix(got, "contentBlockStop messageStop metadata") || text.Len() == 0 {
		t.Fatalf("events %s, text %q", got, text.String())
	}
	if last := evs[len(evs)-1][1]; !strings.Contains(last, `"outputTokens":5`) {
		t.Fatalf("metadata %s", last)
	}
}

func TestBedrockInvokeStream(t *testing.T) {
	base, clk, _ := startBedrock(t, nil)
	body := `{"anthropic_version":"bedrock-2023-05-31","max_tokens":3,"messages":[{"role":"user","content":"Hi"}]}`
	resp := bedrockCall(t, base, clk, simSecret, "invoke-with-response-stream", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var types []string
	for _, e := range readEvents(t, resp.Body) {
		var c struct{ Bytes string }
		if e[0] != "chunk" || json.Unmarshal([]byte(e[1]), &c) != nil {
			t.Fatalf("event %v", e)
		}
		an, _ := base64.StdEncoding.DecodeString(c.Bytes)
		var typ struct{ Type string }
		_ = json.Unmarshal(an, &typ)
		types = append(types, typ.Type)
	}
	if got := strings.Join(types, " "); !strings.HasPrefix(got, "message_start") || !strings.HasSuffix(got, "message_delta message_stop") {
		t.Fatalf("chunks %s", got)
	}
	resp = bedrockCall(t, base, clk, simSecret, "invoke", body)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"type":"message"`)) {
		t.Fatalf("invoke: %d %s", resp.StatusCode, b)
	}
}

// TestBedrockSignatureChecked: unsigned, signed with another secret, or
// signed too long ago, a call is refused 403 as AWS refuses it.
func TestBedrockSignatureChecked(t *testing.T) {
	base, clk, s := startBedrock(t, nil)
	cases := []struct {
		name, secret, want string
	}{
		{"unsigned", "", "InvalidSignatureException"},
		{"other secret", "not-the-secret", "InvalidSignatureException"},
		{"stale", simSecret, "InvalidSignatureException"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := clk
			if tc.name == "stale" {
				c = fakeclock.New()
				c.Advance(-time.Hour)
			}
			resp := bedrockCall(t, base, c, tc.secret, "converse", converseHello)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(resp.Header.Get("X-Amzn-Errortype"), tc.want) || bytes.Contains(b, []byte(simSecret)) {
				t.Fatalf("%d %s %s", resp.StatusCode, resp.Header.Get("X-Amzn-Errortype"), b)
			}
		})
	}
	if st := s.Stats(); st["d1"].Rejected != int64(len(cases)) {
		t.Errorf("rejected %d, want %d", st["d1"].Rejected, len(cases))
	}
}

// TestBedrockThrottled: out of quota, a call is ThrottlingException 429
// without Retry-After or rate-limit headers, as Bedrock sends none.
func TestBedrockThrottled(t *testing.T) {
	base, clk, _ := startBedrock(t, func(d *Deployment) { d.Quota = Quota{RPM: 6} })
	var resp *http.Response
	for range 3 {
		resp = bedrockCall(t, base, clk, simSecret, "converse", converseHello)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.HasPrefix(resp.Header.Get("X-Amzn-Errortype"), "ThrottlingException:") ||
		!bytes.HasPrefix(b, []byte(`{"message":`)) || resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-Ratelimit-Remaining-Requests") != "" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, b)
	}
}
