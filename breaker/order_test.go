package breaker

import "testing"

func TestOrderDropsLateTransitions(t *testing.T) {
	tr := func(name string, seq uint64) Transition { return Transition{Name: name, Seq: seq} }
	var o Order
	steps := []struct {
		name  string
		t     Transition
		forg  string // forget this backend first
		fresh bool
	}{
		{"first", tr("weu", 2), "", true},
		{"older arrives late", tr("weu", 1), "", false},
		{"same again", tr("weu", 2), "", false},
		{"newer", tr("weu", 3), "", true},
		{"other backend", tr("sec", 1), "", true},
		{"not numbered", tr("weu", 0), "", true},
		{"after forget, a new breaker", tr("weu", 1), "weu", true},
	}
	for _, s := range steps {
		if s.forg != "" {
			o.Forget(s.forg)
		}
		if got := o.Fresh(s.t); got != s.fresh {
			t.Errorf("%s: Fresh(%s, %d) = %v, want %v", s.name, s.t.Name, s.t.Seq, got, s.fresh)
		}
	}
}
