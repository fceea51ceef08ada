package route

import (
	"bytes"
	"errors"
	"mime/multipart"
	"strings"
	"testing"
)

func form(t *testing.T, fields [][2]string, file []byte) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range fields {
		w.WriteField(f[0], f[1])
	}
	if file != nil {
		fw, _ := w.CreateFormFile("file", "a.wav")
		fw.Write(file)
	}
	w.Close()
	return b.Bytes(), w.FormDataContentType()
}

// TestMultipartModelRewrite reads the model of a form and replaces only
// its value, leaving every other byte (a binary file that holds CRLFs and
// dashes included) as it was.
func TestMultipartModelRewrite(t *testing.T) {
	file := []byte("RIFF\r\n--not-the-boundary\r\n\x00\xff model")
	body, ct := form(t, [][2]string{{"model", "chat-prod"}, {"stream", "true"}, {"language", "en"}}, file)
	r, err := NewMultipartRequest(AudioTranscriptions, body, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "chat-prod" || !r.Stream {
		t.Fatalf("model %q stream %v", r.Model, r.Stream)
	}
	out := r.BodyFor("whisper-1")
	if !bytes.Equal(out, bytes.Replace(body, []byte("chat-prod"), []byte("whisper-1"), 1)) {
		t.Fatalf("rewritten body differs beyond the model:\n%q", out)
	}
	mr := multipart.NewReader(bytes.NewReader(out), ct[len("multipart/form-data; boundary="):])
	f, err := mr.ReadForm(1 << 20)
	if err != nil || f.Value["model"][0] != "whisper-1" || f.Value["language"][0] != "en" {
		t.Fatalf("rewritten form: %v %v", f, err)
	}
	if same := r.BodyFor("chat-prod"); &same[0] != &body[0] {
		t.Fatal("an unchanged model copied the body")
	}
}

func TestMultipartRefusals(t *testing.T) {
	twoModels, ct2 := form(t, [][2]string{{"model", "a"}, {"model", "b"}}, nil)
	good, ct := form(t, [][2]string{{"model", "a"}}, []byte("x"))
	tests := []struct {
		name, ct string
		body     []byte
	}{
		{"not multipart", "application/json", []byte(`{"model":"a"}`)},
		{"no boundary", "multipart/form-data", good},
		{"two model fields", ct2, twoModels},
		{"cut before the closing boundary", ct, good[:len(good)-10]},
		{"no boundary line", ct, []byte("model=a")},
		// Issue 23: one field here, two (model=evilmodel, then
		// model=chat) to Python's parser.
		{"a part that starts with the boundary", "multipart/form-data; boundary=B", []byte(raw(
			"--B", `Content-Disposition: form-data; name="file"`, "",
			"--B", `Content-Disposition: form-data; name="model"`, "", "evilmodel",
			"--B", `Content-Disposition: form-data; name="model"`, "", "chat", "--B--"))},
		{"a Model field", "multipart/form-data; boundary=B", []byte(raw(
			"--B", `Content-Disposition: form-data; name="Model"`, "", "evilmodel",
			"--B", `Content-Disposition: form-data; name="model"`, "", "chat", "--B--"))},
		{"a STREAM field", "multipart/form-data; boundary=B", []byte(raw(
			"--B", `Content-Disposition: form-data; name="STREAM"`, "", "true", "--B--"))},
		{"two stream fields", "multipart/form-data; boundary=B", []byte(raw(
			"--B", `Content-Disposition: form-data; name="stream"`, "", "true",
			"--B", `Content-Disposition: form-data; name="stream"`, "", "false", "--B--"))},
		{"the boundary inside a part", "multipart/form-data; boundary=B", []byte(raw(
			"--B", `Content-Disposition: form-data; name="file"`, "", "a\n--B\nb",
			"--B", `Content-Disposition: form-data; name="model"`, "", "chat", "--B--"))},
		{"more after a boundary", "multipart/form-data; boundary=B", []byte(raw(
			"--B", `Content-Disposition: form-data; name="file"`, "", "a",
			"--Bx", `Content-Disposition: form-data; name="model"`, "", "evil",
			"--B", `Content-Disposition: form-data; name="model"`, "", "chat", "--B--"))},
		{"a first boundary inside a line", "multipart/form-data; boundary=B", []byte("x" + raw(
			"--B", `Content-Disposition: form-data; name="model"`, "", "chat", "--B--"))},
		{"two Content-Disposition headers", "multipart/form-data; boundary=B", []byte(raw(
			"--B", `Content-Disposition: form-data; name="file"`, `Content-Disposition: form-data; name="model"`, "", "evil",
			"--B", `Content-Disposition: form-data; name="model"`, "", "chat", "--B--"))},
		{"a header line ended by LF", "multipart/form-data; boundary=B", []byte(raw(
			"--B", "X-A: 1\nContent-Disposition: form-data; name=\"model\"", "", "evil", "--B--"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewMultipartRequest(AudioTranscriptions, tt.body, tt.ct, nil); !errors.Is(err, ErrBadBody) {
				t.Fatalf("err = %v, want ErrBadBody", err)
			}
		})
	}
}

// raw joins lines with CRLF, as a multipart body's lines are.
func raw(lines ...string) string { return strings.Join(lines, "\r\n") + "\r\n" }
