package sim

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

func decodePNG(t *testing.T, b64 string) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("base64: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("png: %v", err)
	}
	if img.Bounds().Dx() != 8 {
		t.Errorf("image is %v", img.Bounds())
	}
}

func TestImagesThroughSDK(t *testing.T) {
	for _, fl := range []Flavour{OpenAI, Azure} {
		t.Run(string(fl), func(t *testing.T) {
			s := startSim(t, one(fl, func(d *Deployment) { d.Key = "k" }))
			ep := s.Deployments()[0]
			client := responsesClient(ep)
			ctx := context.Background()
			gen, err := client.Images.Generate(ctx, openai.ImageGenerateParams{Model: openai.ImageModel(ep.Deployment), Prompt: "a cat", N: openai.Int(2)})
			if err != nil || len(gen.Data) != 2 {
				t.Fatalf("Generate: %v %+v", err, gen)
			}
			decodePNG(t, gen.Data[0].B64JSON)
			if gen.Data[0].B64JSON == gen.Data[1].B64JSON {
				t.Error("two images of one request are the same")
			}
			again, err := client.Images.Generate(ctx, openai.ImageGenerateParams{Model: openai.ImageModel(ep.Deployment), Prompt: "a cat", N: openai.Int(2)})
			if err != nil || again.Data[0].B64JSON != gen.Data[0].B64JSON {
				t.Error("the same prompt gave another image")
			}
			edit, err := client.Images.Edit(ctx, openai.ImageEditParams{
				Model: openai.ImageModel(ep.Deployment), Prompt: "add a hat",
				Image: openai.ImageEditParamsImageUnion{OfFile: openai.File(bytes.NewReader(tinyPNG("x")), "in.png", "image/png")},
			})
			if err != nil || len(edit.Data) != 1 {
				t.Fatalf("Edit: %v %+v", err, edit)
			}
			decodePNG(t, edit.Data[0].B64JSON)
		})
	}
}

func TestImageVariationsAndErrors(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ep := s.Deployments()[0]
	resp, b := postMultipart(t, ep, ep.URL+"/images/variations", map[string]string{"model": "chat-prod", "n": "3"}, "image", "in.png", tinyPNG("x"))
	var got imagesResponse
	if resp.StatusCode != 200 || json.Unmarshal(b, &got) != nil || len(got.Data) != 3 {
		t.Fatalf("variations: %d %s", resp.StatusCode, b)
	}
	decodePNG(t, got.Data[2].B64JSON)
	tests := []struct {
		name, path, body string
		wantStatus       int
		wantBody         string
	}{
		{"url format", "/images/generations", `{"model":"chat-prod","prompt":"x","response_format":"url"}`, 200, `"url":"data:image/png;base64,`},
		{"no prompt", "/images/generations", `{"model":"chat-prod"}`, 400, "'prompt'"},
		{"too many", "/images/generations", `{"model":"chat-prod","prompt":"x","n":11}`, 400, "'n'"},
		{"other model", "/images/generations", `{"model":"dall-e-3","prompt":"x"}`, 404, "model_not_found"},
		{"blocked prompt", "/images/generations", `{"model":"chat-prod","prompt":"trigger-content-filter"}`, 400, "invalid_prompt"},
		{"edit as JSON", "/images/edits", `{"model":"chat-prod","prompt":"x"}`, 400, "multipart/form-data"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := do(t, "POST", ep.URL+tc.path, tc.body, hdrFor(ep))
			if resp.StatusCode != tc.wantStatus || !strings.Contains(string(b), tc.wantBody) {
				t.Errorf("%d %s", resp.StatusCode, b)
			}
		})
	}
	resp, b = postMultipart(t, ep, ep.URL+"/images/edits", map[string]string{"model": "chat-prod"}, "image", "in.png", tinyPNG("x"))
	if resp.StatusCode != 400 || !strings.Contains(string(b), "'prompt'") {
		t.Errorf("edit without prompt: %d %s", resp.StatusCode, b)
	}
}
