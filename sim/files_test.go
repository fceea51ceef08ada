package sim

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// multipartBody builds a multipart/form-data body with fields and one file
// (none when fileField is "").
func multipartBody(t *testing.T, fields map[string]string, fileField, fileName string, data []byte) (string, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for k, v := range fields {
		if err := mw.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if fileField != "" {
		fw, err := mw.CreateFormFile(fileField, fileName)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(data)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String(), mw.FormDataContentType()
}

// postMultipart posts a multipart body to url with ep's key.
func postMultipart(t *testing.T, ep Endpoint, url string, fields map[string]string, fileField, fileName string, data []byte) (*http.Response, []byte) {
	t.Helper()
	body, ct := multipartBody(t, fields, fileField, fileName, data)
	hdr := hdrFor(ep)
	hdr["Content-Type"] = ct
	return do(t, "POST", url, body, hdr)
}

func TestFilesThroughSDK(t *testing.T) {
	for _, fl := range []Flavour{OpenAI, Azure} {
		t.Run(string(fl), func(t *testing.T) {
			s := startSim(t, one(fl, func(d *Deployment) { d.Key = "k" }))
			ep := s.Deployments()[0]
			client := responsesClient(ep)
			ctx := context.Background()
			data := []byte(`{"hello":"world"}` + "\n")
			f, err := client.Files.New(ctx, openai.FileNewParams{
				File:    openai.File(bytes.NewReader(data), "input.jsonl", "application/jsonl"),
				Purpose: openai.FilePurposeBatch,
			})
			if err != nil {
				t.Fatalf("Files.New: %v", err)
			}
			if f.Bytes != int64(len(data)) || f.Filename != "input.jsonl" || f.Purpose != "batch" || !strings.HasPrefix(f.ID, "file-") {
				t.Errorf("file = %+v", f)
			}
			if owner, _ := s.ObjectOwner(f.ID); owner != "d1" {
				t.Errorf("owner %q", owner)
			}
			got, err := client.Files.Get(ctx, f.ID)
			if err != nil || got.ID != f.ID {
				t.Errorf("Get: %v %+v", err, got)
			}
			page, err := client.Files.List(ctx, openai.FileListParams{})
			if err != nil || len(page.Data) != 1 || page.Data[0].ID != f.ID {
				t.Errorf("List: %v %+v", err, page)
			}
			resp, err := client.Files.Content(ctx, f.ID)
			if err != nil {
				t.Fatalf("Content: %v", err)
			}
			content, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !bytes.Equal(content, data) {
				t.Errorf("content = %q, want %q", content, data)
			}
			del, err := client.Files.Delete(ctx, f.ID)
			if err != nil || !del.Deleted {
				t.Errorf("Delete: %v %+v", err, del)
			}
			_, err = client.Files.Get(ctx, f.ID)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
				t.Errorf("Get after Delete: %v, want 404", err)
			}
		})
	}
}

func TestFilesErrors(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ep := s.Deployments()[0]
	tests := []struct {
		name       string
		fields     map[string]string
		file       bool
		wantStatus int
		wantBody   string
	}{
		{"no file", map[string]string{"purpose": "batch"}, false, 400, `Missing required parameter: 'file'.`},
		{"bad purpose", map[string]string{"purpose": "fun"}, true, 400, `Invalid value for 'purpose'`},
		{"no purpose", nil, true, 400, `Invalid value for 'purpose'`},
		{"ok", map[string]string{"purpose": "user_data"}, true, 200, `"object":"file"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			field := ""
			if tc.file {
				field = "file"
			}
			resp, b := postMultipart(t, ep, ep.URL+"/files", tc.fields, field, "a.txt", []byte("abc"))
			if resp.StatusCode != tc.wantStatus || !strings.Contains(string(b), tc.wantBody) {
				t.Errorf("%d %s, want %d with %s", resp.StatusCode, b, tc.wantStatus, tc.wantBody)
			}
		})
	}
	resp, b := do(t, "POST", ep.URL+"/files", `{"purpose":"batch"}`, hdrFor(ep))
	if resp.StatusCode != 400 || !strings.Contains(string(b), "multipart/form-data") {
		t.Errorf("JSON upload: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, "GET", ep.URL+"/files/file-nope/content", "", hdrFor(ep))
	if resp.StatusCode != 404 || !strings.Contains(string(b), "No such File object: file-nope") {
		t.Errorf("unknown content: %d %s", resp.StatusCode, b)
	}
}

func TestStoreBounds(t *testing.T) {
	tests := []struct {
		name     string
		max      int
		maxBytes int64
		sizes    []int64
		wantIDs  []string // newest first
	}{
		{"count", 2, 0, []int64{1, 1, 1}, []string{"c", "b"}},
		{"bytes", 10, 10, []int64{4, 4, 4}, []string{"c", "b"}},
		{"too big alone", 10, 10, []int64{4, 11}, []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore[int](tc.max, tc.maxBytes)
			for i, n := range tc.sizes {
				st.put(string(rune('a'+i)), i, n)
			}
			ids, more := page(st, "", 10, false, func(v int) string { return string(rune('a' + v)) })
			if strings.Join(ids, ",") != strings.Join(tc.wantIDs, ",") || more || st.len() != len(tc.wantIDs) {
				t.Errorf("kept %v (more %v), want %v", ids, more, tc.wantIDs)
			}
		})
	}
}
