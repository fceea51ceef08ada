package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// LoadConfig reads a YAML config file. Unknown fields are rejected, and
// every error names the file and line, e.g.
// "sim.yaml: line 12: deployments[1].quota.rpm: must not be negative".
// Validation errors are *FieldError values (with Line set) joined together.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	return parseConfig(path, b)
}

func parseConfig(name string, b []byte) (Config, error) {
	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		if errors.Is(err, io.EOF) {
			return Config{}, fmt.Errorf("%s: empty config", name)
		}
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	err := cfg.Validate()
	if err == nil {
		return cfg, nil
	}
	var root yaml.Node
	_ = yaml.Unmarshal(b, &root)
	var out []error
	for _, e := range unjoin(err) {
		var fe *FieldError
		if errors.As(e, &fe) {
			fe.Line = lineOf(&root, fe.Path)
		}
		out = append(out, fmt.Errorf("%s: %w", name, e))
	}
	return Config{}, errors.Join(out...)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

var segRE = regexp.MustCompile(`^([a-z_]+)(?:\[(\d+)\])?$`)

// lineOf finds the line of the YAML node at a path like
// "deployments[1].quota.rpm", or of its nearest existing parent.
func lineOf(root *yaml.Node, path string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, seg := range strings.Split(path, ".") {
		m := segRE.FindStringSubmatch(seg)
		if m == nil || n.Kind != yaml.MappingNode {
			return line
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == m[1] {
				next = n.Content[i+1]
				line = n.Content[i].Line
				break
			}
		}
		if next == nil {
			return line
		}
		n = next
		if m[2] != "" {
			idx, _ := strconv.Atoi(m[2])
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		}
	}
	return line
}
