package route

import (
	"math"
	"strings"
	"sync"
	"testing"
)

func TestAffinityKey(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"none", `{"model":"gpt-4o","messages":[]}`, ""},
		{"prompt_cache_key", `{"model":"m","prompt_cache_key":"k1"}`, "k1"},
		{"user", `{"user":"u1","model":"m"}`, "u1"},
		{"previous_response_id", `{"previous_response_id":"resp_1"}`, "resp_1"},
		{"anthropic metadata.user_id", `{"metadata":{"note":"x","user_id":"a1"},"model":"m"}`, "a1"},
		{"prompt_cache_key before user", `{"user":"u1","prompt_cache_key":"k1"}`, "k1"},
		{"user before previous_response_id", `{"previous_response_id":"r","user":"u1"}`, "u1"},
		{"previous_response_id before metadata", `{"metadata":{"user_id":"a1"},"previous_response_id":"r"}`, "r"},
		{"empty falls through", `{"prompt_cache_key":"","user":"u1"}`, "u1"},
		{"non-string falls through", `{"prompt_cache_key":7,"user":null,"previous_response_id":"r"}`, "r"},
		{"the last of duplicates", `{"user":"u1","user":"u2"}`, "u2"},
		{"escaped key", `{"us\u0065r":"u1"}`, "u1"},
		{"escaped value", `{"user":"a\"b\u00e9"}`, "a\"bé"},
		{"key in another case is not it", `{"User":"u1"}`, ""},
		{"nested, not top-level", `{"messages":[{"user":"u1"}],"input":{"prompt_cache_key":"k"}}`, ""},
		{"metadata not an object", `{"metadata":"user_id"}`, ""},
		{"metadata's nested object", `{"metadata":{"x":{"user_id":"deep"}}}`, ""},
		{"pretty-printed", "{\n  \"model\": \"m\",\n  \"user\" : \"u1\"\n}", "u1"},
		{"not an object", `["user","u1"]`, ""},
		{"malformed", `{"user":"u1",`, ""},
		{"empty body", ``, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AffinityKey([]byte(tc.body)); got != tc.want {
				t.Fatalf("AffinityKey(%s) = %q, want %q", tc.body, got, tc.want)
			}
		})
	}
}

// keyed returns a request whose affinity key is key.
func keyed(key string) *Request {
	return &Request{Body: []byte(`{"model":"m","user":"` + key + `"}`)}
}

func TestAffinityExactPicks(t *testing.T) {
	// The picks are fixed by the hash: every replica and every restart
	// sends these keys to these members. A change here moves keys in
	// production, emptying prompt caches: do it on purpose only.
	c := members([2]int{1, 5}, [2]int{1, 3}, [2]int{1, 2})
	s := &Affinity{}
	var got strings.Builder
	for i := range 20 {
		r := keyed("user-" + itoa(i))
		got.WriteString(c[s.Select(r, c)].Backend.Name)
		// The same key, again and from another field, goes to the same
		// member.
		if again := c[s.Select(r, c)]; again.Backend.Name[0] != got.String()[i] {
			t.Fatalf("user-%d moved to %s", i, again.Backend.Name)
		}
		other := &Request{Body: []byte(`{"prompt_cache_key":"user-` + itoa(i) + `"}`)}
		if again := c[s.Select(other, c)]; again.Backend.Name[0] != got.String()[i] {
			t.Fatalf("prompt_cache_key user-%d went to %s", i, again.Backend.Name)
		}
	}
	if want := "aaacaabaaacaaaaaacab"; got.String() != want {
		t.Fatalf("picks %s, want %s", got.String(), want)
	}
}

// keyPicks returns the member name picked for each of n keys.
func keyPicks(s Selector, c []*Member, n int) []byte {
	out := make([]byte, n)
	for i := range n {
		out[i] = c[s.Select(keyed("k"+itoa(i)), c)].Backend.Name[0]
	}
	return out
}

func TestAffinityOnlyALeaversKeysMove(t *testing.T) {
	// When a member stops being a candidate (benched, or tried by this
	// request), only its keys move; they spread over the others by
	// weight; and when it is back, they come back.
	c := members([2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1})
	s := &Affinity{}
	const n = 10000
	before := keyPicks(s, c, n)
	for _, leaver := range []string{"a", "b", "c", "d"} {
		t.Run(leaver, func(t *testing.T) {
			rest := without(c, leaver)
			after := keyPicks(s, rest, n)
			moved := map[byte]int{}
			for i := range n {
				switch {
				case before[i] != leaver[0] && after[i] != before[i]:
					t.Fatalf("key k%d moved from %c to %c when %s left", i, before[i], after[i], leaver)
				case before[i] == leaver[0]:
					moved[after[i]]++
				}
			}
			// About a third of the leaver's 2,500 keys to each other member.
			for _, m := range rest {
				if got := moved[m.Backend.Name[0]]; math.Abs(float64(got)-2500.0/3) > 100 {
					t.Fatalf("%s got %d of %s's keys: %v", m.Backend.Name, got, leaver, moved)
				}
			}
			if back := keyPicks(s, c, n); string(back) != string(before) {
				t.Fatal("keys did not come back when the member did")
			}
		})
	}
}

