package console

import (
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	b := func(counts ...uint64) []Bucket {
		les := []float64{0.1, 0.5, 1, 5}
		var out []Bucket
		for i, c := range counts {
			out = append(out, Bucket{Le: les[i], Count: c})
		}
		return out
	}
	cases := []struct {
		name   string
		a, b   []Bucket
		want   float64
		wantOK bool
	}{
		{"none", b(0, 0, 0, 0), b(0, 0, 0, 0), 0, false},
		{"all fast", nil, b(100, 100, 100, 100), 0.1, true},
		{"tail in the window", b(100, 100, 100, 100), b(100, 190, 195, 200), 1, true},
		{"past the last bound", nil, b(0, 0, 0, 0), 0, false},
		{"no histogram", nil, nil, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := quantile(c.a, c.b, 0.95)
			if got != c.want || ok != c.wantOK {
				t.Fatalf("quantile = %v, %v; want %v, %v", got, ok, c.want, c.wantOK)
			}
		})
	}
}

func TestRatesAndChart(t *testing.T) {
	s := newSampler(t.Context(), nil, time.Second, 5, time.Now)
	t0 := time.Unix(1000, 0)
	id := memberID{"chat", "a"}
	for i := range 7 { // more than the ring holds
		s.ring[s.next] = sample{at: t0.Add(time.Duration(i) * time.Second),
			attempts: map[memberID]uint64{id: uint64(10 * i)}, errors: map[memberID]uint64{id: uint64(i)}}
		s.next = (s.next + 1) % len(s.ring)
		s.n = min(s.n+1, len(s.ring))
	}
	st := Status{At: t0.Add(6 * time.Second), Pools: []Pool{{Name: "chat", Members: []Member{{Backend: "a", Breaker: "closed"}}}}}
	v := s.buildView(st)
	m := v.Pools[0].Members[0]
	if m.RPS != 10 || m.ErrShare == nil || *m.ErrShare != 0.1 {
		t.Fatalf("rps %v, error share %v", m.RPS, m.ErrShare)
	}
	ch := v.Pools[0].Chart
	if len(ch.Series) != 1 || len(ch.Series[0].Points) != 4 || ch.Max != 10 || ch.End != t0.Add(6*time.Second).UnixMilli() {
		t.Fatalf("chart %+v", ch)
	}
}

func TestDiff(t *testing.T) {
	cases := []struct {
		name, a, b string
		want       string // ops
	}{
		{"same", "a\nb", "a\nb", ""},
		{"changed line", "a\nb\nc", "a\nx\nc", " -+ "},
		{"added", "a\nc", "a\nb\nc", " + "},
		{"removed", "a\nb\nc", "a\nc", " - "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ops []rune
			for _, l := range diffLines(c.a, c.b) {
				ops = append(ops, l.Op)
			}
			if string(ops) != c.want {
				t.Fatalf("ops %q, want %q", string(ops), c.want)
			}
		})
	}
	long := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10"
	got := compact(diffLines(long, "1\n2\n3\n4\n5\nX\n7\n8\n9\n10"), 1)
	var ops []rune
	for _, l := range got {
		ops = append(ops, l.Op)
	}
	if string(ops) != "… -+ …" {
		t.Fatalf("compact %q", string(ops))
	}
}
