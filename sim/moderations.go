package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// moderationCategories are the categories of a moderation result.
var moderationCategories = []string{
	"harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent",
	"self-harm", "self-harm/intent", "self-harm/instructions", "sexual", "sexual/minors", "violence", "violence/graphic",
}

// moderate serves POST moderations (openai): one result per input, flagged
// for violence when the content filter's block phrase is in it. It counts
// one request and no tokens.
func (d *deployment) moderate(w http.ResponseWriter, r *http.Request, c *call, f Fault, _ string) outcome {
	var b struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(c.body, &b); err != nil {
		d.writeError(w, errInvalidRequest(OpenAI, fmt.Sprintf("could not parse the JSON body of your request: %v", err)))
		return outcomeRejected
	}
	texts, _, err := moderationInputs(b.Input)
	if err != nil {
		d.writeError(w, errInvalidRequest(OpenAI, strings.TrimPrefix(err.Error(), errBadRequest.Error()+": ")))
		return outcomeRejected
	}
	if !d.admit(w, c, f, 0) {
		return outcomeRefused
	}
	if !d.wait(r, d.plan(c, f).total) {
		return outcomeAbandoned
	}
	model := b.Model
	if model == "" {
		model = "omni-moderation-latest"
	}
	var results []any
	for _, t := range texts {
		flagged := d.cfg.ContentFilter.check(t) == filterBlock
		cats, scores := map[string]bool{}, map[string]float64{}
		for _, k := range moderationCategories {
			cats[k], scores[k] = false, 0.0001
		}
		if flagged {
			cats["violence"], scores["violence"] = true, 0.98
		}
		results = append(results, map[string]any{"flagged": flagged, "categories": cats, "category_scores": scores})
	}
	if err := writeJSON(w, http.StatusOK, map[string]any{"id": "modr-" + randomHex(c.rng, 32), "model": model, "results": results}); err != nil {
		return outcomeAbandoned
	}
	return outcomeOK
}

// moderationInputs reads a moderation input: a string, an array of
// strings, or an array of parts whose text parts count.
func moderationInputs(raw json.RawMessage) ([]string, int64, error) {
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil && len(parts) > 0 && parts[0].Type != "" {
		var out []string
		for _, p := range parts {
			if p.Type == "text" {
				out = append(out, p.Text)
			}
		}
		return out, 0, nil
	}
	return textOrTokens(raw, "input")
}
