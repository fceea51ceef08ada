package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestContainer(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  int64
		ok    bool
	}{
		{"cgroup v2", map[string]string{"memory.max": "536870912\n"}, 536870912, true},
		{"cgroup v2 without a limit", map[string]string{"memory.max": "max\n"}, 0, false},
		{"cgroup v1", map[string]string{"memory/memory.limit_in_bytes": "1073741824\n"}, 1073741824, true},
		{"cgroup v1 without a limit", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0, false},
		{"v2 first", map[string]string{"memory.max": "1000", "memory/memory.limit_in_bytes": "2000"}, 1000, true},
		{"unreadable value", map[string]string{"memory.max": "lots"}, 0, false},
		{"no cgroup files", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for f, v := range tt.files {
				p := filepath.Join(root, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, ok := Container(root)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Container = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestSet(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte("1000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOMEMLIMIT" {
				return v
			}
			return ""
		}
	}

	// The operator's GOMEMLIMIT (here "off") wins: nothing is set.
	debug.SetMemoryLimit(math.MaxInt64)
	if _, ok := Set(env("off"), root); ok || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("Set with GOMEMLIMIT=off set a limit: %d", debug.SetMemoryLimit(-1))
	}
	// Without one, 90% of the container's.
	got, ok := Set(env(""), root)
	if !ok || got != 900000000 || debug.SetMemoryLimit(-1) != 900000000 {
		t.Errorf("Set = %d, %v, runtime limit %d; want 900000000", got, ok, debug.SetMemoryLimit(-1))
	}
	// No container limit: nothing is set.
	debug.SetMemoryLimit(math.MaxInt64)
	if _, ok := Set(env(""), t.TempDir()); ok || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("Set without a container limit set %d", debug.SetMemoryLimit(-1))
	}
}
