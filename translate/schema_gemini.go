package translate

import (
	"encoding/json"
	"strings"
)

// Gemini's Schema object (function parameters, responseSchema) is a subset of
// OpenAPI 3.0, not JSON Schema. geminiSchema converts what maps and refuses
// what does not, so that a constraint the caller relies on is never dropped:
//
//   - kept as is: description, title, format, pattern, nullable, default,
//     example, required, propertyOrdering, minimum, maximum, minItems,
//     maxItems, minLength, maxLength, minProperties, maxProperties;
//   - converted: type (lower case names to Gemini's upper case; a list with
//     "null" becomes nullable), enum and const of strings (null in an enum
//     becomes nullable), properties, items, anyOf (a {"type":"null"} branch
//     becomes nullable), local $ref to #/$defs or #/definitions (inlined;
//     a recursive reference is refused);
//   - dropped because they do not constrain the output: $schema, $id,
//     $comment, $defs and definitions (after inlining), examples,
//     deprecated, readOnly, writeOnly, and additionalProperties: false
//     (Gemini only ever produces the declared properties);
//   - refused (UnsupportedError): every other keyword, e.g. oneOf, allOf,
//     not, if/then/else, additionalProperties other than false,
//     patternProperties, prefixItems, uniqueItems, multipleOf,
//     exclusiveMinimum, enum of non-strings, boolean schemas.
//
// With ordering set (responseSchema), every object also gets
// propertyOrdering in the order the caller declared its properties, since
// Gemini otherwise orders the output's keys alphabetically.

type schemaConv struct {
	root     *object
	ordering bool
	refs     []string // $refs being expanded, to refuse recursion
	budget   int      // nodes left, bounding $ref expansion
}

const schemaMaxNodes = 10000

// geminiSchema converts the JSON Schema raw; where names its place in the
// request for error messages.
func geminiSchema(raw json.RawMessage, where string, ordering bool) (map[string]any, error) {
	v, err := decodeOrdered(raw)
	if err != nil {
		return nil, errBadBody("openai request: "+where, err)
	}
	root, _ := v.(*object)
	c := &schemaConv{root: root, ordering: ordering, budget: schemaMaxNodes}
	return c.conv(v, where)
}

var geminiTypes = map[string]string{
	"string": "STRING", "number": "NUMBER", "integer": "INTEGER", "boolean": "BOOLEAN",
	"array": "ARRAY", "object": "OBJECT", "null": "NULL",
}

// conv converts the schema v found at at. Each keyword is converted on its
// own, in the caller's order; then what they imply together is applied
// (enumType, collapseAnyOf) and nullable set.
func (c *schemaConv) conv(v any, at string) (map[string]any, error) {
	c.budget--
	if c.budget < 0 {
		return nil, unsupported(Gemini, "a JSON Schema this large after $ref expansion (at %s)", at)
	}
	o, ok := v.(*object)
	if !ok {
		return nil, unsupported(Gemini, "a JSON Schema that is not an object (at %s)", at)
	}
	if ref, ok := o.get("$ref"); ok {
		return c.ref(o, ref, at)
	}
	out := map[string]any{}
	nullable := false
	for _, k := range o.keys {
		null, err := c.keyword(out, o, k, at)
		if err != nil {
			return nil, err
		}
		nullable = nullable || null
	}
	if err := enumType(out, at); err != nil {
		return nil, err
	}
	if collapseAnyOf(out) {
		nullable = true
	}
	if nullable && out["type"] != "NULL" {
		out["nullable"] = true
	}
	return out, nil
}

