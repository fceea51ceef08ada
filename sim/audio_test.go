package sim

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

func audioURL(ep Endpoint, op string) string {
	if ep.Flavour == Azure {
		return ep.URL + "/openai/deployments/" + ep.Deployment + "/audio/" + op + "?api-version=" + testAPIVersion
	}
	return ep.URL + "/audio/" + op
}

func TestTranscriptionsThroughSDK(t *testing.T) {
	for _, fl := range []Flavour{OpenAI, Azure} {
		t.Run(string(fl), func(t *testing.T) {
			s := startSim(t, one(fl, func(d *Deployment) { d.Key = "k" }))
			ep := s.Deployments()[0]
			client := responsesClient(ep)
			got, err := client.Audio.Transcriptions.New(context.Background(), openai.AudioTranscriptionNewParams{
				File:  openai.File(bytes.NewReader(make([]byte, 12345)), "a.wav", "audio/wav"),
				Model: openai.AudioModel(ep.Deployment),
			})
			if err != nil || got.Text != "transcribed 12345 bytes" {
				t.Errorf("transcription = %v %+v", err, got)
			}
			// The SDK's Translations.New is deprecated: post the form.
			fields := map[string]string{}
			url := ep.URL + "/openai/deployments/" + ep.Deployment + "/audio/translations?api-version=" + testAPIVersion
			if fl == OpenAI {
				fields["model"], url = ep.Deployment, ep.URL+"/audio/translations"
			}
			resp, b := postMultipart(t, ep, url, fields, "file", "a.wav", make([]byte, 7))
			if resp.StatusCode != 200 || string(b) != `{"text":"translated 7 bytes"}` {
				t.Errorf("translation = %d %s", resp.StatusCode, b)
			}
			if st := s.Stats()["d1"]; st.Answered != 2 {
				t.Errorf("stats = %+v", st)
			}
		})
	}
}

func TestTranscriptionFormatsAndErrors(t *testing.T) {
	s := startSim(t, Config{Seed: 1, Deployments: []Deployment{
		{Name: "oa", Flavour: OpenAI, Deployment: "whisper"},
		{Name: "az", Flavour: Azure, Deployment: "whisper"},
	}})
	oa, az := s.Deployments()[0], s.Deployments()[1]
	file := make([]byte, 100)
	tests := []struct {
		name       string
		ep         Endpoint
		url        string
		fields     map[string]string
		noFile     bool
		wantStatus int
		wantType   string
		wantBody   string
	}{
		{"json", oa, audioURL(oa, "transcriptions"), map[string]string{"model": "whisper"}, false, 200, "application/json", `{"text":"transcribed 100 bytes"}`},
		{"text", oa, audioURL(oa, "transcriptions"), map[string]string{"model": "whisper", "response_format": "text"}, false, 200, "text/plain", "transcribed 100 bytes\n"},
		{"verbose_json", oa, audioURL(oa, "transcriptions"), map[string]string{"model": "whisper", "response_format": "verbose_json", "language": "fr"}, false, 200, "application/json", `"language":"fr"`},
		{"srt", oa, audioURL(oa, "transcriptions"), map[string]string{"model": "whisper", "response_format": "srt"}, false, 200, "text/plain", "1\n00:00:00,000 --> 00:00:01,000\ntranscribed 100 bytes\n\n"},
		{"vtt", oa, audioURL(oa, "translations"), map[string]string{"model": "whisper", "response_format": "vtt"}, false, 200, "text/vtt", "WEBVTT\n\n00:00:00.000 --> 00:00:01.000\ntranslated 100 bytes\n\n"},
		{"bad format", oa, audioURL(oa, "transcriptions"), map[string]string{"model": "whisper", "response_format": "mp3"}, false, 400, "application/json", "response_format"},
		{"openai other model", oa, audioURL(oa, "transcriptions"), map[string]string{"model": "whisper-1"}, false, 404, "application/json", "model_not_found"},
		{"openai no model", oa, audioURL(oa, "transcriptions"), nil, false, 400, "application/json", "you must provide a model parameter"},
		{"no file", oa, audioURL(oa, "transcriptions"), map[string]string{"model": "whisper"}, true, 400, "application/json", "'file'"},
		{"azure deployment form needs no model", az, audioURL(az, "transcriptions"), nil, false, 200, "application/json", "transcribed 100 bytes"},
		{"azure other deployment", az, az.URL + "/openai/deployments/nope/audio/transcriptions?api-version=1", nil, false, 404, "application/json", "DeploymentNotFound"},
		{"azure v1 with model", az, az.URL + "/openai/v1/audio/transcriptions", map[string]string{"model": "whisper"}, false, 200, "application/json", "transcribed"},
		{"azure v1 without model", az, az.URL + "/openai/v1/audio/transcriptions", nil, false, 400, "application/json", "model"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			field := "file"
			if tc.noFile {
				field = ""
			}
			resp, b := postMultipart(t, tc.ep, tc.url, tc.fields, field, "a.wav", file)
			if resp.StatusCode != tc.wantStatus || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.wantType) || !strings.Contains(string(b), tc.wantBody) {
				t.Errorf("%d %s %q, want %d %s with %q", resp.StatusCode, resp.Header.Get("Content-Type"), b, tc.wantStatus, tc.wantType, tc.wantBody)
			}
		})
	}
}

