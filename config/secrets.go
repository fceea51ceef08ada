package config

import "reflect"

// SecretValues returns the values of every Secret of c (backends' keys,
// the file's gateway keys, the admin and viewers' keys, webhook secrets,
// cloud credentials, …) of at least 8 bytes, for the request log to
// redact from kept bodies word for word. Shorter ones are left out: they
// would redact ordinary words.
func (c *Config) SecretValues() []string {
	var out []string
	seen := map[string]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				walk(it.Value())
			}
		case reflect.String:
			if v.Type() == reflect.TypeFor[Secret]() {
				if s := v.String(); len(s) >= 8 && !seen[s] {
					seen[s] = true
					out = append(out, s)
				}
			}
		}
	}
	if c != nil {
		walk(reflect.ValueOf(c).Elem())
	}
	return out
}
