package route

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// failingIndex is an OwnerIndex whose every call fails.
type failingIndex struct{}

var errIndexDown = errors.New("index down")

func (failingIndex) Record(context.Context, string, string, string) error { return errIndexDown }
func (failingIndex) Marks(context.Context, string, []string) (map[string]string, error) {
	return map[string]string{"file-b": "anything"}, errIndexDown
}
func (failingIndex) Forget(context.Context, string, string) error { return errIndexDown }

func TestOwnerIndexListsOwnFiles(t *testing.T) {
	ctx := context.Background()
	s := NewSigner([]byte("secret-one-0123456789"))
	idx := NewMemoryIndex(0)
	a := &Tagger{Signer: s, Tenant: "k:a", Index: idx}
	b := &Tagger{Signer: s, Tenant: "k:b", Index: idx}
	made := func(tg *Tagger, body string) {
		c := *tg
		c.Made = true
		c.answer(ctx, []byte(body), "weu", 200)
	}
	made(a, `{"id":"file-a","object":"file"}`)
	made(b, `{"id":"file-b","object":"file"}`)
	made(a, `{"id":"upload_u","object":"upload","file":{"id":"file-u","object":"file"}}`)
	// A failed create records nothing.
	made(b, `{"id":"file-x","object":"file"}`)
	list := `{"object":"list","data":[{"id":"file-a"},{"id":"file-b"},{"id":"file-u"},{"id":"file-x"}],"first_id":"file-a","last_id":"file-x","has_more":false}`
	lister := func(tg *Tagger) string {
		c := *tg
		c.List = true
		return string(c.answer(ctx, []byte(list), "weu", 200))
	}
	if got := lister(a); !strings.Contains(got, "file-s2") || strings.Count(got, `"id"`) != 2 {
		t.Errorf("A's list = %s, want its two files", got)
	}
	if got := lister(b); strings.Count(got, `"id"`) != 2 { // file-b and file-x
		t.Errorf("B's list = %s, want its two files", got)
	}
	if got := lister(&Tagger{Signer: s, Tenant: "k:c", Index: idx}); strings.Contains(got, "file-") {
		t.Errorf("C's list = %s, want none", got)
	}
	// Another backend's entries with the same ids are not A's.
	c := *a
	c.List = true
	if got := string(c.answer(ctx, []byte(list), "eus", 200)); strings.Contains(got, "file-") {
		t.Errorf("A's list on another backend = %s, want none", got)
	}
	// Deleted: gone from the index; a failed delete keeps it.
	del := *a
	del.Deletes = "file-a"
	del.answer(ctx, []byte(`{"error":{}}`), "weu", 404)
	if m, _ := idx.Marks(ctx, "weu", []string{"file-a"}); len(m) != 1 {
		t.Errorf("a failed delete forgot the file")
	}
	del.answer(ctx, []byte(`{"id":"file-a","deleted":true}`), "weu", 200)
	if m, _ := idx.Marks(ctx, "weu", []string{"file-a"}); len(m) != 0 {
		t.Errorf("a delete left the file in the index")
	}
}

func TestOwnerIndexFailureShowsNoUnmarked(t *testing.T) {
	s := NewSigner([]byte("secret-one-0123456789"))
	a := &Tagger{Signer: s, Tenant: "k:a", Index: failingIndex{}, List: true}
	got := string(a.answer(context.Background(), []byte(`{"object":"list","data":[{"id":"file-b"}],"has_more":true}`), "weu", 200))
	if strings.Contains(got, "file-") || !strings.Contains(got, `"has_more":false`) {
		t.Errorf("list with a failing index = %s, want none", got)
	}
}

func TestMemoryIndexBound(t *testing.T) {
	ctx := context.Background()
	idx := NewMemoryIndex(2)
	for _, id := range []string{"file-1", "file-2", "file-3"} {
		idx.Record(ctx, "weu", id, "m")
	}
	m, _ := idx.Marks(ctx, "weu", []string{"file-1", "file-2", "file-3"})
	if len(m) != 2 || m["file-1"] != "" {
		t.Errorf("marks = %v, want the two newest", m)
	}
	for i := range 10 {
		idx.Forget(ctx, "weu", "file-3")
		idx.Record(ctx, "weu", "file-3", string(rune('a'+i)))
	}
	if len(idx.order) > 4 {
		t.Errorf("order holds %d keys for a bound of 2", len(idx.order))
	}
}
