package bench

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// Machine describes where a run ran.
type Machine struct {
	Cores    int    `json:"cores"`
	CPU      string `json:"cpu,omitempty"`
	MemoryMi int64  `json:"memory_mib"`
	Kernel   string `json:"kernel"`
	Go       string `json:"go"`
	Nginx    string `json:"nginx,omitempty"`
	Wrk      string `json:"wrk,omitempty"`
	Strace   string `json:"strace,omitempty"`
	// LoadAvg is /proc/loadavg's 1-minute figure at the start: above
	// zero, something else was running.
	LoadAvg string `json:"loadavg,omitempty"`
	// Env are the GOMAXPROCS, GOGC, GOMEMLIMIT and GODEBUG set for the run.
	Env []string `json:"env,omitempty"`
}

func machine(nginx, wrk, strace string) Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					kb, _ := strconv.ParseInt(f[0], 10, 64)
					m.MemoryMi = kb / 1024
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			m.LoadAvg = f[0]
		}
	}
	if nginx != "" {
		m.Nginx = firstLine(nginx, "-v")
	}
	if wrk != "" {
		m.Wrk = firstLine(wrk, "-v")
	}
	if strace != "" {
		m.Strace = firstLine(strace, "-V")
	}
	for _, k := range []string{"GOMAXPROCS", "GOGC", "GOMEMLIMIT", "GODEBUG"} {
		if v, ok := os.LookupEnv(k); ok {
			m.Env = append(m.Env, k+"="+v)
		}
	}
	return m
}

// firstLine is the first line a tool prints when asked its version (on
// stdout or stderr; wrk exits 1 for -v).
func firstLine(tool, flag string) string {
	out, _ := exec.Command(tool, flag).CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	line = strings.TrimPrefix(line, "nginx version: ")   // nginx/1.22.1
	line, _, _ = strings.Cut(line, " Copyright")         // wrk debian/4.1.0-3+b2 [epoll]
	line = strings.Replace(line, " -- version ", " ", 1) // strace 6.1
	return strings.TrimSpace(line)
}