// keyword converts keyword k of the schema o into out, and reports
// whether it makes the schema nullable. Keywords kept as they are go to
// keepKeyword, which refuses the unknown ones.
func (c *schemaConv) keyword(out map[string]any, o *object, k, at string) (bool, error) {
	val := o.vals[k]
	switch k {
	case "type":
		t, null, err := geminiType(val, at)
		if err != nil {
			return false, err
		}
		if t != "" {
			out["type"] = t
		}
		return null, nil
	case "nullable":
		b, ok := val.(bool)
		if !ok {
			return false, errBadBody("openai request", schemaErr(at, k, "a boolean"))
		}
		return b, nil
	case "enum", "const":
		return geminiEnum(out, k, val, at)
	case "properties":
		return false, c.properties(out, o, val, at)
	case "items":
		s, err := c.conv(val, at+".items")
		if err != nil {
			return false, err
		}
		out["items"] = s
	case "anyOf":
		return c.anyOf(out, val, at)
	case "additionalProperties":
		if b, ok := val.(bool); !ok || b {
			return false, unsupported(Gemini, "JSON Schema additionalProperties other than false (at %s)", at)
		}
	case "$schema", "$id", "$comment", "$defs", "definitions", "examples", "deprecated", "readOnly", "writeOnly":
		// annotations and definitions: nothing to constrain
	default:
		return false, keepKeyword(out, k, val, at)
	}
	return false, nil
}

// keepKeyword copies into out a keyword Gemini takes as it is, once its
// value has the right type; any other keyword is refused.
func keepKeyword(out map[string]any, k string, val any, at string) error {
	switch k {
	case "description", "title", "format", "pattern":
		return keepAs[string](out, k, val, at, "a string")
	case "default", "example":
		out[k] = plain(val)
	case "minimum", "maximum", "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties":
		return keepAs[json.Number](out, k, val, at, "a number")
	case "required", "propertyOrdering":
		list, ok := stringList(val)
		if !ok {
			return errBadBody("openai request", schemaErr(at, k, "a list of strings"))
		}
		out[k] = list
	default:
		return unsupported(Gemini, "JSON Schema keyword %q (at %s)", k, at)
	}
	return nil
}

// keepAs sets out[k] to val if it is a T, and otherwise says that k must
// be want.
func keepAs[T any](out map[string]any, k string, val any, at, want string) error {
	v, ok := val.(T)
	if !ok {
		return errBadBody("openai request", schemaErr(at, k, want))
	}
	out[k] = v
	return nil
}

// geminiEnum converts an enum (a list) or a const (one value) of strings
// into out's enum; a null among them makes the schema nullable.
func geminiEnum(out map[string]any, k string, val any, at string) (null bool, err error) {
	values := []any{val}
	if k == "enum" {
		var ok bool
		if values, ok = val.([]any); !ok {
			return false, errBadBody("openai request", schemaErr(at, k, "a list"))
		}
	}
	var strs []string
	for _, e := range values {
		switch e := e.(type) {
		case string:
			strs = append(strs, e)
		case nil:
			null = true
		default:
			return false, unsupported(Gemini, "%s with a value that is not a string (at %s)", k, at)
		}
	}
	out["enum"] = strs
	return null, nil
}

// properties converts the properties of the schema o, and with ordering
// gives them the caller's order unless o gives its own.
func (c *schemaConv) properties(out map[string]any, o *object, val any, at string) error {
	props, ok := val.(*object)
	if !ok {
		return errBadBody("openai request", schemaErr(at, "properties", "an object"))
	}
	m := map[string]any{}
	for _, name := range props.keys {
		s, err := c.conv(props.vals[name], at+".properties."+name)
		if err != nil {
			return err
		}
		m[name] = s
	}
	out["properties"] = m
	if _, given := o.get("propertyOrdering"); c.ordering && !given && len(props.keys) > 1 {
		out["propertyOrdering"] = props.keys
	}
	return nil
}

// anyOf converts the branches of an anyOf into out; a {"type":"null"}
// branch is left out and makes the schema nullable.
func (c *schemaConv) anyOf(out map[string]any, val any, at string) (null bool, err error) {
	list, ok := val.([]any)
	if !ok || len(list) == 0 {
		return false, errBadBody("openai request", schemaErr(at, "anyOf", "a non-empty list"))
	}
	var branches []map[string]any
	for i, b := range list {
		s, err := c.conv(b, at+".anyOf["+itoa(i)+"]")
		if err != nil {
			return false, err
		}
		if len(s) == 1 && s["type"] == "NULL" {
			null = true
			continue
		}
		branches = append(branches, s)
	}
	out["anyOf"] = branches
	return null, nil
}

// enumType makes an enum (or const) without a type a string enum, and
// refuses one of another type.
func enumType(out map[string]any, at string) error {
	if _, ok := out["enum"]; !ok {
		return nil
	}
	if t, typed := out["type"]; typed && t != "STRING" {
		return unsupported(Gemini, "enum of type %s (at %s)", strings.ToLower(t.(string)), at)
	}
	out["type"] = "STRING"
	return nil
}

