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
		val := o.vals[k]
		switch k {
		case "type":
			t, null, err := geminiType(val, at)
			if err != nil {
				return nil, err
			}
			if t != "" {
				out["type"] = t
			}
			nullable = nullable || null
		case "description", "title", "format", "pattern":
			s, ok := val.(string)
			if !ok {
				return nil, errBadBody("openai request", schemaErr(at, k, "a string"))
			}
			out[k] = s
		case "nullable":
			b, ok := val.(bool)
			if !ok {
				return nil, errBadBody("openai request", schemaErr(at, k, "a boolean"))
			}
			nullable = nullable || b
		case "default", "example":
			out[k] = plain(val)
		case "minimum", "maximum", "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties":
			n, ok := val.(json.Number)
			if !ok {
				return nil, errBadBody("openai request", schemaErr(at, k, "a number"))
			}
			out[k] = n
		case "required", "propertyOrdering":
			list, ok := stringList(val)
			if !ok {
				return nil, errBadBody("openai request", schemaErr(at, k, "a list of strings"))
			}
			out[k] = list
		case "enum", "const":
			values := []any{val}
			if k == "enum" {
				if values, ok = val.([]any); !ok {
					return nil, errBadBody("openai request", schemaErr(at, k, "a list"))
				}
			}
			var strs []string
			for _, e := range values {
				switch e := e.(type) {
				case string:
					strs = append(strs, e)
				case nil:
					nullable = true
				default:
					return nil, unsupported(Gemini, "%s with a value that is not a string (at %s)", k, at)
				}
			}
			out["enum"] = strs
		case "properties":
			props, ok := val.(*object)
			if !ok {
				return nil, errBadBody("openai request", schemaErr(at, k, "an object"))
			}
			m := map[string]any{}
			for _, name := range props.keys {
				s, err := c.conv(props.vals[name], at+".properties."+name)
				if err != nil {
					return nil, err
				}
				m[name] = s
			}
			out["properties"] = m
			if _, given := o.get("propertyOrdering"); c.ordering && !given && len(props.keys) > 1 {
				out["propertyOrdering"] = props.keys
			}
		case "items":
			s, err := c.conv(val, at+".items")
			if err != nil {
				return nil, err
			}
			out["items"] = s
		case "anyOf":
			list, ok := val.([]any)
			if !ok || len(list) == 0 {
				return nil, errBadBody("openai request", schemaErr(at, k, "a non-empty list"))
			}
			var branches []map[string]any
			for i, b := range list {
				s, err := c.conv(b, at+".anyOf["+itoa(i)+"]")
				if err != nil {
					return nil, err
				}
				if len(s) == 1 && s["type"] == "NULL" {
					nullable = true
					continue
				}
				branches = append(branches, s)
			}
			out["anyOf"] = branches
		case "additionalProperties":
			if b, ok := val.(bool); !ok || b {
				return nil, unsupported(Gemini, "JSON Schema additionalProperties other than false (at %s)", at)
			}
		case "$schema", "$id", "$comment", "$defs", "definitions", "examples", "deprecated", "readOnly", "writeOnly":
			// annotations and definitions: nothing to constrain
		default:
			return nil, unsupported(Gemini, "JSON Schema keyword %q (at %s)", k, at)
		}
	}
	// An enum or const without a type is a string enum.
	if _, ok := out["enum"]; ok {
		if t, typed := out["type"]; typed && t != "STRING" {
			return nil, unsupported(Gemini, "enum of type %s (at %s)", strings.ToLower(t.(string)), at)
		}
		out["type"] = "STRING"
	}
	// anyOf with a single non-null branch (Optional[X]) collapses into it.
	if branches, ok := out["anyOf"].([]map[string]any); ok {
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
				nullable = true
			}
		default:
			anyOf := make([]any, len(branches))
			for i, b := range branches {
				anyOf[i] = b
			}
			out["anyOf"] = anyOf
		}
	}
	if nullable && out["type"] != "NULL" {
		out["nullable"] = true
	}
	return out, nil
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
