package bench

import (
	"encoding/json"
	"strings"
	"testing"
)

// Every scale row asks for its shape's model; the aliases row for an
// alias, so its figure includes looking the pool up through one.
func TestScaleRowsAskForTheirShapesModel(t *testing.T) {
	for _, s := range scaleShapes(0.01) {
		r := scaleRequest("http://127.0.0.1:1/v1/chat/completions", s)
		var body struct {
			Model     string `json:"model"`
			MaxTokens int    `json:"max_tokens"`
			Messages  []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatalf("%s: %v: %s", s.name, err, r.body)
		}
		if body.Model != s.Model() {
			t.Errorf("%s asks for %q, want %q", s.name, body.Model, s.Model())
		}
		if s.name == "aliases" && !strings.HasPrefix(body.Model, "alias-") {
			t.Errorf("the aliases row asks for %q, not an alias", body.Model)
		}
		if body.MaxTokens != 8 || len(body.Messages) != 1 || body.Messages[0].Content != "Say hello in one word." {
			t.Errorf("%s: the rest of the body changed: %s", s.name, r.body)
		}
	}
	if got := string(chatBody); !strings.Contains(got, `"model":"chat-prod"`) {
		t.Errorf("chatBody changed under forModel: %s", got)
	}
}
