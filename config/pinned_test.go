package config

import (
	"slices"
	"strings"
	"testing"
)

// TestUnknownPathsWithoutPathsWarns: a configuration written before
// unknown_paths.paths still loads; a warning at unknown_paths (its first line)
// says its backend now takes no path, and how to list them.
func TestUnknownPathsWithoutPathsWarns(t *testing.T) {
	const y = `backends:
  - {name: oai, type: openai, api_key: k}
pools:
  - name: chat
    members: [{backend: oai}]
unknown_paths:
  backend: oai
`
	cfg, err := Parse("u.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	ws := cfg.Warnings()
	if len(ws) != 1 || ws[0].Line != 7 || !strings.Contains(ws[0].Msg, "takes none") || !strings.Contains(ws[0].Msg, "unknown_paths.paths") {
		t.Fatalf("warnings %v, want one on line 7", ws)
	}
	cfg, err = Parse("u.yaml", []byte(y+"  paths: [assistants, /v1/threads/, \"*\"]\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if ws := cfg.Warnings(); len(ws) != 0 {
		t.Fatalf("warnings with paths listed: %v", ws)
	}
	var got []string
	for _, p := range cfg.UnknownPaths.Paths {
		got = append(got, UnknownPath(p))
	}
	if want := []string{"assistants", "threads", "*"}; !slices.Equal(got, want) {
		t.Fatalf("paths as matched %q, want %q", got, want)
	}
}
