package translate

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// responsesGoldens are the Responses conversions checked against
// testdata/<name>.in.json and testdata/<name>.out.json; req names the
// testdata file of the Responses request a response echoes ("" for none).
var responsesGoldens = []struct {
	name string
	req  string
}{
	{name: "responses_req_string"},
	{name: "responses_req_tools"},
	{name: "responses_req_json_schema"},
	{name: "responses_req_images"},
	{name: "responses_resp_text", req: "responses_req_string.in.json"},
	{name: "responses_resp_tools", req: "responses_req_tools.in.json"},
	{name: "responses_resp_length", req: "responses_req_json_schema.in.json"},
	{name: "responses_resp_reasoning"},
}

// responsesConv is the converter a golden's name calls for.
func responsesConv(t *testing.T, name string, req []byte) func([]byte) ([]byte, error) {
	t.Helper()
	switch {
	case bytes.HasPrefix([]byte(name), []byte("responses_req_")):
		return ResponsesRequestToOpenAI
	case bytes.HasPrefix([]byte(name), []byte("responses_resp_")):
		return func(b []byte) ([]byte, error) { return OpenAIResponseToResponses(b, req) }
	}
	t.Fatalf("no converter for %s", name)
	return nil
}

func TestGoldenResponsesJSON(t *testing.T) {
	for _, tc := range responsesGoldens {
		t.Run(tc.name, func(t *testing.T) {
			var req []byte
			if tc.req != "" {
				req = readFile(t, tc.req)
			}
			got, err := responsesConv(t, tc.name, req)(readFile(t, tc.name+".in.json"))
			if err != nil {
				t.Fatalf("convert: %v", err)
			}
			if !json.Valid(got) {
				t.Fatalf("output is not JSON: %s", got)
			}
			golden := filepath.Join("testdata", tc.name+".out.json")
			if *update {
				var pretty bytes.Buffer
				if err := json.Indent(&pretty, got, "", "  "); err != nil {
					t.Fatal(err)
				}
				pretty.WriteByte('\n')
				if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := readFile(t, tc.name+".out.json"); !sameJSON(t, got, want) {
				t.Errorf("output differs from %s (run go test -update to accept):\ngot:  %s\nwant: %s", golden, got, compactJSON(want))
			}
		})
	}
}

// responsesStreamGoldens are the stream conversions checked against
// testdata/<name>.in.sse and testdata/<name>.out.sse, byte for byte, with
// the source arriving in every way of sources.
var responsesStreamGoldens = []struct {
	name string
	req  string
}{
	{name: "responses_stream_text", req: "responses_req_string.in.json"},
	{name: "responses_stream_tools", req: "responses_req_tools.in.json"},
	{name: "responses_stream_cutoff", req: "responses_req_json_schema.in.json"},
}

func TestGoldenResponsesStreams(t *testing.T) {
	for _, tc := range responsesStreamGoldens {
		t.Run(tc.name, func(t *testing.T) {
			in := readFile(t, tc.name+".in.sse")
			req := readFile(t, tc.req)
			golden := filepath.Join("testdata", tc.name+".out.sse")
			var want []byte
			if !*update {
				want = readFile(t, tc.name+".out.sse")
			}
			for _, src := range sources {
				got, err := drain(NewReader(io.NopCloser(src.wrap(in)), NewOpenAIToResponsesStream(req)), 5)
				if err != io.EOF {
					t.Fatalf("%s: stream ended with %v, want io.EOF", src.name, err)
				}
				checkSSE(t, got)
				if *update {
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s: output differs from %s (run go test -update to accept):\ngot:\n%s\nwant:\n%s", src.name, golden, got, want)
				}
			}
		})
	}
}
