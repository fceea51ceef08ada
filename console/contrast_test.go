package console

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// cssRule returns the declarations of the rule whose selector is sel in
// css, with var(--name) resolved from :root.
func cssRule(t *testing.T, css, sel string) map[string]string {
	t.Helper()
	decls := func(body string) map[string]string {
		out := map[string]string{}
		for d := range strings.SplitSeq(body, ";") {
			if k, v, ok := strings.Cut(d, ":"); ok {
				out[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
		return out
	}
	rule := func(sel string) map[string]string {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sel) + `\s*\{([^}]*)\}`).FindStringSubmatch(css)
		if m == nil {
			t.Fatalf("no rule %q in console.css", sel)
		}
		return decls(m[1])
	}
	root, r := rule(":root"), rule(sel)
	for k, v := range r {
		if name, ok := strings.CutPrefix(v, "var("); ok {
			r[k] = root[strings.TrimSuffix(name, ")")]
		}
	}
	return r
}

// luminance is a #rrggbb colour's relative luminance (WCAG 2).
func luminance(t *testing.T, hex string) float64 {
	t.Helper()
	hex = strings.TrimPrefix(hex, "#")
	if len(hex) == 3 {
		hex = string([]byte{hex[0], hex[0], hex[1], hex[1], hex[2], hex[2]})
	}
	if len(hex) != 6 {
		t.Fatalf("colour %q is not #rrggbb", hex)
	}
	var l [3]float64
	for i := range 3 {
		v, err := strconv.ParseUint(hex[2*i:2*i+2], 16, 8)
		if err != nil {
			t.Fatal(err)
		}
		c := float64(v) / 255
		if c <= 0.03928 {
			l[i] = c / 12.92
		} else {
			l[i] = math.Pow((c+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*l[0] + 0.7152*l[1] + 0.0722*l[2]
}

// contrast is the WCAG contrast ratio of two colours.
func contrast(t *testing.T, a, b string) float64 {
	la, lb := luminance(t, a), luminance(t, b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

// TestConsoleColoursMeetWCAGAA: the overview's live badge (the bug: its
// green on pale green was 4.37:1), its other states, and the alarm and
// stale banners have a contrast of at least 4.5:1 (WCAG 2 AA, normal text).
func TestConsoleColoursMeetWCAGAA(t *testing.T) {
	b, err := staticFS.ReadFile("static/console.css")
	if err != nil {
		t.Fatal(err)
	}
	css := string(b)
	fg := cssRule(t, css, ":root")["--fg"]
	for _, c := range []struct{ sel, inherited string }{
		{".live", fg}, {".live.on", ""}, {".live.off", ""}, {".activeset.alarm", ""}, {".stale", ""},
	} {
		r := cssRule(t, css, c.sel)
		color := r["color"]
		if color == "" {
			color = c.inherited
		}
		if got := contrast(t, color, r["background"]); got < 4.5 {
			t.Errorf("%s: %s on %s is %.2f:1, under 4.5:1", c.sel, color, r["background"], got)
		} else {
			t.Logf("%s: %s on %s is %.2f:1", c.sel, color, r["background"], got)
		}
	}
	if got := contrast(t, "#1a7f37", "#dff3e4"); got >= 4.5 {
		t.Errorf("the old badge's %.2f:1 passes: the test cannot fail", got)
	}
}
