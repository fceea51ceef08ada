package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// syscallCount is one row of strace -c's summary.
type syscallCount struct {
	Name   string `json:"name"`
	Calls  int64  `json:"calls"`
	Errors int64  `json:"errors,omitempty"`
}

// parseStraceSummary reads strace -c's table: the rows between its first
// two dashed lines, "% time seconds usecs/call calls [errors] syscall".
// The rows come back with the most calls first; total is their sum.
func parseStraceSummary(out string) (rows []syscallCount, total int64, err error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	dashes := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "------") {
			dashes++
			if dashes == 2 {
				break
			}
			continue
		}
		if dashes != 1 || line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 5 || len(f) > 6 {
			return nil, 0, fmt.Errorf("bench: strace row %q", line)
		}
		c := syscallCount{Name: f[len(f)-1]}
		if c.Calls, err = strconv.ParseInt(f[3], 10, 64); err != nil {
			return nil, 0, fmt.Errorf("bench: strace row %q: %w", line, err)
		}
		if len(f) == 6 {
			c.Errors, _ = strconv.ParseInt(f[4], 10, 64)
		}
		rows = append(rows, c)
		total += c.Calls
	}
	if dashes == 0 {
		return nil, 0, errors.New("bench: no strace -c table")
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Calls > rows[j].Calls })
	return rows, total, nil
}

// tracer is a running strace -f -c attached to some processes.
type tracer struct {
	cmd    *exec.Cmd
	out    string
	stderr *syncBuffer
	done   chan error
}

// startStrace attaches strace to pids and waits until it says it has
// attached to each.
func startStrace(ctx context.Context, strace, dir string, pids []int) (*tracer, error) {
	t := &tracer{out: fmt.Sprintf("%s/strace-%d.txt", dir, pids[0]), stderr: &syncBuffer{}, done: make(chan error, 1)}
	args := []string{"-f", "-c", "-o", t.out}
	for _, p := range pids {
		args = append(args, "-p", strconv.Itoa(p))
	}
	t.cmd = exec.Command(strace, args...)
	t.cmd.Stderr = t.stderr
	t.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { t.done <- t.cmd.Wait() }()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for strings.Count(t.stderr.String(), "attached") < len(pids) {
		select {
		case err := <-t.done:
			return nil, fmt.Errorf("bench: strace ended: %v: %s", err, t.stderr.String())
		case <-ctx.Done():
			t.cmd.Process.Kill()
			return nil, ctx.Err()
		case <-deadline:
			t.cmd.Process.Kill()
			return nil, fmt.Errorf("bench: strace did not attach: %s", t.stderr.String())
		case <-tick.C:
		}
	}
	return t, nil
}

// stop detaches strace (SIGINT makes it print its summary) and parses the
// summary.
func (t *tracer) stop() ([]syscallCount, int64, error) {
	t.cmd.Process.Signal(os.Interrupt)
	select {
	case <-t.done:
	case <-time.After(10 * time.Second):
		t.cmd.Process.Kill()
		<-t.done
	}
	b, err := os.ReadFile(t.out)
	if err != nil {
		return nil, 0, err
	}
	return parseStraceSummary(string(b))
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
