package sim

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"
)

// This file serves audio: POST audio/transcriptions and audio/translations
// (multipart: file, model, response_format, prompt, language) and POST
// audio/speech (JSON). Transcriptions count one request and no tokens;
// speech charges the estimate of its input.

// transcribe answers a transcription (task "transcribe") or translation
// ("translate") of the uploaded file with deterministic text: "transcribed
// N bytes" (or "translated N bytes"), in the response_format asked for:
// json (default), text, verbose_json, srt or vtt.
func (d *deployment) transcribe(task string) endpointFunc {
	return func(w http.ResponseWriter, r *http.Request, c *call, f Fault, _ string) outcome {
		fl := d.cfg.Flavour
		form, err := parseMultipart(r, c.body)
		if err != nil {
			d.writeError(w, errInvalidRequest(fl, err.Error()))
			return outcomeRejected
		}
		_, data, ok := formFile(form, "file")
		if !ok {
			d.writeError(w, invalidParam("file", "Missing required parameter: 'file'."))
			return outcomeRejected
		}
		if !d.checkModel(w, c, formValue(form, "model")) {
			return outcomeRejected
		}
		format := formValue(form, "response_format")
		if format == "" {
			format = "json"
		}
		switch format {
		case "json", "text", "verbose_json", "srt", "vtt":
		default:
			d.writeError(w, invalidParam("response_format", fmt.Sprintf("Invalid value for 'response_format': %q. Supported values are: 'json', 'text', 'srt', 'verbose_json' and 'vtt'.", format)))
			return outcomeRejected
		}
		if !d.admit(w, c, f, 0) {
			return outcomeRefused
		}
		if !d.wait(r, d.plan(c, f).total) {
			return outcomeAbandoned
		}
		verb := "transcribed"
		if task == "translate" {
			verb = "translated"
		}
		text := fmt.Sprintf("%s %d bytes", verb, len(data))
		// A second of audio per 32 KiB, at least one.
		secs := max(float64(len(data))/32768, 1)
		var err2 error
		switch format {
		case "json":
			err2 = writeJSON(w, http.StatusOK, map[string]string{"text": text})
		case "verbose_json":
			lang := formValue(form, "language")
			if lang == "" || task == "translate" {
				lang = "english"
			}
			err2 = writeJSON(w, http.StatusOK, map[string]any{
				"task": task, "language": lang, "duration": secs, "text": text,
				"segments": []map[string]any{{
					"id": 0, "seek": 0, "start": 0.0, "end": secs, "text": text, "tokens": []int{},
					"temperature": 0.0, "avg_logprob": -0.2, "compression_ratio": 1.0, "no_speech_prob": 0.01,
				}},
			})
		case "text":
			err2 = writeText(w, "text/plain; charset=utf-8", text+"\n")
		case "srt":
			err2 = writeText(w, "text/plain; charset=utf-8", fmt.Sprintf("1\n00:00:00,000 --> %s\n%s\n\n", clockStamp(secs, ","), text))
		case "vtt":
			err2 = writeText(w, "text/vtt; charset=utf-8", fmt.Sprintf("WEBVTT\n\n00:00:00.000 --> %s\n%s\n\n", clockStamp(secs, "."), text))
		}
		if err2 != nil {
			return outcomeAbandoned
		}
		return outcomeOK
	}
}

