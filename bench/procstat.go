package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat: USER_HZ,
// 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// procCPU is the CPU time (user + system) a process has used, all its
// threads together, read from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may hold spaces and parentheses, so fields are counted after its last
// ")".
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("bench: /proc stat without a command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so utime (14) is f[11] and stime (15) f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("bench: /proc stat has %d fields after the name, want 13 or more", len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("bench: /proc stat: %w", err)
	}
	return time.Duration(ut+st) * clockTick, nil
}

// parseStatPPid reads the parent pid (field 4) of a /proc/<pid>/stat line.
func parseStatPPid(b []byte) (int, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("bench: /proc stat without a command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, errors.New("bench: /proc stat too short")
	}
	return strconv.Atoi(f[1])
}

// cpuOf sums procCPU over pids.
func cpuOf(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, p := range pids {
		c, err := procCPU(p)
		if err != nil {
			return 0, err
		}
		sum += c
	}
	return sum, nil
}

// rssOf sums the resident memory (VmRSS) of pids, in bytes.
func rssOf(pids []int) (int64, error) { return statusOf(pids, "VmRSS:") }

// anonOf sums the anonymous resident memory (RssAnon: heap, stacks and
// the runtime's own, without the binary's pages) of pids, in bytes.
func anonOf(pids []int) (int64, error) { return statusOf(pids, "RssAnon:") }

// statusOf sums the field (a "kB" line of /proc/<pid>/status) of pids,
// in bytes.
func statusOf(pids []int, field string) (int64, error) {
	var sum int64
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		if err != nil {
			return 0, err
		}
		kb, err := parseStatusKB(b, field)
		if err != nil {
			return 0, err
		}
		sum += kb * 1024
	}
	return sum, nil
}

// parseVmRSS reads the VmRSS line of /proc/<pid>/status, in KiB.
func parseVmRSS(b []byte) (int64, error) { return parseStatusKB(b, "VmRSS:") }

// parseStatusKB reads the line of /proc/<pid>/status that starts with
// field, in KiB.
func parseStatusKB(b []byte, field string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), field)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			break
		}
		return strconv.ParseInt(f[0], 10, 64)
	}
	return 0, fmt.Errorf("bench: no %s in /proc status", strings.TrimSuffix(field, ":"))
}

// childrenOf lists the processes whose parent is pid (nginx's workers).
func childrenOf(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var kids []int
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		if pp, err := parseStatPPid(b); err == nil && pp == pid {
			if k, err := strconv.Atoi(filepath.Base(filepath.Dir(s))); err == nil {
				kids = append(kids, k)
			}
		}
	}
	return kids
}