// collapseAnyOf rewrites out's converted anyOf: no branch left means the
// null type, a single branch (Optional[X]) collapses into the schema,
// several stay. It reports whether the collapsed branch was nullable.
func collapseAnyOf(out map[string]any) (nullable bool) {
	branches, ok := out["anyOf"].([]map[string]any)
	if !ok {
		return false
	}
	switch {
	case len(branches) == 0:
		delete(out, "anyOf")
		out["type"] = "NULL"
	case len(branches) == 1:
		delete(out, "anyOf")
		for k, v := range branches[0] {
			if _, own := out[k]; !own {
				out[k] = v
			}
		}
		if b, ok := branches[0]["nullable"].(bool); ok && b {
			return true
		}
	default:
		anyOf := make([]any, len(branches))
		for i, b := range branches {
			anyOf[i] = b
		}
		out["anyOf"] = anyOf
	}
	return false
}

// ref inlines a local reference. Besides $ref only annotations and
// description/title (which override the target's) may be present.
func (c *schemaConv) ref(o *object, ref any, at string) (map[string]any, error) {
	name, ok := ref.(string)
	if !ok {
		return nil, errBadBody("openai request", schemaErr(at, "$ref", "a string"))
	}
	var target any
	for _, section := range []string{"$defs", "definitions"} {
		key, found := strings.CutPrefix(name, "#/"+section+"/")
		if !found || c.root == nil {
			continue
		}
		if defs, ok := c.root.vals[section].(*object); ok {
			target = defs.vals[key]
		}
	}
	if target == nil {
		return nil, unsupported(Gemini, "JSON Schema $ref %q (at %s)", name, at)
	}
	for _, r := range c.refs {
		if r == name {
			return nil, unsupported(Gemini, "recursive JSON Schema $ref %q (at %s)", name, at)
		}
	}
	c.refs = append(c.refs, name)
	out, err := c.conv(target, at)
	c.refs = c.refs[:len(c.refs)-1]
	if err != nil {
		return nil, err
	}
	for _, k := range o.keys {
		switch k {
		case "$ref", "$schema", "$id", "$comment", "$defs", "definitions", "examples", "deprecated", "readOnly", "writeOnly":
		case "description", "title":
			if s, ok := o.vals[k].(string); ok {
				out[k] = s
			}
		default:
			return nil, unsupported(Gemini, "JSON Schema keyword %q beside $ref (at %s)", k, at)
		}
	}
	return out, nil
}

// geminiType converts a JSON Schema type: a name, or a list of names of which
// "null" makes the schema nullable. A list of several other types is refused.
func geminiType(v any, at string) (t string, nullable bool, err error) {
	var names []string
	switch v := v.(type) {
	case string:
		names = []string{v}
	case []any:
		var ok bool
		if names, ok = stringList(v); !ok {
			return "", false, errBadBody("openai request", schemaErr(at, "type", "a string or a list of strings"))
		}
	default:
		return "", false, errBadBody("openai request", schemaErr(at, "type", "a string or a list of strings"))
	}
	for _, n := range names {
		g, ok := geminiTypes[n]
		if !ok {
			return "", false, unsupported(Gemini, "JSON Schema type %q (at %s)", n, at)
		}
		if g == "NULL" && len(names) > 1 {
			nullable = true
			continue
		}
		if t != "" {
			return "", false, unsupported(Gemini, "a JSON Schema type list of several types (at %s)", at)
		}
		t = g
	}
	return t, nullable, nil
}

func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// plain turns decodeOrdered values back into plain maps for marshaling.
func plain(v any) any {
	switch v := v.(type) {
	case *object:
		m := make(map[string]any, len(v.keys))
		for _, k := range v.keys {
			m[k] = plain(v.vals[k])
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = plain(e)
		}
		return out
	}
	return v
}

type schemaError struct{ at, key, want string }

func (e *schemaError) Error() string {
	return "JSON Schema " + e.key + " at " + e.at + " must be " + e.want
}

func schemaErr(at, key, want string) error { return &schemaError{at, key, want} }
