package sim

import (
	"encoding/json"
	"net/http"
	"strings"
)

// countTokens serves Anthropic's POST v1/messages/count_tokens: the body of
// a messages request (max_tokens not needed), answered {"input_tokens": N}
// with the sim's estimate of the prompt, the same one the quota charges.
// It counts one request against RPM and no tokens.
func (d *deployment) countTokens(w http.ResponseWriter, _ *http.Request, c *call, f Fault, _ string) outcome {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(c.body, &fields); err != nil || fields == nil {
		d.writeError(w, errInvalidRequest(Anthropic, "could not parse the JSON body of your request: expected a JSON object"))
		return outcomeRejected
	}
	if _, ok := fields["max_tokens"]; !ok {
		fields["max_tokens"] = json.RawMessage("1")
	}
	req, err := parseRequest(opMessages, mustJSON(fields))
	if err != nil {
		d.writeError(w, errInvalidRequest(Anthropic, strings.TrimPrefix(err.Error(), errBadRequest.Error()+": ")))
		return outcomeRejected
	}
	if !d.checkModel(w, c, req.model) {
		return outcomeRejected
	}
	if !d.admit(w, c, f, 0) {
		return outcomeRefused
	}
	if err := writeJSON(w, http.StatusOK, struct {
		InputTokens int64 `json:"input_tokens"`
	}{req.promptTokens}); err != nil {
		return outcomeAbandoned
	}
	return outcomeOK
}
