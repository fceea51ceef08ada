package sim

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
)

// wordList is the vocabulary of generated answers: one word is one token.
var wordList = [...]string{
	"the", "gateway", "routes", "each", "request", "to", "a", "healthy",
	"region", "and", "keeps", "latency", "low", "while", "quotas", "hold",
	"steady", "under", "load", "when", "one", "deployment", "slows", "down",
	"traffic", "moves", "on", "without", "fuss", "so", "users", "see",
	"answers", "arrive", "in", "time", "every", "retry", "waits", "for",
	"its", "turn", "breakers", "open", "close", "again", "tokens", "flow",
	"like", "water", "through", "pipes", "of", "many", "sizes", "across",
	"calm", "weather", "with", "clear", "skies", "over", "busy", "networks",
}

// replyWords draws n words; every word but the first carries its leading
// space, so concatenating the pieces gives the text and each piece is one
// streamed content chunk.
func replyWords(rng *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		w := wordList[rng.IntN(len(wordList))]
		if i > 0 {
			w = " " + w
		}
		out[i] = w
	}
	return out
}

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// randomID returns prefix followed by n characters drawn from rng.
func randomID(rng *rand.Rand, prefix string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = idAlphabet[rng.IntN(len(idAlphabet))]
	}
	return prefix + string(b)
}

// randomUUID returns a version-4 UUID drawn from rng.
func randomUUID(rng *rand.Rand) string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rng.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rng.Uint64())
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// randomHex returns n hex digits drawn from rng.
func randomHex(rng *rand.Rand, n int) string {
	const hex = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = hex[rng.IntN(16)]
	}
	return string(b)
}

// hash64 is FNV-1a of s.
func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// fingerprintFor is a deployment's fixed system_fingerprint.
func fingerprintFor(name string) string {
	return fmt.Sprintf("fp_%010x", hash64("fingerprint:"+name)&0xffffffffff)
}

// embedding returns a unit vector of dims floats that depends only on text,
// so equal inputs get equal vectors on every deployment and every run.
func embedding(text string, dims int) []float32 {
	h := hash64(text)
	rng := rand.New(rand.NewPCG(h, h^0x9e3779b97f4a7c15))
	v := make([]float32, dims)
	var sum float64
	for i := range v {
		x := rng.NormFloat64()
		v[i] = float32(x)
		sum += x * x
	}
	if norm := math.Sqrt(sum); norm > 0 {
		for i := range v {
			v[i] = float32(float64(v[i]) / norm)
		}
	}
	return v
}

// embeddingBase64 encodes v as OpenAI's base64 format: little-endian
// float32s.
func embeddingBase64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}
