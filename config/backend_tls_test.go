package config

import (
	"strings"
	"testing"
)

func TestCAFileBadConfigNamesLines(t *testing.T) {
	_, err := Load("testdata/ca_file.bad.yaml")
	if err == nil {
		t.Fatal("ca_file.bad.yaml loaded")
	}
	want := []string{
		`ca_file.bad.yaml:5: backends[0].ca_file: open testdata/no-such-ca.pem: no such file or directory`,
		`ca_file.bad.yaml:9: backends[1].ca_file: only for https backends (url "http://vllm.internal:8000/v1")`,
		`ca_file.bad.yaml:13: backends[2].ca_file: testdata/ca_file.bad.yaml holds no PEM certificate`,
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%v", w, err)
		}
	}
}