// gateWaiter makes each Wait wait for a release, so a test can read what
// a handler wrote before its next wait.
type gateWaiter struct {
	mu      sync.Mutex
	calls   int
	release chan struct{}
}

var _ Waiter = (*gateWaiter)(nil)

func (g *gateWaiter) Wait(ctx context.Context, _ time.Duration) error {
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestSpeechStreamsInChunks(t *testing.T) {
	g := &gateWaiter{release: make(chan struct{}, SpeechChunks)}
	s := startSim(t, one(OpenAI, nil), WithWaiter(g))
	ep := s.Deployments()[0]
	g.release <- struct{}{} // the first-token wait
	resp, err := http.Post(ep.URL+"/audio/speech", "application/json",
		strings.NewReader(`{"model":"chat-prod","input":"hello world","voice":"alloy","response_format":"wav"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "audio/wav" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// The first chunk arrives while the handler waits before the second.
	head := make([]byte, 44)
	if _, err := io.ReadFull(resp.Body, head); err != nil {
		t.Fatalf("first chunk: %v", err)
	}
	for range SpeechChunks - 1 {
		g.release <- struct{}{}
	}
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	wav := append(head, rest...)
	if string(wav[:4]) != "RIFF" || string(wav[8:16]) != "WAVEfmt " || string(wav[36:40]) != "data" {
		t.Fatalf("not a WAV header: %q", wav[:44])
	}
	if n := binary.LittleEndian.Uint32(wav[40:44]); int(n) != len(wav)-44 || binary.LittleEndian.Uint32(wav[4:8]) != uint32(len(wav)-8) {
		t.Errorf("data size %d, file %d", n, len(wav))
	}
	g.mu.Lock()
	calls := g.calls
	g.mu.Unlock()
	if calls != SpeechChunks {
		t.Errorf("%d waits, want one per chunk (%d)", calls, SpeechChunks)
	}
}

func TestSpeechThroughSDK(t *testing.T) {
	for _, fl := range []Flavour{OpenAI, Azure} {
		t.Run(string(fl), func(t *testing.T) {
			s := startSim(t, one(fl, func(d *Deployment) { d.Key = "k" }))
			ep := s.Deployments()[0]
			client := responsesClient(ep)
			formats := []struct {
				format openai.AudioSpeechNewParamsResponseFormat
				ct     string
				magic  string
			}{
				{openai.AudioSpeechNewParamsResponseFormatMP3, "audio/mpeg", "\xff\xfb"},
				{openai.AudioSpeechNewParamsResponseFormatWAV, "audio/wav", "RIFF"},
				{openai.AudioSpeechNewParamsResponseFormatOpus, "audio/opus", "OggS"},
				{openai.AudioSpeechNewParamsResponseFormatAAC, "audio/aac", "\xff\xf1"},
				{openai.AudioSpeechNewParamsResponseFormatFLAC, "audio/flac", "fLaC"},
				{openai.AudioSpeechNewParamsResponseFormatPCM, "audio/pcm", "\x00\x00"},
			}
			for _, f := range formats {
				resp, err := client.Audio.Speech.New(context.Background(), openai.AudioSpeechNewParams{
					Model: openai.SpeechModel(ep.Deployment), Input: "hi there", ResponseFormat: f.format,
					Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("alloy")},
				})
				if err != nil {
					t.Fatalf("%s: %v", f.format, err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.Header.Get("Content-Type") != f.ct || !strings.HasPrefix(string(b), f.magic) || len(b) < 100 {
					t.Errorf("%s: %s, %d bytes starting %q", f.format, resp.Header.Get("Content-Type"), len(b), b[:min(4, len(b))])
				}
			}
		})
	}
}

func TestSpeechErrors(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ep := s.Deployments()[0]
	tests := []struct {
		name, body string
		wantStatus int
		wantBody   string
	}{
		{"no input", `{"model":"chat-prod","voice":"alloy"}`, 400, "'input'"},
		{"no voice", `{"model":"chat-prod","input":"x"}`, 400, "'voice'"},
		{"bad format", `{"model":"chat-prod","input":"x","voice":"alloy","response_format":"ogg"}`, 400, "response_format"},
		{"other model", `{"model":"tts-1","input":"x","voice":"alloy"}`, 404, "model_not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := do(t, "POST", ep.URL+"/audio/speech", tc.body, hdrFor(ep))
			if resp.StatusCode != tc.wantStatus || !strings.Contains(string(b), tc.wantBody) {
				t.Errorf("%d %s", resp.StatusCode, b)
			}
		})
	}
}
