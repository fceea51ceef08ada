package sim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"strings"
)

// This file serves images: POST images/generations (JSON), images/edits
// and images/variations (multipart). Each image is a tiny valid PNG (8x8,
// one colour drawn from the prompt), answered as b64_json, or as a data:
// URL for response_format url. They count one request and no tokens.

// MaxImages is the most images one request may ask for (n).
const MaxImages = 10

type imagesBody struct {
	Model          string `json:"model"`
	Prompt         string `json:"prompt"`
	N              *int   `json:"n"`
	Size           string `json:"size"`
	ResponseFormat string `json:"response_format"`
}

type imageData struct {
	B64JSON       string `json:"b64_json,omitempty"`
	URL           string `json:"url,omitempty"`
	RevisedPrompt string `json:"revised_prompt,omitempty"`
}

type imagesResponse struct {
	Created int64       `json:"created"`
	Data    []imageData `json:"data"`
}

func (d *deployment) generateImages(w http.ResponseWriter, r *http.Request, c *call, f Fault, _ string) outcome {
	var b imagesBody
	if err := json.Unmarshal(c.body, &b); err != nil {
		d.writeError(w, errInvalidRequest(d.cfg.Flavour, fmt.Sprintf("could not parse the JSON body of your request: %v", err)))
		return outcomeRejected
	}
	if !d.checkModel(w, c, b.Model) {
		return outcomeRejected
	}
	if b.Prompt == "" {
		d.writeError(w, invalidParam("prompt", "Missing required parameter: 'prompt'."))
		return outcomeRejected
	}
	n := 1
	if b.N != nil {
		n = *b.N
	}
	return d.answerImages(w, r, c, f, b.Prompt, n, b.ResponseFormat)
}

// editImages serves images/edits (kind "edit": image and prompt required)
// and images/variations ("variation": image required).
func (d *deployment) editImages(kind string) endpointFunc {
	return func(w http.ResponseWriter, r *http.Request, c *call, f Fault, _ string) outcome {
		form, err := parseMultipart(r, c.body)
		if err != nil {
			d.writeError(w, errInvalidRequest(d.cfg.Flavour, err.Error()))
			return outcomeRejected
		}
		field := "image"
		if _, ok := form.File["image[]"]; ok {
			field = "image[]"
		}
		_, data, ok := formFile(form, field)
		if !ok {
			d.writeError(w, invalidParam("image", "Missing required parameter: 'image'."))
			return outcomeRejected
		}
		if !d.checkModel(w, c, formValue(form, "model")) {
			return outcomeRejected
		}
		prompt := formValue(form, "prompt")
		if kind == "edit" && prompt == "" {
			d.writeError(w, invalidParam("prompt", "Missing required parameter: 'prompt'."))
			return outcomeRejected
		}
		if kind == "variation" {
			prompt = fmt.Sprintf("variation of %d bytes", len(data))
		}
		n := 1
		if s := formValue(form, "n"); s != "" {
			if _, err := fmt.Sscan(s, &n); err != nil {
				d.writeError(w, invalidParam("n", fmt.Sprintf("Invalid value for 'n': %q.", s)))
				return outcomeRejected
			}
		}
		return d.answerImages(w, r, c, f, prompt, n, formValue(form, "response_format"))
	}
}

func (d *deployment) answerImages(w http.ResponseWriter, r *http.Request, c *call, f Fault, prompt string, n int, format string) outcome {
	if n < 1 || n > MaxImages {
		d.writeError(w, invalidParam("n", fmt.Sprintf("%d is not a valid value for 'n': it must be between 1 and %d.", n, MaxImages)))
		return outcomeRejected
	}
	if format != "" && format != "b64_json" && format != "url" {
		d.writeError(w, invalidParam("response_format", fmt.Sprintf("Invalid value for 'response_format': %q. Supported values are: 'url' and 'b64_json'.", format)))
		return outcomeRejected
	}
	if d.cfg.ContentFilter.check(prompt) == filterBlock {
		d.writeError(w, errContentFilter(d.cfg.Flavour))
		return outcomeFiltered
	}
	if !d.admit(w, c, f, 0) {
		return outcomeRefused
	}
	if !d.wait(r, d.plan(c, f).total) {
		return outcomeAbandoned
	}
	out := imagesResponse{Created: c.now.Unix()}
	for i := range n {
		b64 := base64.StdEncoding.EncodeToString(tinyPNG(fmt.Sprintf("%s#%d", prompt, i)))
		if format == "url" {
			out.Data = append(out.Data, imageData{URL: "data:image/png;base64," + b64})
		} else {
			out.Data = append(out.Data, imageData{B64JSON: b64})
		}
	}
	if err := writeJSON(w, http.StatusOK, out); err != nil {
		return outcomeAbandoned
	}
	return outcomeOK
}

// tinyPNG is an 8x8 PNG of one colour taken from seed.
func tinyPNG(seed string) []byte {
	h := hash64(seed)
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	c := color.RGBA{R: uint8(h), G: uint8(h >> 8), B: uint8(h >> 16), A: 255}
	for y := range 8 {
		for x := range 8 {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

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
