package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong with a configuration.
type Problem struct {
	File string
	Line int // 0 when unknown
	Path string
	Msg  string
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path + ": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Problems is the error Load returns for an invalid configuration: every
// problem found, in line order.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Env looks up environment variables. os.LookupEnv is the usual one.
type Env func(string) (string, bool)

// Load reads, expands, decodes, defaults and validates the file at path,
// taking ${VAR} values from the process environment.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, os.LookupEnv)
}

// Parse is Load on bytes already read; file names them in problems.
func Parse(file string, data []byte, env Env) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, Problems{{File: file, Line: syntaxErrLine(data, err), Msg: cleanYAMLErr(err)}}
	}
	cfg := &Config{}
	if root.Kind == 0 { // empty file
		return nil, Problems{{File: file, Msg: "the file is empty"}}
	}
	l := &loader{file: file, env: env, lines: map[string]int{}}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	// Every stage runs, whatever the one before found, so that one run
	// reports every problem: unknown fields and variables, values that do
	// not decode, and the cross-checks of what did. A value that failed
	// to decode is left at its zero, so a later complaint on the same line
	// would only repeat the first one; it is left out.
	l.expand(doc)
	l.walk(doc, reflect.TypeOf(*cfg), "")
	if err := doc.Decode(cfg); err != nil {
		l.decodeErr(err)
	}
	reported := map[int]bool{}
	for _, p := range l.problems {
		reported[p.Line] = true
	}
	for i := range cfg.Backends {
		cfg.Backends[i].line = l.lines[fmt.Sprintf("backends[%d]", i)]
	}
	zeros := cfg.explicitZeros(func(p string) bool { _, ok := l.lines[p]; return ok })
	cfg.applyDefaults()
	for _, p := range append(zeros, cfg.validate()...) {
		p.File = file
		p.Line = l.lineOf(p.Path)
		if p.Line > 0 && reported[p.Line] {
			continue
		}
		l.problems = append(l.problems, p)
	}
	if len(l.problems) > 0 {
		return nil, l.sorted()
	}
	for _, w := range cfg.warn() {
		w.File, w.Line = file, l.lineOf(w.Path)
		cfg.warnings = append(cfg.warnings, w)
	}
	return cfg, nil
}

type loader struct {
	file     string
	env      Env
	lines    map[string]int // path -> line of its value
	problems Problems
}

func (l *loader) add(line int, path, format string, args ...any) {
	l.problems = append(l.problems, Problem{File: l.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (l *loader) sorted() Problems {
	sort.SliceStable(l.problems, func(i, j int) bool { return l.problems[i].Line < l.problems[j].Line })
	return l.problems
}

// lineOf finds the line of path, or of its nearest ancestor that has one.
func (l *loader) lineOf(path string) int {
	for path != "" {
		if n, ok := l.lines[path]; ok {
			return n
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

var envRef = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expand replaces ${VAR} (and ${VAR:-default}) in every scalar value with
// the environment's value; $$ is a literal $. A missing variable without a
// default is a problem that names it. Keys and comments are not expanded.
func (l *loader) expand(n *yaml.Node) {
	switch n.Kind {
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "$") {
			return
		}
		n.Value = envRef.ReplaceAllStringFunc(n.Value, func(m string) string {
			if m == "$$" {
				return "$"
			}
			sub := envRef.FindStringSubmatch(m)
			if v, ok := l.env(sub[1]); ok {
				return v
			}
			if sub[2] != "" {
				return sub[3]
			}
			l.add(n.Line, "", "environment variable %s is not set", sub[1])
			return ""
		})
		if n.Tag == "!!str" || n.Style != 0 {
			return
		}
		// A plain scalar may now be a number or bool: let the decoder
		// decide from the expanded text.
		n.Tag = ""
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			l.expand(n.Content[i])
		}
	default:
		for _, c := range n.Content {
			l.expand(c)
		}
	}
}

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// walk checks node n against type t: every mapping key must be a field,
// and records the line of every path.
func (l *loader) walk(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if path != "" {
		l.lines[path] = n.Line
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
				return
			}
			l.add(n.Line, path, "expected a mapping of fields, got %s", describe(n))
			return
		}
		fields := fieldsOf(t)
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				l.add(k.Line, path, "unknown field %q%s", k.Value, suggest(k.Value, fields))
				continue
			}
			if prev, dup := seen[k.Value]; dup {
				l.add(k.Line, path, "field %q is set twice (first on line %d)", k.Value, prev)
			}
			seen[k.Value] = k.Line
			l.walk(v, ft, join(path, k.Value))
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
				return
			}
			l.add(n.Line, path, "expected a list, got %s", describe(n))
			return
		}
		for i, c := range n.Content {
			l.walk(c, t.Elem(), path+"["+strconv.Itoa(i)+"]")
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			l.add(n.Line, path, "expected a mapping, got %s", describe(n))
		}
	}
}

// fieldTypes caches fieldsOf: a file of 100,000 keys walks the key's
// struct 100,000 times.
var fieldTypes sync.Map // reflect.Type → map[string]reflect.Type

// fieldsOf maps the YAML field names of struct type t to their types.
// The map is shared: read it only.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldTypes.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	f := map[string]reflect.Type{}
	collectFields(t, f)
	fieldTypes.Store(t, f)
	return f
}

func collectFields(t reflect.Type, out map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if opts == "inline" {
			collectFields(f.Type, out)
			continue
		}
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

// suggest names the closest known field for a misspelt one.
func suggest(key string, fields map[string]reflect.Type) string {
	best, bestD := "", 3
	for f := range fields {
		if d := editDistance(key, f); d < bestD || (d == bestD && f < best) {
			best, bestD = f, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

var lineRe = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

func (l *loader) decodeErr(err error) {
	var te *yaml.TypeError
	msgs := []string{err.Error()}
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	for _, m := range msgs {
		line := 0
		if sub := lineRe.FindStringSubmatch(m); sub != nil {
			line, _ = strconv.Atoi(sub[1])
			m = m[len(sub[0]):]
		}
		// Our own unmarshalers prefix the line too.
		if sub := lineRe.FindStringSubmatch(m); sub != nil {
			line, _ = strconv.Atoi(sub[1])
			m = m[len(sub[0]):]
		}
		l.add(line, "", "%s", strings.ReplaceAll(m, "!!", ""))
	}
}

// syntaxErrLine finds the line of a YAML syntax error. The parser reports
// some errors at the start of the enclosing block rather than where the
// text went wrong, so this finds the first line at which a growing prefix
// of the file stops parsing, and falls back to the parser's own line.
func syntaxErrLine(data []byte, err error) int {
	lines := strings.SplitAfter(string(data), "\n")
	var n yaml.Node
	var prefix strings.Builder
	for i, l := range lines {
		prefix.WriteString(l)
		if yaml.Unmarshal([]byte(prefix.String()), &n) != nil {
			return i + 1
		}
	}
	m := regexp.MustCompile(`line (\d+)`).FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	line, _ := strconv.Atoi(m[1])
	return line
}

func cleanYAMLErr(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	return lineRe.ReplaceAllString(s, "")
}
