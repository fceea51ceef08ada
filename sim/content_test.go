package sim

import (
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

func TestReplyWords(t *testing.T) {
	for _, n := range []int{1, 5, 20} {
		w := replyWords(rand.New(rand.NewPCG(1, 2)), n)
		text := strings.Join(w, "")
		if len(w) != n || len(strings.Fields(text)) != n || strings.HasPrefix(text, " ") {
			t.Errorf("n=%d: %q", n, text)
		}
		for i, piece := range w[1:] {
			if !strings.HasPrefix(piece, " ") {
				t.Errorf("piece %d %q lacks its leading space", i+1, piece)
			}
		}
	}
	a := strings.Join(replyWords(rand.New(rand.NewPCG(1, 2)), 20), "")
	b := strings.Join(replyWords(rand.New(rand.NewPCG(1, 2)), 20), "")
	if a != b {
		t.Error("same source, different words")
	}
}

func TestRandomIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	if id := randomID(rng, "chatcmpl-", 29); !regexp.MustCompile(`^chatcmpl-[A-Za-z0-9]{29}$`).MatchString(id) {
		t.Errorf("id %q", id)
	}
	if u := randomUUID(rng); !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(u) {
		t.Errorf("uuid %q", u)
	}
	if fp := fingerprintFor("x"); !regexp.MustCompile(`^fp_[0-9a-f]{10}$`).MatchString(fp) {
		t.Errorf("fingerprint %q", fp)
	}
}

func TestEmbedding(t *testing.T) {
	a, b := embedding("hello", 256), embedding("hello", 256)
	c := embedding("world", 256)
	var norm, dot float64
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same text, different vectors")
		}
		norm += float64(a[i]) * float64(a[i])
		dot += float64(a[i]) * float64(c[i])
	}
	if math.Abs(norm-1) > 1e-4 {
		t.Errorf("|v|^2 = %g, want 1", norm)
	}
	if math.Abs(dot) > 0.5 {
		t.Errorf("different texts are too similar: cos = %g", dot)
	}
}
