package deploy

// A checker for the PromQL in alerts.yml and the dashboard: a lexer and a
// recursive-descent parser for PromQL (Grafana's $variables allowed) that
// works out, for every sub-expression, its type and the label names its
// series carry. That is enough to check, without Prometheus's own parser
// (not a dependency of this module), that
//
//   - every metric is one the gateway exports (or a recording rule defined
//     before use), histogram suffixes only on histograms;
//   - every label in a matcher belongs to its metric, and label values the
//     gateway enumerates (code, state, result) are ones it produces;
//   - every label in by, without, on, ignoring, group_left and group_right
//     exists where it is used, and one-to-one matches have the same labels
//     on both sides (or they would never match);
//   - functions exist and get the argument types they need (rate of a
//     range, histogram_quantile over buckets that kept le);
//   - brackets balance and no expression is empty;
//
// and to give the labels of the result, against which alert annotations
// and Grafana legends are checked. Keywords are lowercase, as in our files.

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

type tokKind int

const (
	tokEOF tokKind = iota
	tokIdent
	tokNumber
	tokDuration
	tokString
	tokVar // a Grafana variable: $pool, ${pool}, $__rate_interval
	tokPunct
	tokOp
)

type token struct {
	kind tokKind
	text string // a string's value, unquoted
	pos  int
}

var (
	reDuration = regexp.MustCompile(`^([0-9]+(ms|[smhdwy]))+`)
	reNumber   = regexp.MustCompile(`^(0[xX][0-9a-fA-F]+|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)`)
	reIdent    = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*`)
	reVar      = regexp.MustCompile(`^\$(\{[^}]*\}|[a-zA-Z_][a-zA-Z0-9_]*)`)
	// reAnyVar finds Grafana variables anywhere, strings included.
	reAnyVar = regexp.MustCompile(`\$\{([a-zA-Z0-9_]+)(:[^}]*)?\}|\$([a-zA-Z_][a-zA-Z0-9_]*)`)
)

func isIdentChar(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func lex(src string) ([]token, error) {
	var toks []token
	for i := 0; i < len(src); {
		c := src[i]
		rest := src[i:]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			s, n, err := lexString(rest)
			if err != nil {
				return nil, fmt.Errorf("at %d: %v", i, err)
			}
			toks = append(toks, token{tokString, s, i})
			i += n
		case c == '$':
			m := reVar.FindString(rest)
			if m == "" {
				return nil, fmt.Errorf("at %d: stray $", i)
			}
			toks = append(toks, token{tokVar, m, i})
			i += len(m)
		case c >= '0' && c <= '9' || c == '.' && len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9':
			// A number or duration ends where a name could not go on (a
			// subquery's colon ends it too: [30m:1m]).
			glued := func(m string) bool {
				return len(rest) > len(m) && rest[len(m)] != ':' && (isIdentChar(rest[len(m)]) || rest[len(m)] == '.')
			}
			kind, m := tokDuration, reDuration.FindString(rest)
			if m == "" || glued(m) {
				kind, m = tokNumber, reNumber.FindString(rest)
			}
			if glued(m) {
				return nil, fmt.Errorf("at %d: bad number or duration %q", i, rest[:len(m)+1])
			}
			toks = append(toks, token{kind, m, i})
			i += len(m)
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			m := reIdent.FindString(rest)
			toks = append(toks, token{tokIdent, m, i})
			i += len(m)
		default:
			if len(rest) > 1 && slices.Contains([]string{"==", "!=", "<=", ">=", "=~", "!~"}, rest[:2]) {
				toks = append(toks, token{tokOp, rest[:2], i})
				i += 2
			} else if strings.IndexByte("+-*/%^<>=", c) >= 0 {
				toks = append(toks, token{tokOp, rest[:1], i})
				i++
			} else if strings.IndexByte("(){}[],:@", c) >= 0 {
				toks = append(toks, token{tokPunct, rest[:1], i})
				i++
			} else {
				return nil, fmt.Errorf("at %d: unexpected character %q", i, c)
			}
		}
	}
	return append(toks, token{tokEOF, "", len(src)}), nil
}

// lexString reads a quoted string at the start of s and returns its value
// and its length in s.
func lexString(s string) (string, int, error) {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q != '`':
			i++
		case s[i] == q:
			raw := s[:i+1]
			if q == '\'' {
				raw = `"` + strings.ReplaceAll(strings.ReplaceAll(s[1:i], `\'`, `'`), `"`, `\"`) + `"`
			}
			v, err := strconv.Unquote(raw)
			if err != nil {
				return "", 0, fmt.Errorf("bad string %s: %v", s[:i+1], err)
			}
			return v, i + 1, nil
		}
	}
	return "", 0, fmt.Errorf("unterminated string %s", s)
}

