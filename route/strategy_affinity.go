package route

import (
	"bytes"
	"math"
	"unicode/utf8"
)

// Affinity is a Selector that sends requests with the same key to the same
// member while it is a candidate, so that the provider's prompt cache,
// which is per deployment, keeps hitting. The key is the body's top-level
// "prompt_cache_key", else "user", else "previous_response_id", else
// "metadata"."user_id" (Anthropic's), the first that is a non-empty
// string; see AffinityKey.
//
// Among the candidates of the best (lowest) priority tier it picks by
// weighted rendezvous hashing: each member scores -weight/ln(h), where h
// is a hash of the key and the member's backend name mapped into (0, 1),
// and the highest score wins. Each member thus gets its weight's share of
// the keys, and when a member stops being a candidate (benched, drained,
// already tried by this request) only its own keys move, each to its next
// choice; the others stay. The hash (64-bit FNV-1a with a splitmix64
// finalizer) is fixed, so every gateway replica and every restart sends a
// key to the same backend. A request without a key, or a multipart one,
// goes by a SmoothWeighted of its own. A lower tier is chosen only when no
// member of a higher tier is a candidate.
//
// Its risk: weights hold over many keys, not over calls, so one heavy key
// loads one region and can use up its quota; and a benched member's keys
// move away and back again, missing the cache both times.
//
// The zero value is ready to use; an Affinity must not be copied after
// first use. It is safe for concurrent use: keyed picks keep no state.
type Affinity struct {
	smooth SmoothWeighted // picks for requests without a key
}

var _ Selector = (*Affinity)(nil)

// Select implements Selector.
func (s *Affinity) Select(r *Request, c []*Member) int {
	tier, ok := bestTier(c)
	if !ok {
		return -1
	}
	var key []byte
	if r != nil && r.ContentType == "" {
		key = affinityKey(r.Body)
	}
	if len(key) == 0 {
		return s.smooth.Select(r, c)
	}
	return rendezvous(key, c, tier)
}

// rendezvous returns the index of the member of tier tier in c with the
// highest weighted rendezvous score for key (the first in configuration
// order of equals), -1 when the tier has none.
func rendezvous(key []byte, c []*Member, tier int) int {
	seed := fnvAdd(fnvBytes(fnvOffset, key), 0xff) // 0xff never occurs in UTF-8: "ab"+"c" differs from "a"+"bc"
	pick, best := -1, math.Inf(-1)
	for i, m := range c {
		if m.priority() != tier {
			continue
		}
		if sc := rendezvousScore(seed, m); pick < 0 || sc > best {
			pick, best = i, sc
		}
	}
	return pick
}

// rendezvousScore is m's weighted rendezvous score, from seed, the FNV-1a
// state after the key.
func rendezvousScore(seed uint64, m *Member) float64 {
	h := mix64(fnvString(seed, m.Backend.Name))
	u := (float64(h>>11) + 0.5) / (1 << 53) // in (0, 1)
	return -float64(m.weight()) / math.Log(u)
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvAdd(h uint64, b byte) uint64 { return (h ^ uint64(b)) * fnvPrime }

func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h = fnvAdd(h, c)
	}
	return h
}

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = fnvAdd(h, s[i])
	}
	return h
}

// mix64 is splitmix64's finalizer: FNV-1a alone leaves keys that differ in
// their last byte with close hashes.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// The members AffinityKey reads, best first.
var affinityFields = [...]string{"prompt_cache_key", "user", "previous_response_id"}

// AffinityKey returns the key by which Affinity keeps a request body on one
// backend: its top-level "prompt_cache_key", else "user", else
// "previous_response_id", else the "user_id" member of a top-level
// "metadata" object (Anthropic's), the first that is a non-empty string;
// "" when there is none or body is not a JSON object. A member given twice
// counts by its last value, as JSON decoders read it. It reads only the
// top level (and metadata's), without decoding the rest.
func AffinityKey(body []byte) string { return string(affinityKey(body)) }

// affinityKey is AffinityKey as bytes: a part of body when the value has
// no escapes, so the common case does not allocate.
func affinityKey(body []byte) []byte {
	var found [len(affinityFields) + 1][]byte // raw values, metadata.user_id last
	ok := eachMember(body, func(key, val []byte) {
		for i, f := range affinityFields {
			if keyIs(key, f) {
				found[i] = val
				return
			}
		}
		if keyIs(key, "metadata") && len(val) > 0 && val[0] == '{' {
			eachMember(val, func(key, v []byte) {
				if keyIs(key, "user_id") {
					found[len(affinityFields)] = v
				}
			})
		}
	})
	if !ok {
		return nil
	}
	for _, v := range found {
		if len(v) <= 2 || v[0] != '"' {
			continue // absent, empty or not a string
		}
		if bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
			return v[1 : len(v)-1]
		}
		if s, err := unquote(v); err == nil && s != "" {
			return []byte(s)
		}
	}
	return nil
}

// eachMember calls fn with the raw key (quotes included) and raw value of
// each top-level member of the JSON object body, in order, and reports
// whether body is a well-formed object at its top level.
func eachMember(body []byte, fn func(key, val []byte)) bool {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	i++
	for first := true; ; first = false {
		i = skipSpace(body, i)
		if i >= len(body) {
			return false
		}
		if body[i] == '}' {
			return true
		}
		if !first {
			if body[i] != ',' {
				return false
			}
			i = skipSpace(body, i+1)
		}
		if i >= len(body) || body[i] != '"' {
			return false
		}
		kEnd, err := skipString(body, i)
		if err != nil {
			return false
		}
		key := body[i:kEnd]
		i = skipSpace(body, kEnd)
		if i >= len(body) || body[i] != ':' {
			return false
		}
		vStart := skipSpace(body, i+1)
		vEnd, err := skipValue(body, vStart)
		if err != nil {
			return false
		}
		fn(key, body[vStart:vEnd])
		i = vEnd
	}
}

// keyIs reports whether the raw JSON string key (quotes included) decodes
// to name exactly.
func keyIs(raw []byte, name string) bool {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1:len(raw)-1]) == name
	}
	s, err := unquote(raw)
	return err == nil && s == name
}
