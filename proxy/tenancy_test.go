package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/tenant"
)

// TestTPMAdmitsImageRequests: a key's tpm took a request with a 900 KB
// base64 image as about 230,000 tokens (bytes/4), so on a 60,000-token
// limit the first ran into debt and the next was refused for minutes.
// The image is its flat cost (route.OpenAIImageTokens), so ten such
// requests (about 870 tokens each) fit in the bucket's 10,000 a 10 s.
func TestTPMAdmitsImageRequests(t *testing.T) {
	clk := fakeclock.New()
	const secret = "sk-tpm-caller-0123456789"
	dir := tenant.NewDirectory(clk, nil)
	dir.SetConfig([]tenant.ConfigKey{{Secret: secret, Principal: tenant.Principal{ID: "k", Limits: tenant.Limits{TPM: 60000}}}}, nil)
	lim := tenant.NewLimiter(clk, tenant.NewSpend(clk, nil), dir.Team)
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"1","object":"chat.completion","choices":[]}`)
	})
	u, ended := limitedGateway(t, &Handler{Clock: clk}, up, func(rt *Routes) { rt.Resolver, rt.Admission = dir, lim })
	img := strings.Repeat("iVBORw0KGgoAAAANSUhEUgAAA+gAAAPoCAYAAABNo9TkAAAgAElEQVR4", 900<<10/56) // under the handler's 1 MiB body limit
	body := `{"model":"chat-prod","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + img + `"}}]}]}`
	for i := range 10 {
		req, _ := http.NewRequest(http.MethodPost, u+"/v1/chat/completions?image", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d of 10 with a 900 KB image, on 60,000 tokens a minute: %d %s", i+1, resp.StatusCode, b)
		}
		waitEnded(t, ended, "image")
	}
}
