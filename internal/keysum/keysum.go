// Package keysum hashes a secret held in a string with SHA-256 without a
// heap allocation: sha256.Sum256([]byte(s)) copies s to the heap for any
// s longer than 32 bytes, as gateway keys are, and a key is hashed once
// or twice on every request (the API's edge and the key directory).
package keysum

import "crypto/sha256"

// stackMax is the longest secret hashed from a copy on the stack; a
// longer one is hashed from a heap copy, as before.
const stackMax = 128

// Sum returns the SHA-256 of s. It is safe for concurrent use.
func Sum(s string) [sha256.Size]byte {
	if len(s) > stackMax {
		return sha256.Sum256([]byte(s))
	}
	var buf [stackMax]byte
	n := copy(buf[:], s)
	sum := sha256.Sum256(buf[:n])
	clear(buf[:n]) // no copy of the secret left on the stack
	return sum
}
