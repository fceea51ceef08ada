package route

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

func TestScanJSON(t *testing.T) {
	many := func(key, item string, n int) string {
		return `{"` + key + `":[` + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + `]}`
	}
	tests := []struct {
		name   string
		body   string
		values int
		limit  string // the JSONLimitError's, "" for none
		bad    bool
	}{
		{"object", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, 6, "", false},
		{"scalars", ` {"a":-0.5e+3,"b":true,"c":false,"d":null,"e":"\u00e9\n","f":[]} `, 7, "", false},
		{"top-level string", `"x"`, 1, "", false},
		{"trailing object", `{"model":"a"}{"model":"b"}`, 0, "", true},
		{"trailing garbage", `{"model":"a"} x`, 0, "", true},
		{"trailing comma", `{"a":[1,]}`, 0, "", true},
		{"empty", ``, 0, "", true},
		{"unclosed", `{"a":[1`, 0, "", true},
		{"bad escape", `{"a":"\x"}`, 0, "", true},
		{"short unicode escape", `{"a":"\u12"}`, 0, "", true},
		{"control character", "{\"a\":\"\t\"}", 0, "", true},
		{"leading zero", `{"a":01}`, 0, "", true},
		{"bare minus", `{"a":-}`, 0, "", true},
		{"bad literal", `{"a":nul}`, 0, "", true},
		{"mismatched end", `{"a":[1}`, 0, "", true},
		{"single quotes", `{'a':1}`, 0, "", true},
		{"depth at the limit", strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth), MaxJSONDepth, "", false},
		{"depth over the limit", strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1), 0, "nesting depth", true},
		{"messages at the limit", many("messages", "{}", MaxJSONMessages), 1 + 1 + MaxJSONMessages, "", false},
		{"messages over the limit", many("messages", "{}", MaxJSONMessages+1), 0, "messages", true},
		{"messages in another case", many("Messages", "0", MaxJSONMessages+1), 0, "messages", true},
		{"messages escaped", many(`m\u0065ssages`, "0", MaxJSONMessages+1), 0, "messages", true},
		{"input over the limit", many("input", `"x"`, MaxJSONInputItems+1), 0, "input items", true},
		{"tools over the limit", many("tools", "{}", MaxJSONTools+1), 0, "tools", true},
		{"system over the limit", many("system", "{}", MaxJSONContentParts+1), 0, "content parts", true},
		{"content parts over the limit", `{"messages":[` + strings.TrimSuffix(many("content", "{}", MaxJSONContentParts+1), "") + `]}`, 0, "content parts", true},
		{"other arrays unbounded", many("stop", "0", MaxJSONMessages+1), 2 + MaxJSONMessages + 1, "", false},
		{"nested messages unbounded", `{"x":` + many("messages", "0", MaxJSONMessages+1) + `}`, 3 + MaxJSONMessages + 1, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := ScanJSON([]byte(tc.body))
			if (err != nil) != tc.bad {
				t.Fatalf("err = %v, want an error: %v", err, tc.bad)
			}
			if err != nil && !errors.Is(err, ErrBadBody) {
				t.Fatalf("error %v is not ErrBadBody", err)
			}
			var le *JSONLimitError
			if got := errors.As(err, &le); got != (tc.limit != "") || got && le.Limit != tc.limit {
				t.Fatalf("err = %v, want a limit error %q", err, tc.limit)
			}
			if err == nil && st.Values != tc.values {
				t.Fatalf("values = %d, want %d", st.Values, tc.values)
			}
			if tc.limit == "" && json.Valid([]byte(tc.body)) == tc.bad {
				t.Fatalf("ScanJSON says bad=%v, json.Valid %v", tc.bad, json.Valid([]byte(tc.body)))
			}
		})
	}
}

