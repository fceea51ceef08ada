package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// DefaultExecTimeout bounds a command run by Exec whose Timeout is zero.
const DefaultExecTimeout = 10 * time.Second

// ErrNoCommand is returned by an Exec with an empty Command. It is
// permanent.
var ErrNoCommand = errors.New("no command")

// Exec runs a command for each notification, without a shell: Command[0]
// is the program (looked up in PATH when it has no slash) and the rest are
// its arguments. The notification is written to its stdin as JSON (see
// Notification.MarshalJSON) and set in its environment:
//
//	SWITCHOVER_KIND    failover, failback, change, flapping, storm or admin
//	SWITCHOVER_POOL    the pool
//	SWITCHOVER_FROM    the previous active set, comma-separated ("" for none)
//	SWITCHOVER_TO      the new active set, comma-separated ("" for none)
//	SWITCHOVER_REASON  why
//	SWITCHOVER_AT      when, RFC 3339 in UTC
//	SWITCHOVER_TEXT    the human message
//
// A non-zero exit is an error (wrapping *exec.ExitError). When the timeout
// or the caller's deadline passes, the command is killed (on Unix with its
// whole process group, so that children it started die too) and Send
// returns an error wrapping the context's error.
//
// An Exec is safe for concurrent use. Do not modify it while in use.
type Exec struct {
	// Label is the sink's Name in logs and metrics. Default "exec:" and
	// the program's base name. The arguments are never logged.
	Label string
	// Command is the program and its arguments. Required.
	Command []string
	// Env is the command's base environment, to which the SWITCHOVER_
	// variables are added. Nil means the gateway's own environment, which
	// includes any provider keys it holds: set Env (for example to
	// []string{"PATH=/usr/bin:/bin"}) to keep them from the command.
	Env []string
	// Dir is the working directory. Empty means the gateway's.
	Dir string
	// Timeout bounds each run. Default DefaultExecTimeout (10s); the
	// Dispatcher's per-attempt deadline applies as well, whichever is
	// sooner.
	Timeout time.Duration
	// Stdout and Stderr receive the command's output. Nil discards it (it
	// is never put in errors, as a script may print its own tokens).
	Stdout, Stderr io.Writer
}

var _ Sink = (*Exec)(nil)

// Name implements Sink.
func (e *Exec) Name() string {
	if e.Label != "" {
		return e.Label
	}
	if len(e.Command) == 0 {
		return "exec"
	}
	return "exec:" + filepath.Base(e.Command[0])
}

// String describes the sink without its arguments or environment.
func (e Exec) String() string { return e.Name() }

// GoString is String, so that %#v prints no argument either.
func (e Exec) GoString() string { return e.String() }

// execEnv lists the SWITCHOVER_ variables for n.
func execEnv(n Notification) []string {
	clean := strings.NewReplacer("\x00", "")
	v := func(k, s string) string { return k + "=" + clean.Replace(s) }
	return []string{
		v("SWITCHOVER_KIND", string(n.Kind)),
		v("SWITCHOVER_POOL", n.Pool),
		v("SWITCHOVER_FROM", strings.Join(n.From, ",")),
		v("SWITCHOVER_TO", strings.Join(n.To, ",")),
		v("SWITCHOVER_REASON", n.Reason),
		v("SWITCHOVER_AT", stamp(n.At)),
		v("SWITCHOVER_TEXT", n.Text),
	}
}

// Send implements Sink.
func (e *Exec) Send(ctx context.Context, n Notification) error {
	name := e.Name()
	if len(e.Command) == 0 {
		return fmt.Errorf("notify: %s: %w (%w)", name, ErrNoCommand, ErrPermanent)
	}
	body, err := json.Marshal(n)
	if err != nil {
		return err
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultExecTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, e.Command[0], e.Command[1:]...)
	env := e.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(append([]string(nil), env...), execEnv(n)...)
	cmd.Dir = e.Dir
	cmd.Stdin = bytes.NewReader(body)
	cmd.Stdout = e.Stdout
	cmd.Stderr = e.Stderr
	// A child that outlives the killed command may hold the output pipes
	// open; stop waiting for them shortly after the kill.
	cmd.WaitDelay = time.Second
	killGroup(cmd)

	err = cmd.Run()
	if ctx.Err() != nil {
		return fmt.Errorf("notify: %s: killed after %s: %w", name, timeout, ctx.Err())
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("notify: %s: %w", name, ee)
		}
		// Start errors name the program, never the arguments.
		return fmt.Errorf("notify: %s: %w", name, err)
	}
	return nil
}
