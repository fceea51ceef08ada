// Package memlimit gives the gateway a soft memory limit from its
// container's when the operator has set none: the Go runtime does not
// read a cgroup's memory limit, so without one the collector lets the
// heap grow to twice what is live (GOGC=100) whatever the container
// allows, and a burst of open streams or large bodies ends in an OOM kill
// rather than in more frequent collections.
package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Ratio is the share of the container's memory limit set as the Go
// runtime's soft limit; the rest is for what the runtime does not count
// (the binary's pages, C memory, the kernel's buffers of the process).
const Ratio = 0.9

// Files under the root of the cgroup file system (as a container sees
// its own cgroup) that hold the memory limit: cgroup v2's, then v1's.
var limitFiles = []string{"memory.max", "memory/memory.limit_in_bytes"}

// noLimit is above any real limit: cgroup v1 reports "no limit" as a
// number near 2^63.
const noLimit = 1 << 60

// Container returns the memory limit, in bytes, of the cgroup whose file
// system is mounted at root (/sys/fs/cgroup in production), and false if
// it has none or none can be read.
func Container(root string) (int64, bool) {
	for _, f := range limitFiles {
		raw, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(raw))
		if s == "max" {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= noLimit {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// Set sets the Go runtime's soft memory limit to Ratio of the container's
// (read under root, see Container) unless the environment's GOMEMLIMIT
// is set: the operator's value, which the runtime has applied already
// ("off" for none), wins. It returns the limit it set, and false if it
// set none.
func Set(getenv func(string) string, root string) (int64, bool) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, false
	}
	c, ok := Container(root)
	if !ok {
		return 0, false
	}
	limit := int64(float64(c) * Ratio)
	debug.SetMemoryLimit(limit)
	return limit, true
}
