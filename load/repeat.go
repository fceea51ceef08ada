package load

import "fmt"

// promptOf says which distinct prompt the nth request of a run (from 0)
// sends when share of the requests repeat an earlier one (0 < share < 1).
// Distinct prompts are numbered from 0 in the order they are first sent.
//
// The repeats are spread evenly: request n repeats when
// floor((n+1)·share) > floor(n·share), so of the first n requests exactly
// floor(n·share) are repeats, and the first request never is. A repeat
// sends one of the distinct prompts sent before it, picked by a hash of n:
// every run of the same share sends the same sequence, whatever the
// order its requests finish in.
func promptOf(n int, share float64) int {
	if share <= 0 || n <= 0 {
		return max(n, 0)
	}
	repeatsBefore := int(float64(n) * share)
	distinct := n - repeatsBefore // distinct prompts among requests 0..n-1
	if int(float64(n+1)*share) == repeatsBefore {
		return distinct // a new prompt
	}
	return int(mix(uint64(n)) % uint64(distinct))
}

// mix is splitmix64's finalizer: a well-spread hash of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// NthBody returns the body of the nth request of a run (from 0). Without
// Repeat every request sends Body(). With Repeat, each distinct prompt is
// Prompt followed by its number, " (#1)", " (#2)"…, and a repeat sends
// exactly the bytes of the earlier request it repeats.
func (r Request) NthBody(n int) []byte {
	if r.Repeat <= 0 {
		return r.Body()
	}
	if r.Prompt == "" {
		r.Prompt = defaultPrompt
	}
	r.Prompt += fmt.Sprintf(" (#%d)", promptOf(n, r.Repeat)+1)
	r.Repeat = 0
	return r.Body()
}