// TestScanJSONAllocatesNothing: the scan is O(1) in memory, whatever the
// body.
func TestScanJSONAllocatesNothing(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi \"there\""}]}],"temperature":0.5,"stream":true}`)
	if n := testing.AllocsPerRun(100, func() { ScanJSON(body) }); n != 0 {
		t.Fatalf("ScanJSON allocates %v times a call, want 0", n)
	}
}

// FuzzScanJSON: within the limits, ScanJSON accepts exactly what
// encoding/json accepts.
func FuzzScanJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"\u00e9"`, `{"a":1}{}`, `[1,]`, `-0.0e-0`, `{"messages":[{"content":[]}]}`, "\"\x7f\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := ScanJSON(b)
		var le *JSONLimitError
		if errors.As(err, &le) {
			return
		}
		if (err == nil) != json.Valid(b) {
			t.Fatalf("ScanJSON(%q) = %v, json.Valid = %v", b, err, json.Valid(b))
		}
	})
}

// hostileBodies are the shapes of issue 23's "memory from hostile JSON":
// 30 MB of nested arrays to /v1/responses (1.2 GB and 8 s of CPU before
// its 400), a million messages translated to Anthropic (1.2 GB), a
// million Responses input items (1.2 GB).
func hostileBodies() []struct {
	name  string
	op    Operation
	body  []byte
	limit string
} {
	return []struct {
		name  string
		op    Operation
		body  []byte
		limit string
	}{
		{"30 MB of nested arrays", Responses, []byte(`{"model":"m","input":` + strings.Repeat("[", 15<<20) + strings.Repeat("]", 15<<20) + `}`), "nesting depth"},
		{"a million messages", ChatCompletions, jsonList("messages", `{"role":"user","content":"hi"}`, 1_000_000, ""), "messages"},
		{"a million input items", Responses, jsonList("input", `{"role":"user","content":"hi"}`, 1_000_000, ""), "input items"},
	}
}

// TestNewRequestRefusesHostileJSONBeforeDecoding: the bodies of issue
// 23's memory attack are refused with a *JSONLimitError by NewRequest,
// which scans them without building anything: it allocates a small
// fraction of the body (it allocated 41 times the nested arrays' body
// before; the translators 43 to 88 times the others').
func TestNewRequestRefusesHostileJSONBeforeDecoding(t *testing.T) {
	for _, tc := range hostileBodies() {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			runtime.GC()
			got := allocated(func() { _, err = NewRequest(tc.op, tc.body, nil) })
			var le *JSONLimitError
			if !errors.As(err, &le) || le.Limit != tc.limit {
				t.Fatalf("NewRequest: %v, want a JSONLimitError on %s", err, tc.limit)
			}
			fmt.Printf("%s: body %.1f MB, NewRequest allocated %d bytes before its refusal: %v\n", tc.name, float64(len(tc.body))/1e6, got, err)
			if got > uint64(len(tc.body))/100 {
				t.Fatalf("NewRequest allocated %d bytes to refuse a body of %d", got, len(tc.body))
			}
		})
	}
}

// TestUntagIDsNestedBracketsCostNoMemory: the id scan of a pinned call's
// body kept a string for every open array: 30 MB of nested arrays cost
// 1.2 GB. It now tracks MaxJSONDepth levels and counts the rest.
func TestUntagIDsNestedBracketsCostNoMemory(t *testing.T) {
	deep := strings.Repeat("[", 15<<20) + `{"id":"` + TagID("resp_x", "b1") + `"}` + strings.Repeat("]", 15<<20)
	body := []byte(`{"previous_response_id":"` + TagID("resp_y", "b1") + `","input":` + deep + `}`)
	runtime.GC()
	var out []byte
	var owner string
	got := allocated(func() { out, owner, _ = UntagIDs(body) })
	fmt.Printf("UntagIDs of %.1f MB of nested arrays allocated %d bytes\n", float64(len(body))/1e6, got)
	if got > 3*uint64(len(body)) {
		t.Fatalf("UntagIDs allocated %d bytes for a body of %d", got, len(body))
	}
	if owner != "b1" || !strings.Contains(string(out), `"previous_response_id":"resp_y"`) || !strings.Contains(string(out), `{"id":"resp_x"}`) {
		t.Fatalf("owner %q, ids not untagged at every depth", owner)
	}
}
