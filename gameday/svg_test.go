package gameday

import (
	"encoding/xml"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// node is a parsed XML element, for asserting on SVG structure.
type node struct {
	name     string
	attr     map[string]string
	children []*node
	text     string // character data directly inside, concatenated
}

// parseXML parses s as a single well-formed XML element.
func parseXML(t *testing.T, s string) *node {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	d.Strict = true
	root := &node{}
	stack := []*node{root}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, s)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &node{name: tok.Name.Local, attr: map[string]string{}}
			for _, a := range tok.Attr {
				n.attr[a.Name.Local] = a.Value
			}
			top := stack[len(stack)-1]
			top.children = append(top.children, n)
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			stack[len(stack)-1].text += string(tok)
		}
	}
	if len(root.children) != 1 {
		t.Fatalf("want one root element, got %d", len(root.children))
	}
	return root.children[0]
}

// find returns the elements under n (n included) for which match is true,
// in document order.
func (n *node) find(match func(*node) bool) []*node {
	var out []*node
	if match(n) {
		out = append(out, n)
	}
	for _, c := range n.children {
		out = append(out, c.find(match)...)
	}
	return out
}

// hasClass reports whether n's class attribute holds every one of classes.
func (n *node) hasClass(classes ...string) bool {
	have := strings.Fields(n.attr["class"])
	for _, c := range classes {
		if !slices.Contains(have, c) {
			return false
		}
	}
	return true
}

func byClass(classes ...string) func(*node) bool {
	return func(n *node) bool { return n.hasClass(classes...) }
}

// allText is the character data of n and its descendants.
func (n *node) allText() string {
	s := n.text
	for _, c := range n.children {
		s += " " + c.allText()
	}
	return s
}

func TestTicks(t *testing.T) {
	labels := func(ts []tick) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.label)
		}
		return out
	}
	if got, want := labels(linearTicks(0, 10.23, 10, trimFloat)), []string{"0", "2", "4", "6", "8", "10"}; !slices.Equal(got, want) {
		t.Errorf("linearTicks(0, 10.23) = %v, want %v", got, want)
	}
	if got, want := labels(linearTicks(0, 0.7, 7, trimFloat)), []string{"0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7"}; !slices.Equal(got, want) {
		t.Errorf("linearTicks(0, 0.7) = %v, want %v", got, want)
	}
	if got, want := labels(logTicks(0.1, 100, formatMillis)), []string{"0.1 ms", "0.2 ms", "0.5 ms", "1 ms", "2 ms", "5 ms", "10 ms", "20 ms", "50 ms", "100 ms"}; !slices.Equal(got, want) {
		t.Errorf("logTicks(0.1, 100) = %v, want %v", got, want)
	}
	if got, want := labels(logTicks(1, 100000, formatMillis)), []string{"1 ms", "10 ms", "100 ms", "1 s", "10 s", "100 s"}; !slices.Equal(got, want) {
		t.Errorf("logTicks(1, 1e5) = %v, want %v", got, want)
	}
}

func TestSVGPlotEscapes(t *testing.T) {
	p := newSVGPlot(100, 50, margins{}, `a"b`, "<&>")
	p.text(1, 2, "x<y & \"z\"\x01", "data-x", `'"<`)
	n := parseXML(t, string(p.html()))
	if n.attr["aria-label"] != "<&>" || n.attr["class"] != `a"b` {
		t.Errorf("attributes = %v", n.attr)
	}
	if txt := n.children[0]; txt.text != `x<y & "z"` || txt.attr["data-x"] != `'"<` {
		t.Errorf("text = %q, attrs %v", txt.text, txt.attr)
	}
}
