package ledger

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"time"
)

const (
	// SecretPrefix starts every secret, so that scanners and people can
	// tell a switchover key from a provider's.
	SecretPrefix = "sk-so-"
	// secretChars random base62 characters follow it: 32 × log2(62) ≈ 190
	// bits of entropy.
	secretChars = 32
	// PrefixLen is how many of those characters form Key.Prefix, the
	// lookup prefix (62^8 ≈ 2×10^14 values; a collision is retried).
	PrefixLen  = 8
	keyIDChars = 16
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randomBase62 returns n characters drawn uniformly from base62 with
// crypto/rand (bytes ≥ 248 are rejected, so that % 62 has no bias).
func randomBase62(n int) string {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/4+4)
	for len(out) < n {
		_, _ = rand.Read(buf) // crypto/rand.Read never fails (Go ≥ 1.24)
		for _, b := range buf {
			if b < 248 && len(out) < n {
				out = append(out, base62[b%62])
			}
		}
	}
	return string(out)
}

// NewSecret returns a new secret ("sk-so-" and 32 random base62
// characters), its lookup prefix (the first 8 random characters) and the
// hash to store (SHA-256 of the whole secret).
//
// A fast hash is right here, unlike for passwords: slow hashes (bcrypt,
// argon2) protect low-entropy secrets that can be guessed, while these
// carry 190 random bits, so a leaked hash cannot be brute-forced at any
// hashing speed, and checking a key on every request stays cheap.
func NewSecret() (secret, prefix string, hash []byte) {
	r := randomBase62(secretChars)
	secret = SecretPrefix + r
	return secret, r[:PrefixLen], HashSecret(secret)
}

// HashSecret returns the hash stored for secret.
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// NewKeyID returns a new public key ID, "key_" and 16 random characters.
func NewKeyID() string { return "key_" + randomBase62(keyIDChars) }

// LookupPrefix returns the lookup prefix of secret, and whether it has
// the form of a secret NewSecret makes at all.
func LookupPrefix(secret string) (prefix string, ok bool) { return parseSecret(secret) }

// parseSecret returns the lookup prefix of a well-formed secret.
func parseSecret(secret string) (prefix string, ok bool) {
	r, found := strings.CutPrefix(secret, SecretPrefix)
	if !found || len(r) != secretChars {
		return "", false
	}
	for i := 0; i < len(r); i++ {
		if strings.IndexByte(base62, r[i]) < 0 {
			return "", false
		}
	}
	return r[:PrefixLen], true
}

// KeyLookup finds a key by the lookup prefix of its secret. Store
// implements it.
type KeyLookup interface {
	KeyByPrefix(ctx context.Context, prefix string) (Key, error)
}

// Verify checks a secret presented by a client at time now and returns its
// key. It costs one lookup by prefix, whatever the number of keys, and
// compares hashes in constant time.
//
// The error wraps ErrNotFound (malformed secret, unknown prefix or wrong
// secret: the three look the same to the client), ErrRevoked or ErrExpired.
// Any other error is the store's (database down): the caller decides
// whether to refuse the request or to trust a cached answer; Verify never
// lets a request through on an error.
func Verify(ctx context.Context, s KeyLookup, secret string, now time.Time) (Key, error) {
	prefix, ok := parseSecret(secret)
	if !ok {
		return Key{}, fmt.Errorf("%w: not a switchover key", ErrNotFound)
	}
	k, err := s.KeyByPrefix(ctx, prefix)
	if err != nil {
		return Key{}, err
	}
	hash := k.Hash
	if prefix != k.Prefix { // the secret a rotation replaced
		if prefix != k.PrevPrefix || !k.InGrace(now) {
			return Key{}, fmt.Errorf("%w: the secret of prefix %s was rotated", ErrNotFound, prefix)
		}
		hash = k.PrevHash
	}
	if subtle.ConstantTimeCompare(HashSecret(secret), hash) != 1 {
		return Key{}, fmt.Errorf("%w: wrong secret for prefix %s", ErrNotFound, prefix)
	}
	if !k.Revoked.IsZero() {
		return Key{}, fmt.Errorf("%w: %s at %s", ErrRevoked, k.ID, k.Revoked.UTC().Format(time.RFC3339))
	}
	if !k.Expires.IsZero() && !now.Before(k.Expires) {
		return Key{}, fmt.Errorf("%w: %s at %s", ErrExpired, k.ID, k.Expires.UTC().Format(time.RFC3339))
	}
	return k, nil
}

// createAttempts bounds retries of NewKey and Rotate on a prefix
// collision, which is already unlikely once.
const createAttempts = 3

// NewKey creates k in s with a new ID, secret and Created = now, and
// returns the stored key and the secret. The secret is shown to the caller
// this once; only its hash is kept. k.ID, Prefix, Hash, Created and
// Revoked are ignored.
func NewKey(ctx context.Context, s Store, k Key, now time.Time) (Key, string, error) {
	if err := validPeriod(k.BudgetPeriod); err != nil {
		return Key{}, "", err
	}
	k.Created, k.Revoked = now, time.Time{}
	var err error
	for range createAttempts {
		var secret string
		k.ID = NewKeyID()
		secret, k.Prefix, k.Hash = NewSecret()
		if err = s.CreateKey(ctx, k); err == nil {
			return k, secret, nil
		}
		if !errors.Is(err, ErrConflict) {
			break
		}
	}
	return Key{}, "", err
}

// Rotate gives key id a new secret and returns it. The old secret keeps
// working until keepOldUntil (for callers to move to the new one), or
// stops at once when keepOldUntil is zero; a secret kept by an earlier
// rotation stops at once either way. A revoked key can be rotated but
// stays revoked.
func Rotate(ctx context.Context, s Store, id string, keepOldUntil time.Time) (string, error) {
	var err error
	for range createAttempts {
		secret, prefix, hash := NewSecret()
		if err = s.RotateKey(ctx, id, prefix, hash, keepOldUntil); err == nil {
			return secret, nil
		}
		if !errors.Is(err, ErrConflict) {
			break
		}
	}
	return "", err
}