// clockStamp formats secs as hh:mm:ss followed by sep and milliseconds.
func clockStamp(secs float64, sep string) string {
	d := time.Duration(secs * float64(time.Second))
	return fmt.Sprintf("%02d:%02d:%02d%s%03d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60, sep, d.Milliseconds()%1000)
}

func writeText(w http.ResponseWriter, contentType, s string) error {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	_, err := w.Write([]byte(s))
	return err
}

// speechBody is an audio/speech request.
type speechBody struct {
	Model          string  `json:"model"`
	Input          string  `json:"input"`
	Voice          string  `json:"voice"`
	ResponseFormat string  `json:"response_format"`
	Speed          float64 `json:"speed"`
}

// speechTypes are the Content-Types of speech formats.
var speechTypes = map[string]string{
	"mp3": "audio/mpeg", "opus": "audio/opus", "aac": "audio/aac", "flac": "audio/flac", "wav": "audio/wav", "pcm": "audio/pcm",
}

// SpeechChunks is how many flushed writes a speech answer comes in.
const SpeechChunks = 4

// speech answers audio/speech with audio of the requested format (mp3 by
// default): a valid WAV of silence for wav, raw 24 kHz 16-bit mono PCM for
// pcm, and for mp3, opus, aac and flac bytes that start with the format's
// magic and carry its Content-Type (not decodable audio). The length is
// 40 ms of audio per input character. The body goes out in SpeechChunks
// flushed writes, the first after the latency's first-token wait and each
// next after its per-token wait.
func (d *deployment) speech(w http.ResponseWriter, r *http.Request, c *call, f Fault, _ string) outcome {
	var b speechBody
	if err := json.Unmarshal(c.body, &b); err != nil {
		d.writeError(w, errInvalidRequest(d.cfg.Flavour, fmt.Sprintf("could not parse the JSON body of your request: %v", err)))
		return outcomeRejected
	}
	if !d.checkModel(w, c, b.Model) {
		return outcomeRejected
	}
	switch {
	case b.Input == "":
		d.writeError(w, invalidParam("input", "Missing required parameter: 'input'."))
		return outcomeRejected
	case b.Voice == "":
		d.writeError(w, invalidParam("voice", "Missing required parameter: 'voice'."))
		return outcomeRejected
	}
	if b.ResponseFormat == "" {
		b.ResponseFormat = "mp3"
	}
	ct, ok := speechTypes[b.ResponseFormat]
	if !ok {
		d.writeError(w, invalidParam("response_format", fmt.Sprintf("Invalid value for 'response_format': %q. Supported values are: 'mp3', 'opus', 'aac', 'flac', 'wav' and 'pcm'.", b.ResponseFormat)))
		return outcomeRejected
	}
	if !d.admit(w, c, f, estimateTokens(utf8.RuneCountInString(b.Input))) {
		return outcomeRefused
	}
	audio := speechAudio(b.ResponseFormat, utf8.RuneCountInString(b.Input))
	plan := d.plan(c, f)
	rc := http.NewResponseController(w)
	n := (len(audio) + SpeechChunks - 1) / SpeechChunks
	for i := 0; i < SpeechChunks; i++ {
		delay := plan.perToken
		if i == 0 {
			delay = plan.firstToken
		}
		if !d.wait(r, delay) {
			return outcomeAbandoned
		}
		if i == 0 {
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(http.StatusOK)
		}
		part := audio[min(i*n, len(audio)):min((i+1)*n, len(audio))]
		if _, err := w.Write(part); err != nil {
			return outcomeAbandoned
		}
		if i < SpeechChunks-1 {
			if err := rc.Flush(); err != nil {
				return outcomeAbandoned
			}
		}
	}
	return outcomeOK
}

// speechAudio builds the audio for chars input characters.
func speechAudio(format string, chars int) []byte {
	const rate = 24000
	samples := rate * 40 / 1000 * max(chars, 1)
	pcm := make([]byte, 2*samples) // silence
	switch format {
	case "pcm":
		return pcm
	case "wav":
		var b bytes.Buffer
		b.WriteString("RIFF")
		_ = binary.Write(&b, binary.LittleEndian, uint32(36+len(pcm)))
		b.WriteString("WAVEfmt ")
		// fmt chunk: size 16, PCM, mono, rate, byte rate, block align, bits.
		for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(rate), uint32(rate * 2), uint16(2), uint16(16)} {
			_ = binary.Write(&b, binary.LittleEndian, v)
		}
		b.WriteString("data")
		_ = binary.Write(&b, binary.LittleEndian, uint32(len(pcm)))
		b.Write(pcm)
		return b.Bytes()
	}
	magic := map[string][]byte{
		"mp3":  {0xFF, 0xFB, 0x90, 0x64},
		"opus": []byte("OggS"),
		"aac":  {0xFF, 0xF1, 0x50, 0x80},
		"flac": []byte("fLaC"),
	}[format]
	out := append([]byte(nil), magic...)
	return append(out, bytes.Repeat([]byte{0}, len(pcm)/8)...)
}
