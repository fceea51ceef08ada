package route

import "strings"

// TokenEncoding names how a model's text is counted: one of OpenAI's BPE
// encodings, or a provider's documented characters per token.
type TokenEncoding string

// The encodings.
const (
	EncodingO200k  TokenEncoding = "o200k_base"  // gpt-4o, gpt-4.1, o-series, gpt-5 and unknown models
	EncodingCl100k TokenEncoding = "cl100k_base" // gpt-4, gpt-3.5-turbo, text-embedding-3 and ada-002
	EncodingClaude TokenEncoding = "claude"      // ClaudeCharsPerToken
	EncodingGemini TokenEncoding = "gemini"      // GeminiCharsPerToken
)

// Characters per token where no tokenizer of the provider's is published.
const (
	// ClaudeCharsPerToken: Anthropic documents a token as about 3.5
	// English characters for Claude models.
	ClaudeCharsPerToken = 3.5
	// GeminiCharsPerToken: Google documents a token as about 4
	// characters for Gemini models.
	GeminiCharsPerToken = 4.0
)

// EncodingFor returns the encoding used for model: by name, case
// insensitively, anywhere in it (so "azure/gpt-4o-mini" and a deployment
// named "prod-claude-sonnet" are recognised). A model it does not know is
// counted with o200k_base.
func EncodingFor(model string) TokenEncoding {
	e, _ := encodingOf(model)
	return e
}

// encodingOf is EncodingFor, and whether the model's name said it.
func encodingOf(model string) (TokenEncoding, bool) {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "claude"):
		return EncodingClaude, true
	case strings.Contains(m, "gemini"):
		return EncodingGemini, true
	case strings.Contains(m, "gpt-4o"), strings.Contains(m, "gpt-4.1"), strings.Contains(m, "gpt-5"),
		strings.Contains(m, "chatgpt"), isOSeries(m):
		return EncodingO200k, true
	case strings.Contains(m, "gpt-4"), strings.Contains(m, "gpt-3.5"), strings.Contains(m, "gpt-35"),
		strings.Contains(m, "text-embedding"), strings.Contains(m, "davinci-002"), strings.Contains(m, "babbage-002"):
		return EncodingCl100k, true
	}
	return EncodingO200k, false
}

// isOSeries reports whether m names an o-series model (o1, o3, o4-mini...).
func isOSeries(m string) bool {
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	return len(m) >= 2 && m[0] == 'o' && m[1] >= '1' && m[1] <= '9'
}

// textWeights are an OpenAI encoding's average cost, in thousandths of a
// token, of the pieces its pre-tokenizer cuts text into, measured with
// the encoding itself over English prose, Markdown, Go and JSON, and
// text in other scripts (see the tokens package's calibration test).
type textWeights struct {
	word  [17]int32 // an ASCII word of n letters (a leading space or mark included), n <= 16
	long  int32     // each letter past 16
	mark  [5]int32  // a run of n punctuation marks, n <= 4
	marks int32     // each mark past 4
	latin int32     // more for a word's letter of two UTF-8 bytes (accented Latin, Greek, Cyrillic, Hebrew, Arabic)
	wide  int32     // a character of three bytes (CJK, kana, Hangul, Devanagari...)
	emoji int32     // a character of four bytes
	space int32     // a run of white space that is not a word's leading space (indentation, a line break)
}

var (
	o200kWeights = textWeights{
		word:  [17]int32{0, 1000, 1000, 1017, 1016, 1038, 1089, 1117, 1242, 1578, 1750, 1858, 1913, 2155, 2241, 2600, 2700},
		long:  330,
		mark:  [5]int32{0, 1000, 1011, 1304, 1893},
		marks: 550,
		latin: 90,
		wide:  730,
		emoji: 1500,
		space: 1000,
	}
	cl100kWeights = textWeights{
		word:  [17]int32{0, 1000, 1000, 1017, 1016, 1038, 1089, 1117, 1242, 1578, 1750, 1858, 1913, 2155, 2241, 2600, 2700},
		long:  330,
		mark:  [5]int32{0, 1000, 1011, 1304, 1893},
		marks: 550,
		latin: 310,
		wide:  1000,
		emoji: 2000,
		space: 1000,
	}
)

