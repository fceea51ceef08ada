package engine

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// smallWAV is a valid 16-bit mono WAV of n silent samples at 8 kHz.
func smallWAV(n int) []byte {
	var b bytes.Buffer
	le := func(v uint32, size int) {
		for i := 0; i < size; i++ {
			b.WriteByte(byte(v >> (8 * i)))
		}
	}
	b.WriteString("RIFF")
	le(uint32(36+2*n), 4)
	b.WriteString("WAVEfmt ")
	le(16, 4)
	le(1, 2)    // PCM
	le(1, 2)    // mono
	le(8000, 4) // sample rate
	le(16000, 4)
	le(2, 2)
	le(16, 2)
	b.WriteString("data")
	le(uint32(2*n), 4)
	b.Write(make([]byte, 2*n))
	return b.Bytes()
}

// namedReader gives the SDK a file name for the multipart part.
type namedReader struct {
	io.Reader
	name string
}

func (n namedReader) Filename() string    { return n.name }
func (n namedReader) ContentType() string { return "audio/wav" }

// TestAudioAndImagesFailOver sends a transcription (multipart, its model a
// form field the gateway rewrites for the member), a translation, speech
// (binary, passed on as it arrives), an image generation and a moderation
// through a pool whose first member is down: each is answered by the
// next, in the SDK's own types.
func TestAudioAndImagesFailOver(t *testing.T) {
	for _, tt := range []struct{ down, serves string }{
		{"aoai-weu", "openai"}, // OpenAI: the model form field rewritten
		{"openai", "aoai-weu"}, // Azure: the deployment paths
	} {
		t.Run(tt.serves, func(t *testing.T) { mediaFailOver(t, tt.down, tt.serves) })
	}
}

func mediaFailOver(t *testing.T, down, serves string) {
	e := startProviders(t, []string{down, serves}, nil, "")
	e.fault(t, down, "down")
	c := e.openai()
	ctx := t.Context()
	wav := smallWAV(4000)
	var raw *http.Response

	tr, err := c.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		File: namedReader{bytes.NewReader(wav), "hello.wav"}, Model: "chat-prod",
	}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Text == "" || raw.Header.Get("X-Switchover-Backend") != serves {
		t.Fatalf("transcription %q from %q", tr.Text, raw.Header.Get("X-Switchover-Backend"))
	}
	//lint:ignore SA1019 the SDK marks translations deprecated; OpenAI and Azure still serve the route, and clients still call it
	tl, err := c.Audio.Translations.New(ctx, openai.AudioTranslationNewParams{
		File: namedReader{bytes.NewReader(wav), "hallo.wav"}, Model: "chat-prod",
	})
	if err != nil || tl.Text == "" {
		t.Fatalf("translation %+v, %v", tl, err)
	}

	speech, err := c.Audio.Speech.New(ctx, openai.AudioSpeechNewParams{
		Model: "chat-prod", Input: "Hello there", Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("alloy")},
		ResponseFormat: openai.AudioSpeechNewParamsResponseFormatWAV,
	})
	if err != nil {
		t.Fatal(err)
	}
	audio, err := io.ReadAll(speech.Body)
	speech.Body.Close()
	if err != nil || !bytes.HasPrefix(audio, []byte("RIFF")) || speech.Header.Get("X-Switchover-Backend") != serves {
		t.Fatalf("speech: %d bytes %q…, %v, from %q", len(audio), audio[:min(len(audio), 4)], err, speech.Header.Get("X-Switchover-Backend"))
	}

	img, err := c.Images.Generate(ctx, openai.ImageGenerateParams{Prompt: "a lighthouse", Model: "chat-prod"})
	if err != nil || len(img.Data) == 0 || img.Data[0].B64JSON == "" {
		t.Fatalf("image %+v, %v", img, err)
	}

	if serves == "aoai-weu" {
		return // Azure has no moderations API: its members are skipped for them
	}
	mod, err := c.Moderations.New(ctx, openai.ModerationNewParams{Model: "chat-prod", Input: openai.ModerationNewParamsInputUnion{OfString: openai.String("hello")}})
	if err != nil || len(mod.Results) == 0 {
		t.Fatalf("moderation %+v, %v", mod, err)
	}
}

// TestMultipartWithoutModelIsRefused: a transcription whose form names no
// pool gets a clear 400, and a body that is not multipart at all too.
func TestMultipartWithoutModelIsRefused(t *testing.T) {
	e := startProviders(t, []string{"openai"}, nil, "")
	c := e.openai()
	_, err := c.Audio.Transcriptions.New(t.Context(), openai.AudioTranscriptionNewParams{File: namedReader{bytes.NewReader(smallWAV(10)), "a.wav"}, Model: ""})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "missing_model" {
		t.Fatalf("no model: %v", err)
	}
	resp, err := http.Post(e.url+"/v1/audio/transcriptions", "application/json", strings.NewReader(`{"model":"chat-prod"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "multipart/form-data") {
		t.Fatalf("JSON transcription: %d %s", resp.StatusCode, body)
	}
}
