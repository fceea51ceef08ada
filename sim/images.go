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
)

// This file serves images: POST images/generations (JSON), images/edits
// and images/variations (multipart). Each image is a tiny valid PNG (8x8,
// one colour drawn from the prompt), answered as b64_json, or as a data:
// URL for response_format url. They count one request and no tokens.
// Moderations are in moderations.go.

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