// balanced reports unbalanced brackets outside strings.
func balanced(expr string) error {
	var stack []byte
	pairs := map[byte]byte{')': '(', ']': '[', '}': '{'}
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; c {
		case '"', '\'', '`':
			_, n, err := lexString(expr[i:])
			if err != nil {
				return err
			}
			i += n - 1
		case '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case '(', '[', '{':
			stack = append(stack, c)
		case ')', ']', '}':
			if len(stack) == 0 || stack[len(stack)-1] != pairs[c] {
				return fmt.Errorf("unbalanced %q at %d", c, i)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		return fmt.Errorf("unclosed %q", stack[len(stack)-1])
	}
	return nil
}

type vtype int

const (
	vScalar vtype = iota
	vString
	vVector
	vMatrix
)

func (t vtype) String() string {
	return [...]string{"scalar", "string", "instant vector", "range vector"}[t]
}

// labelSet is a set of label names. A nil labelSet means unknown (after an
// error already reported), and checks against it are skipped.
type labelSet map[string]bool

func newLabelSet(names ...string) labelSet {
	ls := labelSet{}
	for _, n := range names {
		ls[n] = true
	}
	return ls
}

func (ls labelSet) String() string {
	names := make([]string, 0, len(ls))
	for n := range ls {
		names = append(names, n)
	}
	sort.Strings(names)
	return "{" + strings.Join(names, ", ") + "}"
}

func (ls labelSet) clone() labelSet {
	if ls == nil {
		return nil
	}
	c := labelSet{}
	for n := range ls {
		c[n] = true
	}
	return c
}

func (ls labelSet) without(names ...string) labelSet {
	c := ls.clone()
	for _, n := range names {
		delete(c, n)
	}
	return c
}

func (ls labelSet) equal(o labelSet) bool {
	if len(ls) != len(o) {
		return false
	}
	for n := range ls {
		if !o[n] {
			return false
		}
	}
	return true
}

type value struct {
	typ      vtype
	labels   labelSet
	selector bool   // a bare metric selector, which a [range] may follow
	buckets  bool   // computed from a classic histogram's _bucket series
	text     string // a string literal's value
}

// env is what expressions are checked against.
type env struct {
	schema *schema
	// recorded holds the recording rules an expression may use, with their
	// labels. Nil means none may be used.
	recorded map[string]labelSet
}

// checked is the outcome of checking one expression.
type checked struct {
	value
	metrics  []string // every metric and recording rule named
	problems []string
}

type syntaxError struct{ msg string }

type parser struct {
	env      *env
	toks     []token
	i        int
	metrics  []string
	problems []string
}

// check parses expr and reports its result type, labels and problems.
func (e *env) check(expr string) (c checked) {
	if strings.TrimSpace(expr) == "" {
		c.problems = []string{"empty expression"}
		return c
	}
	if err := balanced(expr); err != nil {
		c.problems = []string{err.Error()}
		return c
	}
	toks, err := lex(expr)
	if err != nil {
		c.problems = []string{err.Error()}
		return c
	}
	p := &parser{env: e, toks: toks}
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(syntaxError)
			if !ok {
				panic(r)
			}
			c = checked{metrics: p.metrics, problems: append(p.problems, "syntax: "+se.msg)}
		}
	}()
	v := p.parseExpr(1)
	if t := p.peek(); t.kind != tokEOF {
		p.fail("unexpected %q at %d", t.text, t.pos)
	}
	return checked{value: v, metrics: p.metrics, problems: p.problems}
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) isPunct(s string) bool { t := p.peek(); return t.kind == tokPunct && t.text == s }
func (p *parser) isIdent(s string) bool { t := p.peek(); return t.kind == tokIdent && t.text == s }
func (p *parser) isOp(s string) bool    { t := p.peek(); return t.kind == tokOp && t.text == s }

func (p *parser) expect(s string) {
	if t := p.next(); t.kind != tokPunct || t.text != s {
		p.fail("want %q, got %q at %d", s, t.text, t.pos)
	}
}

func (p *parser) fail(format string, args ...any) {
	panic(syntaxError{fmt.Sprintf(format, args...)})
}

func (p *parser) problem(format string, args ...any) {
	p.problems = append(p.problems, fmt.Sprintf(format, args...))
}

var aggregators = map[string]bool{
	"sum": true, "avg": true, "min": true, "max": true, "count": true, "group": true,
	"stddev": true, "stdvar": true, "topk": true, "bottomk": true, "quantile": true,
	"count_values": true, "limitk": true, "limit_ratio": true,
}

var keywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true,
	"group_right": true, "bool": true, "offset": true, "and": true, "or": true,
	"unless": true, "atan2": true,
}

// binaryOp returns the operator at t and its precedence, higher binding
// tighter, as in Prometheus.
func binaryOp(t token) (string, int, bool) {
	switch t.kind {
	case tokIdent:
		switch t.text {
		case "or":
			return t.text, 1, true
		case "and", "unless":
			return t.text, 2, true
		case "atan2":
			return t.text, 5, true
		}
	case tokOp:
		switch t.text {
		case "==", "!=", "<", "<=", ">", ">=":
			return t.text, 3, true
		case "+", "-":
			return t.text, 4, true
		case "*", "/", "%":
			return t.text, 5, true
		case "^":
			return t.text, 6, true
		}
	}
	return "", 0, false
}

type matching struct {
	returnBool bool
	card       string // "", "on" or "ignoring"
	labels     []string
	group      string // "", "group_left" or "group_right"
	include    []string
}

func (p *parser) parseExpr(minPrec int) value {
	lhs := p.parseUnary()
	for {
		op, prec, ok := binaryOp(p.peek())
		if !ok || prec < minPrec {
			return lhs
		}
		p.next()
		var m matching
		if p.isIdent("bool") {
			p.next()
			m.returnBool = true
		}
		if p.isIdent("on") || p.isIdent("ignoring") {
			m.card = p.next().text
			m.labels = p.parseLabelList(m.card)
		}
		if p.isIdent("group_left") || p.isIdent("group_right") {
			m.group = p.next().text
			if p.isPunct("(") {
				m.include = p.parseLabelList(m.group)
			}
		}
		next := prec + 1
		if op == "^" {
			next = prec // right-associative
		}
		rhs := p.parseExpr(next)
		lhs = p.binary(op, m, lhs, rhs)
	}
}

func (p *parser) parseUnary() value {
	if p.isOp("-") || p.isOp("+") {
		p.next()
		v := p.parseExpr(6) // binds looser than ^ only
		if v.typ != vScalar && v.typ != vVector {
			p.problem("unary minus on a %s", v.typ)
		}
		v.selector = false
		return v
	}
	return p.parsePostfix()
}

func (p *parser) duration(what string) {
	if t := p.next(); t.kind != tokDuration && t.kind != tokVar {
		p.fail("want a %s duration, got %q at %d", what, t.text, t.pos)
	}
}

func (p *parser) parsePostfix() value {
	v := p.parsePrimary()
	for {
		switch {
		case p.isPunct("["):
			p.next()
			p.duration("range")
			if p.isPunct(":") {
				p.next()
				if !p.isPunct("]") {
					p.duration("subquery step")
				}
				p.expect("]")
				if v.typ != vVector {
					p.problem("a subquery needs an instant vector, not a %s", v.typ)
				}
			} else {
				p.expect("]")
				if !v.selector {
					p.problem("a [range] follows a metric selector only (use a subquery [range:step] for an expression)")
				}
			}
			v.typ, v.selector = vMatrix, false
		case p.isIdent("offset"):
			p.next()
			if p.isOp("-") {
				p.next()
			}
			p.duration("offset")
		case p.isPunct("@"):
			p.next()
			if t := p.next(); t.kind == tokIdent && (t.text == "start" || t.text == "end") {
				p.expect("(")
				p.expect(")")
			} else if t.kind != tokNumber {
				p.fail("want a time after @, got %q", t.text)
			}
		default:
			return v
		}
	}
}

func (p *parser) parsePrimary() value {
	t := p.next()
	switch t.kind {
	case tokNumber, tokVar:
		return value{typ: vScalar}
	case tokString:
		return value{typ: vString, text: t.text}
	case tokPunct:
		if t.text == "(" {
			v := p.parseExpr(1)
			p.expect(")")
			v.selector = false
			return v
		}
		if t.text == "{" {
			p.fail("a selector without a metric name at %d", t.pos)
		}
	case tokIdent:
		switch lower := strings.ToLower(t.text); {
		case lower == "inf" || lower == "nan":
			return value{typ: vScalar}
		case keywords[t.text]:
			p.fail("unexpected keyword %q at %d", t.text, t.pos)
		case aggregators[t.text]:
			return p.parseAggregation(t.text)
		case p.isPunct("("):
			return p.parseCall(t.text)
		}
		return p.parseSelector(t.text)
	case tokEOF:
		p.fail("unexpected end of expression")
	}
	p.fail("unexpected %q at %d", t.text, t.pos)
	return value{}
}

func (p *parser) parseLabelList(clause string) []string {
	if !p.isPunct("(") {
		p.fail("want ( after %s", clause)
	}
	p.next()
	var names []string
	for !p.isPunct(")") {
		t := p.next()
		if t.kind != tokIdent || strings.Contains(t.text, ":") {
			p.fail("want a label name in %s (...), got %q at %d", clause, t.text, t.pos)
		}
		if slices.Contains(names, t.text) {
			p.problem("%s (...) names %q twice", clause, t.text)
		}
		names = append(names, t.text)
		if p.isPunct(",") {
			p.next()
		} else if !p.isPunct(")") {
			p.fail("want , or ) in %s (...), got %q", clause, p.peek().text)
		}
	}
	p.next()
	return names
}

type matcher struct{ label, op, value string }

func (p *parser) parseSelector(name string) value {
	labels := p.metricLabels(name)
	v := value{typ: vVector, labels: labels, selector: true, buckets: strings.HasSuffix(name, "_bucket")}
	if !p.isPunct("{") {
		return v
	}
	p.next()
	for !p.isPunct("}") {
		lt, op, vt := p.next(), p.next(), p.next()
		if lt.kind != tokIdent || strings.Contains(lt.text, ":") {
			p.fail("want a label name in %s{...}, got %q at %d", name, lt.text, lt.pos)
		}
		if op.kind != tokOp || !slices.Contains([]string{"=", "!=", "=~", "!~"}, op.text) {
			p.fail("want =, !=, =~ or !~ after %s, got %q", lt.text, op.text)
		}
		if vt.kind != tokString {
			p.fail("want a quoted value for %s, got %q", lt.text, vt.text)
		}
		p.checkMatcher(name, labels, matcher{lt.text, op.text, vt.text})
		if p.isPunct(",") {
			p.next()
		} else if !p.isPunct("}") {
			p.fail("want , or } in %s{...}, got %q", name, p.peek().text)
		}
	}
	p.next()
	return v
}

// metricLabels returns the labels of a metric or recording rule, reporting
// one that does not exist.
func (p *parser) metricLabels(name string) labelSet {
	p.metrics = append(p.metrics, name)
	if strings.Contains(name, ":") {
		if p.env.recorded == nil {
			p.problem("%s is a recording rule; this expression must use the gateway's own metrics", name)
			return nil
		}
		ls, ok := p.env.recorded[name]
		if !ok {
			p.problem("recording rule %s is not defined before this rule in its group", name)
			return nil
		}
		return ls.clone()
	}
	if !strings.HasPrefix(name, "switchover_") {
		p.problem("%s is not a switchover metric", name)
		return nil
	}
	ls, ok := p.env.schema.series(name)
	if !ok {
		p.problem("%s is not a metric the gateway exports (metrics.New().Names())", name)
		return nil
	}
	return ls
}

var reLiteralAlternatives = regexp.MustCompile(`^[A-Za-z0-9_.-]+(\|[A-Za-z0-9_.-]+)*$`)

func (p *parser) checkMatcher(metric string, labels labelSet, m matcher) {
	if m.label == "__name__" {
		return
	}
	if labels != nil && !labels[m.label] {
		p.problem("%s has no label %q (it has %s)", metric, m.label, labels)
	}
	hasVar := reAnyVar.MatchString(m.value)
	if m.op == "=~" || m.op == "!~" {
		re := reAnyVar.ReplaceAllString(m.value, ".*")
		if _, err := regexp.Compile("^(?:" + re + ")$"); err != nil {
			p.problem("%s{%s%s%q}: bad regular expression: %v", metric, m.label, m.op, m.value, err)
		}
	}
	known := p.env.schema.knownValues(metric, m.label)
	if known == nil || hasVar {
		return
	}
	var vals []string
	switch {
	case m.op == "=" || m.op == "!=":
		vals = []string{m.value}
	case reLiteralAlternatives.MatchString(m.value):
		vals = strings.Split(m.value, "|")
	}
	for _, v := range vals {
		if v != "" && !slices.Contains(known, v) {
			p.problem("%s{%s%s%q}: the gateway never sets %s to %q (it uses %s)", metric, m.label, m.op, m.value, m.label, v, strings.Join(known, ", "))
		}
	}
}

// parseArgs parses a parenthesised argument list; the ( is next.
func (p *parser) parseArgs() []value {
	p.expect("(")
	var args []value
	for !p.isPunct(")") {
		args = append(args, p.parseExpr(1))
		if p.isPunct(",") {
			p.next()
		} else if !p.isPunct(")") {
			p.fail("want , or ) in an argument list, got %q at %d", p.peek().text, p.peek().pos)
		}
	}
	p.next()
	return args
}

func (p *parser) parseAggregation(op string) value {
	var mode string
	var grouping []string
	if p.isIdent("by") || p.isIdent("without") {
		mode = p.next().text
		grouping = p.parseLabelList(mode)
	}
	if !p.isPunct("(") {
		p.fail("want ( after %s", op)
	}
	args := p.parseArgs()
	if mode == "" && (p.isIdent("by") || p.isIdent("without")) {
		mode = p.next().text
		grouping = p.parseLabelList(mode)
	}
	want := 1
	if slices.Contains([]string{"topk", "bottomk", "quantile", "count_values", "limitk", "limit_ratio"}, op) {
		want = 2
	}
	if len(args) != want {
		p.problem("%s takes %d argument(s), got %d", op, want, len(args))
		return value{typ: vVector}
	}
	if want == 2 {
		paramType := vScalar
		if op == "count_values" {
			paramType = vString
		}
		if args[0].typ != paramType {
			p.problem("%s's parameter must be a %s, not a %s", op, paramType, args[0].typ)
		}
	}
	arg := args[len(args)-1]
	if arg.typ != vVector {
		p.problem("%s needs an instant vector, not a %s", op, arg.typ)
		return value{typ: vVector}
	}
	if arg.labels != nil {
		for _, g := range grouping {
			if !arg.labels[g] {
				p.problem("%s %s (%s): %q is not a label of what it aggregates, which has %s", op, mode, strings.Join(grouping, ", "), g, arg.labels)
			}
		}
	}
	out := value{typ: vVector, buckets: arg.buckets}
	switch {
	case slices.Contains([]string{"topk", "bottomk", "limitk", "limit_ratio"}, op):
		out.labels = arg.labels.clone()
	case op == "count_values":
		out.labels = nil // adds a label named by its parameter: not tracked
	case mode == "by":
		out.labels = newLabelSet(grouping...)
	case mode == "without":
		out.labels = arg.labels.without(grouping...)
	default:
		out.labels = labelSet{}
	}
	return out
}

// signature: parameter types; optional trailing ones; variadic repeats the
// last type.
type signature struct {
	params   []vtype
	optional int
	variadic bool
	// out gives the result from the arguments; nil means an instant vector
	// with the labels of the first vector argument.
	out func(p *parser, args []value) value
}

var functions = func() map[string]signature {
	f := map[string]signature{}
	for _, n := range []string{"rate", "irate", "increase", "delta", "idelta", "deriv", "resets", "changes",
		"avg_over_time", "min_over_time", "max_over_time", "sum_over_time", "count_over_time",
		"last_over_time", "stddev_over_time", "stdvar_over_time", "present_over_time", "mad_over_time"} {
		f[n] = signature{params: []vtype{vMatrix}}
	}
	for _, n := range []string{"abs", "ceil", "floor", "exp", "ln", "log2", "log10", "sqrt", "sgn",
		"timestamp", "sort", "sort_desc", "histogram_count", "histogram_sum", "histogram_avg",
		"histogram_stddev", "histogram_stdvar", "deg", "rad", "sin", "cos", "tan", "asin", "acos", "atan",
		"sinh", "cosh", "tanh", "asinh", "acosh", "atanh"} {
		f[n] = signature{params: []vtype{vVector}}
	}
	for _, n := range []string{"minute", "hour", "day_of_week", "day_of_month", "day_of_year", "days_in_month", "month", "year"} {
		f[n] = signature{params: []vtype{vVector}, optional: 1}
	}
	empty := func(*parser, []value) value { return value{typ: vVector, labels: labelSet{}} }
	f["quantile_over_time"] = signature{params: []vtype{vScalar, vMatrix}}
	f["predict_linear"] = signature{params: []vtype{vMatrix, vScalar}}
	f["holt_winters"] = signature{params: []vtype{vMatrix, vScalar, vScalar}}
	f["double_exponential_smoothing"] = f["holt_winters"]
	f["round"] = signature{params: []vtype{vVector, vScalar}, optional: 1}
	f["clamp"] = signature{params: []vtype{vVector, vScalar, vScalar}}
	f["clamp_min"] = signature{params: []vtype{vVector, vScalar}}
	f["clamp_max"] = signature{params: []vtype{vVector, vScalar}}
	f["vector"] = signature{params: []vtype{vScalar}, out: empty}
	f["absent"] = signature{params: []vtype{vVector}, out: empty}
	f["absent_over_time"] = signature{params: []vtype{vMatrix}, out: empty}
	f["scalar"] = signature{params: []vtype{vVector}, out: func(*parser, []value) value { return value{typ: vScalar} }}
	f["time"] = signature{out: func(*parser, []value) value { return value{typ: vScalar} }}
	f["histogram_quantile"] = signature{params: []vtype{vScalar, vVector}, out: histogramQuantile}
	f["histogram_fraction"] = signature{params: []vtype{vScalar, vScalar, vVector}, out: histogramQuantile}
	f["label_replace"] = signature{params: []vtype{vVector, vString, vString, vString, vString}, out: labelReplace}
	f["label_join"] = signature{params: []vtype{vVector, vString, vString, vString}, variadic: true, out: labelJoin}
	f["sort_by_label"] = signature{params: []vtype{vVector, vString}, variadic: true}
	f["sort_by_label_desc"] = f["sort_by_label"]
	return f
}()

func (p *parser) parseCall(name string) value {
	args := p.parseArgs()
	sig, ok := functions[name]
	if !ok {
		p.problem("unknown function %s", name)
		return value{typ: vVector}
	}
	n := len(sig.params)
	if len(args) < n-sig.optional || len(args) > n && !sig.variadic {
		p.problem("%s takes %d argument(s), got %d", name, n, len(args))
		return value{typ: vVector}
	}
	for i, a := range args {
		want := sig.params[min(i, n-1)]
		if a.typ != want {
			p.problem("argument %d of %s must be a %s, not a %s", i+1, name, want, a.typ)
			return value{typ: vVector}
		}
	}
	if sig.out != nil {
		return sig.out(p, args)
	}
	for _, a := range args {
		if a.typ == vVector || a.typ == vMatrix {
			return value{typ: vVector, labels: a.labels.clone(), buckets: a.buckets}
		}
	}
	return value{typ: vVector, labels: labelSet{}}
}

func histogramQuantile(p *parser, args []value) value {
	v := args[len(args)-1]
	if v.buckets && v.labels != nil && !v.labels["le"] {
		p.problem("histogram_quantile over classic buckets needs the le label: aggregate with by (..., le)")
	}
	return value{typ: vVector, labels: v.labels.without("le")}
}

func labelReplace(p *parser, args []value) value {
	v, dst, src, re := args[0], args[1].text, args[3].text, args[4].text
	if _, err := regexp.Compile("^(?:" + re + ")$"); err != nil {
		p.problem("label_replace: bad regular expression %q: %v", re, err)
	}
	if v.labels != nil && src != "" && !v.labels[src] {
		p.problem("label_replace: %q is not a label of its argument, which has %s", src, v.labels)
	}
	out := v.labels.clone()
	if out != nil {
		out[dst] = true
	}
	return value{typ: vVector, labels: out}
}

func labelJoin(p *parser, args []value) value {
	v := args[0]
	for _, a := range args[3:] {
		if v.labels != nil && !v.labels[a.text] {
			p.problem("label_join: %q is not a label of its argument, which has %s", a.text, v.labels)
		}
	}
	out := v.labels.clone()
	if out != nil {
		out[args[1].text] = true
	}
	return value{typ: vVector, labels: out}
}

// binary types a binary operation and its result's labels as Prometheus
// computes them (a one-to-one match with on (l) keeps only l; with
// ignoring (l), the left side's labels but l).
func (p *parser) binary(op string, m matching, l, r value) value {
	setOp := op == "and" || op == "or" || op == "unless"
	comparison := slices.Contains([]string{"==", "!=", "<", "<=", ">", ">="}, op)
	if m.returnBool && !comparison {
		p.problem("bool only modifies comparisons, not %s", op)
	}
	for _, v := range []value{l, r} {
		if v.typ == vMatrix || v.typ == vString {
			p.problem("%s cannot take a %s", op, v.typ)
			return value{typ: vVector}
		}
	}
	buckets := l.buckets || r.buckets
	if l.typ == vScalar || r.typ == vScalar {
		if setOp {
			p.problem("%s needs two instant vectors", op)
		}
		if m.card != "" || m.group != "" {
			p.problem("vector matching (on, ignoring, group_left, group_right) needs two instant vectors")
		}
		if l.typ == vScalar && r.typ == vScalar {
			if comparison && !m.returnBool {
				p.problem("a comparison of two scalars needs bool")
			}
			return value{typ: vScalar}
		}
		v := l
		if l.typ == vScalar {
			v = r
		}
		return value{typ: vVector, labels: v.labels.clone(), buckets: buckets}
	}
	known := l.labels != nil && r.labels != nil
	if known {
		for _, n := range m.labels {
			if m.card == "on" && (!l.labels[n] || !r.labels[n]) {
				p.problem("%s on (%s): %q is not a label of both sides (left %s, right %s)", op, strings.Join(m.labels, ", "), n, l.labels, r.labels)
			}
			if m.card == "ignoring" && !l.labels[n] && !r.labels[n] {
				p.problem("%s ignoring (%s): %q is a label of neither side", op, strings.Join(m.labels, ", "), n)
			}
		}
	}
	if m.group != "" && m.card == "" {
		p.problem("%s needs on (...) or ignoring (...) before it", m.group)
	}
	if setOp {
		if m.group != "" {
			p.problem("%s cannot be used with %s", m.group, op)
		}
		if known && m.card == "" && op != "or" && !l.labels.equal(r.labels) {
			p.problem("%s without on (...): the sides have different labels (left %s, right %s), so nothing would match", op, l.labels, r.labels)
		}
		if op != "or" {
			return value{typ: vVector, labels: l.labels.clone(), buckets: buckets}
		}
		if !known {
			return value{typ: vVector, buckets: buckets}
		}
		both := labelSet{}
		for n := range l.labels {
			if r.labels[n] {
				both[n] = true
			}
		}
		return value{typ: vVector, labels: both, buckets: buckets}
	}
	if !known {
		return value{typ: vVector, buckets: buckets}
	}
	switch m.group {
	case "group_left", "group_right":
		many, one := l, r
		if m.group == "group_right" {
			many, one = r, l
		}
		out := many.labels.clone()
		for _, n := range m.include {
			if !one.labels[n] {
				p.problem("%s (%s): %q is not a label of the other side, which has %s", m.group, strings.Join(m.include, ", "), n, one.labels)
			}
			out[n] = true
		}
		return value{typ: vVector, labels: out, buckets: buckets}
	}
	switch m.card {
	case "on":
		return value{typ: vVector, labels: newLabelSet(m.labels...), buckets: buckets}
	case "ignoring":
		ll, rl := l.labels.without(m.labels...), r.labels.without(m.labels...)
		if !ll.equal(rl) {
			p.problem("%s ignoring (%s): the sides still have different labels (left %s, right %s), so nothing would match", op, strings.Join(m.labels, ", "), ll, rl)
		}
		return value{typ: vVector, labels: ll, buckets: buckets}
	}
	if !l.labels.equal(r.labels) {
		p.problem("%s: the sides have different labels (left %s, right %s), so nothing would match; use on (...) or ignoring (...)", op, l.labels, r.labels)
	}
	return value{typ: vVector, labels: l.labels.clone(), buckets: buckets}
}

func TestCheckExpr(t *testing.T) {
	e := &env{schema: exportedSchema(t), recorded: map[string]labelSet{"pool:switchover_failovers:increase5m": newLabelSet("pool")}}
	for _, tc := range []struct {
		name, expr string
		labels     string // the result's labels, when no problem is expected
		problem    string // a substring of the expected problem
	}{
		{name: "rate by pool", expr: `sum by (pool) (rate(switchover_requests_total{code=~"5xx|429"}[5m]))`, labels: "{pool}"},
		{name: "by after the argument", expr: `sum(rate(switchover_requests_total[5m])) by (pool, code)`, labels: "{code, pool}"},
		{name: "without", expr: `sum without (instance, job, code) (switchover_requests_total)`, labels: "{backend, pool}"},
		{name: "selector keeps target labels", expr: `switchover_probe_up == 0`, labels: "{backend, instance, job}"},
		{name: "grafana variables", expr: `sum by (backend) (rate(switchover_requests_total{pool=~"$pool", instance=~"${instance}"}[$__rate_interval]))`, labels: "{backend}"},
		{name: "histogram quantile", expr: `histogram_quantile(0.95, sum by (pool, le) (rate(switchover_request_duration_seconds_bucket[5m])))`, labels: "{pool}"},
		{name: "recording rule", expr: `pool:switchover_failovers:increase5m > 50`, labels: "{pool}"},
		{name: "on keeps only its labels", expr: `switchover_probe_up - on (backend) switchover_backend_drained`, labels: "{backend}"},
		{name: "ignoring", expr: `2 * switchover_breaker_state{state="open"} + ignoring (state) switchover_breaker_state{state="half_open"}`, labels: "{backend, instance, job}"},
		{name: "group_left adds labels", expr: `switchover_pool_active_backend * on (job, instance, backend) group_left (model) switchover_backend_model_info`, labels: "{backend, instance, job, model, pool}"},
		{name: "unless and offset", expr: `switchover_config_reloads_total{result="invalid"} > 0 unless switchover_config_reloads_total{result="invalid"} offset 15m`, labels: "{instance, job, result}"},
		{name: "or vector", expr: `count(switchover_backend_drained == 1) or vector(0)`, labels: "{}"},
		{name: "subquery", expr: `max_over_time(sum by (pool) (rate(switchover_failovers_total[1m]))[30m:1m])`, labels: "{pool}"},
		{name: "precedence", expr: `-switchover_probe_up ^ 2 + 1 > bool 0`, labels: "{backend, instance, job}"},

		{name: "empty", expr: "  \n", problem: "empty expression"},
		{name: "unbalanced parentheses", expr: `sum(rate(switchover_requests_total[5m])`, problem: "unclosed"},
		{name: "unbalanced braces", expr: `switchover_requests_total{code="5xx"]`, problem: "unbalanced"},
		{name: "unknown metric", expr: `rate(switchover_request_total[5m])`, problem: "not a metric the gateway exports"},
		{name: "foreign metric", expr: `up == 0`, problem: "not a switchover metric"},
		{name: "bucket of a counter", expr: `switchover_requests_total_bucket`, problem: "not a metric the gateway exports"},
		{name: "label of another metric", expr: `switchover_failovers_total{backend="weu"}`, problem: `has no label "backend"`},
		{name: "label value never set", expr: `switchover_requests_total{code="500"}`, problem: `never sets code to "500"`},
		{name: "regex alternative never set", expr: `switchover_breaker_state{state=~"open|halfopen"}`, problem: `never sets state to "halfopen"`},
		{name: "bad regex", expr: `switchover_requests_total{pool=~"chat("}`, problem: "bad regular expression"},
		{name: "by a label the argument lost", expr: `sum by (backend) (sum by (pool) (switchover_requests_total))`, problem: `"backend" is not a label`},
		{name: "by a label of no metric", expr: `sum by (region) (rate(switchover_failovers_total[5m]))`, problem: `"region" is not a label`},
		{name: "rate of an instant vector", expr: `rate(switchover_requests_total)`, problem: "must be a range vector"},
		{name: "range of an expression", expr: `rate(sum(switchover_requests_total)[5m])`, problem: "follows a metric selector only"},
		{name: "quantile without le", expr: `histogram_quantile(0.99, sum by (pool) (rate(switchover_request_duration_seconds_bucket[5m])))`, problem: "needs the le label"},
		{name: "unknown function", expr: `rates(switchover_requests_total[5m])`, problem: "unknown function rates"},
		{name: "one-to-one label mismatch", expr: `sum by (pool) (switchover_requests_total) / sum by (backend) (switchover_requests_total)`, problem: "different labels"},
		{name: "and label mismatch", expr: `switchover_probe_up and switchover_requests_total`, problem: "different labels"},
		{name: "on a label of one side", expr: `switchover_probe_up * on (pool) switchover_pool_active_backend`, problem: `"pool" is not a label of both sides`},
		{name: "group_left of a missing label", expr: `switchover_pool_active_backend * on (backend) group_left (region) switchover_backend_model_info`, problem: `"region" is not a label of the other side`},
		{name: "undefined recording rule", expr: `pool:switchover_requests:increase5m > 0`, problem: "not defined before this rule"},
		{name: "legend keyword typo", expr: `sum by pool (switchover_requests_total)`, problem: "syntax"},
		{name: "trailing garbage", expr: `switchover_probe_up 0`, problem: "syntax: unexpected"},
		{name: "bad duration", expr: `rate(switchover_requests_total[5min])`, problem: "bad number or duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.check(tc.expr)
			if tc.problem == "" {
				if len(c.problems) > 0 {
					t.Fatalf("check(%q) problems: %q", tc.expr, c.problems)
				}
				if got := c.labels.String(); got != tc.labels {
					t.Errorf("check(%q) labels = %s, want %s", tc.expr, got, tc.labels)
				}
				return
			}
			if !slices.ContainsFunc(c.problems, func(p string) bool { return strings.Contains(p, tc.problem) }) {
				t.Errorf("check(%q) problems = %q, want one containing %q", tc.expr, c.problems, tc.problem)
			}
		})
	}
}
