package keysum_test

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/keysum"
)

func TestSumIsSHA256(t *testing.T) {
	for _, n := range []int{0, 1, 32, 33, 64, 127, 128, 129, 1000} {
		s := strings.Repeat("k", n)
		if got, want := keysum.Sum(s), sha256.Sum256([]byte(s)); got != want {
			t.Errorf("len %d: Sum = %x, want %x", n, got, want)
		}
	}
}

func TestSumDoesNotAllocate(t *testing.T) {
	s := "sk-" + strings.Repeat("a1", 30) // a gateway key's length, over 32 bytes
	var sink [sha256.Size]byte
	if n := testing.AllocsPerRun(100, func() { sink = keysum.Sum(s) }); n != 0 {
		t.Errorf("Sum allocates %v times, want 0", n)
	}
	_ = sink
}
