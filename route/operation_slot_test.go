package route

import (
	"testing"
	"time"
)

// TestEveryRoutedOperationHasItsOwnSlot: each operation the engine routes
// has a mark of its own, and an operation it does not route (a string a
// caller could make up) has none and is never marked, so the marks stay
// a fixed size.
func TestEveryRoutedOperationHasItsOwnSlot(t *testing.T) {
	seen := map[int]Operation{}
	for _, op := range append(Operations(), Messages, Realtime, GeminiCountTokens) {
		s := op.opSlot()
		if s < 0 || s >= numOpSlots {
			t.Fatalf("%s: slot %d", op, s)
		}
		if other, dup := seen[s]; dup {
			t.Fatalf("%s and %s share slot %d", op, other, s)
		}
		seen[s] = op
	}
	if len(seen) != numOpSlots {
		t.Fatalf("%d operations for %d slots", len(seen), numOpSlots)
	}
	m := &Member{}
	now := time.Unix(1000, 0)
	if m.markUnsupported("files/../../whatever", now) || m.lacks("files/../../whatever", now) {
		t.Fatal("an operation the engine does not route was marked")
	}
	if !m.markUnsupported(Embeddings, now) || m.markUnsupported(Embeddings, now.Add(time.Second)) {
		t.Fatal("a mark was not new the first time, or new again within its hold")
	}
	if !m.lacks(Embeddings, now.Add(UnsupportedHold-time.Nanosecond)) || m.lacks(Embeddings, now.Add(UnsupportedHold)) || m.lacks(ChatCompletions, now) {
		t.Fatal("the mark does not cover exactly its operation for UnsupportedHold")
	}
	if !m.markUnsupported(Embeddings, now.Add(UnsupportedHold)) {
		t.Fatal("no new mark once the hold ended")
	}
}
