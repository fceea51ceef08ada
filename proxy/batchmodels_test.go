package proxy

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestLineModels(t *testing.T) {
	in := `{"custom_id":"1","body":{"model":"a","messages":[]}}` + "\n\n" + `{"custom_id":"2","body":{"messages":[],"model":"b"}}` + "\n" + `{"custom_id":"3","body":{"model":"a"}}`
	got, err := lineModels(strings.NewReader(in))
	if err != nil || !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("models %q, %v", got, err)
	}
	for name, bad := range map[string]string{
		"not json":       "{\"body\":\n",
		"a line too big": `{"body":{"model":"a","x":"` + strings.Repeat("x", maxBatchLine) + `"}}`,
	} {
		var e *apiError
		if _, err := lineModels(strings.NewReader(bad)); !errors.As(err, &e) || e.status != 400 {
			t.Errorf("%s: %v", name, err)
		}
	}
}