func weightsOf(e TokenEncoding) *textWeights {
	if e == EncodingCl100k {
		return &cl100kWeights
	}
	return &o200kWeights
}

// textClass is the kind of one character of text.
type textClass uint8

const (
	classLetter textClass = iota // ASCII letter
	classDigit
	classSpace // ' '
	classBreak // \n, \r, \t and other white space
	classMark  // ASCII punctuation and symbols
	classLatin // a two-byte UTF-8 character
	classWide  // a three-byte character
	classEmoji // a four-byte character
	classNone  // counted with another (a surrogate pair's low half)
)

// asciiClass classifies the bytes below 0x80.
var asciiClass = func() (t [128]textClass) {
	for c := range 128 {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			t[c] = classLetter
		case c >= '0' && c <= '9':
			t[c] = classDigit
		case c == ' ':
			t[c] = classSpace
		case c == '\n', c == '\r', c == '\t', c == '\v', c == '\f':
			t[c] = classBreak
		default:
			t[c] = classMark
		}
	}
	return t
}()

// textTally counts text as it is fed, JSON string contents as written
// (escapes undecoded): its characters, for the encodings counted by
// characters per token, and an estimate of an OpenAI encoding's tokens
// by the pieces its pre-tokenizer would cut, in thousandths. It builds
// nothing. Not safe for concurrent use.
type textTally struct {
	w     *textWeights
	plain bool // the text is not JSON string contents: a backslash is a mark
	chars int64
	milli int64
}

// EstimateText estimates the tokens of text for encoding e without a
// tokenizer: by characters per token for Claude and Gemini, by the pieces
// an OpenAI encoding's pre-tokenizer would cut for the others (within
// about 10% of the encoding's count for prose, code and JSON; see the
// tokens package's TestEstimateTextIsClose). It allocates nothing and
// reads each byte once, some hundred times faster than a tokenizer.
func EstimateText(e TokenEncoding, text string) int {
	t := textTally{w: weightsOf(e), plain: true}
	tally(&t, text)
	return int(t.tokens(e))
}

// add counts s, the contents of a JSON string (between its quotes, escapes
// as written).
func (t *textTally) add(s []byte) { tally(t, s) }

// tally is t.add for a string or bytes. It reads a run of one kind
// (letters, digits, punctuation) at a time, as the encodings'
// pre-tokenizers cut text, and charges each run its weight.
func tally[T string | []byte](t *textTally, s T) {
	w := t.w
	var milli, chars int64
	spaces, breaks := 0, false // the white space since the last piece
	afterMarks := false        // the last piece was punctuation
	for i := 0; i < len(s); {
		cl, n := textClass(0), 1
		if c := s[i]; c < 0x80 && c != '\\' {
			cl = asciiClass[c]
		} else {
			cl, n = classAt(s, i, t.plain)
		}
		if cl != classSpace && cl != classBreak {
			spaces, breaks = 0, false // a piece's leading space is part of it
		}
		mark := false
		switch cl {
		case classLetter, classLatin:
			letters, latin := 0, 0
			for i < len(s) {
				if c := s[i]; c < 0x80 && c != '\\' {
					if asciiClass[c] != classLetter {
						break
					}
					i++
					letters++
					continue
				}
				if cl, n = classAt(s, i, t.plain); cl != classLatin {
					break
				}
				i += n
				letters++
				latin++
			}
			chars += int64(letters)
			milli += w.wordCost(letters, latin)
		case classDigit:
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			chars += int64(j - i)
			milli += int64((j-i+2)/3) * 1000
			i = j
		case classMark:
			marks := 0
			for i < len(s) {
				if c := s[i]; c < 0x80 && c != '\\' {
					if asciiClass[c] != classMark {
						break
					}
					i++
				} else {
					if cl, n = classAt(s, i, t.plain); cl != classMark {
						break
					}
					i += n
				}
				marks++
			}
			chars += int64(marks)
			milli += w.markCost(marks)
			mark = true
		default:
			i += n
			chars++
			switch cl {
			case classSpace:
				if spaces++; spaces == 2 {
					milli += int64(w.space) // indentation: a token a run
				}
			case classBreak:
				if !breaks && !afterMarks {
					// A run of line breaks is a token, unless it ends
					// a run of punctuation, which takes it.
					milli += int64(w.space)
				}
				spaces, breaks = 0, true
				mark = afterMarks
			case classWide:
				milli += int64(w.wide)
			case classEmoji:
				milli += int64(w.emoji)
			}
		}
		afterMarks = mark
	}
	t.milli += milli
	t.chars += chars
}

