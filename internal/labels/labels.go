// Package labels checks the tags and metadata of keys: bounded in count
// and length, and tags in a small alphabet, because every one comes from
// an admin API caller or a config file and ends up in usage records,
// queries and CSV. Values are always bound as query arguments, never
// written into SQL text; these bounds keep rows and answers small.
package labels

import (
	"fmt"
	"slices"
	"unicode"
	"unicode/utf8"
)

// Bounds on a key's tags and metadata.
const (
	// MaxTags is the most tags a key may have.
	MaxTags = 16
	// MaxTagLen is the longest tag, and the longest metadata name, in
	// bytes.
	MaxTagLen = 64
	// MaxMetadata is the most metadata entries a key may have.
	MaxMetadata = 32
	// MaxValueLen is the longest metadata value, in bytes.
	MaxValueLen = 512
)

// tagChar reports whether c may appear in a tag or a metadata name:
// ASCII letters and digits, and - _ . : / = @.
func tagChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '_', '.', ':', '/', '=', '@':
		return true
	}
	return false
}

// CheckTag reports why tag is not a valid tag (or metadata name): empty,
// longer than MaxTagLen, with a character other than ASCII letters,
// digits and - _ . : / = @, or not starting with a letter or digit.
func CheckTag(tag string) error {
	if tag == "" {
		return fmt.Errorf("a tag must not be empty")
	}
	if len(tag) > MaxTagLen {
		return fmt.Errorf("tag %.20q… is longer than %d bytes", tag, MaxTagLen)
	}
	for i := 0; i < len(tag); i++ {
		if !tagChar(tag[i]) {
			return fmt.Errorf("tag %q: only ASCII letters, digits and - _ . : / = @ are allowed", tag)
		}
	}
	// A first letter or digit: a CSV cell starting with = - @ is a
	// formula to a spreadsheet.
	if c := tag[0]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
		return fmt.Errorf("tag %q must start with a letter or a digit", tag)
	}
	return nil
}

// Tags checks tags and returns them without repeats, in their first
// order; nil when there are none.
func Tags(tags []string) ([]string, error) {
	var out []string
	for _, t := range tags {
		if err := CheckTag(t); err != nil {
			return nil, err
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if len(out) > MaxTags {
		return nil, fmt.Errorf("%d tags: at most %d", len(out), MaxTags)
	}
	return out, nil
}

// Metadata checks a key's metadata: at most MaxMetadata entries, names
// as tags (see CheckTag), values valid UTF-8 of at most MaxValueLen
// bytes without control characters.
func Metadata(m map[string]string) error {
	if len(m) > MaxMetadata {
		return fmt.Errorf("%d metadata entries: at most %d", len(m), MaxMetadata)
	}
	for k, v := range m {
		if err := CheckTag(k); err != nil {
			return fmt.Errorf("metadata name: %w", err)
		}
		if len(v) > MaxValueLen {
			return fmt.Errorf("metadata %s: the value is longer than %d bytes", k, MaxValueLen)
		}
		if !utf8.ValidString(v) || slices.ContainsFunc([]rune(v), unicode.IsControl) {
			return fmt.Errorf("metadata %s: the value must be UTF-8 text without control characters", k)
		}
	}
	return nil
}
