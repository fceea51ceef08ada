package translate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// gmInEmbed is one embedContent request (and one element of
// batchEmbedContents' requests).
type gmInEmbed struct {
	Model                string       `json:"model"`
	Content              *gmInContent `json:"content"`
	TaskType             string       `json:"taskType"`
	Title                string       `json:"title"`
	OutputDimensionality *int         `json:"outputDimensionality"`
}

var gmInEmbedKnown = []string{"model", "content", "taskType", "title", "outputDimensionality"}

// GeminiEmbedToOpenAI converts an inbound Gemini embedContent request, or
// with batch a batchEmbedContents one ({"requests": [...]}), to an OpenAI
// embeddings request for model: one input per content, its text parts
// joined by a space (Gemini embeds a content's parts together);
// outputDimensionality is dimensions. A taskType other than
// TASK_TYPE_UNSPECIFIED, a title, and parts other than text are refused:
// an OpenAI-format embedding model cannot honour them. The requests of a
// batch must agree on outputDimensionality.
func GeminiEmbedToOpenAI(body []byte, model string, batch bool) ([]byte, error) {
	var reqs []json.RawMessage
	if batch {
		members, err := decodeObject(body)
		if err != nil {
			return nil, errBadBody("gemini request", err)
		}
		if err := refuseUnknown(members, []string{"requests"}, ""); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(members["requests"], &reqs); err != nil || len(reqs) == 0 {
			return nil, errBadBody("gemini request", errors.New("requests must be a non-empty list"))
		}
	} else {
		reqs = []json.RawMessage{body}
	}
	out := struct {
		Model      string   `json:"model"`
		Input      []string `json:"input"`
		Dimensions *int     `json:"dimensions,omitempty"`
	}{Model: model}
	for i, raw := range reqs {
		where := ""
		if batch {
			where = fmt.Sprintf("requests[%d].", i)
		}
		members, err := decodeObject(raw)
		if err != nil {
			return nil, errBadBody("gemini request", err)
		}
		if err := refuseUnknown(members, gmInEmbedKnown, where); err != nil {
			return nil, err
		}
		var e gmInEmbed
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, errBadBody("gemini request", fmt.Errorf("%s%w", where, err))
		}
		if e.TaskType != "" && e.TaskType != "TASK_TYPE_UNSPECIFIED" {
			return nil, unsupported(OpenAI, "%staskType %q", where, e.TaskType)
		}
		if e.Title != "" {
			return nil, unsupported(OpenAI, "%stitle", where)
		}
		if e.Content == nil {
			return nil, errBadBody("gemini request", fmt.Errorf("%scontent is not specified", where))
		}
		var texts []string
		for j, p := range e.Content.Parts {
			t, err := gmInTextPart(p, fmt.Sprintf("%scontent.parts[%d]", where, j))
			if err != nil {
				return nil, err
			}
			texts = append(texts, t)
		}
		out.Input = append(out.Input, strings.Join(texts, " "))
		if i == 0 {
			out.Dimensions = e.OutputDimensionality
		} else if (out.Dimensions == nil) != (e.OutputDimensionality == nil) ||
			out.Dimensions != nil && *out.Dimensions != *e.OutputDimensionality {
			return nil, unsupported(OpenAI, "requests of one batch with different outputDimensionality")
		}
	}
	return marshal(out)
}

// OpenAIEmbeddingToGemini converts an OpenAI embeddings response (float
// vectors) to embedContent's {"embedding": {"values": [...]}}, or with
// batch batchEmbedContents' {"embeddings": [{"values": [...]}, ...]} in
// the order of the inputs.
func OpenAIEmbeddingToGemini(body []byte, batch bool) ([]byte, error) {
	var r struct {
		Data []struct {
			Index     int             `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, errBadBody("openai embeddings response", err)
	}
	type values struct {
		Values json.RawMessage `json:"values"`
	}
	vecs := make([]values, len(r.Data))
	for i, d := range r.Data {
		if len(d.Embedding) == 0 || d.Embedding[0] != '[' {
			return nil, errBadBody("openai embeddings response", errors.New("an embedding is not a list of floats"))
		}
		at := d.Index
		if at < 0 || at >= len(vecs) || vecs[at].Values != nil {
			at = i
		}
		vecs[at] = values{Values: d.Embedding}
	}
	if batch {
		return marshal(struct {
			Embeddings []values `json:"embeddings"`
		}{vecs})
	}
	if len(vecs) != 1 {
		return nil, errBadBody("openai embeddings response", fmt.Errorf("%d embeddings for one content", len(vecs)))
	}
	return marshal(struct {
		Embedding values `json:"embedding"`
	}{vecs[0]})
}
