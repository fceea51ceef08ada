package gateway

import "testing"

// TestStoreHealthFollowsTheLastWrite is the regression test of issue 24's
// "on a full disk switchover_store_up flips between 0 and 1 while every
// write fails": reads that work do not bring a store whose writes fail
// back up; a write that works does.
func TestStoreHealthFollowsTheLastWrite(t *testing.T) {
	var gauge []bool
	h := &storeHealth{set: func(up bool) { gauge = append(gauge, up) }}
	steps := []struct {
		name  string
		write bool // else a read
		ok    bool
		want  bool
	}{
		{"first read works", false, true, true},
		{"a write fails", true, false, false},
		{"a read works", false, true, false},
		{"another write fails", true, false, false},
		{"another read works", false, true, false},
		{"a write works", true, true, true},
		{"a read fails", false, false, false},
		{"a write works while reads fail", true, true, false},
		{"a read works", false, true, true},
	}
	for i, s := range steps {
		var got bool
		if s.write {
			got = h.wrote(s.ok)
		} else {
			got = h.read(s.ok)
		}
		if got != s.want || h.Up() != s.want || gauge[i] != s.want {
			t.Fatalf("%s: up %v (Up %v, gauge %v), want %v", s.name, got, h.Up(), gauge[i], s.want)
		}
	}
}