// wordCost is the weight of a word of n letters, latin of them of two
// bytes.
func (w *textWeights) wordCost(n, latin int) int64 {
	c := int64(latin) * int64(w.latin)
	if n > 16 {
		return c + int64(w.word[16]) + int64(n-16)*int64(w.long)
	}
	return c + int64(w.word[n])
}

// markCost is the weight of a run of n punctuation marks.
func (w *textWeights) markCost(n int) int64 {
	if n > 4 {
		return int64(w.mark[4]) + int64(n-4)*int64(w.marks)
	}
	return int64(w.mark[n])
}

// classAt classifies the character at s[i], JSON string contents, and
// returns how many bytes it takes.
func classAt[T string | []byte](s T, i int, plain bool) (textClass, int) {
	c := s[i]
	switch {
	case c == '\\' && i+1 < len(s) && !plain:
		switch s[i+1] {
		case 'n', 'r', 't', 'b', 'f':
			return classBreak, 2
		case 'u':
			n := min(6, len(s)-i)
			return escapedClass(string(s[i+2 : i+n])), n
		}
		return classMark, 2 // \" \\ \/
	case c < 0x80:
		return asciiClass[c], 1
	case c >= 0xF0:
		return classEmoji, 4
	case c >= 0xE0:
		return classWide, 3
	case c >= 0xC0:
		return classLatin, 2
	}
	return classNone, 1 // a stray continuation byte
}

// escapedClass classifies the code point of the four hex digits of a \u
// escape by the length of its UTF-8 encoding.
func escapedClass(hex string) textClass {
	v := 0
	for _, h := range hex {
		switch {
		case h >= '0' && h <= '9':
			v = v<<4 | int(h-'0')
		case h >= 'a' && h <= 'f':
			v = v<<4 | int(h-'a'+10)
		case h >= 'A' && h <= 'F':
			v = v<<4 | int(h-'A'+10)
		}
	}
	switch {
	case v < 0x80:
		if v == '\n' || v == '\r' || v == '\t' {
			return classBreak
		}
		return classMark
	case v < 0x800:
		return classLatin
	case v >= 0xD800 && v < 0xDC00:
		return classEmoji // the high half of a surrogate pair: a character past U+FFFF
	case v >= 0xDC00 && v < 0xE000:
		return classNone // its low half, counted with the high one
	}
	return classWide
}

// tokens is the tally's estimate for encoding e: Claude's and Gemini's
// characters per token, else the OpenAI encoding's pieces.
func (t *textTally) tokens(e TokenEncoding) int64 {
	switch e {
	case EncodingClaude:
		return int64(float64(t.chars)/ClaudeCharsPerToken + 0.999)
	case EncodingGemini:
		return int64(float64(t.chars)/GeminiCharsPerToken + 0.999)
	}
	return (t.milli + 999) / 1000
}
