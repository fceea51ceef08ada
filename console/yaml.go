package console

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/switchover-gw/switchover/config"
)

// RedactedYAML is cfg as YAML for people: the fields that are set (zero
// values left out), durations and budgets as written ("30s",
// "50/month"), and every config.Secret as [redacted].
func RedactedYAML(cfg *config.Config) string {
	if cfg == nil {
		return ""
	}
	n := yamlNode(reflect.ValueOf(cfg))
	if n == nil {
		return "{}\n"
	}
	b, err := yaml.Marshal(n)
	if err != nil {
		return "# the configuration could not be shown: " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n"
	}
	return string(b)
}

var (
	secretType   = reflect.TypeOf(config.Secret(""))
	stringerType = reflect.TypeOf((*fmt.Stringer)(nil)).Elem()
	configPkg    = secretType.PkgPath()
)

// yamlNode is v as a YAML node, nil when v is zero.
func yamlNode(v reflect.Value) *yaml.Node {
	scalar := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }
	if !v.IsValid() {
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		e := v.Elem()
		if e.Kind() == reflect.Bool {
			return scalar(fmt.Sprint(e.Bool())) // a *bool set to false is a choice
		}
		return yamlNode(e)
	}
	if v.IsZero() {
		return nil
	}
	t := v.Type()
	switch {
	case t == secretType:
		return scalar("[redacted]")
	case t.PkgPath() == configPkg && t.Implements(stringerType):
		return scalar(v.Interface().(fmt.Stringer).String())
	}
	switch v.Kind() {
	case reflect.Struct:
		m := &yaml.Node{Kind: yaml.MappingNode}
		addStruct(m, v)
		if len(m.Content) == 0 {
			return nil
		}
		return m
	case reflect.Slice, reflect.Array:
		s := &yaml.Node{Kind: yaml.SequenceNode, Style: flowIfScalars(v)}
		for i := range v.Len() {
			n := yamlNode(v.Index(i))
			if n == nil {
				n = scalar("")
			}
			s.Content = append(s.Content, n)
		}
		return s
	case reflect.Map:
		m := &yaml.Node{Kind: yaml.MappingNode}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		for _, k := range keys {
			if n := yamlNode(v.MapIndex(k)); n != nil {
				m.Content = append(m.Content, scalar(fmt.Sprint(k)), n)
			}
		}
		return m
	}
	n := &yaml.Node{}
	if err := n.Encode(v.Interface()); err != nil {
		return scalar(fmt.Sprint(v.Interface()))
	}
	return n
}

// addStruct adds v's fields to mapping m, by their yaml names; inline
// fields' fields in place.
func addStruct(m *yaml.Node, v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			fv := v.Field(i)
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			if fv.Kind() == reflect.Struct {
				addStruct(m, fv)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if n := yamlNode(v.Field(i)); n != nil {
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name}, n)
		}
	}
}

// flowIfScalars writes a list of scalars on one line.
func flowIfScalars(v reflect.Value) yaml.Style {
	k := v.Type().Elem().Kind()
	if k == reflect.Struct || k == reflect.Map || k == reflect.Slice || k == reflect.Pointer || k == reflect.Interface {
		return 0
	}
	return yaml.FlowStyle
}
