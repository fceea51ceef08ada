package sim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"
)

// This file serves the Responses API's compaction: POST responses/compact.
// Like OpenAI's, it takes a model, input and/or a previous_response_id,
// and instructions, and answers a response.compaction object (not stored,
// not streamed): the user messages of the conversation kept as they are,
// then one compaction item whose encrypted_content stands for everything
// else, and the call's usage.

// compactBody is the part of a compaction request the sim reads.
type compactBody struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       json.RawMessage `json:"instructions"`
	PreviousResponseID string          `json:"previous_response_id"`
}

// compactionObject is the answer to responses/compact.
type compactionObject struct {
	ID        string         `json:"id"`
	Object    string         `json:"object"` // "response.compaction"
	CreatedAt int64          `json:"created_at"`
	Output    []any          `json:"output"`
	Usage     *responseUsage `json:"usage"`
}

// compactionItem is the output item that carries the compacted context.
type compactionItem struct {
	Type             string `json:"type"` // "compaction"
	ID               string `json:"id"`
	EncryptedContent string `json:"encrypted_content"`
}

// compactResponse serves POST responses/compact: the model must name the
// deployment, a previous_response_id must name a response stored here
// (its input and output join the conversation), and there must be a
// conversation (input, a previous response, or both). The estimate is
// charged to the quota like a Responses call's; the answer comes after the
// call's latency.
func (d *deployment) compactResponse(w http.ResponseWriter, r *http.Request, c *call, f Fault, _ string) outcome {
	fl := d.cfg.Flavour
	var b compactBody
	if len(bytes.TrimSpace(c.body)) == 0 {
		d.writeError(w, errInvalidRequest(fl, "the request body is empty; expected a JSON object"))
		return outcomeRejected
	}
	if err := json.Unmarshal(c.body, &b); err != nil {
		d.writeError(w, errInvalidRequest(fl, "could not parse the JSON body of your request: "+err.Error()))
		return outcomeRejected
	}
	if !d.checkModel(w, c, b.Model) {
		return outcomeRejected
	}
	var items []json.RawMessage
	var carried int64
	if id := b.PreviousResponseID; id != "" {
		if !d.objects.responses.update(id, func(s *storedResponse) {
			items = append(items, s.input...)
			for _, o := range s.obj.Output {
				items = append(items, mustJSON(o))
			}
			carried = s.tokens
		}) {
			d.writeError(w, errPreviousResponseNotFound(id))
			return outcomeRejected
		}
	}
	var text strings.Builder
	if len(b.Instructions) > 0 {
		s, err := contentText(b.Instructions)
		if err != nil {
			d.writeError(w, errInvalidRequest(fl, "instructions: "+err.Error()))
			return outcomeRejected
		}
		text.WriteString(s)
	}
	if raw := bytes.TrimSpace(b.Input); len(raw) > 0 && !bytes.Equal(raw, nullJSON) || b.PreviousResponseID == "" {
		in, _, err := d.inputItems(c, b.Input, &text)
		if err != nil {
			d.writeError(w, errInvalidRequest(fl, strings.TrimPrefix(err.Error(), errBadRequest.Error()+": ")))
			return outcomeRejected
		}
		items = append(items, in...)
	}
	prompt := carried + estimateTokens(utf8.RuneCountInString(text.String()))
	out := prompt/8 + 1 // the compacted context is far shorter than the conversation
	if !d.admit(w, c, f, prompt+out) {
		return outcomeRefused
	}
	if !d.wait(r, d.plan(c, f).total) {
		return outcomeAbandoned
	}
	obj := compactionObject{ID: d.objectID(c.rng, "resp_", 40, false), Object: "response.compaction", CreatedAt: c.now.Unix(),
		Output: keptUserMessages(items)}
	obj.Output = append(obj.Output, compactionItem{Type: "compaction", ID: d.objectID(c.rng, "cmp_", 40, false),
		EncryptedContent: base64.StdEncoding.EncodeToString([]byte("sim compaction of " + d.cfg.Name + ": " + randomHex(c.rng, 32)))})
	obj.Usage = &responseUsage{InputTokens: prompt, OutputTokens: out, TotalTokens: prompt + out}
	if err := writeJSON(w, http.StatusOK, obj); err != nil {
		return outcomeAbandoned
	}
	return outcomeOK
}

// keptUserMessages are the items of a compacted conversation that stay as
// they are: its user messages.
func keptUserMessages(items []json.RawMessage) []any {
	out := []any{}
	for _, it := range items {
		var m struct {
			Type string `json:"type"`
			Role string `json:"role"`
		}
		if json.Unmarshal(it, &m) == nil && m.Type == "message" && m.Role == "user" {
			out = append(out, it)
		}
	}
	return out
}