func TestAffinityDistribution(t *testing.T) {
	// 10,000 keys split by weight within 1% of all keys (the hash is
	// fixed, so the counts are too; the tolerance says how close the
	// fixed counts are to the weights).
	for _, tc := range []struct {
		name    string
		weights []int
	}{
		{"equal", []int{1, 1, 1}},
		{"5/3/2", []int{5, 3, 2}},
		{"90/5/5", []int{90, 5, 5}},
		{"1/1/1/1/1/1/1/1", []int{1, 1, 1, 1, 1, 1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spec [][2]int
			total := 0
			for _, w := range tc.weights {
				spec = append(spec, [2]int{1, w})
				total += w
			}
			c := members(spec...)
			const n = 10000
			counts := map[byte]int{}
			for _, p := range keyPicks(&Affinity{}, c, n) {
				counts[p]++
			}
			for i, m := range c {
				want := float64(n*tc.weights[i]) / float64(total)
				if got := counts[m.Backend.Name[0]]; math.Abs(float64(got)-want) > 0.01*n {
					t.Fatalf("%s: %d keys, want about %.0f (counts %v)", m.Backend.Name, got, want, counts)
				}
			}
		})
	}
}

func TestAffinityWithoutKeyIsSmooth(t *testing.T) {
	// No key, a multipart body or no request: smooth weighted round-robin,
	// one sequence for all of them.
	c := members([2]int{1, 5}, [2]int{1, 1}, [2]int{1, 1})
	s := &Affinity{}
	reqs := []*Request{
		nil,
		{Body: []byte(`{"model":"m"}`)},
		{Body: []byte(`{"user":""}`)},
		{Body: []byte(`{"user":"u1"}`), ContentType: "multipart/form-data; boundary=x"},
		{Body: []byte(`not json`)},
	}
	var got strings.Builder
	for i := range 14 {
		got.WriteString(c[s.Select(reqs[i%len(reqs)], c)].Backend.Name)
	}
	if want := "aabacaa" + "aabacaa"; got.String() != want {
		t.Fatalf("picks %s, want %s", got.String(), want)
	}
}

func TestAffinityTiers(t *testing.T) {
	// Keys are hashed over the best tier present only: tier 2's members
	// share the keys only while tier 1 has no candidate, and each key's
	// tier-1 member is its own again when tier 1 is back.
	c := members([2]int{1, 1}, [2]int{1, 1}, [2]int{2, 1}, [2]int{2, 1})
	s := &Affinity{}
	const n = 1000
	top := keyPicks(s, c, n)
	low := keyPicks(s, c[2:], n)
	counts := map[byte]int{}
	for i := range n {
		if top[i] != 'a' && top[i] != 'b' {
			t.Fatalf("key k%d went to tier 2 (%c) with tier 1 present", i, top[i])
		}
		counts[low[i]]++
	}
	if counts['c'] < 400 || counts['d'] < 400 {
		t.Fatalf("tier 2 split %v", counts)
	}
	if again := keyPicks(s, c, n); string(again) != string(top) {
		t.Fatal("keys moved within tier 1 after tier 2 was used")
	}
}

func TestAffinityConcurrent(t *testing.T) {
	// Keyed picks keep no state: from many goroutines they are the same as
	// one after another, with keyless picks interleaved.
	c := members([2]int{1, 5}, [2]int{1, 3}, [2]int{1, 2})
	s := &Affinity{}
	want := keyPicks(s, c, 1000)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got := keyPicks(s, c, 1000); string(got) != string(want) {
				t.Error("concurrent picks differ")
			}
		})
		wg.Go(func() {
			for range 500 {
				if i := s.Select(nil, c); i < 0 || i >= len(c) {
					t.Errorf("keyless Select = %d", i)
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkAffinity(b *testing.B) {
	c := members([2]int{1, 5}, [2]int{1, 3}, [2]int{1, 2})
	r := &Request{Body: []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("hello ", 200) + `"}],"user":"user-1234"}`)}
	s := &Affinity{}
	b.ReportAllocs()
	for b.Loop() {
		s.Select(r, c)
	}
}

func TestAffinityRetryAndBench(t *testing.T) {
	// A key's retry (its first choice tried, so not a candidate) goes to
	// its second choice; while its first choice is benched, new requests
	// with the key go there too; once it is back they come back. (The
	// Pool passes only candidates; these are the sets it would pass.)
	c := members([2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1})
	s := &Affinity{}
	r := keyed("user-42")
	first := c[s.Select(r, c)]
	rest := without(c, first.Backend.Name)
	second := rest[s.Select(r, rest)]
	if second == first {
		t.Fatalf("retry went to the tried member %s", first.Backend.Name)
	}
	for range 3 {
		if m := rest[s.Select(r, rest)]; m != second {
			t.Fatalf("with %s benched: %s, want the retry's %s", first.Backend.Name, m.Backend.Name, second.Backend.Name)
		}
	}
	if m := c[s.Select(r, c)]; m != first {
		t.Fatalf("after it is back: %s, want %s", m.Backend.Name, first.Backend.Name)
	}
}
